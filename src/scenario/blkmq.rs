//! The blk-mq scenario: one device's hardware queues mapped to CPUs by one or every
//! generation of the kernel's mapper (`kernel::blk_mq_cpumap`; seed 004: v4.10's mapper leaves
//! 28 of 64 queues without a CPU on a 72-CPU machine). [`BlkMqSpec`] is the input as data;
//! [`BlkMqSpec::resolve_with`] validates it once into a [`BlkMqScenario`], whose [`run`](BlkMqScenario::run)
//! maps the queues. `irqscope blk-mq` and the `/blkmq` page both go through here.

use super::mana::{resolve_topology, topology_label};
use super::spec::{
    parse_sort, parse_variant, shell_word, KernelCLookup, TopologyRef, DEFAULT_SORT, DEFAULT_VARIANT, KERNEL_C_PREFIX,
};
use super::{ScenarioError, VECTORS_PER_DEVICE_MAX};
use crate::kernel::blk_mq_cpumap::{blk_mq_map_queues_with, Mapper};
use crate::kernel::{External, KernelWarn, SortGen, Spreader, Variant};
use crate::topology::Topology;
use std::sync::Arc;

/// The machine and queue count the `/blkmq` page opens with (seed 004).
pub(crate) const BLKMQ_DEFAULT_PRESET: &str = "xeon-2s-18c-smt2";
pub(crate) const BLKMQ_DEFAULT_QUEUES: u32 = 64;

/// A blk-mq queue map request: which machine, how many queues from which offset, and which
/// mapper (`None`: every generation, oldest last, as the page shows them). `variant`, `sort`
/// and `counter` reach only the mappers that call `group_cpus_evenly`; each mapper starts from
/// the same counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlkMqSpec {
    pub topology: TopologyRef,
    pub queues: u32,
    pub mapper: Option<String>,
    pub queue_offset: u32,
    pub variant: String,
    pub sort: String,
    pub counter: u32,
    /// The kernel release named (`--kernel`): its mapper, variant and sort are the defaults
    /// the command line filled; the reports say which releases each map holds for.
    pub kernel: Option<String>,
}

impl BlkMqSpec {
    /// `queues` queues on `topology`, every mapper, every other field at its default.
    pub fn new(topology: TopologyRef, queues: u32) -> BlkMqSpec {
        BlkMqSpec {
            topology,
            queues,
            mapper: None,
            queue_offset: 0,
            variant: DEFAULT_VARIANT.name().into(),
            sort: DEFAULT_SORT.name().into(),
            counter: 0,
            kernel: None,
        }
    }

    /// Validate, looking presets up with `preset`; a `c:NAME` variant is refused
    /// ([`BlkMqSpec::resolve_with`] takes a lookup for built C).
    #[cfg(test)]
    pub(crate) fn resolve(
        &self,
        preset: impl Fn(&str) -> Option<Arc<Topology>>,
    ) -> Result<BlkMqScenario, ScenarioError> {
        self.resolve_with(preset, &super::spec::no_kernel_c)
    }

    /// Validate, looking presets up with `preset` and a `c:NAME` variant with `kernel_c`.
    pub(crate) fn resolve_with(
        &self,
        preset: impl Fn(&str) -> Option<Arc<Topology>>,
        kernel_c: KernelCLookup<'_>,
    ) -> Result<BlkMqScenario, ScenarioError> {
        let mappers = match self.mapper.as_deref() {
            None | Some("all") => Mapper::ALL.to_vec(),
            Some(name) => vec![Mapper::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = Mapper::ALL.iter().map(|m| m.name()).collect();
                ScenarioError(format!("unknown mapper {name:?} (known: {}, or all)", known.join(", ")))
            })?],
        };
        if !(1..=VECTORS_PER_DEVICE_MAX).contains(&self.queues) {
            return Err(ScenarioError(format!(
                "queues {}: 1 to {VECTORS_PER_DEVICE_MAX}",
                self.queues
            )));
        }
        if self.queue_offset > VECTORS_PER_DEVICE_MAX {
            return Err(ScenarioError(format!(
                "queue offset {}: 0 to {VECTORS_PER_DEVICE_MAX}",
                self.queue_offset
            )));
        }
        let external = match self.variant.strip_prefix(KERNEL_C_PREFIX) {
            Some(name) => Some(kernel_c(name, None)?),
            None => None,
        };
        Ok(BlkMqScenario {
            topology: resolve_topology(&self.topology, preset)?,
            variant: match external {
                Some(_) => DEFAULT_VARIANT,
                None => parse_variant(&self.variant)?,
            },
            external,
            sort: parse_sort(&self.sort)?,
            mappers,
            spec: self.clone(),
        })
    }
}

/// A validated blk-mq request.
#[derive(Debug, Clone)]
pub(crate) struct BlkMqScenario {
    pub(crate) spec: BlkMqSpec,
    pub(crate) topology: Arc<Topology>,
    pub(crate) mappers: Vec<Mapper>,
    pub(crate) variant: Variant,
    /// Built C answering `group_cpus_evenly` for a `c:NAME` variant.
    pub(crate) external: Option<External>,
    pub(crate) sort: SortGen,
}

