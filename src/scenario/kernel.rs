//! The kernel release a scenario is for: what a release picks beyond the variant, sort and
//! effective model ([`KernelPick`]), how the command line and the pages fill a spec from a named
//! release and their flags ([`pick`], each model with where it came from), and the range of
//! releases an answer holds for ([`holds_for`]).
//!
//! The table itself is `kernel::release`; this module only applies it to scenarios. A spec
//! always names the models it runs (a permalink keeps them); the release it was picked for
//! travels beside them (`kernel`) so every view can say which release the answer is for.

use super::spec::ScenarioSpec;
use super::{BlkMqSource, Outcome, Scenario, ScenarioError};
use crate::kernel::blk_mq_cpumap::{HwFallback, Mapper};
use crate::kernel::irq_affinity::AffinityEra;
use crate::kernel::release::{self, Range, Release};
use crate::kernel::vector_matrix::{EffectiveModel, VECTORS_AVAILABLE_START, VECTORS_PER_CPU_MAX};
use crate::kernel::{KernelWarn, SortGen, Variant};
use crate::topology::Topology;

/// Longest kernel release text (`uname -r` is at most 64 bytes).
pub(crate) const KERNEL_RELEASE_BYTES_MAX: usize = 64;

/// What a kernel release decides beyond the variant, sort and effective model, each as the spec
/// gave it (`None`: not given, the behaviour of every scenario written before it existed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KernelPick {
    /// The release named (`6.12`, a whole `uname -r`), as given.
    pub(crate) kernel: Option<String>,
    pub(crate) affinity: Option<AffinityEra>,
    /// The mapper of devices whose blk-mq map comes from `blk_mq_map_queues()`.
    pub(crate) mapper: Option<Mapper>,
    pub(crate) vectors_per_cpu: Option<u32>,
}

impl KernelPick {
    /// The spec's fields, validated: a release that parses, a known era and mapper, a vector
    /// count between 1 and the 224 vectors above the exceptions.
    pub(crate) fn of_spec(spec: &ScenarioSpec) -> Result<KernelPick, ScenarioError> {
        let err = |m: String| Err(ScenarioError(m));
        if let Some(k) = &spec.kernel {
            if k.len() > KERNEL_RELEASE_BYTES_MAX || release::parse_release(k).is_none() {
                return err(format!(
                    "kernel {:?}: not a kernel release (e.g. 6.12 or 6.1.0-57-amd64)",
                    k.chars().take(40).collect::<String>()
                ));
            }
        }
        let affinity = spec.affinity.as_deref().map(parse_affinity).transpose()?;
        let mapper = spec.mapper.as_deref().map(parse_mapper).transpose()?;
        if let Some(n) = spec.vectors_per_cpu {
            if n == 0 || n > VECTORS_PER_CPU_MAX {
                return err(format!(
                    "vectors_per_cpu {n}: 1 to {VECTORS_PER_CPU_MAX} (the vectors above the exceptions)"
                ));
            }
        }
        Ok(KernelPick {
            kernel: spec.kernel.clone(),
            affinity,
            mapper,
            vectors_per_cpu: spec.vectors_per_cpu,
        })
    }

    /// The release named, parsed.
    pub(crate) fn release(&self) -> Option<Release> {
        self.kernel.as_deref().and_then(release::parse_release)
    }
    pub(crate) fn affinity_era(&self) -> AffinityEra {
        self.affinity.unwrap_or_default()
    }
    pub(crate) fn blk_mq_mapper(&self) -> Mapper {
        self.mapper.unwrap_or(Mapper::Current)
    }
    pub(crate) fn vectors(&self) -> u32 {
        self.vectors_per_cpu.unwrap_or(VECTORS_AVAILABLE_START)
    }
    /// What the map from IRQ affinity does for a queue without a vector mask: the named
    /// release's (`kernel::release::HW_FALLBACKS`); without one, the newest release's with the
    /// `current` mapper (v6.17 on) and `blk_mq_pci_map_queues()`'s with the older mappers.
    pub(crate) fn hw_fallback(&self) -> HwFallback {
        match self.release() {
            Some(r) => release::generation(r).hw_fallback,
            None if self.blk_mq_mapper() == Mapper::Current => HwFallback::MapQueues,
            None => HwFallback::Clear,
        }
    }

