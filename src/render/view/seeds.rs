//! The seeds page (`/seeds`) as data: every figure of the five seed threads one click away,
//! each with the assumptions it needs stated beside it, its permalink and its command line.
//! The figures and their command lines are the ones `tests/it/seeds.rs` checks.

use super::blkmq::BlkMqQuery;
use super::mana::ManaQuery;
use super::sched::SchedQuery;
use super::{encode_link, MachineQuery, ViewError};
use crate::render::columns::{command_block, words_of, wrap};
use crate::scenario::blkmq::BlkMqSpec;
use crate::scenario::mana::ManaSpec;
use crate::scenario::payloads::{CompareSpec, SideSpec};
use crate::scenario::sched::SchedSpec;
use crate::scenario::spec::{parse_device_token, ScenarioSpec, TopologyRef};
use crate::scenario::ProbeOrder;
use std::sync::OnceLock;

pub struct SeedFigure {
    pub(crate) seed: &'static str,
    pub(crate) title: &'static str,
    /// What the figure needs to reproduce (variant, counter, model, pre-load …), in words.
    pub(crate) assumptions: String,
    /// The spread counter's start and the probe order the figure needs, checked against the
    /// model by `tests/it/seeds.rs` (empty where no counter is involved).
    pub(crate) needs: String,
    pub link: String,
    pub(crate) command: String,
    /// What the link opens, as the spec the page resolves (to know a page is a seed's).
    pub(crate) target: SeedTarget,
}

/// The spec a seed figure's link opens. The figures are built once (a static list), so
/// the spread between the variants' sizes costs nothing worth a box.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum SeedTarget {
    Scenario(ScenarioSpec),
    Compare(CompareSpec),
    Mana(ManaSpec),
    Sched(SchedSpec),
    BlkMq(BlkMqSpec),
}

/// Every seed figure, built once.
fn all() -> &'static [SeedFigure] {
    static ALL: OnceLock<Vec<SeedFigure>> = OnceLock::new();
    ALL.get_or_init(|| figures().unwrap_or_default())
}

/// The seed figure whose link opens `target`, if one does: a page opened from a seed link
/// leads with the seed's own sentence.
pub(crate) fn seed_of(target: &SeedTarget) -> Option<&'static SeedFigure> {
    let target = without_newest_picks(target);
    all().iter().find(|f| without_newest_picks(&f.target) == target)
}

/// A target without the models the newest release picks when no kernel is named (a page's
/// query fills them in; a seed link written before they could be named leaves them out): the
/// same seed either way.
fn without_newest_picks(target: &SeedTarget) -> SeedTarget {
    let strip = |s: &ScenarioSpec| match s.kernel {
        Some(_) => s.clone(),
        None => ScenarioSpec {
            affinity: None,
            mapper: None,
            vectors_per_cpu: None,
            ..s.clone()
        },
    };
    match target {
        SeedTarget::Scenario(s) => SeedTarget::Scenario(strip(s)),
        SeedTarget::Compare(c) => SeedTarget::Compare(CompareSpec {
            scenario: strip(&c.scenario),
            ..c.clone()
        }),
        other => other.clone(),
    }
}

/// The seeds page.
pub struct SeedsView {
    pub(crate) title: String,
    pub figures: Vec<SeedFigure>,
    /// Seed 000's machines as distributions over probe orders and counter starts.
    pub distributions: &'static [SeedDistribution],
    /// What the threads measured that no model here computes, seed by seed.
    pub(crate) not_modelled: &'static [(&'static str, &'static str)],
}