/// One mapper's queue map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapperRun {
    pub(crate) mapper: Mapper,
    /// The queue each CPU id submits to; `None` for ids that are not possible.
    pub(crate) map: Vec<Option<u32>>,
    /// Queues of `queue_offset..queue_offset + queues` no CPU submits to.
    pub(crate) unmapped: Vec<u32>,
    pub(crate) warnings: Vec<KernelWarn>,
}

impl MapperRun {
    /// Queues with at least one CPU.
    pub(crate) fn mapped(&self, queues: u32) -> u32 {
        queues - self.unmapped.len() as u32
    }
}

impl BlkMqScenario {
    /// The variant's name: a model's, or `c:NAME`.
    pub(crate) fn variant_name(&self) -> &str {
        self.external.as_ref().map_or(self.variant.name(), |e| e.0.name())
    }

    /// Every requested mapper's map, in [`Mapper::ALL`] order; fails only when built C does.
    pub(crate) fn run(&self) -> Result<Vec<MapperRun>, ScenarioError> {
        let s = &self.spec;
        self.mappers
            .iter()
            .map(|&mapper| {
                let (mut counter, mut warnings) = (s.counter, Vec::new());
                let spreader = match &self.external {
                    Some(e) => Spreader::External(&*e.0),
                    None => Spreader::Model(self.variant, self.sort),
                };
                let all = crate::topology::CpuSet::full(self.topology.nr_cpu_ids());
                let boot = crate::kernel::BootMasks {
                    default_affinity: &all,
                    managed_irq: None,
                };
                let map = blk_mq_map_queues_with(
                    &self.topology,
                    mapper,
                    s.queues,
                    s.queue_offset,
                    spreader,
                    boot,
                    &mut counter,
                    &mut warnings,
                )
                .map_err(|e| ScenarioError(e.to_string()))?
                .map;
                // The v6.3 mapper's group_cpus_evenly() is the numgrps era's, which WARNs.
                let era = match mapper {
                    Mapper::V6_3 => crate::kernel::irq_affinity::AffinityEra::NumGrps,
                    _ => crate::kernel::irq_affinity::AffinityEra::NumMasks,
                };
                let warnings = warnings.into_iter().map(|w| w.for_era(era)).collect();
                let used: std::collections::BTreeSet<u32> = map.iter().flatten().copied().collect();
                let unmapped = (s.queue_offset..s.queue_offset + s.queues)
                    .filter(|q| !used.contains(q))
                    .collect();
                Ok(MapperRun {
                    mapper,
                    map,
                    unmapped,
                    warnings,
                })
            })
            .collect()
    }

    /// The `irqscope blk-mq …` command that prints `mapper`'s map, as words (an option with its
    /// value is one word); `machine` names the machine as the command line gave it.
    pub(crate) fn command_words(&self, mapper: Mapper, machine: &str) -> Vec<String> {
        let s = &self.spec;
        let mut words = vec![
            "irqscope".to_string(),
            "blk-mq".into(),
            shell_word(machine),
            format!("--queues {}", s.queues),
            format!("--mapper {}", mapper.name()),
            format!("--queue-offset {}", s.queue_offset),
        ];
        if let Some(k) = &s.kernel {
            words.push(format!("--kernel {}", shell_word(k)));
        }
        if mapper.uses_group_cpus() {
            words.push(format!("--variant {}", self.variant_name()));
            words.push(format!("--sort {}", self.sort.name()));
            words.push(format!("--counter {}", s.counter));
        }
        words
    }

    /// How a command line names this machine: the preset, or an edited machine's compact word.
    pub(crate) fn machine_label(&self) -> String {
        topology_label(&self.spec.topology)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue;

    /// Seed 004: on 72 CPUs (2 x 18 x 2) with 64 queues, v4.10's mapper leaves 28 queues
    /// without a CPU (the bug fe631457 fixed); v4.13's maps them all.
    #[test]
    fn seed_004_through_the_scenario() {
        let spec = BlkMqSpec::new(TopologyRef::Preset(BLKMQ_DEFAULT_PRESET.into()), 64);
        let runs = spec.resolve(catalogue::get).unwrap().run().unwrap();
        assert_eq!(runs.len(), Mapper::ALL.len());
        let of = |m: Mapper| runs.iter().find(|r| r.mapper == m).unwrap();
        assert_eq!(of(Mapper::LegacyV4_10).unmapped.len(), 28);
        assert!(of(Mapper::LegacyV4_13).unmapped.is_empty());
    }

    #[test]
    fn bad_requests_are_refused_with_the_field() {
        let mut spec = BlkMqSpec::new(TopologyRef::Preset(BLKMQ_DEFAULT_PRESET.into()), 0);
        assert!(spec.resolve(catalogue::get).unwrap_err().0.contains("queues 0"));
        spec.queues = 4;
        spec.mapper = Some("v9".into());
        assert!(spec.resolve(catalogue::get).unwrap_err().0.contains("unknown mapper"));
        spec.mapper = None;
        spec.topology = TopologyRef::Preset("nope".into());
        assert!(spec.resolve(catalogue::get).unwrap_err().0.contains("nope"));
    }
}