    pub(crate) fn affinity_field(&self) -> Option<String> {
        self.affinity.map(|e| e.name().to_string())
    }
    pub(crate) fn mapper_field(&self) -> Option<String> {
        self.mapper.map(|m| m.name().to_string())
    }
    pub(crate) fn vectors_per_cpu_field(&self) -> Option<u32> {
        self.vectors_per_cpu
    }

    /// The command-line words that give this pick back on `topology` under `effective`:
    /// `--kernel` when a release is named, and each model only where it differs from what that
    /// release (the newest without one) picks, so `irqscope simulate` run with them picks the
    /// same (a link written before releases could be named says `--vectors-per-cpu 203`).
    pub(crate) fn command_words(&self, topology: &Topology, effective: EffectiveModel) -> Vec<String> {
        let mut words = Vec::new();
        if let Some(k) = &self.kernel {
            words.push(format!("--kernel {}", super::spec::shell_word(k)));
        }
        let g = release::generation(self.release().unwrap_or(release::NEWEST));
        if self.affinity_era() != g.affinity {
            words.push(format!("--affinity {}", self.affinity_era().name()));
        }
        if self.blk_mq_mapper() != g.mapper {
            words.push(format!("--mapper {}", self.blk_mq_mapper().name()));
        }
        let per_cpu = g.window.vectors_per_cpu(topology.legacy_pic().unwrap_or(false));
        if effective == EffectiveModel::X86Matrix && self.vectors() != per_cpu {
            words.push(format!("--vectors-per-cpu {}", self.vectors()));
        }
        words
    }
}

/// A frozen model name among `all`, or an error naming `what` and the known names.
fn parse_named<T: Copy>(name: &str, all: &[T], name_of: fn(T) -> &'static str, what: &str) -> Result<T, ScenarioError> {
    all.iter().copied().find(|m| name_of(*m) == name).ok_or_else(|| {
        let known: Vec<&str> = all.iter().map(|m| name_of(*m)).collect();
        ScenarioError(format!("unknown {what} {name:?} (known: {})", known.join(", ")))
    })
}

pub(crate) fn parse_affinity(name: &str) -> Result<AffinityEra, ScenarioError> {
    parse_named(
        name,
        &AffinityEra::ALL,
        AffinityEra::name,
        "irq_create_affinity_masks era",
    )
}

pub(crate) fn parse_mapper(name: &str) -> Result<Mapper, ScenarioError> {
    parse_named(name, &Mapper::ALL, Mapper::name, "blk-mq mapper")
}

/// The three placement models a request may name, each by its frozen name: the
/// `group_cpus_evenly()` variant, the sort generation and the effective-CPU model. `None`
/// leaves a model to whatever fills it next (the base spec, or the kernel release).
///
/// Pages take these straight from their query (`#[serde(flatten)]`); the command line from
/// `--variant`, `--sort` and `--effective`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct ModelNames {
    pub variant: Option<String>,
    pub sort: Option<String>,
    pub effective: Option<String>,
}

impl ModelNames {
    /// These names with a form's empty fields (`variant=`) as not given.
    pub(crate) fn given(&self) -> ModelNames {
        let given = |v: &Option<String>| v.clone().filter(|v| !v.is_empty());
        ModelNames {
            variant: given(&self.variant),
            sort: given(&self.sort),
            effective: given(&self.effective),
        }
    }

    /// Set `spec`'s models to those named here, keeping the others.
    pub fn apply_to(&self, spec: &mut ScenarioSpec) {
        for (field, name) in [
            (&mut spec.variant, &self.variant),
            (&mut spec.sort, &self.sort),
            (&mut spec.effective, &self.effective),
        ] {
            if let Some(name) = name {
                field.clone_from(name);
            }
        }
    }
}

/// The models the command line or a form named explicitly (flags override the release).
#[derive(Debug, Clone, Default)]
pub struct Named {
    pub models: ModelNames,
    pub affinity: Option<String>,
    pub mapper: Option<String>,
    pub vectors_per_cpu: Option<u32>,
}

/// Where one model of a scenario came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// Named by a flag or a form field.
    Named,
    /// Picked by the kernel release given.
    Kernel(String),
    /// Picked by the newest release the table knows (no kernel was named).
    Newest,
    /// The machine's interrupt controller (and legacy PIC) decided, under the release.
    Machine,
}

