//! Mail-ready text for the two models that are not `group_cpus_evenly`: the MANA driver's IRQ
//! set-up before and after the low-vCPU patch (seed 001), and the scheduler's NUMA imbalance
//! decision for a communicating pair under the three patch levels (seed 003).

use super::columns::{command_block, permalink_block, words_of, wrap};
use crate::kernel::mana::{ManaInput, ManaOutcome};
use crate::kernel::sched::{SchedInput, SchedOutcome, INTERPRETATION_NOTES};
use crate::scenario::mana::ManaRun;
use crate::scenario::sched::SchedRun;
use crate::topology::plural;
use std::fmt::Write;

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
}

fn mask(m: &Option<Vec<u32>>) -> String {
    match m {
        None => "default".into(),
        Some(cpus) => crate::topology::format_cpulist(&cpus.iter().copied().collect()),
    }
}

/// Unpatched beside patched: per IRQ the mask, the CPU it was requested on and where it fires.
/// The kernel code each MANA side is (text and JSON views).
pub(crate) const MANA_KERNEL_LINE: &str = "kernel: unpatched is gdma_main.c before \"net: mana: \
Optimize irq affinity for low vcpu configs\"; patched is that patch as posted (seed 001)";

/// The kernel code each sched variant is (text and JSON views).
pub(crate) const SCHED_KERNEL_LINE: &str = "kernel: upstream is kernel/sched/fair.c and topology.c as \
named from v6.10; p12 and p123 are proposed patches, in no release";

pub fn mana_report(input: &ManaInput, unpatched: &ManaOutcome, patched: &ManaOutcome) -> String {
    let mut out = String::new();
    let ncpu = input.cpu_node.len();
    let _ = writeln!(
        out,
        "MANA irq_setup: {ncpu} vCPUs, {} MSI-X, max_msix {}, device node {}",
        if input.mode == crate::kernel::mana::MsixMode::Dynamic {
            "dynamic"
        } else {
            "static"
        },
        input.max_msix,
        input.device_node
    );
    out.push_str(&wrap(MANA_KERNEL_LINE, "", "  "));
    out.push_str(&wrap(
        &list(&input.initial_vector_load),
        "vector load before probe: ",
        "  ",
    ));
    if let Some(aff) = &input.default_affinity {
        let _ = writeln!(out, "irqaffinity= {}", mask(&Some(aff.clone())));
    }
    setup_line(&mut out, "unpatched: ", unpatched);
    setup_line(&mut out, "patched:   ", patched);
    irq_table(unpatched, patched, &mut out);
    out.push('\n');
    // Long lists wrap under themselves; a short one is one line, as it always was.
    // Each pair of lines: the unpatched value under its label, the patched one below it.
    let mut both = |label: &str, value: fn(&ManaOutcome) -> String| {
        let cont = " ".repeat(label.len() + "unpatched: ".len());
        out.push_str(&wrap(&value(unpatched), &format!("{label}unpatched: "), &cont));
        out.push_str(&wrap(
            &value(patched),
            &format!("{}patched:   ", " ".repeat(label.len())),
            &cont,
        ));
    };
    both("effective CPUs   ", |o| list(&o.effective_cpus));
    both("queue IRQs/CPU   ", |o| {
        let v = &o.queue_irqs_per_cpu;
        let spread = v.iter().max().unwrap_or(&0) - v.iter().min().unwrap_or(&0);
        format!("{} (max-min {spread})", list(v))
    });
    both("vector load after ", |o| list(&o.final_vector_load));
    out
}

/// One side's setup: its IRQs and queues, the setup function and whether it skips the first CPU.
fn setup_line(out: &mut String, label: &str, o: &ManaOutcome) {
    let _ = writeln!(
        out,
        "{label}{} IRQ{} ({} queue{}), {}, skip_first_cpu {}",
        o.num_msix_usable,
        plural(o.num_msix_usable as usize),
        o.queue_irq_count,
        plural(o.queue_irq_count as usize),
        o.setup_fn.as_str(),
        o.skip_first_cpu
    );
}