/// The threads' measurements that the models do not produce: irqscope computes where
/// interrupts (and, for seed 003, two tasks) land, not I/O rates, CPU time or bandwidth. Each
/// is what the seed's figures above stand in for, quoted from the thread.
pub(crate) const NOT_MODELLED: &[(&str, &str)] = &[
    (
        "000",
        "fio 4K random reads over 6 NVMe disks on a 96-vCPU Hyper-V VM: the worst disk's \
         shortfall against the average went from 11% to 5% with the rotation, and the disks \
         that were behind gained 12% IOPS at 10% lower latency.",
    ),
    (
        "001",
        "%soft per vCPU (mpstat -P ALL 1) on the receiver, three passes before and after the \
         patch (38.85 0.03 24.89 24.65 against 15.42 15.85 14.99 14.51 in pass 1), and TCP \
         throughput in Gbps by connection count (7.73 before, 15.65 after at 20,480 \
         connections).",
    ),
    (
        "002",
        "fio with io_uring (QD 1, 4K random reads) IOPS by numjobs on the Core Ultra 7 265K: \
         about 8% lower with the cluster patch at 64 and 128 jobs (933K to 859K, 941K to \
         867K), level at fewer jobs.",
    ),
    (
        "003",
        "lmbench bw_pipe bandwidth in MB/s (about 1500 with the pair on one node, about 760 \
         split; about 1170 and 1484 with patches 1+2 and 1+2+3), how often the pair split \
         over runs (8/10, 4/10, 0/10), and 0-day's unixbench fstime -6.8% and fsdisk-w \
         -26.7% for the uncapped allowance. The model gives each balance decision, not \
         bandwidth or how often a run splits.",
    ),
    (
        "004",
        "fio IOPS on null_blk (72 jobs, iodepth 128) by block size, with submit_queues 72 \
         and 24, with and without fe631457 (4890.4K and 4723.5K reads at 512 bytes with 72 \
         queues).",
    ),
];

fn scenario(
    preset: &str,
    devices: &str,
    variant: &str,
    effective: &str,
    counter: u32,
) -> Result<ScenarioSpec, ViewError> {
    Ok(ScenarioSpec {
        variant: variant.into(),
        effective: effective.into(),
        spread_counter: counter,
        ..ScenarioSpec::new(TopologyRef::Preset(preset.into()), vec![parse_device_token(devices)?])
    })
}

/// One `simulate` figure's scenario: what the link and the command carry.
struct Run {
    preset: &'static str,
    devices: &'static str,
    variant: &'static str,
    effective: &'static str,
    counter: u32,
    probe: Option<ProbeOrder>,
}

impl Run {
    fn new(preset: &'static str, devices: &'static str, variant: &'static str, effective: &'static str) -> Run {
        Run {
            preset,
            devices,
            variant,
            effective,
            counter: 0,
            probe: None,
        }
    }
    fn counter(self, counter: u32) -> Run {
        Run { counter, ..self }
    }
    fn probe(self, probe: ProbeOrder) -> Run {
        Run {
            probe: Some(probe),
            ..self
        }
    }
}

/// One `simulate` figure: its `/s/…` permalink and command.
fn simulate(
    seed: &'static str,
    title: &'static str,
    assumptions: &str,
    needs: &str,
    run: Run,
) -> Result<SeedFigure, ViewError> {
    let spec = ScenarioSpec {
        probe: run.probe.map(|p| p.name().to_string()),
        ..scenario(run.preset, run.devices, run.variant, run.effective, run.counter)?
    };
    let mut command = format!(
        "irqscope simulate {} {} --variant {} --effective {}",
        run.preset, run.devices, run.variant, run.effective
    );
    if run.counter != 0 {
        command.push_str(&format!(" --counter {}", run.counter));
    }
    if let Some(p) = run.probe {
        command.push_str(&format!(" --probe {}", p.name()));
    }
    Ok(SeedFigure {
        seed,
        title,
        assumptions: assumptions.into(),
        needs: needs.into(),
        link: format!("/s/{}", encode_link(&spec)?),
        command,
        target: SeedTarget::Scenario(spec),
    })
}

/// What a variant that takes no counter value needs of the counter and the probe order.
const NO_COUNTER: &str = "Any counter start and probe order: this variant takes no counter value.";

/// The words on the v1 figures that need consecutive I/O offsets.
const V1_PROBE: &str = "Under rotation-v1 every group_cpus_evenly() call takes a counter value, the \
    one-group call of each NVMe controller's admin tag set (blk_mq_map_queues()) included. So the \
    controllers' I/O spreads get consecutive offsets only when the admin tag sets do not come \
    between them: parallel probing (every admin tag set first, as the NVMe driver's asynchronous \
    probe does) or no admin call at all; strictly sequential probing gives them c+1, c+3, c+5, \
    and so on.";