/// One model and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picked {
    pub(crate) what: &'static str,
    pub(crate) value: String,
    pub(crate) source: Source,
}

/// Fill `spec`'s models for `topology` from the release `kernel` (the newest the table knows
/// when `None`), except those `named` gives. Returns each model with where it came from.
/// Names are checked when the spec is resolved.
pub fn pick(
    spec: &mut ScenarioSpec,
    topology: &Topology,
    kernel: Option<&str>,
    named: &Named,
) -> Result<Vec<Picked>, ScenarioError> {
    let release = match kernel {
        Some(k) => {
            if k.len() > KERNEL_RELEASE_BYTES_MAX {
                return Err(ScenarioError(format!(
                    "--kernel: longer than {KERNEL_RELEASE_BYTES_MAX} bytes"
                )));
            }
            release::parse_release(k).ok_or_else(|| {
                ScenarioError(format!(
                    "--kernel {k:?}: not a kernel release (e.g. 6.12 or 6.1.0-57-amd64)"
                ))
            })?
        }
        None => release::NEWEST,
    };
    let g = release::generation(release);
    let from = || match kernel {
        Some(k) => Source::Kernel(k.to_string()),
        None => Source::Newest,
    };
    let mut out = Vec::new();
    let mut one = |what: &'static str, given: &Option<String>, picked: String, source: Source| -> String {
        let (value, source) = match given {
            Some(v) => (v.clone(), Source::Named),
            None => (picked, source),
        };
        out.push(Picked {
            what,
            value: value.clone(),
            source,
        });
        value
    };
    let models = &named.models;
    spec.variant = one("variant", &models.variant, g.variant.into(), from());
    spec.sort = one("sort", &models.sort, g.sort.into(), from());
    spec.effective = one(
        "effective",
        &models.effective,
        g.effective(topology.irqchip()).name().into(),
        Source::Machine,
    );
    spec.affinity = Some(one("affinity", &named.affinity, g.affinity.name().into(), from()));
    spec.mapper = Some(one("mapper", &named.mapper, g.mapper.name().into(), from()));
    let per_cpu = g.window.vectors_per_cpu(topology.legacy_pic().unwrap_or(false));
    let vectors = one(
        "vectors per CPU",
        &named.vectors_per_cpu.map(|n| n.to_string()),
        per_cpu.to_string(),
        Source::Machine,
    );
    spec.vectors_per_cpu = vectors.parse().ok();
    spec.kernel = kernel.map(str::to_string);
    Ok(out)
}

/// "variant cluster, sort heap-v6.11, … from the newest release (v7.2); effective x86-matrix,
/// 201 vectors per CPU from the machine": the models of [`pick`] grouped by where they came from.
pub fn provenance(picked: &[Picked]) -> String {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for p in picked {
        let from = match &p.source {
            Source::Named => "as named".to_string(),
            Source::Kernel(k) => format!("from --kernel {k}"),
            Source::Newest => {
                let (a, b) = release::NEWEST;
                format!("from the newest release (v{a}.{b}; --kernel picks another)")
            }
            Source::Machine => "from the machine under that release".to_string(),
        };
        let item = format!("{} {}", p.what, p.value);
        match groups.iter_mut().find(|(f, _)| *f == from) {
            Some((_, items)) => items.push(item),
            None => groups.push((from, vec![item])),
        }
    }
    groups
        .into_iter()
        .map(|(from, items)| format!("{} {from}", items.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// One model that bounds the releases an answer holds for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bound {
    /// The model's name: "cluster", "heap-v6.11", "x86-matrix", "numgrps", "mapper v6.3",
    /// "202 vectors/CPU".
    pub(crate) what: String,
    /// The releases it holds for (several when the same count comes back later); empty: none.
    pub(crate) ranges: Vec<Range>,
}

/// Built C an answer came from (a `c:NAME` variant): not a release of the table but one tree,
/// perhaps patched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Built {
    /// The variant, `c:NAME`.
    pub(crate) name: String,
    /// The tree's kernel version (`7.2.13`), when its Makefile said.
    pub(crate) version: Option<String>,
    /// The subjects of the patches applied to it, in order.
    pub(crate) patches: Vec<String>,
}

/// The releases an answer holds for, and the models that bound them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holds {
    /// The release the scenario names, if any.
    pub(crate) kernel: Option<String>,
    /// Disjoint ranges, oldest first; empty when no release runs these models together.
    pub(crate) ranges: Vec<Range>,
    pub(crate) bounds: Vec<Bound>,
    /// Why no release runs it, when a model is not upstream code (a proposal, a rotation patch).
    pub(crate) not_upstream: Option<String>,
    /// The built C the spreading came from, for a `c:NAME` variant: the answer is that tree's
    /// (and its patches'), whatever the table says of the variant it stands in for.
    pub(crate) built: Option<Built>,
}

