//! The live host page (`/live/HOST`, a kept import) as data, built from a `HostState` (no
//! lock held; the hub hands out `Arc`s): the heatmap of rates, the IRQ rows, the history, and
//! the model comparison through `analysis::live_vs_model`; and the JSON of an update
//! (`/api/live/HOST`, the SSE event's core).

use super::{parse_node, ViewError};
use crate::analysis::live_vs_model::{self, Comparison};
use crate::live::devices;
use crate::live::protocol::WireIrq;
use crate::live::store::HostState;
use crate::render::svg_live::{history_chart, HistoryPoint};
use crate::scenario::permalink;
use crate::topology::plural;
use serde::Deserialize;

/// History samples on the chart, and the most an SSE event carries (the JSON has them all).
pub const HISTORY_CHART_LEN: usize = 120;

/// History samples listed as text on the page.
const HISTORY_SHOWN: usize = 20;

/// Query of the host page: the model to compare against, and a node to zoom to.
#[derive(Debug, Default, Deserialize)]
pub struct LiveQuery {
    pub(crate) variant: Option<String>,
    pub(crate) effective: Option<String>,
    /// MANA driver version: `unpatched` (default) or `patched`.
    pub(crate) mana: Option<String>,
    pub(crate) node: Option<String>,
}

pub struct ModelChoice {
    /// Empty: the variant the snapshot's kernel release implies.
    variant: String,
    /// Empty: each device's controller's model, from its IRQs' chip names.
    effective: String,
    mana_patched: bool,
    node: Option<u32>,
}

impl LiveQuery {
    pub fn choice(&self) -> Result<ModelChoice, ViewError> {
        let (variant, effective) = live_vs_model::named_models(self.variant.as_deref(), self.effective.as_deref())?;
        let mana_patched = match self.mana.as_deref() {
            None | Some("") | Some("unpatched") => false,
            Some("patched") => true,
            Some(m) => {
                return Err(ViewError::BadInput(format!(
                    "mana {:?}: unpatched or patched",
                    crate::live::parse::short(m)
                )))
            }
        };
        let node = parse_node(self.node.as_deref())?;
        Ok(ModelChoice {
            variant,
            effective,
            mana_patched,
            node,
        })
    }
}

pub struct IrqRowView {
    pub(crate) label: String,
    pub(crate) name: String,
    pub(crate) device: String,
    pub(crate) affinity: String,
    pub(crate) effective: String,
    pub(crate) rate: String,
    /// Sort key for the rate column (-1 without a rate).
    pub(crate) rate_key: f64,
}

pub struct ModelRowView {
    pub(crate) device: String,
    pub(crate) index: u32,
    pub(crate) irq: String,
    pub(crate) name: String,
    pub(crate) predicted_mask: String,
    pub(crate) actual_mask: String,
    pub(crate) predicted_cpu: String,
    pub(crate) actual_effective: String,
    /// The recorded mask or CPU differs, and no order explains it.
    pub(crate) mismatch: bool,
    /// Only the effective CPU differs, and the order of events explains it (probe order for
    /// a managed vector, activation order for a non-managed one).
    pub(crate) moved: bool,
    /// That reason in a few words (empty when none).
    pub(crate) reason: &'static str,
}

/// Everything the live page shows, for a pushed host or an imported capture.
pub struct HostView {
    pub host: String,
    pub(crate) live: bool,
    /// For a kept import: its link (`/live/_/import/ID`).
    pub(crate) share: String,
    pub(crate) summary: String,
    /// The headline: how many modelled vectors differ from the model ("0 of 36 modelled
    /// vectors differ from the kernel model"), or why nothing could be compared.
    pub(crate) verdict: String,
    /// What a reading without rates or `/proc/irq` files can and cannot show (empty when it
    /// has both).
    pub(crate) limits: String,
    /// The snapshot has rates (two readings) or will (a live host): the heatmap and the
    /// history are drawn; otherwise [`HostView::limits`] says why not.
    pub(crate) rates_shown: bool,
    pub(crate) status: String,
    pub(crate) heatmap_svg: String,
    pub(crate) rows: Vec<IrqRowView>,
    pub(crate) history: Vec<String>,
    pub(crate) history_svg: String,
    /// The kernel release the snapshot records, or "unknown".
    pub(crate) kernel: String,
    /// The "Live vs model" section.
    pub model: LiveModelView,
}

