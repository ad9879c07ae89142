//! `irqscope lab check`: an agent capture against the model of the captured machine.
//!
//! The capture's last snapshot is compared (the agent captures after the controllers were
//! bound one at a time, so effective CPUs follow probe order). Kernel release → variant, sort,
//! `irq_create_affinity_masks()` era, vectors per CPU and hotplug rule come from
//! `kernel::release` ([`super::generation`]); the comparison itself is live mode's
//! ([`live_vs_model::compare_with`]), so both read a machine the same way. The effective-CPU
//! model is each device's controller's, from the chip names of its IRQs (an `-arm64` release
//! whose chips do not tell runs the GICv3 ITS model), unless `--effective` names one.

use crate::analysis::live_vs_model::{self, Comparison, DiffReason, ModelOptions};
use crate::kernel::group_cpus::Variant;
use crate::kernel::sort::SortGen;
use crate::kernel::vector_matrix::EffectiveModel;
use crate::live::protocol::{Capture, ProbeCalls, Snapshot};
use crate::scenario::kernel::ModelNames;
use crate::scenario::spec;
use crate::topology::Topology;
use std::fmt::Write;
use std::sync::Arc;

/// Largest capture read (bytes).
pub(crate) const CAPTURE_BYTES_MAX: usize = 64 << 20;

/// What `lab check` was asked for beyond the capture.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// The kernel release, for captures that do not record it (or to override it).
    pub kernel: Option<String>,
    /// Models to run in place of those the kernel release picks.
    pub models: ModelNames,
    /// Also run every variant × sort × effective model and name those that reproduce it.
    pub all: bool,
    /// The drawn machine the capture was taken on: its SMT and cluster sets replace the
    /// capture's (the kernel's own masks), online CPUs stay the capture's.
    pub machine: Option<Arc<Topology>>,
}

/// The kinds counted, in print order.
pub(crate) const KINDS: [&str; 5] = [
    "managed mask",
    "managed effective CPU",
    "non-managed mask",
    "non-managed effective CPU",
    "blk-mq map",
];

/// A finished check: it passes when something was compared and nothing differs.
#[derive(Debug, Clone)]
pub struct Report {
    pub text: String,
    pub matched: usize,
    pub differ: usize,
    /// The capture's recorded spreading calls (`probe_calls`) are in an order the ordering
    /// model forbids.
    pub(crate) order_forbidden: bool,
}

impl Report {
    /// Something was compared and nothing differs (`lab check`'s exit status 0).
    pub fn passed(&self) -> bool {
        self.differ == 0 && self.matched > 0 && !self.order_forbidden
    }
}

/// Per kind (matched, total).
pub(crate) fn tally(c: &Comparison) -> [(usize, usize); 5] {
    let mut t = [(0, 0); 5];
    for v in &c.vectors {
        let (mask, cpu) = if v.managed { (0, 1) } else { (2, 3) };
        t[mask].1 += 1;
        t[mask].0 += v.mask_matches as usize;
        t[cpu].1 += 1;
        t[cpu].0 += v.cpu_matches as usize;
    }
    t
}

fn count_differ(c: &Comparison) -> usize {
    tally(c).iter().map(|(m, n)| n - m).sum()
}

/// Read a capture (any released protocol version) and pick the snapshot to check.
pub fn read_capture(text: &str) -> Result<Snapshot, String> {
    read_capture_and_calls(text).map(|(snap, _)| snap)
}

/// [`read_capture`] with the spreading calls a lab boot recorded, when it did.
fn read_capture_and_calls(text: &str) -> Result<(Snapshot, Option<ProbeCalls>), String> {
    if text.len() > CAPTURE_BYTES_MAX {
        return Err(format!("capture larger than {CAPTURE_BYTES_MAX} bytes"));
    }
    let capture: Capture = serde_json::from_str(text).map_err(|e| format!("not an agent capture: {e}"))?;
    let snap = capture
        .snapshots
        .into_iter()
        .last()
        .ok_or("the capture holds no snapshot")?
        .upgrade();
    snap.check()?;
    Ok((snap, capture.probe_calls))
}