/// Seed 000's figures: the NVMe disks on Azure's L-series and arm64 Dpds/Dplds, before and
/// after the rotation patch.
fn seed_000_figures() -> Result<Vec<SeedFigure>, ViewError> {
    let mut out = seed_000_l_series()?;
    out.extend(seed_000_arm64()?);
    Ok(out)
}

/// Seed 000 on the x86 L-series (L96as v4, L48s v2).
fn seed_000_l_series() -> Result<Vec<SeedFigure>, ViewError> {
    let l96 = "azure-l96as-v4";
    Ok(vec![
        simulate(
            "000",
            "L96as v4, 6 NVMe x 62 queues: 28 CPUs (34-47,82-95) serve all 6 disks",
            "The code before the cluster patch: variant pre-cluster (the front page opens on cluster, \
             which gives another figure). x86 vector matrix.",
            NO_COUNTER,
            Run::new(l96, "6x62:name=nvme,pre=1", "pre-cluster", "x86-matrix"),
        )?,
        simulate(
            "000",
            "L96as v4 after the rotation: max 4 disks on a CPU, all 96 CPUs used; CPUs 0, 1, 2, 3 \
             and 47 serve 4 disks each",
            "Variant rotation, the newest revision of the proposed rotation patch (none of its \
             revisions is merged); rotation-v1, rotation-v1r and rotation-ohcl give the same \
             figure. x86 vector matrix.",
            "Max 4 disks and all 96 CPUs: any counter start. The posting's per-CPU examples (CPUs \
             0, 1, 2, 3 and 47 each serve 4 disks) need --counter 4: a start with start mod 24 \
             in 4-20 (at counter 0, CPUs 0 and 2 serve 3 disks).",
            Run::new(l96, "6x62:name=nvme,pre=1", "rotation", "x86-matrix").counter(4),
        )?,
        simulate(
            "000",
            "L48s v2, 6 x 32: 32 vCPUs get 3 IRQs and 16 get 6",
            "Variant pre-cluster; x86.",
            NO_COUNTER,
            Run::new("azure-l48s-v2", "6x32:name=nvme,pre=1", "pre-cluster", "x86-matrix"),
        )?,
        simulate(
            "000",
            "L48s v2 with the v1 patch: 3 to 5 IRQs per vCPU",
            "Variant rotation-v1: the v1 rotation patch as published (microsoft/OHCL-Linux-Kernel \
             e21bb8ee0b0b); rotation-v1r, the reconstruction from the thread's words, gives the \
             same figure. x86.",
            &format!(
                "{V1_PROBE} Parallel probing, any counter start (here 0: the admin tag sets take \
                 0-5, the disks 6-11). Strictly sequential probing gives 3 to 6 IRQs per vCPU \
                 at every start (next figure)."
            ),
            Run::new(
                "azure-l48s-v2",
                "6x32:name=nvme,pre=1,driver=nvme",
                "rotation-v1",
                "x86-matrix",
            )
            .probe(ProbeOrder::Parallel),
        )?,
        simulate(
            "000",
            "L48s v2 with the v1 patch, controllers probed strictly one after another: 3 to 6 IRQs \
             per vCPU (not the posted figure)",
            "Variant rotation-v1 (published v1 code); x86.",
            "Sequential probing: each admin tag set takes a counter value between two disks' \
             I/O spreads (offsets 1, 3, ..., 11 from counter 0); 3 to 6 IRQs per vCPU at every \
             counter start.",
            Run::new(
                "azure-l48s-v2",
                "6x32:name=nvme,pre=1,driver=nvme",
                "rotation-v1",
                "x86-matrix",
            )
            .probe(ProbeOrder::Sequential),
        )?,
    ])
}

