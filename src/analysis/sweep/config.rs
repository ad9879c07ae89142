//! What a sweep is asked: the placements (kernel variants, built C, `policy` proposals), the
//! machines, the device mixes and the starting counters, parsed and checked against the
//! limits below.

use super::{err, SweepError};
use crate::analysis::orders::Orders;
use crate::catalogue;
use crate::kernel::vector_matrix::EffectiveModel;
use crate::kernel::{External, SortGen, Variant};
use crate::policy::Proposal;
use crate::scenario::spec::{self, DeviceSpec};
use serde::Serialize;

/// Most combinations (rows) one sweep may run.
pub(crate) const ROWS_MAX: usize = 200_000;
/// Most starting counters in one sweep.
pub(crate) const COUNTERS_MAX: u32 = 4096;
/// Most mixes in one sweep.
pub(crate) const MIXES_MAX: usize = 32;
/// Most worker threads.
pub(crate) const THREADS_MAX: usize = 64;

/// The named device mixes; `--mix NAME` or device tokens separated by spaces.
pub(crate) const NAMED_MIXES: &[(&str, &str)] = &[
    // Seed 000, configuration 1 (L48s v2): six NVMe controllers of 32 I/O queues.
    ("nvme-6x32", "6x32:name=nvme,pre=1"),
    // Seed 000, configuration 3 (D96plds v6): six NVMe controllers of 14 I/O queues.
    ("nvme-6x14", "6x14:name=nvme,pre=1"),
    // Two NICs with separate receive and transmit interrupt sets.
    ("nic-2x16-sets", "2x16:name=nic,pre=1,sets=8+8"),
    // Both on one machine, NVMe probed first.
    ("nvme-4x8+nic-2x16", "4x8:name=nvme,pre=1 2x16:name=nic,pre=1,sets=8+8"),
];

/// A named list of device groups probed in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mix {
    pub(crate) name: String,
    /// The device tokens, as the CLI takes them.
    pub(crate) tokens: String,
    #[serde(skip)]
    pub(crate) devices: Vec<DeviceSpec>,
}

impl Mix {
    /// A named mix, or device tokens separated by spaces (`'6x32:pre=1,name=nvme 2x8'`),
    /// optionally named `NAME=TOKENS`.
    pub fn parse(text: &str) -> Result<Mix, SweepError> {
        let text = text.trim();
        if let Some((_, tokens)) = NAMED_MIXES.iter().find(|(n, _)| *n == text) {
            return Mix::from_tokens(text, tokens);
        }
        match text.split_once('=') {
            Some((name, tokens)) if !name.contains([':', ' ', ',']) && !name.is_empty() => {
                Mix::from_tokens(name, tokens)
            }
            _ => Mix::from_tokens(text, text),
        }
    }

    fn from_tokens(name: &str, tokens: &str) -> Result<Mix, SweepError> {
        let devices = tokens
            .split_whitespace()
            .map(spec::parse_device_token)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| SweepError(format!("mix {name:?}: {e}")))?;
        if devices.is_empty() {
            let known: Vec<&str> = NAMED_MIXES.iter().map(|(n, _)| *n).collect();
            return err(format!(
                "mix {name:?} has no devices (named mixes: {})",
                known.join(", ")
            ));
        }
        let tokens = tokens.split_whitespace().collect::<Vec<_>>().join(" ");
        Ok(Mix {
            name: name.to_string(),
            tokens,
            devices,
        })
    }

    pub(crate) fn named() -> Vec<Mix> {
        NAMED_MIXES
            .iter()
            .map(|(n, _)| Mix::parse(n).expect("named mixes parse"))
            .collect()
    }
}

/// Who forms the managed masks: a frozen kernel variant, built C (`c:NAME`) or a `policy`
/// proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Placement {
    Kernel(Variant),
    Proposal(Proposal),
    /// Built C, registered for the life of the process ([`ExternalRef::register`]).
    External(ExternalRef),
}

/// Built C in a [`Placement`]: registered once and kept for the life of the process (the
/// command line and the server register a handful), so a placement stays `Copy`. Compared
/// by name and build id.
#[derive(Clone, Copy)]
pub struct ExternalRef(&'static External);

impl ExternalRef {
    pub fn register(external: External) -> ExternalRef {
        ExternalRef(Box::leak(Box::new(external)))
    }
    /// A build already made for the life of the process (a server's registry holds one per
    /// registration, so a sweep request keeps nothing).
    pub(crate) fn from_static(external: &'static External) -> ExternalRef {
        ExternalRef(external)
    }
    pub(crate) fn external(self) -> &'static External {
        self.0
    }
    fn key(&self) -> (&str, &str) {
        (self.0 .0.name(), self.0 .0.id())
    }
}

impl std::fmt::Debug for ExternalRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}
impl PartialEq for ExternalRef {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for ExternalRef {}
impl PartialOrd for ExternalRef {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ExternalRef {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}
impl std::hash::Hash for ExternalRef {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.key().hash(h)
    }
}

impl Placement {
    /// Every kernel variant, then every proposal.
    pub(crate) fn all() -> Vec<Placement> {
        Variant::ALL
            .into_iter()
            .map(Placement::Kernel)
            .chain(Proposal::ALL.into_iter().map(Placement::Proposal))
            .collect()
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Placement::Kernel(v) => v.name(),
            Placement::Proposal(p) => p.name(),
            Placement::External(e) => e.external().0.name(),
        }
    }

    pub fn from_name(name: &str) -> Option<Placement> {
        Variant::from_name(name)
            .map(Placement::Kernel)
            .or_else(|| Proposal::from_name(name).map(Placement::Proposal))
    }