/// Whether each device's vectors hold IRQ numbers that no other device's vectors fall between,
/// as when the controllers were bound one at a time (each allocates its block of descriptors
/// before the next starts); controllers probed concurrently at boot interleave them.
fn allocated_one_device_at_a_time(c: &Comparison, snap: &Snapshot) -> bool {
    let mut ranges: std::collections::BTreeMap<&str, (u32, u32)> = std::collections::BTreeMap::new();
    for v in &c.vectors {
        let Ok(n) = snap.irqs[v.irq].label.parse::<u32>() else {
            return false;
        };
        let r = ranges.entry(v.device.as_str()).or_insert((n, n));
        *r = (r.0.min(n), r.1.max(n));
    }
    let mut spans: Vec<(u32, u32)> = ranges.into_values().collect();
    spans.sort_unstable();
    spans.windows(2).all(|w| w[0].1 < w[1].0)
}

/// A warning when every present-but-offline CPU of a machine of several nodes sits in its
/// first node: agents before the node links were read (`node/nodeN/cpuM`, see
/// `topology::import::sysfs`) put them there whatever their node, because `nodeN/cpulist` lists
/// online CPUs only; the kernel placed them by their real node.
pub(crate) fn offline_cpus_in_first_node(t: &Topology) -> Option<String> {
    let offline = t.present().andnot(t.online());
    let mut nodes = t.nodes_with_cpus();
    let first = nodes.next()?;
    nodes.next()?;
    if offline.is_empty() || offline.iter().any(|cpu| t.cpu_to_node(cpu) != first) {
        return None;
    }
    Some(format!(
        "CPUs {offline} are present but offline and all sit in node {first}: an agent that \
         read only nodeN/cpulist (online CPUs) put every offline CPU there; if this capture \
         came from one, their node is wrong and node-aware placements will differ \
         (capture again with an agent that reads the nodeN/cpuM links)"
    ))
}

/// Run the check on a capture's text.
pub fn check(text: &str, o: &CheckOptions) -> Result<Report, String> {
    let (snap, calls) = read_capture_and_calls(text)?;
    if let Some(k) = &o.kernel {
        if crate::lab::parse_release(k).is_none() {
            return Err(format!("--kernel {k:?}: not a kernel release (e.g. 6.1.0-57-amd64)"));
        }
    }
    let mut topology =
        Arc::new(Topology::new(&snap.topology.to_spec(&snap.host)).map_err(|e| format!("topology: {e}"))?);
    if let Some(m) = &o.machine {
        let drawn = m
            .booted_as(&topology)
            .map_err(|e| format!("--machine is not the captured machine: {e}"))?;
        topology = Arc::new(drawn);
    }
    let (opts, mut warnings) = model_options(&snap, &topology, o)?;
    let c = live_vs_model::compare_with(&snap, &topology, &opts).map_err(|e| e.0)?;
    warnings.extend(c.warnings.iter().cloned());
    warnings.extend(offline_cpus_in_first_node(&topology));
    let mut out = String::new();
    header(&mut out, &snap, &topology, o, &opts, &c);
    for w in &warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for n in &c.not_modelled {
        let _ = writeln!(out, "not modelled: {n}");
    }
    let t = tally(&c);
    for (kind, (m, n)) in KINDS.iter().zip(t) {
        if *kind == "blk-mq map" {
            let _ = writeln!(out, "{kind}: {m}/{n} (an agent capture records no blk-mq maps)");
        } else {
            let _ = writeln!(out, "{kind}: {m}/{n}");
        }
    }
    differences(&mut out, &snap, &c);
    let differ = count_differ(&c);
    order_notes(&mut out, &snap, &opts, &c, differ);
    if o.all {
        all_models(&mut out, &snap, &topology, &opts, &c);
    }
    // The boot's recorded calls against the ordering model, as for several boots.
    let order_forbidden = match &calls {
        // Calls that cannot be named by a device's probe (6.1's NVMe maps its queues from
        // the reset work, in a kworker) leave the order unchecked, not the capture.
        Some(calls) => match crate::lab::orders::check_one(&topology, calls) {
            Ok((text, allowed)) => {
                out.push_str(&text);
                !allowed
            }
            Err(why) => {
                out.push_str(&crate::render::columns::wrap(
                    &format!("probe order: not checked: {why}"),
                    "",
                    "  ",
                ));
                false
            }
        },
        None => false,
    };
    let matched = t.iter().map(|(m, _)| m).sum();
    if matched + differ == 0 {
        let _ = writeln!(
            out,
            "note: the capture holds no queue vectors of a device the models place (NVMe, \
             virtio, mlx5 or MANA)\n0 matched, 0 differ: nothing to compare"
        );
    } else {
        let _ = writeln!(out, "{matched} matched, {differ} differ");
    }
    Ok(Report {
        text: out,
        matched,
        differ,
        order_forbidden,
    })
}