/// Seed 000 on the arm64 D16plds v6 and D96plds v6.
fn seed_000_arm64() -> Result<Vec<SeedFigure>, ViewError> {
    Ok(vec![
        simulate(
            "000",
            "D16plds v6 (arm64), 2 x 6: 6 vCPUs (0,3,6,9,12,14) get 2 IRQs each",
            "arm64: effective CPU first-cpu (the default for this preset). One cluster of all 16 \
             vCPUs, no SMT. Variant pre-cluster.",
            NO_COUNTER,
            Run::new("azure-d16plds-v6", "2x6:name=nvme,pre=1", "pre-cluster", "first-cpu"),
        )?,
        simulate(
            "000",
            "D16plds v6 with the v1 patch: 4 vCPUs get 2, 4 get 1",
            "arm64 first-cpu; one cluster of all 16 vCPUs, no SMT; variant rotation-v1 (published \
             v1 code).",
            &format!(
                "{V1_PROBE} Consecutive offsets whose start s has s mod 6 in 0-3: here parallel \
                 probing from counter 0, the admin tag sets take 0-1 and the disks 2-3. Strictly \
                 sequential probing never gives this figure."
            ),
            Run::new(
                "azure-d16plds-v6",
                "2x6:name=nvme,pre=1,driver=nvme",
                "rotation-v1",
                "first-cpu",
            )
            .probe(ProbeOrder::Parallel),
        )?,
        simulate(
            "000",
            "D96plds v6, 6 x 14: 14 vCPUs take 6 IRQs each",
            "arm64 first-cpu; variant pre-cluster.",
            NO_COUNTER,
            Run::new("azure-d96plds-v6", "6x14:name=nvme,pre=1", "pre-cluster", "first-cpu"),
        )?,
        simulate(
            "000",
            "D96plds v6 with the v1 patch: 26 vCPUs, 13 per node",
            "arm64 first-cpu; variant rotation-v1 (published v1 code).",
            &format!(
                "{V1_PROBE} Consecutive offsets whose start s has s mod 7 in 2-6: here parallel \
                 probing from counter 0, the admin tag sets take 0-5 and the disks 6-11. Without \
                 admin calls that is counter 2 (two devices spread before the disks)."
            ),
            Run::new(
                "azure-d96plds-v6",
                "6x14:name=nvme,pre=1,driver=nvme",
                "rotation-v1",
                "first-cpu",
            )
            .probe(ProbeOrder::Parallel),
        )?,
    ])
}

/// Seed 002: the P-core permutation on the Core Ultra 7 265K, as a comparison.
fn seed_002_figure() -> Result<SeedFigure, ViewError> {
    let ultra = scenario(
        "intel-core-ultra-7-265k",
        "20:name=nvme0,pre=1",
        "pre-cluster",
        "x86-matrix",
        0,
    )?;
    let cmp = CompareSpec {
        scenario: ultra,
        a: SideSpec::default(),
        b: SideSpec {
            variant: Some("cluster".into()),
            ..SideSpec::default()
        },
    };
    Ok(SeedFigure {
        seed: "002",
        title: "Core Ultra 7 265K, IRQ-CPU 1:1: the cluster patch permutes the P-core queues \
                (queue 0..7 -> CPU 1,4,0,5,6,7,3,2)",
        assumptions: "pre-cluster against cluster; the per-vector table shows the permutation \
                      (the per-CPU loads are equal)."
            .into(),
        needs: NO_COUNTER.into(),
        link: format!("/c/{}", encode_link(&cmp)?),
        command: "irqscope compare intel-core-ultra-7-265k 20:name=nvme0,pre=1 --a pre-cluster --b cluster".into(),
        target: SeedTarget::Compare(cmp),
    })
}