fn intersect_all(a: &[Range], b: &[Range]) -> Vec<Range> {
    let mut out: Vec<Range> = a.iter().flat_map(|x| b.iter().filter_map(|y| x.intersect(y))).collect();
    out.sort_by_key(|r| r.from);
    out
}

/// The releases whose code gives this answer: the intersection of the ranges of every model
/// that decided it. The variant, the sort and the effective model always count; the
/// `irq_create_affinity_masks()` era only when a set had more vectors than groups could be made
/// (otherwise both eras give the same masks); the blk-mq mapper only for `cpumap` devices; the
/// vector count only when the vector space ran out; the Hyper-V vPCI node rule only for such a
/// device without a node whose node decides, on an architecture where the rules differ.
pub fn holds_for(scenario: &Scenario, outcome: &Outcome) -> Holds {
    let (mut bounds, mut not_upstream) = spreader_bounds(scenario);
    let e = scenario.effective();
    let chip = scenario.topology().irqchip();
    let r = release::effective_range(e, chip);
    if r.is_none() && not_upstream.is_none() {
        not_upstream = Some(format!("{} is not what {} does", e.name(), chip.name()));
    }
    bounds.push(bound(e.name().to_string(), r));
    bounds.extend(kernel_pick_bounds(scenario, outcome));
    let external = scenario.external();
    let mut holds = Holds::of(scenario.kernel_pick().kernel.clone(), bounds, not_upstream);
    holds.built = external.map(|x| Built {
        name: x.0.name().to_string(),
        version: x.0.tree_version().map(str::to_string),
        patches: x.0.patches().to_vec(),
    });
    holds
}

fn bound(what: String, range: Option<Range>) -> Bound {
    Bound {
        what,
        ranges: range.into_iter().collect(),
    }
}

/// What made the masks: a built tree (its own release, when its version says one; the sort is
/// the tree's too), a proposal (no kernel: the reason in the second value), or the variant
/// and the sort.
fn spreader_bounds(scenario: &Scenario) -> (Vec<Bound>, Option<String>) {
    if let Some(x) = scenario.external() {
        let tree = x.0.tree_version().and_then(release::parse_release);
        let range = tree.map_or(Range::ALL, |r| Range::new(Some(r), Some(r)));
        return (vec![bound(x.0.name().to_string(), Some(range))], None);
    }
    let mut bounds = Vec::new();
    let mut not_upstream = None;
    if let Some(p) = scenario.proposal() {
        not_upstream = Some(format!(
            "the masks come from the proposal {}, not from a kernel",
            p.name()
        ));
    } else {
        let v = scenario.variant();
        let r = release::variant_range(v);
        if r.is_none() {
            not_upstream = Some(format!("{} is a proposed patch", v.name()));
        }
        bounds.push(bound(v.name().to_string(), r));
    }
    let s = scenario.sort();
    bounds.push(bound(s.name().to_string(), release::sort_range(s)));
    (bounds, not_upstream)
}