/// Per IRQ, unpatched beside patched: its mask, the CPU it was requested on, where it fires.
fn irq_table(unpatched: &ManaOutcome, patched: &ManaOutcome, out: &mut String) {
    out.push('\n');
    out.push_str("              unpatched               patched\n");
    out.push_str("IRQ  type     mask       req  eff     mask       req  eff\n");
    for (u, p) in unpatched.irqs.iter().zip(&patched.irqs) {
        let kind = if u.index == 0 {
            "HWC".to_string()
        } else {
            format!("mana_q{}", u.index)
        };
        let _ = writeln!(
            out,
            "{:<4} {:<8} {:<10} {:>3}  {:>3}     {:<10} {:>3}  {:>3}",
            u.index,
            kind,
            mask(&u.affinity),
            u.request_cpu,
            u.effective_cpu,
            mask(&p.affinity),
            p.request_cpu,
            p.effective_cpu
        );
    }
}

/// Per variant: the one-line verdict, then every periodic decision that moves a task.
pub(crate) fn sched_report(input: &SchedInput, outcome: &SchedOutcome) -> String {
    let mut out = String::new();
    let n = input.node_distance.len();
    out.push_str(&wrap(
        &format!(
            "sched NUMA imbalance: {n} nodes, CPUs per node {}, SMT{}, distances {}",
            list(&input.cpus_per_node),
            input.smt,
            list(&outcome.topology.distances)
        ),
        "",
        "  ",
    ));
    out.push_str(&wrap(SCHED_KERNEL_LINE, "", "  "));
    let noise: u32 = input.nr_running.iter().sum::<u32>().saturating_sub(2);
    let _ = writeln!(
        out,
        "pair on CPUs {} and {}, {noise} other runnable task{}",
        input.pair_cpus[0],
        input.pair_cpus[1],
        if noise == 1 { "" } else { "s" }
    );
    out.push('\n');
    out.push_str("variant   periodic balance      fork/wake placement\n");
    for s in &outcome.summary {
        let _ = writeln!(
            out,
            "{:<9} {:<21} {}",
            s.variant.as_str(),
            if s.periodic_split {
                "SPLITS the pair"
            } else {
                "keeps the pair"
            },
            if s.fork_split {
                format!("splits (node {})", s.fork_final_node)
            } else {
                format!("keeps (node {})", s.fork_final_node)
            }
        );
    }
    for v in &outcome.variants {
        let splits: Vec<String> = v
            .periodic
            .iter()
            .flat_map(|node| node.levels.iter().map(move |l| (node.dst_node, l)))
            .filter(|(_, l)| l.result.split)
            .map(|(dst, l)| {
                format!(
                    "node {dst} pulls at level {} (distance {}): {} raw {} allowance {} imbalance {}",
                    l.level,
                    l.distance,
                    l.result.path.as_str(),
                    l.result.imbalance_raw,
                    l.result.allowance.map_or("-".into(), |a| a.to_string()),
                    l.result.imbalance
                )
            })
            .collect();
        if !splits.is_empty() {
            let _ = writeln!(out, "\n{} splits:", v.variant.as_str());
            for s in splits {
                out.push_str(&wrap(&s, "  ", "    "));
            }
        }
    }
    out.push_str("\nInterpretations (the patches are not public):\n");
    for note in INTERPRETATION_NOTES {
        out.push_str(&wrap(note, "  - ", "    "));
    }
    out
}

/// A CLI or twin report: the command that reproduces it (wrapped to 72 columns with shell
/// continuations), the report, and the link last on its own line when there is one.
pub fn with_command(command: &str, report: &str, url: Option<&str>) -> String {
    let mut out = String::new();
    command_block(&words_of(command), &mut out);
    out.push('\n');
    out.push_str(report);
    permalink_block(url, &mut out);
    out
}

/// The text twin of a MANA page (`/m/{p}/text`): the command line that reproduces it,
/// [`mana_report`], then its link.
pub(crate) fn mana_twin(command: &str, url: &str, run: &ManaRun) -> String {
    with_command(
        command,
        &mana_report(&run.input, &run.unpatched, &run.patched),
        Some(url),
    )
}

/// The text twin of a sched page (`/n/{p}/text`): the command line, [`sched_report`], then the
/// link.
pub(crate) fn sched_twin(command: &str, url: &str, run: &SchedRun) -> String {
    with_command(command, &sched_run_report(run), Some(url))
}

/// [`sched_report`] with what the model assumed of the machine first (when it came from one).
pub fn sched_run_report(run: &SchedRun) -> String {
    let mut out = String::new();
    if let Some(a) = &run.assumptions {
        out.push_str(&wrap(a, "", "  "));
    }
    out.push_str(&sched_report(&run.input, &run.outcome));
    out
}
