//! The lines that say what an answer assumes: which kernel releases it holds for, how the
//! kernel sees the machine where that differs from the drawing, which variant ran, and which
//! effective-CPU model with which interrupt controller. Every report prints them beside its
//! figures.

use crate::kernel::vector_matrix::EffectiveModel;
use crate::scenario::kernel::Holds;
use crate::scenario::Scenario;
use crate::topology::{cut_cpulist, Arch, Irqchip, Topology};

/// Longest kernel-range line: it follows a 10-column label ("kernel:   ") in 72-column text.
const RANGE_LINE_CHARS_MAX: usize = 62;

/// "holds for v7.0 .. (set by cluster)", "v6.12: holds for v6.11 .. v6.16 (set by heap-v6.11,
/// numgrps)", "no release: rotation is a proposed patch": the kernel releases whose code gives
/// this answer, in one line of at most [`RANGE_LINE_CHARS_MAX`] characters
/// (`scenario::kernel::holds_for`). A release named and outside the range reads "not v6.12: …".
pub fn range_line(h: &Holds) -> String {
    if let Some(b) = &h.built {
        return built_line(b);
    }
    let release = h
        .kernel
        .as_deref()
        .and_then(crate::kernel::release::parse_release)
        .map(|(a, b)| format!("v{a}.{b}"));
    let named = release.as_ref().map(|r| format!("{r}: ")).unwrap_or_default();
    if let Some(why) = &h.not_upstream {
        return format!("{named}no release: {why}");
    }
    if h.ranges.is_empty() {
        // Two models no release runs together, named with their ranges.
        for (i, a) in h.bounds.iter().enumerate() {
            for b in &h.bounds[i + 1..] {
                let meet = a
                    .ranges
                    .iter()
                    .any(|x| b.ranges.iter().any(|y| x.intersect(y).is_some()));
                if !meet {
                    return format!(
                        "{named}no release: {} ({}) with {} ({})",
                        a.what,
                        ranges_text(&a.ranges),
                        b.what,
                        ranges_text(&b.ranges)
                    );
                }
            }
        }
        return format!("{named}no release runs these models together");
    }
    let named = match (&release, h.names_a_release_in_range()) {
        (Some(r), Some(false)) => format!("not {r}: "),
        _ => named,
    };
    let line = format!("{named}holds for {}", ranges_text(&h.ranges));
    let binding = h.binding();
    // As many of the models that set the ends as fit.
    for n in (1..=binding.len()).rev() {
        let with = format!("{line} (set by {})", binding[..n].join(", "));
        if with.chars().count() <= RANGE_LINE_CHARS_MAX {
            return with;
        }
    }
    line
}

/// "7.2.13 tree + 2 patches (SUBJECT; SUBJECT), built C": what a `c:NAME` answer holds for, the
/// tree's version and the patches on it, in at most [`RANGE_LINE_CHARS_MAX`] characters (the
/// subjects cut with "…" where they do not fit; the JSON twin has them whole).
fn built_line(b: &crate::scenario::kernel::Built) -> String {
    let tree = match &b.version {
        Some(v) => format!("{v} tree"),
        None => "a tree of unknown version".to_string(),
    };
    if b.patches.is_empty() {
        return format!("{tree}, built C");
    }
    let n = b.patches.len();
    let head = format!("{tree} + {n} {}", if n == 1 { "patch" } else { "patches" });
    let tail = ", built C";
    let subjects = b.patches.join("; ");
    let room = RANGE_LINE_CHARS_MAX.saturating_sub(head.chars().count() + tail.chars().count() + 3);
    if room < 2 {
        return format!("{head}{tail}");
    }
    let shown = if subjects.chars().count() <= room {
        subjects
    } else {
        let cut: String = subjects.chars().take(room - 1).collect();
        format!("{}…", cut.trim_end())
    };
    format!("{head} ({shown}){tail}")
}

/// Ranges joined ("v6.3 .. v6.7 and v6.10 .."), "no release" when there are none.
fn ranges_text(ranges: &[crate::kernel::release::Range]) -> String {
    if ranges.is_empty() {
        return "in no release".into();
    }
    ranges.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(" and ")
}