/// The models the capture's kernel release picks, with the options' overrides checked.
fn model_options(
    snap: &Snapshot,
    topology: &Topology,
    o: &CheckOptions,
) -> Result<(ModelOptions, Vec<String>), String> {
    let (mut opts, warnings) = live_vs_model::options_for(snap, o.kernel.as_deref());
    if o.machine.is_some() && opts.hotplug.is_some() && topology.possible() != topology.present() {
        // The release's hotplug rule rebuilds the machine from the capture's own lists.
        return Err(
            "--machine: a capture with hotplug CPUs (possible but not present) is checked from its own topology".into(),
        );
    }
    if let Some(v) = &o.models.variant {
        spec::parse_variant(v).map_err(|e| e.0)?;
        opts.variant = v.clone();
    }
    if let Some(s) = &o.models.sort {
        spec::parse_sort(s).map_err(|e| e.0)?;
        opts.sort = s.clone();
    }
    if let Some(e) = &o.models.effective {
        spec::parse_effective(e).map_err(|e| e.0)?;
        opts.effective = e.clone();
    }
    Ok((opts, warnings))
}

/// The report's first lines: the capture, the machine drawn, the models and the releases
/// the answer holds for.
fn header(
    out: &mut String,
    snap: &Snapshot,
    topology: &Topology,
    o: &CheckOptions,
    opts: &ModelOptions,
    c: &Comparison,
) {
    let release = o.kernel.as_deref().unwrap_or(&snap.topology.kernel_release);
    let _ = writeln!(
        out,
        "capture: host {}, kernel {}, {} CPUs",
        snap.host,
        if release.is_empty() { "unknown" } else { release },
        topology.possible().weight()
    );
    if let Some(m) = &o.machine {
        let _ = writeln!(
            out,
            "machine: {} as drawn, online {} as captured",
            m.name(),
            topology.online()
        );
    }
    let _ = writeln!(
        out,
        "model: variant {}, sort {}, effective {}",
        opts.variant,
        opts.sort,
        c.effective_summary()
    );
    if let Ok(scenario) = c.spec.resolve(crate::catalogue::get) {
        let mut holds = crate::scenario::kernel::holds_for(&scenario, &crate::scenario::run(&scenario));
        holds.kernel = (!release.is_empty()).then(|| release.to_string());
        let _ = writeln!(out, "kernel: {}", crate::render::summary::range_line(&holds));
    }
}

