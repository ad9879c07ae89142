//! The seeds page (`/seeds`) as data: every figure of the five seed threads one click away,
//! each with the assumptions it needs stated beside it, its permalink and its command line.
//! The figures and their command lines are the ones `tests/it/seeds.rs` checks.

use super::blkmq::BlkMqQuery;
use super::mana::ManaQuery;
use super::sched::SchedQuery;
use super::{encode_link, ViewError};
use crate::render::columns::{command_block, words_of, wrap};
use crate::scenario::blkmq::BlkMqSpec;
use crate::scenario::mana::ManaSpec;
use crate::scenario::payloads::{CompareSpec, SideSpec};
use crate::scenario::sched::SchedSpec;
use crate::scenario::spec::{parse_device_token, ScenarioSpec, TopologyRef};
use std::sync::OnceLock;

pub struct SeedFigure {
    pub seed: &'static str,
    pub title: &'static str,
    /// What the figure needs to reproduce (variant, counter, model, pre-load …), in words.
    pub assumptions: &'static str,
    pub link: String,
    pub command: String,
    /// What the link opens, as the spec the page resolves (to know a page is a seed's).
    pub target: SeedTarget,
}

/// The spec a seed figure's link opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeedTarget {
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
pub fn seed_of(target: &SeedTarget) -> Option<&'static SeedFigure> {
    all().iter().find(|f| f.target == *target)
}

/// The seeds page.
pub struct SeedsView {
    pub title: String,
    pub figures: Vec<SeedFigure>,
}

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

/// One `simulate` figure: its `/s/…` permalink and command.
fn simulate(
    seed: &'static str,
    title: &'static str,
    assumptions: &'static str,
    (preset, devices, variant, effective, counter): (&str, &str, &str, &str, u32),
) -> Result<SeedFigure, ViewError> {
    let spec = scenario(preset, devices, variant, effective, counter)?;
    let mut command = format!("irqscope simulate {preset} {devices} --variant {variant} --effective {effective}");
    if counter != 0 {
        command.push_str(&format!(" --counter {counter}"));
    }
    Ok(SeedFigure {
        seed,
        title,
        assumptions,
        link: format!("/s/{}", encode_link(&spec)?),
        command,
        target: SeedTarget::Scenario(spec),
    })
}