/// The kernel pick's models where they decided the answer: the affinity era when groups went
/// unfilled, the blk-mq mapper for `cpumap` devices, the Hyper-V vPCI node rule where the
/// releases differ, the vector count when the vector space ran out.
fn kernel_pick_bounds(scenario: &Scenario, outcome: &Outcome) -> Vec<Bound> {
    let mut bounds = Vec::new();
    let topo = scenario.topology();
    let pick = scenario.kernel_pick();
    let unfilled = outcome.devices.iter().any(|d| {
        d.warnings
            .iter()
            .any(|w| matches!(w, KernelWarn::GroupsUnfilled { .. }))
    });
    let managed = scenario.devices().iter().any(|d| d.managed_affinity);
    if unfilled && managed && scenario.proposal().is_none() {
        let era = pick.affinity_era();
        bounds.push(bound(era.name().to_string(), release::affinity_range(era)));
    }
    if scenario.devices().iter().any(|d| d.blk_mq == Some(BlkMqSource::Cpumap)) {
        let m = pick.blk_mq_mapper();
        bounds.push(bound(format!("mapper {}", m.name()), release::mapper_range(m)));
    }
    // A Hyper-V vPCI device without a node whose node decides (MANA's spreading, vectors
    // without affinity descriptors), where the releases give it different nodes.
    let node_decides = |d: &super::Device| d.hv_pci && d.node.is_none() && (d.driver.is_mana() || !d.managed_affinity);
    if scenario.devices().iter().any(node_decides) {
        let rule = release::generation(pick.release().unwrap_or(release::NEWEST)).hv_pci_node;
        let arch = topo.arch();
        if release::HV_PCI_NODES
            .iter()
            .any(|r| r.model.node(arch) != rule.node(arch))
        {
            bounds.push(bound(rule.name().to_string(), release::hv_pci_node_range(rule)));
        }
    }
    let vs = &outcome.vector_space;
    if vs.tracked && vs.exhausted() && scenario.effective() == EffectiveModel::X86Matrix {
        let pic = topo.legacy_pic().unwrap_or(false);
        let n = pick.vectors();
        bounds.push(Bound {
            what: format!("{n} vectors/CPU"),
            ranges: release::VECTOR_WINDOWS
                .iter()
                .filter(|w| w.model.vectors_per_cpu(pic) == n)
                .map(|w| w.range)
                .collect(),
        });
    }
    bounds
}

/// The releases a blk-mq queue map holds for: the mapper's, and for the mappers that call
/// `group_cpus_evenly()` the variant's and the sort's too.
pub(crate) fn holds_for_map(kernel: Option<String>, mapper: Mapper, variant: Variant, sort: SortGen) -> Holds {
    let mut bounds = vec![Bound {
        what: format!("mapper {}", mapper.name()),
        ranges: release::mapper_range(mapper).into_iter().collect(),
    }];
    let mut not_upstream = None;
    if mapper.uses_group_cpus() {
        let r = release::variant_range(variant);
        if r.is_none() {
            not_upstream = Some(format!("{} is a proposed patch", variant.name()));
        }
        bounds.push(Bound {
            what: variant.name().to_string(),
            ranges: r.into_iter().collect(),
        });
        bounds.push(Bound {
            what: sort.name().to_string(),
            ranges: release::sort_range(sort).into_iter().collect(),
        });
    }
    Holds::of(kernel, bounds, not_upstream)
}

impl Holds {
    /// The intersection of the bounds' ranges.
    pub(crate) fn of(kernel: Option<String>, bounds: Vec<Bound>, not_upstream: Option<String>) -> Holds {
        let mut ranges = vec![Range::ALL];
        for b in &bounds {
            ranges = intersect_all(&ranges, &b.ranges);
        }
        Holds {
            kernel,
            ranges,
            bounds,
            not_upstream,
            built: None,
        }
    }

    /// Whether the release the scenario names is one the answer holds for.
    pub(crate) fn names_a_release_in_range(&self) -> Option<bool> {
        let r = self.kernel.as_deref().and_then(release::parse_release)?;
        Some(self.ranges.iter().any(|x| x.contains(r)))
    }