    /// Whether the starting counter can change the result.
    pub(crate) fn uses_counter(self) -> bool {
        match self {
            Placement::Kernel(v) => v.uses_counter(),
            Placement::Proposal(_) => false,
            Placement::External(e) => e.external().0.uses_counter(),
        }
    }

    pub(crate) fn is_proposal(self) -> bool {
        matches!(self, Placement::Proposal(_))
    }

    /// The kernel variant a scenario names (a proposal's scenario keeps the default variant,
    /// which then only matters for blk-mq `cpumap` maps).
    pub(super) fn variant(self) -> Variant {
        match self {
            Placement::Kernel(v) => v,
            Placement::Proposal(_) | Placement::External(_) => spec::DEFAULT_VARIANT,
        }
    }
}

impl Serialize for Placement {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Parse `a..b` (b excluded), `a..=b` or `n`.
pub fn parse_counters(text: &str) -> Result<Vec<u32>, SweepError> {
    let num = |s: &str| {
        s.trim()
            .parse::<u32>()
            .map_err(|_| SweepError(format!("counters {text:?}: {s:?} is not a number")))
    };
    let (lo, hi_excl) = if let Some((a, b)) = text.split_once("..=") {
        (num(a)?, u64::from(num(b)?) + 1)
    } else if let Some((a, b)) = text.split_once("..") {
        (num(a)?, u64::from(num(b)?))
    } else {
        let n = num(text)?;
        (n, u64::from(n) + 1)
    };
    if u64::from(lo) >= hi_excl {
        return err(format!("counters {text:?}: an empty range"));
    }
    if hi_excl - u64::from(lo) > u64::from(COUNTERS_MAX) {
        return err(format!("counters {text:?}: more than {COUNTERS_MAX} values"));
    }
    Ok((u64::from(lo)..hi_excl).map(|c| c as u32).collect())
}

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// Catalogue preset names, in output order.
    pub topologies: Vec<String>,
    pub mixes: Vec<Mix>,
    pub placements: Vec<Placement>,
    pub counters: Vec<u32>,
    pub sort: SortGen,
    pub effective: EffectiveModel,
    /// The kernel release every row is for (`--kernel`): its `irq_create_affinity_masks()`
    /// era, blk-mq mapper and vectors per CPU (with each machine's legacy PIC). `None`: the
    /// models' defaults.
    pub kernel: Option<String>,
    /// Worker threads (1 runs inline).
    pub threads: usize,
    /// The probe orders each row also stands for (`--orders`): with any but `Fixed`, every
    /// row carries the share of those orders, from its own counter start, in which the worst
    /// CPU is above the ideal ([`OrdersFigures`](super::OrdersFigures)).
    pub orders: Orders,
    /// Set by the caller when `all` was asked but would cost more than its budget, so a sample
    /// ran instead: the runs every order would have taken. The pages say so.
    pub sampled_for_budget: Option<u64>,
}

impl SweepConfig {
    /// The whole catalogue, the named mixes, every placement, counters 0..8.
    pub fn catalogue_default() -> SweepConfig {
        SweepConfig {
            topologies: catalogue::names().map(str::to_string).collect(),
            mixes: Mix::named(),
            placements: Placement::all(),
            counters: (0..8).collect(),
            sort: spec::DEFAULT_SORT,
            effective: spec::DEFAULT_EFFECTIVE,
            kernel: None,
            threads: 2,
            orders: Orders::Fixed,
            sampled_for_budget: None,
        }
    }

    /// Names separated by commas; `all` is the whole catalogue.
    pub fn parse_topologies(text: &str) -> Result<Vec<String>, SweepError> {
        if text.trim() == "all" {
            return Ok(catalogue::names().map(str::to_string).collect());
        }
        let names: Vec<String> = text
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        for n in &names {
            if catalogue::get(n).is_none() {
                return err(format!("unknown topology preset {n:?} (see `irqscope topology list`)"));
            }
        }
        if names.is_empty() {
            return err("no topologies given");
        }
        Ok(names)
    }

    /// Placement names separated by commas; `all` is every variant and proposal.
    pub fn parse_placements(text: &str) -> Result<Vec<Placement>, SweepError> {
        if text.trim() == "all" {
            return Ok(Placement::all());
        }
        let mut out = Vec::new();
        for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let p = Placement::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = Placement::all().iter().map(|p| p.name()).collect();
                SweepError(format!(
                    "unknown variant or proposal {name:?} (known: {})",
                    known.join(", ")
                ))
            })?;
            if !out.contains(&p) {
                out.push(p);
            }
        }
        if out.is_empty() {
            return err("no variants given");
        }
        Ok(out)
    }

    pub(super) fn rows(&self) -> usize {
        self.topologies.len() * self.mixes.len() * self.placements.len() * self.counters.len()
    }

    /// Scenario runs per machine and mix: every counter for a placement that uses it, one
    /// otherwise (as [`run`](super::run) schedules them).
    pub(crate) fn runs_per_base(&self) -> u64 {
        self.placements.iter().map(|p| self.runs_of(p)).sum()
    }

    /// Scenario runs per machine and mix of one placement: every counter when it uses the
    /// counter, one otherwise.
    pub(crate) fn runs_of(&self, placement: &Placement) -> u64 {
        if placement.uses_counter() {
            self.counters.len().max(1) as u64
        } else {
            1
        }
    }

    /// Rows the sweep gives (combinations, saturating).
    pub(crate) fn row_count(&self) -> u64 {
        [self.mixes.len(), self.placements.len(), self.counters.len()]
            .iter()
            .fold(self.topologies.len() as u64, |n, &k| n.saturating_mul(k as u64))
    }
}