/// One `differ:` line per mask and per effective CPU the model places elsewhere.
fn differences(out: &mut String, snap: &Snapshot, c: &Comparison) {
    let label =
        |v: &live_vs_model::VectorComparison| format!("{} q{} (IRQ {})", v.device, v.index, snap.irqs[v.irq].label);
    for v in &c.vectors {
        let kind = if v.managed { "managed" } else { "non-managed" };
        if !v.mask_matches {
            let _ = writeln!(
                out,
                "differ: {kind} mask {}: model {}, kernel {}",
                label(v),
                v.predicted_mask,
                v.actual_mask
            );
        }
        if !v.cpu_matches {
            let cpu = v.predicted_cpu.map_or("none".to_string(), |c| c.to_string());
            let why = v.reason.map_or(String::new(), |r| format!(" ({})", r.short()));
            let _ = writeln!(
                out,
                "differ: {kind} effective CPU {}: model {cpu}, kernel {}{why}",
                label(v),
                v.actual_effective
            );
        }
    }
}

/// Notes on differences that the order of earlier interrupts explains.
fn order_notes(out: &mut String, snap: &Snapshot, opts: &ModelOptions, c: &Comparison, differ: usize) {
    let moved_only = c
        .vectors
        .iter()
        .all(|v| (v.mask_matches && v.cpu_matches) || v.reason.is_some());
    if let Some(n) = c.explained().get(&DiffReason::ActivationOrder) {
        let _ = writeln!(out, "note: {n} {}", DiffReason::ActivationOrder.describe());
    }
    if differ > 0 && moved_only && !allocated_one_device_at_a_time(c, snap) {
        let _ = writeln!(
            out,
            "note: every mask matches; effective CPUs follow the order the controllers were bound in. \
             A capture taken at boot (controllers probed concurrently) moves them between devices: \
             compare one taken with the controllers bound one at a time"
        );
    } else if differ > 0 && moved_only {
        let _ = writeln!(
            out,
            "note: every mask matches, and each controller's vectors were allocated in one piece, as \
             when the controllers are bound one at a time: the effective-CPU model ({}) does not \
             place this kernel's interrupts (--all runs the others)",
            opts.effective
        );
    }
}

/// `--all`: every variant × sort × effective model against the capture, one line each, and
/// the verdict: the models that reproduce it exactly, the release's own first.
fn all_models(out: &mut String, snap: &Snapshot, topology: &Arc<Topology>, opts: &ModelOptions, c: &Comparison) {
    let _ = writeln!(out, "all models:");
    let mut exact = Vec::new();
    for variant in Variant::ALL {
        for sort in SortGen::ALL {
            for eff in EffectiveModel::ALL {
                let m = ModelOptions {
                    variant: variant.name().into(),
                    sort: sort.name().into(),
                    effective: eff.name().into(),
                    ..opts.clone()
                };
                let name = format!("{}/{}/{}", m.variant, m.sort, m.effective);
                match live_vs_model::compare_with(snap, topology, &m) {
                    Ok(c) => {
                        let d = count_differ(&c);
                        let masks = tally(&c)[0];
                        let _ = writeln!(out, "  {name}: {d} differ (managed masks {}/{})", masks.0, masks.1);
                        if d == 0 && !c.vectors.is_empty() {
                            exact.push(name);
                        }
                    }
                    Err(e) => {
                        let _ = writeln!(out, "  {name}: not run ({})", e.0);
                    }
                }
            }
        }
    }
    // The release's own model first, when it is among the exact ones.
    let own_effective = c.vectors.first().map_or(opts.effective.as_str(), |v| v.model.name());
    let own = format!("{}/{}/{}", opts.variant, opts.sort, own_effective);
    if let Some(i) = exact.iter().position(|e| *e == own) {
        exact[..=i].rotate_right(1);
    }
    match exact.split_first() {
        None => {
            let _ = writeln!(out, "verdict: no model reproduces this capture exactly");
        }
        Some((first, [])) => {
            let _ = writeln!(out, "verdict: {first}");
        }
        Some((first, rest)) => {
            let _ = writeln!(
                out,
                "verdict: {first} (this capture cannot tell it from {})",
                rest.join(", ")
            );
        }
    }
}