/// The range line and its parts as JSON: the release named, the ranges, each model's own.
pub fn range_json(h: &Holds) -> serde_json::Value {
    let texts = |rs: &[crate::kernel::release::Range]| rs.iter().map(|r| r.to_string()).collect::<Vec<_>>();
    let mut v = serde_json::json!({
        "named": h.kernel,
        "holds_for": texts(&h.ranges),
        "models": h.bounds.iter().map(|b| serde_json::json!({
            "model": b.what, "holds_for": texts(&b.ranges),
        })).collect::<Vec<_>>(),
        "not_upstream": h.not_upstream,
        "line": range_line(h),
    });
    // Only built C's answers carry what was built (the fields of a model's answer are as
    // they were).
    if let Some(b) = &h.built {
        v["built"] = serde_json::json!({"variant": b.name, "version": b.version, "patches": b.patches});
    }
    v
}

/// Where the kernel's view of the machine differs from the drawing, one sentence: "CPUs
/// 36-71 offline: x86 gives them empty SMT and cluster masks; their siblings see them as
/// absent". `None` when every CPU's masks are as drawn. Long cpulists are cut with their count.
pub(crate) fn view_line(topo: &Topology) -> Option<String> {
    let (down, up) = topo.view_differs();
    if down.is_empty() {
        return (!up.is_empty()).then(|| {
            format!(
                "CPUs {}: arm64 links SMT siblings only inside their cluster and package, \
                 so their kernel masks are narrower than drawn",
                cut_cpulist(&up)
            )
        });
    }
    let mut who = Vec::new();
    let offline = down.and(topo.present());
    if !offline.is_empty() {
        who.push(format!("{} offline", cut_cpulist(&offline)));
    }
    let absent = down.andnot(topo.present());
    if !absent.is_empty() {
        who.push(format!("{} not present", cut_cpulist(&absent)));
    }
    let masks = match topo.arch() {
        Arch::X86_64 => "x86 gives them empty SMT and cluster masks",
        Arch::Arm64 => "arm64 gives each SMT and cluster masks of itself alone",
    };
    let siblings = if up.is_empty() {
        ""
    } else {
        "; their siblings see them as absent"
    };
    Some(format!("CPUs {}: {masks}{siblings}", who.join(" and ")))
}

/// "CPUs 0-7 drawn without a cluster: x86 gives each its SMT siblings as its cluster
/// mask (…)": what the kernel has where the drawing has no cluster.
fn unclustered_line(topo: &Topology) -> Option<String> {
    let cpus = topo.unclustered();
    if cpus.is_empty() {
        return None;
    }
    let how = match topo.arch() {
        Arch::X86_64 => {
            "x86 gives each its SMT siblings as its cluster mask (cpu_l2c_shared_mask \
             without L2 information)"
        }
        Arch::Arm64 => "arm64 gives each a cluster mask of itself alone (cluster_id -1)",
    };
    Some(format!("CPUs {} drawn without a cluster: {how}", cut_cpulist(&cpus)))
}

/// What the page, the text report and the JSON answer say about the machine itself: the
/// kernel's view where it differs from the drawing, the cluster masks of CPUs drawn without
/// one, then clusters that split SMT sets.
pub(crate) fn machine_notes(topo: &Topology) -> Vec<String> {
    view_line(topo)
        .into_iter()
        .chain(unclustered_line(topo))
        .chain(topo.cluster_split_warning().map(|w| format!("warning: {w}")))
        .collect()
}

/// "variant rotation-v1r: RECONSTRUCTION of …": every view names the code it ran.
pub(crate) fn variant_line(scenario: &Scenario) -> String {
    format!("variant {}: {}", scenario.variant_name(), scenario.variant_describe())
}

/// What the machine's interrupt controller does to pick the one CPU a vector fires on.
fn effective_reason(chip: Irqchip) -> &'static str {
    match chip {
        Irqchip::Apic => "the x86 vector matrix picks the least-loaded CPU of each mask",
        Irqchip::GicIts => {
            "the GICv3 ITS driver puts each vector on the least-loaded online CPU when it is \
             allocated, then on the least-loaded CPU of its mask when it is requested"
        }
        Irqchip::GicV2m | Irqchip::GicSpi => "the GIC fires each SPI on the first CPU of its mask",
        Irqchip::GicV5 => "the GICv5 driver fires each SPI and LPI on the first online CPU of its mask",
    }
}