/// Seed 000's figures: the NVMe disks on Azure's L-series and arm64 Dpds/Dplds, before and
/// after the rotation patch.
fn seed_000_figures() -> Result<Vec<SeedFigure>, ViewError> {
    let l96 = "azure-l96as-v4";
    Ok(vec![
        simulate(
            "000",
            "L96as v4, 6 NVMe x 62 queues: 28 CPUs (34-47,82-95) serve all 6 disks",
            "The code before the cluster patch: variant pre-cluster (the front page opens on cluster, \
             which gives another figure). x86 vector matrix.",
            (l96, "6x62:name=nvme,pre=1", "pre-cluster", "x86-matrix", 0),
        )?,
        simulate(
            "000",
            "L96as v4 after the rotation: max 4 disks on a CPU, all 96 CPUs used",
            "Variant rotation (the merged patch); rotation-v1r and rotation-ohcl give the same.",
            (l96, "6x62:name=nvme,pre=1", "rotation", "x86-matrix", 0),
        )?,
        simulate(
            "000",
            "L48s v2, 6 x 32: 32 vCPUs get 3 IRQs and 16 get 6",
            "Variant pre-cluster; x86.",
            ("azure-l48s-v2", "6x32:name=nvme,pre=1", "pre-cluster", "x86-matrix", 0),
        )?,
        simulate(
            "000",
            "L48s v2 with the v1 patch: 3 to 5 IRQs per vCPU",
            "Variant rotation-v1r: a reconstruction of the v1 rotation patch from the thread's \
             description (no v1 source was posted).",
            ("azure-l48s-v2", "6x32:name=nvme,pre=1", "rotation-v1r", "x86-matrix", 0),
        )?,
        simulate(
            "000",
            "D16plds v6 (arm64), 2 x 6: 6 vCPUs (0,3,6,9,12,14) get 2 IRQs each",
            "arm64: effective CPU first-cpu (the default for this preset). The preset's clusters \
             are SMT pairs. Variant pre-cluster.",
            ("azure-d16plds-v6", "2x6:name=nvme,pre=1", "pre-cluster", "first-cpu", 0),
        )?,
        simulate(
            "000",
            "D16plds v6 with the v1 patch: 4 vCPUs get 2, 4 get 1",
            "arm64 first-cpu; SMT-pair clusters; rotation-v1r is the reconstruction of v1.",
            (
                "azure-d16plds-v6",
                "2x6:name=nvme,pre=1",
                "rotation-v1r",
                "first-cpu",
                0,
            ),
        )?,
        simulate(
            "000",
            "D96plds v6, 6 x 14: 14 vCPUs take 6 IRQs each",
            "arm64 first-cpu; variant pre-cluster.",
            (
                "azure-d96plds-v6",
                "6x14:name=nvme,pre=1",
                "pre-cluster",
                "first-cpu",
                0,
            ),
        )?,
        simulate(
            "000",
            "D96plds v6 with the v1 patch: 26 vCPUs, 13 per node",
            "arm64 first-cpu; rotation-v1r (reconstruction) with the spread counter at 2 when \
             the disks probe (counter 2: two devices spread before them).",
            (
                "azure-d96plds-v6",
                "6x14:name=nvme,pre=1",
                "rotation-v1r",
                "first-cpu",
                2,
            ),
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
                      (the per-CPU loads are equal).",
        link: format!("/c/{}", encode_link(&cmp)?),
        command: "irqscope compare intel-core-ultra-7-265k 20:name=nvme0,pre=1 --a pre-cluster --b cluster".into(),
        target: SeedTarget::Compare(cmp),
    })
}

/// Every seed figure, seed by seed.
pub fn figures() -> Result<Vec<SeedFigure>, ViewError> {
    let mut out = seed_000_figures()?;
    out.push(SeedFigure {
        seed: "001",
        title: "MANA on a 4-vCPU SMT-2 guest: the IRQ tables before and after the low-vCPU patch",
        assumptions: "The pre-load --load 0,1,1,1: other interrupts already on vCPUs 1-3 when \
                      the NIC probes (without it both versions look alike).",
        link: "/mana?preset=azure-4vcpu-smt2&load=0,1,1,1".into(),
        command: "irqscope mana azure-4vcpu-smt2 --load 0,1,1,1".into(),
        target: SeedTarget::Mana(
            ManaQuery {
                preset: Some("azure-4vcpu-smt2".into()),
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
            assumptions: "The pair on node 1 of arm64-4node-diameter3; noise tasks as stated.",
            link: format!("/sched?preset=arm64-4node-diameter3&pair_node=1&noise={noise}"),
            command: format!("irqscope sched arm64-4node-diameter3 --pair-node 1 --noise {noise}"),
            target: SeedTarget::Sched(
                SchedQuery {
                    preset: Some("arm64-4node-diameter3".into()),
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
        assumptions: "All mapper generations side by side; legacy-v4.13 (fe631457) maps all 64.",
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

impl SeedsView {
    pub fn new() -> Result<SeedsView, ViewError> {
        Ok(SeedsView {
            title: "seed figures".into(),
            figures: figures()?,
        })
    }

    /// The text twin: each figure's sentence, its assumptions, the command that prints it and
    /// its link (absolute with `origin`), within 72 columns but for the link lines.
    pub fn text_report(&self, origin: &str) -> String {
        let mut out = String::from("irqscope: the seed threads' figures\n");
        for f in &self.figures {
            out.push('\n');
            out.push_str(&wrap(f.title, &format!("seed {}: ", f.seed), "  "));
            out.push_str(&wrap(f.assumptions, "  ", "  "));
            command_block(&words_of(&f.command), &mut out);
            out.push_str(&format!("{origin}{}\n", f.link));
        }
        out
    }

    /// The JSON twin: every figure with its link and command.
    pub fn json(&self) -> serde_json::Value {
        serde_json::Value::Array(
            self.figures
                .iter()
                .map(|f| {
                    serde_json::json!({
                        "seed": f.seed,
                        "title": f.title,
                        "assumptions": f.assumptions,
                        "link": f.link,
                        "command": f.command,
                    })
                })
                .collect(),
        )
    }
}