/// The live page's "Live vs model" section: the kernel model run on the reading's machine
/// and devices, and where the reading differs from it.
pub struct LiveModelView {
    /// One row per modelled vector.
    pub rows: Vec<ModelRowView>,
    /// Why the model could not run on the reading (empty when it ran).
    pub(crate) error: String,
    pub(crate) not_modelled: Vec<String>,
    /// Vectors whose mask or CPU differ and no order explains (as `/fleet` counts them).
    pub mismatches: usize,
    /// Vectors that differ only in an effective CPU an order explains.
    pub(crate) moved: usize,
    /// Vectors whose mask and effective CPU the snapshot does not record (not compared).
    pub(crate) unrecorded: usize,
    /// One sentence per reason present: "8 managed vectors with the model's mask …".
    pub(crate) reasons: Vec<String>,
    /// What the snapshot could not tell the model (kernel release, hotplug CPUs' nodes).
    pub(crate) warnings: Vec<String>,
    /// The model's scenario, to freeze as a permalink (empty when too long or not run).
    pub(crate) permalink: String,
    pub(crate) sort: String,
    pub(crate) variant: String,
    /// The effective-CPU model(s) the comparison ran, and where they came from.
    pub(crate) effective: String,
    pub(crate) mana_patched: bool,
    /// The variant selector's options (name, selected).
    pub(crate) variants: Vec<(&'static str, bool)>,
    /// The selector's options (value, label, selected); the empty value is "per IRQ".
    pub(crate) effectives: Vec<(&'static str, &'static str, bool)>,
}

fn fmt_rate(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

pub(crate) fn status_line(st: &HostState) -> String {
    match &st.rates {
        Some(r) => format!(
            "reading {} · device interrupts/s over the last {} ms: {} in all",
            st.seq,
            r.interval_ms,
            fmt_rate(r.per_cpu.values().sum())
        ),
        None => format!("reading {} · baseline (rates from the next reading on)", st.seq),
    }
}

pub(crate) fn heatmap_of(st: &HostState, node: Option<u32>) -> String {
    let values: Vec<(u32, u64)> = match &st.rates {
        Some(r) => r.per_cpu.iter().map(|(&c, &v)| (c, v.round() as u64)).collect(),
        None => Vec::new(),
    };
    crate::render::heatmap::value_heatmap(
        &st.topology,
        &values,
        "device interrupts per second per CPU",
        "irq/s",
        node,
    )
}

pub fn irq_rows(st: &HostState) -> Vec<IrqRowView> {
    let (devices, _) = devices::group_devices(&st.snapshot);
    let mut device_of = vec![String::new(); st.snapshot.irqs.len()];
    for d in &devices {
        for &i in &d.vectors {
            device_of[i] = d.name.clone();
        }
    }
    st.snapshot
        .irqs
        .iter()
        .enumerate()
        .map(|(i, irq): (usize, &WireIrq)| {
            let rate = st.rates.as_ref().and_then(|r| r.per_irq.get(i).copied().flatten());
            IrqRowView {
                label: irq.label.clone(),
                name: irq.name.clone(),
                device: std::mem::take(&mut device_of[i]),
                affinity: irq.affinity.clone().unwrap_or_default(),
                effective: irq.effective.clone().unwrap_or_default(),
                rate: rate.map_or_else(|| "–".into(), fmt_rate),
                rate_key: rate.unwrap_or(-1.0),
            }
        })
        .collect()
}

/// A host's value as the table shows it: "–" for what the snapshot does not record.
fn recorded(is: bool, value: &str) -> String {
    if is {
        value.to_string()
    } else {
        "–".into()
    }
}

/// The model's vectors beside the host's, each marked as differing, or as differing only in
/// an effective CPU an order of events explains.
fn model_rows(st: &HostState, c: &Comparison) -> Vec<ModelRowView> {
    c.vectors
        .iter()
        .map(|v| ModelRowView {
            device: v.device.clone(),
            index: v.index,
            irq: st.snapshot.irqs[v.irq].label.clone(),
            name: st.snapshot.irqs[v.irq].name.clone(),
            predicted_mask: v.predicted_mask.clone(),
            actual_mask: recorded(v.mask_recorded, &v.actual_mask),
            predicted_cpu: v.predicted_cpu.map_or_else(|| "shut down".into(), |c| c.to_string()),
            actual_effective: recorded(v.cpu_recorded, &v.actual_effective),
            mismatch: v.differs() && v.reason.is_none(),
            moved: v.reason.is_some(),
            reason: v.reason.map_or("", |r| r.short()),
        })
        .collect()
}

/// The effective-model menu: "per IRQ (chip names)", then every model.
fn effective_choices(chosen: &str) -> Vec<(&'static str, &'static str, bool)> {
    std::iter::once(("", "per IRQ (chip names)", chosen.is_empty()))
        .chain(
            crate::kernel::vector_matrix::EffectiveModel::ALL
                .iter()
                .map(|e| (e.name(), e.name(), e.name() == chosen)),
        )
        .collect()
}

/// The live page's headline, as a scenario page leads with its verdict: "0 of 36 modelled
/// vectors differ from the kernel model", with the vectors only an order of events moved and
/// those the snapshot does not record; or why nothing was compared.
fn host_verdict(model: &LiveModelView) -> String {
    let (vectors, differ, moved, unrecorded) = (model.rows.len(), model.mismatches, model.moved, model.unrecorded);
    if !model.error.is_empty() {
        return "Not compared with the kernel model: the model cannot run on this snapshot".into();
    }
    if vectors == 0 {
        return "Not compared with the kernel model: no device here has vectors the model places".into();
    }
    if unrecorded == vectors {
        return format!(
            "Not compared with the kernel model: this reading records no mask or CPU for its \
             {vectors} modelled vector{} (no /proc/irq files)",
            plural(vectors)
        );
    }
    let mut line = format!(
        "{differ} of {vectors} modelled vector{} differ{} from the kernel model",
        plural(vectors),
        if differ == 1 { "s" } else { "" }
    );
    if moved > 0 {
        line.push_str(&format!(
            "; {moved} more only in an effective CPU the order of events decides"
        ));
    }
    if unrecorded > 0 {
        line.push_str(&format!("; {unrecorded} not recorded, not compared"));
    }
    line
}

/// The reading's status line; an import without rates will get none (no next reading).
fn reading_status(st: &HostState, live: bool) -> String {
    match (live, &st.rates) {
        (false, None) => format!("reading {} · no rates (a rate needs two readings)", st.seq),
        _ => status_line(st),
    }
}

/// What a reading can and cannot show when it lacks rates (one reading) or `/proc/irq` files
/// (a pasted `/proc/interrupts`); empty when it lacks neither. A live host gets its rates
/// from the next reading, so only the files are missing there.
fn reading_limits(live: bool, rates: bool, unrecorded: bool) -> String {
    let mut cannot = Vec::new();
    if !live && !rates {
        cannot.push("interrupt rates (a rate needs two readings; the heatmap and history need rates)");
    }
    if unrecorded {
        cannot.push(
            "where the kernel placed each vector (its requested mask and effective CPU are in \
             /proc/irq/N/smp_affinity_list and effective_affinity_list, which irqscope-agent reads)",
        );
    }
    if cannot.is_empty() {
        return String::new();
    }
    format!(
        "This reading shows each IRQ and the device it belongs to, and the model lists where it \
         would place those devices' vectors. It cannot show {}.",
        cannot.join(", nor ")
    )
}

impl HostView {
    pub fn new(st: &HostState, choice: &ModelChoice, live: bool) -> HostView {
        let model = LiveModelView::new(st, choice);
        HostView {
            host: st.snapshot.host.clone(),
            live,
            share: String::new(),
            summary: format!(
                "{} · {} IRQ rows · {} CPU columns",
                st.topology.summary(),
                st.snapshot.irqs.len(),
                st.snapshot.cpus.len()
            ),
            verdict: host_verdict(&model),
            limits: reading_limits(live, st.rates.is_some(), model.unrecorded > 0),
            rates_shown: live || st.rates.is_some(),
            status: reading_status(st, live),
            heatmap_svg: heatmap_of(st, choice.node),
            rows: irq_rows(st),
            history: history_text(st),
            history_svg: history_svg(st),
            kernel: if st.snapshot.topology.kernel_release.is_empty() {
                "unknown".into()
            } else {
                st.snapshot.topology.kernel_release.clone()
            },
            model,
        }
    }
}

impl LiveModelView {
    /// Run the model `choice` names on the reading (the release's variant, sort and hotplug
    /// rule where it names none) and compare.
    fn new(st: &HostState, choice: &ModelChoice) -> LiveModelView {
        let (mut opts, warnings) = live_vs_model::options_for(&st.snapshot, None);
        if !choice.variant.is_empty() {
            opts.variant = choice.variant.clone();
        }
        opts.effective = choice.effective.clone();
        opts.mana_patched = choice.mana_patched;
        let mut view = LiveModelView {
            rows: Vec::new(),
            error: String::new(),
            not_modelled: Vec::new(),
            mismatches: 0,
            moved: 0,
            unrecorded: 0,
            reasons: Vec::new(),
            warnings,
            permalink: String::new(),
            sort: opts.sort.clone(),
            variant: opts.variant.clone(),
            effective: choice.effective.clone(),
            mana_patched: choice.mana_patched,
            variants: crate::kernel::Variant::ALL
                .iter()
                .map(|v| (v.name(), v.name() == opts.variant))
                .collect(),
            effectives: effective_choices(&choice.effective),
        };
        match live_vs_model::compare_with(&st.snapshot, &st.topology, &opts) {
            Ok(c) => view.compared(st, &c),
            Err(e) => view.error = e.to_string(),
        }
        view
    }

    /// Fill in what comparison `c` found.
    fn compared(&mut self, st: &HostState, c: &Comparison) {
        self.permalink = permalink::encode(&c.spec)
            .ok()
            .filter(|l| l.len() <= 48 << 10)
            .unwrap_or_default();
        self.warnings.extend(c.warnings.iter().cloned());
        self.rows = model_rows(st, c);
        self.moved = self.rows.iter().filter(|r| r.moved).count();
        self.reasons = c
            .explained()
            .iter()
            .map(|(r, n)| format!("{n} {}.", r.describe()))
            .collect();
        self.effective = c.effective_summary();
        self.unrecorded = c.unrecorded();
        self.not_modelled.clone_from(&c.not_modelled);
        self.mismatches = c.unexplained();
    }
}

impl HostView {
    /// The text twin (`/live/HOST/text`): the host, its reading, and the model comparison in
    /// words, within 72 columns.
    pub fn text_report(&self) -> String {
        use crate::render::columns::wrap;
        let mut out = wrap(
            &format!("{} (kernel {})", self.host, self.kernel),
            "irqscope live: ",
            "  ",
        );
        out.push_str(&wrap(&self.verdict, "verdict:  ", "          "));
        if !self.limits.is_empty() {
            out.push_str(&wrap(&self.limits, "          ", "          "));
        }
        out.push_str(&wrap(&self.summary, "machine:  ", "          "));
        out.push_str(&wrap(&self.status, "reading:  ", "          "));
        out.push('\n');
        if !self.model.error.is_empty() {
            out.push_str(&wrap(&self.model.error, "model:    cannot run: ", "          "));
            return out;
        }
        out.push_str(&wrap(
            &format!(
                "{} modelled vectors, {} differ from {} ({}, {})",
                self.model.rows.len(),
                self.model.mismatches,
                self.model.variant,
                self.model.sort,
                self.model.effective
            ),
            "model:    ",
            "          ",
        ));
        for r in &self.model.reasons {
            out.push_str(&wrap(r, "          ", "          "));
        }
        for r in self.model.rows.iter().filter(|r| r.mismatch) {
            out.push_str(&wrap(
                &format!(
                    "{} vector {} (irq {}): mask {} -> {}, CPU {} -> {}",
                    r.device, r.index, r.irq, r.predicted_mask, r.actual_mask, r.predicted_cpu, r.actual_effective
                ),
                "  differs: ",
                "    ",
            ));
        }
        for w in &self.model.warnings {
            out.push_str(&wrap(w, "note:     ", "          "));
        }
        out
    }
}

/// The newest [`HISTORY_SHOWN`] samples as text, newest first.
pub(crate) fn history_text(st: &HostState) -> Vec<String> {
    st.history
        .iter()
        .rev()
        .take(HISTORY_SHOWN)
        .map(|s| {
            if s.reset {
                format!("#{} baseline", s.seq)
            } else {
                format!("#{} {} irq/s", s.seq, fmt_rate(s.irqs_per_s))
            }
        })
        .collect()
}

/// The chart of the newest [`HISTORY_CHART_LEN`] samples.
pub(crate) fn history_svg(st: &HostState) -> String {
    let skip = st.history.len().saturating_sub(HISTORY_CHART_LEN);
    let points: Vec<HistoryPoint> = st
        .history
        .iter()
        .skip(skip)
        .map(|s| HistoryPoint {
            seq: s.seq,
            value: (!s.reset).then_some(s.irqs_per_s),
        })
        .collect();
    history_chart(&points, "device interrupts per second, one point per reading", "irq/s")
}

/// What an SSE update (and `GET /api/live/{host}`) carries.
pub(crate) fn update_json(st: &HostState) -> serde_json::Value {
    let per_cpu: serde_json::Map<String, serde_json::Value> = st
        .rates
        .as_ref()
        .map(|r| {
            r.per_cpu
                .iter()
                .map(|(c, v)| (c.to_string(), serde_json::json!(v)))
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!({
        "host": st.snapshot.host,
        "seq": st.seq,
        "taken_unix_ms": st.snapshot.taken_unix_ms,
        "interval_ms": st.rates.as_ref().map(|r| r.interval_ms),
        "irqs_per_s": st.rates.as_ref().map(|r| r.per_cpu.values().sum::<f64>()),
        "per_cpu": per_cpu,
        "history": st.history,
    })
}