/// "effective CPU: first-cpu (arm64 preset: …)": which effective-CPU model a scenario ran and
/// why. The machine's controller gives the default; `preset` says whether the machine is a
/// preset (for the words); `named` says the link or the query named the model, so no default
/// was involved.
pub(crate) fn effective_line(model: EffectiveModel, topology: &Topology, preset: bool, named: bool) -> String {
    let (default, _) = crate::catalogue::default_effective(topology);
    let chip = topology.irqchip();
    let arch = topology.arch().name();
    let machine = if preset {
        format!("this {arch} preset ({})", chip.name())
    } else {
        format!("this {arch} machine ({})", chip.name())
    };
    let why = match (named, preset) {
        (false, true) => format!("{arch} preset, {}: {}", chip.name(), effective_reason(chip)),
        (false, false) => format!(
            "edited machine, {arch} with {}: {}",
            chip.name(),
            effective_reason(chip)
        ),
        (true, _) if model == default => format!("named in the link; also the default for {machine}"),
        (true, _) => format!(
            "named in the link; with none named, {machine} would use {}",
            default.name()
        ),
    };
    format!("effective CPU: {} ({why})", model.name())
}

/// The text report's line on the interrupt controller, as the page's effective line says it:
/// "gic-its on arm64, so arm64-its: the GICv3 ITS driver puts each vector …", or, when the
/// scenario names another model, the one the controller implies and the one named.
pub(crate) fn irqchip_line(model: EffectiveModel, topology: &Topology) -> String {
    let (default, _) = crate::catalogue::default_effective(topology);
    let chip = topology.irqchip();
    let arch = topology.arch().name();
    if model == default {
        format!(
            "{} on {arch}, so {}: {}",
            chip.name(),
            model.name(),
            effective_reason(chip)
        )
    } else {
        format!(
            "{} on {arch} implies {} ({}); this scenario names {}",
            chip.name(),
            default.name(),
            effective_reason(chip),
            model.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(text: &str) -> Topology {
        Topology::new(&toml::from_str(text).unwrap()).unwrap()
    }

    /// The view sentence names who differs and why, per architecture; nothing when the kernel
    /// sees the machine as drawn.
    #[test]
    fn view_line_says_where_the_kernel_sees_another_machine() {
        let base = "name = \"t\"\nnodes = [\"0-7\"]\nsmt = [\"0-1\", \"2-3\", \"4-5\", \"6-7\"]\n";
        assert_eq!(view_line(&machine(base)), None);
        // Drawn without clusters: the kernel's cluster masks are the SMT siblings on x86 and
        // each CPU alone on arm64; a drawing with clusters has no such note.
        assert_eq!(
            machine_notes(&machine(base)),
            [
                "CPUs 0-7 drawn without a cluster: x86 gives each its SMT siblings as its cluster \
              mask (cpu_l2c_shared_mask without L2 information)"
            ]
        );
        let t = machine(&format!("{base}arch = \"arm64\"\n"));
        assert_eq!(
            (t.cluster(2).to_cpulist(), machine(base).cluster(2).to_cpulist()),
            ("2".into(), "2-3".into())
        );
        assert!(machine_notes(&t)[0].ends_with("arm64 gives each a cluster mask of itself alone (cluster_id -1)"));
        assert!(machine_notes(&machine(&format!("{base}clusters = [\"0-3\", \"4-7\"]\n"))).is_empty());
        let t = machine(&format!("{base}present = \"0-5\"\nonline = \"0-2\"\n"));
        assert_eq!(
            view_line(&t).unwrap(),
            "CPUs 3-5 offline and 6-7 not present: x86 gives them empty SMT and cluster masks; \
             their siblings see them as absent"
        );
        let t = machine(&format!("{base}online = \"0,2,4,6\"\narch = \"arm64\"\n"));
        assert_eq!(
            view_line(&t).unwrap(),
            "CPUs 1,3,5,7 offline: arm64 gives each SMT and cluster masks of itself alone; \
             their siblings see them as absent"
        );
        // Not present, with no online sibling: nobody sees them go.
        let t =
            machine("name = \"t\"\nnodes = [\"0-7\"]\nsmt = [\"0-1\", \"2-3\", \"4-5\", \"6-7\"]\npresent = \"0-3\"\n");
        assert_eq!(
            view_line(&t).unwrap(),
            "CPUs 4-7 not present: x86 gives them empty SMT and cluster masks"
        );
        // arm64, all online, a cluster splitting a core: only the online CPUs' masks narrow.
        let t = machine(&format!("{base}clusters = [\"0\", \"1-7\"]\narch = \"arm64\"\n"));
        assert_eq!(
            view_line(&t).unwrap(),
            "CPUs 0-1: arm64 links SMT siblings only inside their cluster and package, so their \
             kernel masks are narrower than drawn"
        );
        assert_eq!(machine_notes(&t).len(), 2);
        assert!(machine_notes(&t)[1].starts_with("warning: cluster 0 splits SMT siblings 0-1; cluster 1-7 splits"));
    }

    /// On a large machine the lists are cut with their count, and the split warning names at
    /// most three splits.
    #[test]
    fn machine_notes_fold_on_large_machines() {
        let t = Topology::new(&crate::topology::TopologySpec {
            name: "big".into(),
            nodes: Some(vec!["0-4095".into()]),
            smt: (0..2048).map(|k| format!("{}-{}", 2 * k, 2 * k + 1)).collect(),
            clusters: ["0", "1-2", "3-4", "5-6", "7-8"].map(String::from).to_vec(),
            online: Some("0-4095:1/2".into()),
            ..Default::default()
        })
        .unwrap();
        let notes = machine_notes(&t);
        assert_eq!(
            notes[0],
            "CPUs 1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,… (2048 CPUs) offline: x86 gives them empty SMT \
             and cluster masks; their siblings see them as absent"
        );
        assert!(notes[1].starts_with("CPUs 10,12,14,"), "{}", notes[1]);
        assert!(notes[1].contains("(2043 CPUs) drawn without a cluster"), "{}", notes[1]);
        assert!(
            notes[2].contains("cluster 1-2 splits SMT siblings 2-3; 6 more splits: the kernel accepts"),
            "{}",
            notes[2]
        );
        for n in &notes {
            assert!(n.chars().count() < 400, "{n}");
        }
    }

    /// The line says which model ran and why, in each of the three cases the pages meet.
    #[test]
    fn effective_line_names_the_reason() {
        use EffectiveModel::{Arm64Its, FirstCpu, X86Matrix};
        let is: Check = |line, want| line == want;
        let starts: Check = |line, want| line.starts_with(want);
        let ends: Check = |line, want| line.ends_with(want);
        let holds: Check = |line, want| line.contains(want);
        // The model, the preset, whether it is unedited, whether the link names the model, and
        // what the line must be (or start with, end with, hold).
        let cases: [(EffectiveModel, &str, bool, bool, Check, &str); 7] = [
            (
                FirstCpu,
                "azure-d16plds-v6",
                true,
                false,
                is,
                "effective CPU: first-cpu (arm64 preset, gic-spi: the GIC fires each SPI on the first CPU of its mask)",
            ),
            (X86Matrix, "azure-l96as-v4", true, false, starts, "effective CPU: x86-matrix (x86_64 preset, apic: "),
            (X86Matrix, "azure-l96as-v4", false, false, holds, "(edited machine, x86_64 with apic: "),
            (
                X86Matrix,
                "azure-d16plds-v6",
                true,
                true,
                is,
                "effective CPU: x86-matrix (named in the link; with none named, this arm64 preset (gic-spi) would use first-cpu)",
            ),
            (
                Arm64Its,
                "graviton3-64c",
                true,
                true,
                ends,
                "(named in the link; also the default for this arm64 preset (gic-its))",
            ),
            // An old link that named first-cpu on an ITS preset keeps it, and says what the
            // machine would run today.
            (
                FirstCpu,
                "graviton3-64c",
                true,
                true,
                ends,
                "with none named, this arm64 preset (gic-its) would use arm64-its)",
            ),
            (Arm64Its, "graviton3-64c", true, false, holds, "least-loaded CPU of its mask"),
        ];
        for (model, preset, unedited, named, check, want) in cases {
            let topo = crate::catalogue::get(preset).unwrap();
            let line = effective_line(model, &topo, unedited, named);
            assert!(check(&line, want), "{preset}, {line:?} against {want:?}");
        }
    }

    /// How a test's line is held against what it wants.
    type Check = fn(&str, &str) -> bool;
}