    /// The models whose ranges set the answer's first and last release, first-release model
    /// first (each named once).
    pub(crate) fn binding(&self) -> Vec<String> {
        let [range] = self.ranges.as_slice() else {
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        let mut push = |s: String| {
            if !out.contains(&s) {
                out.push(s);
            }
        };
        if let Some(from) = range.from {
            if let Some(b) = self
                .bounds
                .iter()
                .find(|b| b.ranges.iter().any(|r| r.from == Some(from)))
            {
                push(b.what.clone());
            }
        }
        if let Some(to) = range.to {
            if let Some(b) = self.bounds.iter().find(|b| b.ranges.iter().any(|r| r.to == Some(to))) {
                push(b.what.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::spec::{parse_device_token, TopologyRef};

    fn spec(preset: &str, devices: &str) -> ScenarioSpec {
        ScenarioSpec::new(
            TopologyRef::Preset(preset.into()),
            devices.split(' ').map(|t| parse_device_token(t).unwrap()).collect(),
        )
    }

    fn picked(preset: &str, kernel: Option<&str>, named: &Named) -> (ScenarioSpec, Vec<Picked>) {
        let mut s = spec(preset, "4:pre=1");
        let t = crate::catalogue::get(preset).unwrap();
        let p = pick(&mut s, &t, kernel, named).unwrap();
        (s, p)
    }

    /// 6.12 on a q35-like VM: pre-cluster, heap-v6.11, the numgrps era, the v6.3 mapper and
    /// 202 - 1 = 201 vectors (the 0xeb window less the syscall and PIC cascade vectors).
    #[test]
    fn a_release_picks_every_model_and_flags_override() {
        let (s, p) = picked("vm-8vcpu-smt2", Some("6.12"), &Named::default());
        assert_eq!(
            (s.variant.as_str(), s.sort.as_str(), s.effective.as_str()),
            ("pre-cluster", "heap-v6.11", "x86-matrix")
        );
        assert_eq!(
            (s.affinity.as_deref(), s.mapper.as_deref(), s.vectors_per_cpu),
            (Some("numgrps"), Some("v6.3"), Some(201))
        );
        assert_eq!(s.kernel.as_deref(), Some("6.12"));
        assert!(p.iter().all(|x| x.source != Source::Named));
        let named = Named {
            models: ModelNames {
                variant: Some("cluster".into()),
                ..ModelNames::default()
            },
            vectors_per_cpu: Some(150),
            ..Named::default()
        };
        let (s, p) = picked("vm-8vcpu-smt2", Some("6.12"), &named);
        assert_eq!((s.variant.as_str(), s.vectors_per_cpu), ("cluster", Some(150)));
        let line = provenance(&p);
        assert!(
            line.starts_with("variant cluster, vectors per CPU 150 as named; sort heap-v6.11"),
            "{line}"
        );
        // No kernel: the newest release; a machine that says nothing about a PIC keeps 202.
        let (s, _) = picked("azure-l96as-v4", None, &Named::default());
        assert_eq!(
            (s.variant.as_str(), s.vectors_per_cpu, s.kernel),
            ("cluster", Some(202), None)
        );
        let mut s = spec("vm-8vcpu-smt2", "4");
        let t = crate::catalogue::get("vm-8vcpu-smt2").unwrap();
        assert!(pick(&mut s, &t, Some("banana"), &Named::default()).is_err());
        // What a scenario runs when nothing is named is the newest row of the table.
        let g = release::generation(release::NEWEST);
        assert_eq!(
            (g.variant, g.sort),
            (
                super::super::spec::DEFAULT_VARIANT.name(),
                super::super::spec::DEFAULT_SORT.name()
            )
        );
    }

    fn holds(preset: &str, devices: &str, kernel: Option<&str>) -> Holds {
        let mut s = spec(preset, devices);
        let t = crate::catalogue::get(preset).unwrap();
        pick(&mut s, &t, kernel, &Named::default()).unwrap();
        let scenario = s.resolve(crate::catalogue::get).unwrap();
        holds_for(&scenario, &crate::scenario::run(&scenario))
    }

    #[test]
    fn answers_hold_for_the_intersection_of_their_models() {
        let h = holds("vm-8vcpu-smt2", "2x8:pre=1", None);
        assert_eq!(h.ranges, [Range::new(Some((7, 0)), None)]);
        assert_eq!(h.binding(), ["cluster"]);
        let h = holds("vm-8vcpu-smt2", "2x8:pre=1", Some("6.12"));
        assert_eq!(h.ranges, [Range::new(Some((6, 11)), Some((6, 19)))]);
        assert_eq!(h.names_a_release_in_range(), Some(true));
        // More queues than CPUs: the era decides, and it ends at v6.16.
        let h = holds("vm-8vcpu-smt2", "16:pre=1", Some("6.12"));
        assert_eq!(h.ranges, [Range::new(Some((6, 11)), Some((6, 16)))]);
        assert_eq!(h.binding(), ["heap-v6.11", "numgrps"]);
        // The vector space ran out: 201 per CPU on a PIC machine is v6.10 .. (and .. v6.7).
        let h = holds("vm-2vcpu-smt2", "2x203:managed=no", Some("6.12"));
        assert!(h.bounds.iter().any(|b| b.what == "201 vectors/CPU"), "{h:?}");
        assert_eq!(h.ranges, [Range::new(Some((6, 11)), Some((6, 19)))]);
    }
}