/// Every seed figure, seed by seed.
pub(crate) fn figures() -> Result<Vec<SeedFigure>, ViewError> {
    let mut out = seed_000_figures()?;
    out.push(SeedFigure {
        seed: "001",
        title: "MANA on a 4-vCPU SMT-2 guest: the IRQ tables before and after the low-vCPU patch",
        assumptions: "The pre-load --load 0,1,1,1: other interrupts already on vCPUs 1-3 when \
                      the NIC probes. Without it the unpatched driver lands the five IRQs on \
                      0 1 2 1 2 and the patched one on 0 0 1 2 3. The thread is v3 of the patch; \
                      it landed as v5 in net in June 2026, commit 5316394b1752 \"net: mana: \
                      Optimize irq affinity for low vcpu configs\" (netdev/net): \
                      mana_irq_setup_linear() when the IRQs outnumber the online CPUs, the \
                      NUMA-aware path renamed mana_irq_setup_numa_aware(); the placement is \
                      v3's."
            .into(),
        needs: String::new(),
        link: "/mana?preset=azure-4vcpu-smt2&load=0,1,1,1".into(),
        command: "irqscope mana azure-4vcpu-smt2 --load 0,1,1,1".into(),
        target: SeedTarget::Mana(
            ManaQuery {
                machine: MachineQuery::preset("azure-4vcpu-smt2"),
                load: Some("0,1,1,1".into()),
                ..ManaQuery::default()
            }
            .spec()?,
        ),
    });
    out.push(seed_002_figure()?);
    for noise in ["0", "1", "2"] {
        out.push(SeedFigure {
            seed: "003",
            title: match noise {
                "0" => "Sched, 4 nodes at diameter 3: upstream splits the pair, p12 keeps it",
                "1" => "Sched with one noise task: p12 splits the pair, p123 keeps it",
                _ => "Sched with two noise tasks: only p123 keeps the pair",
            },
            assumptions: "The pair on node 1 of arm64-4node-diameter3; noise tasks as stated.".into(),
            needs: String::new(),
            link: format!("/sched?preset=arm64-4node-diameter3&pair_node=1&noise={noise}"),
            command: format!("irqscope sched arm64-4node-diameter3 --pair-node 1 --noise {noise}"),
            target: SeedTarget::Sched(
                SchedQuery {
                    machine: MachineQuery::preset("arm64-4node-diameter3"),
                    pair_node: Some("1".into()),
                    noise: Some(noise.into()),
                    ..SchedQuery::default()
                }
                .spec()?,
            ),
        });
    }
    out.push(SeedFigure {
        seed: "004",
        title: "72 CPUs (2 x 18 x 2), 64 queues: v4.10's mapper leaves 28 queues unmapped",
        assumptions: "All mapper generations side by side; legacy-v4.13 (fe631457) maps all 64.".into(),
        needs: String::new(),
        link: "/blkmq?preset=xeon-2s-18c-smt2&queues=64".into(),
        command: "irqscope blk-mq xeon-2s-18c-smt2 --queues 64 --mapper legacy-v4.10".into(),
        target: SeedTarget::BlkMq(
            BlkMqQuery {
                preset: Some("xeon-2s-18c-smt2".into()),
                queues: Some(64),
                ..BlkMqQuery::default()
            }
            .spec(),
        ),
    });
    Ok(out)
}

/// The claim seed 000's posting makes for the rotation: "no CPU serves more than 4 disks".
pub const CLAIM_DEVICES_PER_CPU_MAX: u32 = 4;

/// Counter starts the distributions run: `0..=SEED_COUNTER_TO`, the values up to 23 that
/// earlier `group_cpus_evenly()` callers may leave (a whole period of the L96as v4's 24).
pub const SEED_COUNTER_TO: u32 = 23;

/// One of seed 000's machines under one rotation revision, as a distribution over every
/// probe order of its disks and counter starts `0..=SEED_COUNTER_TO`.
#[derive(Debug, Clone)]
pub struct SeedDistribution {
    /// "L96as v4, 6 x 62" (the posting's machine), or one of Michael Kelley's three.
    pub machine: &'static str,
    pub variant: &'static str,
    /// Orders × counter starts it stands for (every order of identical disks counted).
    pub runs: u64,
    /// Runs in which no CPU serves more than [`CLAIM_DEVICES_PER_CPU_MAX`] disks.
    pub claim_runs: u64,
    /// The worst CPU's IRQs → runs, and the ideal worst-CPU load.
    pub worst_irqs_per_cpu: std::collections::BTreeMap<u32, u64>,
    /// The most disks on one CPU → runs.
    pub(crate) worst_devices_per_cpu: std::collections::BTreeMap<u32, u64>,
    pub(crate) ideal_irqs_per_cpu: u32,
    pub link: String,
    pub(crate) command: String,
}

impl SeedDistribution {
    /// The share of runs in which the claim holds, in percent.
    pub fn claim_percent(&self) -> f64 {
        100.0 * self.claim_runs as f64 / self.runs.max(1) as f64
    }

    /// "4 IRQs 75.0%, 5 IRQs 25.0%": the worst CPU's load by share of runs.
    pub(crate) fn worst_irqs_line(&self) -> String {
        share_line(&self.worst_irqs_per_cpu, self.runs, "IRQs")
    }

    /// "3 disks 50.0%, 4 disks 50.0%".
    pub(crate) fn worst_devices_line(&self) -> String {
        share_line(&self.worst_devices_per_cpu, self.runs, "disks")
    }
}

fn share_line(h: &std::collections::BTreeMap<u32, u64>, runs: u64, unit: &str) -> String {
    h.iter()
        .map(|(k, n)| format!("{k} {unit} {:.1}%", 100.0 * *n as f64 / runs.max(1) as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Seed 000's posting machine and Michael Kelley's three configurations: (machine, preset,
/// disks, effective model, probed in parallel with their admin tag sets).
pub const SEED_000_MACHINES: [(&str, &str, &str, &str, bool); 4] = [
    (
        "L96as v4, 6 x 62",
        "azure-l96as-v4",
        "6x62:name=nvme,pre=1",
        "x86-matrix",
        false,
    ),
    (
        "L48s v2, 6 x 32",
        "azure-l48s-v2",
        "6x32:name=nvme,pre=1,driver=nvme",
        "x86-matrix",
        true,
    ),
    (
        "D16plds v6, 2 x 6",
        "azure-d16plds-v6",
        "2x6:name=nvme,pre=1,driver=nvme",
        "first-cpu",
        true,
    ),
    (
        "D96plds v6, 6 x 14",
        "azure-d96plds-v6",
        "6x14:name=nvme,pre=1,driver=nvme",
        "first-cpu",
        true,
    ),
];

/// The rotation revisions the distributions run under.
pub const ROTATION_REVISIONS: [&str; 2] = ["rotation", "rotation-v1"];

/// Every seed-000 distribution, computed once.
fn seed_000_distributions() -> Result<&'static [SeedDistribution], ViewError> {
    static ALL: OnceLock<Result<Vec<SeedDistribution>, String>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut out = Vec::new();
        for (machine, preset, disks, effective, parallel) in SEED_000_MACHINES {
            for variant in ROTATION_REVISIONS {
                out.push(
                    seed_distribution(machine, preset, disks, effective, parallel, variant)
                        .map_err(|e| format!("{e:?}"))?,
                );
            }
        }
        Ok(out)
    })
    .as_deref()
    .map_err(|e| ViewError::Internal(e.clone()))
}

fn seed_distribution(
    machine: &'static str,
    preset: &str,
    disks: &str,
    effective: &str,
    parallel: bool,
    variant: &'static str,
) -> Result<SeedDistribution, ViewError> {
    use crate::analysis::orders::{distribution, CounterRange, Orders};
    let spec = ScenarioSpec {
        probe: parallel.then(|| ProbeOrder::Parallel.name().to_string()),
        orders: Some("all".into()),
        counter_to: Some(SEED_COUNTER_TO),
        ..scenario(preset, disks, variant, effective, 0)?
    };
    let s = spec
        .resolve(crate::catalogue::get)
        .map_err(|e| ViewError::Internal(e.to_string()))?;
    let counters = CounterRange {
        from: 0,
        to: SEED_COUNTER_TO,
    };
    let d = distribution(&s, Orders::All, counters).map_err(|e| ViewError::Internal(e.to_string()))?;
    let claim_runs = d
        .worst_devices_per_cpu
        .iter()
        .filter(|(&k, _)| k <= CLAIM_DEVICES_PER_CPU_MAX)
        .map(|(_, n)| n)
        .sum();
    let mut command = format!(
        "irqscope simulate {preset} {disks} --variant {variant} --effective {effective} --orders all \
         --counter 0..{SEED_COUNTER_TO}"
    );
    if parallel {
        command.push_str(" --probe parallel");
    }
    Ok(SeedDistribution {
        machine,
        variant,
        runs: d.runs,
        claim_runs,
        worst_irqs_per_cpu: d.worst_irqs_per_cpu,
        worst_devices_per_cpu: d.worst_devices_per_cpu,
        ideal_irqs_per_cpu: d.ideal_irqs_per_cpu,
        link: format!("/s/{}", encode_link(&spec)?),
        command,
    })
}

impl SeedsView {
    /// The last counter start the distributions run.
    pub(crate) fn counter_to(&self) -> u32 {
        SEED_COUNTER_TO
    }

    pub fn new() -> Result<SeedsView, ViewError> {
        Ok(SeedsView {
            title: "seed figures".into(),
            figures: figures()?,
            distributions: seed_000_distributions()?,
            not_modelled: NOT_MODELLED,
        })
    }

    /// The text twin: each figure's sentence, its assumptions, the command that prints it and
    /// its link (absolute with `origin`), within 72 columns but for the link lines.
    pub fn text_report(&self, origin: &str) -> String {
        let mut out = String::from("irqscope: the seed threads' figures\n");
        for f in &self.figures {
            out.push('\n');
            out.push_str(&wrap(f.title, &format!("seed {}: ", f.seed), "  "));
            out.push_str(&wrap(&f.assumptions, "  ", "  "));
            if !f.needs.is_empty() {
                out.push_str(&wrap(&f.needs, "  counter and probe order: ", "  "));
            }
            command_block(&words_of(&f.command), &mut out);
            out.push_str(&format!("{origin}{}\n", f.link));
        }
        out.push_str(&format!(
            "\nSeed 000 as distributions: every probe order of the disks and\n\
             counter starts 0..{SEED_COUNTER_TO}; the claim: no CPU serves more than {CLAIM_DEVICES_PER_CPU_MAX} disks\n"
        ));
        for d in self.distributions {
            out.push('\n');
            let line = format!(
                "{} under {}: the claim holds in {:.1}% of {} runs",
                d.machine,
                d.variant,
                d.claim_percent(),
                d.runs
            );
            out.push_str(&wrap(&line, "", "  "));
            out.push_str(&wrap(
                &d.worst_irqs_line(),
                &format!("  worst CPU (ideal {} IRQs): ", d.ideal_irqs_per_cpu),
                "    ",
            ));
            out.push_str(&wrap(&d.worst_devices_line(), "  most disks on a CPU: ", "    "));
            command_block(&words_of(&d.command), &mut out);
            out.push_str(&format!("{origin}{}\n", d.link));
        }
        out.push_str("\nMeasured in the threads, not modelled\n");
        for (seed, what) in self.not_modelled {
            out.push_str(&wrap(what, &format!("  seed {seed}: "), "    "));
        }
        out
    }

    /// The JSON twin: every figure with its link and command, and what its seed's thread
    /// measured that is not modelled (`not_modelled`).
    pub fn json(&self) -> serde_json::Value {
        serde_json::Value::Array(
            self.figures
                .iter()
                .map(|f| {
                    serde_json::json!({
                        "seed": f.seed,
                        "title": f.title,
                        "assumptions": f.assumptions,
                        "needs": f.needs,
                        "link": f.link,
                        "command": f.command,
                        "not_modelled": self
                            .not_modelled
                            .iter()
                            .filter(|(seed, _)| *seed == f.seed)
                            .map(|(_, what)| *what)
                            .collect::<Vec<_>>(),
                    })
                })
                .chain(self.distributions.iter().map(|d| {
                    let hist = |h: &std::collections::BTreeMap<u32, u64>| -> serde_json::Value {
                        h.iter().map(|(k, n)| (k.to_string(), serde_json::json!(n))).collect()
                    };
                    serde_json::json!({
                        "seed": "000",
                        "title": format!("{} under {} over every probe order and counter starts 0..{SEED_COUNTER_TO}", d.machine, d.variant),
                        "link": d.link,
                        "command": d.command,
                        "distribution": {
                            "machine": d.machine,
                            "variant": d.variant,
                            "runs": d.runs,
                            "claim": format!("no CPU serves more than {CLAIM_DEVICES_PER_CPU_MAX} disks"),
                            "claim_runs": d.claim_runs,
                            "claim_share": d.claim_runs as f64 / d.runs.max(1) as f64,
                            "ideal_irqs_per_cpu": d.ideal_irqs_per_cpu,
                            "worst_irqs_per_cpu": hist(&d.worst_irqs_per_cpu),
                            "worst_devices_per_cpu": hist(&d.worst_devices_per_cpu),
                        },
                    })
                }))
                .collect(),
        )
    }
}
