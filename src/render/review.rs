//! A patch review as data (`irqscope review`, `/r/<id>`): what the `review` room finds, the
//! JSON it writes, and the mail reply made from it: 72 columns (bare URL lines aside),
//! quoting the subject, a one-paragraph verdict, the machines that changed most with
//! before/after figures, the shrunk worst case as per-CPU counts, the permalinks and the
//! command that makes the review again.

use crate::render::columns::{command_block, wrap};
use serde::{Deserialize, Serialize};

/// One patch as reviewed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchInfo {
    pub file: String,
    pub subject: String,
    pub sha256: String,
}

/// A build as the review pins it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// `c:NAME` names it in the cache.
    pub name: String,
    pub build_id: String,
}

/// The base tree: what it is and its build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseInfo {
    /// `linux-source-7.2`, or the tree's path.
    pub package: String,
    /// The package's version (`7.2.13-1`) or the tree's (`7.2.13`).
    pub version: Option<String>,
    /// The source as `--base` takes it.
    pub source: String,
    pub build: BuildInfo,
    /// Each base tried, and whether the patches fit it.
    pub tried: Vec<String>,
}

/// The whole review: what the reply, the JSON and `/r/<id>` carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Review {
    /// A content hash of the pinned inputs (build ids, base, patches, model version, options).
    pub id: String,
    pub subject: String,
    pub patches: Vec<PatchInfo>,
    pub base: BaseInfo,
    pub patched: BuildInfo,
    pub model_version: String,
    pub classification: Classification,
    /// Catalogue machine × mix pairs run.
    pub pairs_run: u32,
    /// The pairs whose outcome changed, most changed first.
    pub rows: Vec<Row>,
    pub worst_case: Option<WorstCase>,
    /// For a patch whose mail claims an improvement: how the claim held on the searched
    /// machines that had room to improve, and its weakest case (absent in reviews made before).
    #[serde(default)]
    pub claim: Option<ClaimCheck>,
    /// The command that makes this review again.
    pub command: String,
    /// 0 no machine changes, 1 some do.
    pub exit_status: u8,
}

/// What the patched C does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classification {
    pub cases: u32,
    pub seed: u64,
    /// The model the base's release runs (`cluster` for 7.x).
    pub base_model: String,
    /// Every stage agreed with the base's model and every `group_cpus_evenly()` call with
    /// the base's C.
    pub same_as_base: bool,
    /// The named model the patched C agrees with on every case, if one does.
    pub behaves_as: Option<String>,
    /// `group_cpus_evenly()` calls (one per machine) whose answer differs from the base's C.
    pub group_cpus_differ: u32,
    pub group_cpus_cases: u32,
    /// The first differing call, against the base's C.
    pub first_difference: Option<String>,
    /// The stage where the patched C first left the base's model, with the case shrunk.
    pub stage_changed: Option<String>,
    pub stage_difference: Option<String>,
}

/// One side's figures over the distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// The worst CPU's load (IRQs) in the worst run.
    pub worst: u32,
    /// The ideal worst-CPU load.
    pub ideal: u32,
    /// The share of runs whose worst CPU is above the ideal.
    pub p_above_ideal: f64,
    /// Expected IRQs a node serves above its fair share.
    pub numa_excess: f64,
    pub runs: u64,
    /// How many online CPUs serve at least one IRQ; absent from reviews written before it
    /// was recorded.
    #[serde(default)]
    pub cpus_with_irqs: Option<CpusWithIrqs>,
}

/// How many online CPUs serve at least one IRQ (the figures' basis: the I/O queues when
/// there are managed vectors): the fewest and the most over the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpusWithIrqs {
    pub fewest: u32,
    pub most: u32,
}

impl CpusWithIrqs {
    /// `14`, or `12-14` (`dash` between) when the runs differ.
    fn text(self, dash: &str) -> String {
        if self.fewest == self.most {
            self.most.to_string()
        } else {
            format!("{}{dash}{}", self.fewest, self.most)
        }
    }
}

/// A machine × mix whose outcome the patch changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub machine: String,
    pub mix: String,
    pub before: Figures,
    pub after: Figures,
    /// `regression`, `improvement` or `changed` (the same worst load and share).
    pub change: String,
    /// The probe order (device names) and counter start of the link.
    pub order: Vec<String>,
    pub counter: u32,
    /// `/c/…`: c:base against c:patched on that order.
    pub link: String,
}

impl Row {
    /// The change in the worst CPU's load (positive: worse).
    pub(crate) fn delta(&self) -> i64 {
        i64::from(self.after.worst) - i64::from(self.before.worst)
    }
    pub(crate) fn delta_p(&self) -> f64 {
        self.after.p_above_ideal - self.before.p_above_ideal
    }
    pub(crate) fn delta_numa(&self) -> f64 {
        self.after.numa_excess - self.before.numa_excess
    }
}

/// The shrunk worst case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorstCase {
    /// `6 CPUs, 1 node, x86_64`.
    pub machine: String,
    pub cpus: u32,
    /// The device tokens (`2x4:name=nvme,pre=1`).
    pub devices: String,
    /// The probe order and counter start of the run shown.
    pub order: Vec<String>,
    pub counter: u32,
    /// Per online CPU: its id, and the IRQs it serves on the base and on the patched C.
    pub cpu: Vec<u32>,
    pub before: Vec<u32>,
    pub after: Vec<u32>,
    pub before_worst: u32,
    pub after_worst: u32,
    /// The machine as a topology file (TOML), as `--out` writes it.
    pub topology_toml: String,
    /// The same loads again on fresh harnesses of both builds.
    pub confirmed: bool,
    /// Random machines × mixes tried, and runs the shrinking took.
    pub tried: u32,
    pub shrink_steps: u32,
    pub link: String,
}

/// A claimed improvement against the searched machines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimCheck {
    /// The mail's words that claim it (a phrase around `improve`, `better`, `balance`, ...).
    pub(crate) claim: String,
    /// Searched machine × mix pairs whose base worst CPU was above the ideal: room to improve.
    pub(crate) with_room: u32,
    /// Of them, those where the patched worst CPU is lower.
    pub(crate) improved: u32,
    /// The smallest improvement of the worst CPU's load among them (IRQs; 0 or less: none).
    pub(crate) smallest_gain: i64,
    /// Where the patch does not improve: shrunk while it still does not, and confirmed.
    pub(crate) case: Option<WorstCase>,
    /// The ideal worst-CPU load of that case.
    pub(crate) case_ideal: u32,
}

/// Rows the reply's table shows.
pub(crate) const TABLE_ROWS: usize = 10;

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The verdict in one paragraph.
pub(crate) fn verdict(r: &Review) -> String {
    let c = &r.classification;
    // A tree is named by its version here; its path is on the lines that reproduce the review.
    let package = if r.base.package.contains('/') {
        "a tree"
    } else {
        r.base.package.as_str()
    };
    let base = match &r.base.version {
        Some(v) => format!("{package} {v}"),
        None => package.to_string(),
    };
    let mut s = if r.exit_status == 0 {
        format!(
            "No machine changes. On {} random machines the patched C answers as the base \
             ({base}) does, and none of the {} catalogue machine and device mix pairs \
             changes under any probe order asked for",
            c.group_cpus_cases, r.pairs_run
        )
    } else {
        format!(
            "This patch changes where interrupts land. On {} random machines \
             group_cpus_evenly() differs from the base ({base}) on {}",
            c.group_cpus_cases, c.group_cpus_differ
        )
    };
    match (&c.behaves_as, r.exit_status) {
        (Some(m), 1) if *m != c.base_model => s.push_str(&format!(
            ", and the patched C behaves as the model `{m}` on all of them"
        )),
        (None, 1) => s.push_str(", and it behaves as none of the named models"),
        _ => {}
    }
    if let Some(st) = c.stage_changed.as_deref().filter(|_| r.exit_status == 1) {
        s.push_str(&format!(
            "; checked against the model `{}`, the first stage to disagree is {st}()",
            c.base_model
        ));
    }
    s.push('.');
    if r.exit_status == 1 {
        s.push_str(&catalogue_sentence(r));
    }
    match &r.worst_case {
        Some(w) => s.push_str(&format!(
            " Beyond the catalogue, the largest regression found shrinks to {}, {}: \
             the worst CPU goes from {} to {} IRQs{}.",
            w.machine,
            w.devices,
            w.before_worst,
            w.after_worst,
            if w.confirmed {
                " (confirmed on the built C)"
            } else {
                " (NOT confirmed on a second run)"
            }
        )),
        None if r.exit_status == 0 => s.push_str(" The search beyond the catalogue found no regression."),
        None => s.push_str(" The search beyond the catalogue found no regression of the worst CPU."),
    }
    if let Some(c) = &r.claim {
        s.push_str(&claim_sentence(c));
    }
    s
}

/// What the search found of the mail's claimed improvement.
pub(crate) fn claim_sentence(c: &ClaimCheck) -> String {
    let said = format!(" The mail says \"{}\";", c.claim);
    let room = format!(
        "{} searched where the base's worst CPU is above the ideal",
        plural(u64::from(c.with_room), "machine", "machines")
    );
    match &c.case {
        _ if c.with_room == 0 => format!("{said} no machine searched had its worst CPU above the ideal on the base, so the claim was not put to the test."),
        Some(w) => format!(
            "{said} of {room}, it improves {}; where it does not, shrunk: {}, {}, the worst CPU goes \
             from {} to {} IRQs where the ideal is {}{}.",
            c.improved,
            w.machine,
            w.devices,
            w.before_worst,
            w.after_worst,
            c.case_ideal,
            if w.confirmed { " (confirmed on the built C)" } else { " (NOT confirmed on a second run)" }
        ),
        None => format!(
            "{said} it improves all {room}, the least by {}.",
            plural(c.smallest_gain.unsigned_abs(), "IRQ", "IRQs")
        ),
    }
}

fn catalogue_sentence(r: &Review) -> String {
    let worse = r.rows.iter().filter(|x| x.change == "regression").count();
    let better = r.rows.iter().filter(|x| x.change == "improvement").count();
    let moved = r.rows.len() - worse - better;
    let mut s = format!(
        " Of {} catalogue machine and mix pairs, {} change: {} for the worse, {} for the better",
        r.pairs_run,
        r.rows.len(),
        worse,
        better
    );
    if moved > 0 {
        s.push_str(&format!(
            ", {moved} {} IRQs without changing the worst CPU's load or how often it is above \
             the ideal",
            if moved == 1 { "moves" } else { "move" }
        ));
    }
    if let Some(top) = r.rows.first().filter(|t| t.delta() != 0) {
        s.push_str(&format!(
            "; the most on {} with {}, where the worst CPU goes from {} to {}",
            top.machine,
            top.mix,
            plural(u64::from(top.before.worst), "IRQ", "IRQs"),
            top.after.worst
        ));
    }
    s.push('.');
    s
}

fn pct(p: f64) -> String {
    format!("{:.0}%", p * 100.0)
}

/// The table of the machines that changed most.
fn table(r: &Review, out: &mut String) {
    if r.rows.is_empty() {
        return;
    }
    out.push_str("Machines that changed most (the worst CPU's IRQs over every probe\n");
    out.push_str("order, base -> patched; P: orders whose worst CPU is above the ideal):\n\n");
    out.push_str(&format!(
        "  {:<23} {:<17} {:>8} {:>6} {:>11}\n",
        "machine", "mix", "worst", "ideal", "P"
    ));
    for row in r.rows.iter().take(TABLE_ROWS) {
        out.push_str(&format!(
            "  {:<23} {:<17} {:>8} {:>6} {:>11}\n",
            cut(&row.machine, 23),
            cut(&row.mix, 17),
            format!("{} -> {}", row.before.worst, row.after.worst),
            ideal_text(row, "->"),
            format!("{} -> {}", pct(row.before.p_above_ideal), pct(row.after.p_above_ideal)),
        ));
    }
    if r.rows.len() > TABLE_ROWS {
        out.push_str(&format!("  ... and {} more (JSON: rows)\n", r.rows.len() - TABLE_ROWS));
    }
    if r.rows
        .iter()
        .take(TABLE_ROWS)
        .any(|row| row.before.ideal != row.after.ideal)
    {
        out.push('\n');
        out.push_str(&wrap(
            "Where the ideal moves, the patch changes how many vectors start (a mask \
             of offline CPUs only leaves its vector shut down).",
            "",
            "",
        ));
    }
    out.push('\n');
}

/// How many CPUs serve IRQs before and after (`12 -> 22`), when the review recorded it.
pub(crate) fn cpus_text(row: &Row, arrow: &str, dash: &str) -> Option<String> {
    let (b, a) = (row.before.cpus_with_irqs?, row.after.cpus_with_irqs?);
    Some(format!("{} {arrow} {}", b.text(dash), a.text(dash)))
}

/// The rows whose worst CPU's load stays, by their place in the review, with how many CPUs
/// serve IRQs on each side: what moved there. At most [`TABLE_ROWS`], and how many more.
fn spread_rows(r: &Review) -> (Vec<(usize, String)>, usize) {
    let all: Vec<(usize, String)> = r
        .rows
        .iter()
        .enumerate()
        .filter(|(_, row)| row.delta() == 0)
        .filter_map(|(i, row)| Some((i, cpus_text(row, "->", "-")?)))
        .collect();
    let more = all.len().saturating_sub(TABLE_ROWS);
    (all.into_iter().take(TABLE_ROWS).collect(), more)
}

/// Under the table: for each row whose worst CPU's load stays, how many CPUs serve IRQs.
fn spread(r: &Review, out: &mut String) {
    let (rows, more) = spread_rows(r);
    if rows.is_empty() {
        return;
    }
    out.push_str(&wrap(
        "Where the worst CPU's load stays, how many online CPUs serve at least \
         one IRQ (the fewest and the most over the orders), base -> patched:",
        "",
        "",
    ));
    out.push('\n');
    let line = |machine: &str, mix: &str, cpus: &str| format!("  {machine:<23} {mix:<17} {cpus:>18}\n");
    out.push_str(&line("machine", "mix", "CPUs with IRQs"));
    for (i, cpus) in &rows {
        let row = &r.rows[*i];
        out.push_str(&line(&cut(&row.machine, 23), &cut(&row.mix, 17), cpus));
    }
    if more > 0 {
        out.push_str(&format!("  ... and {more} more (JSON: rows)\n"));
    }
    out.push('\n');
}

/// The ideal worst-CPU load of a row, or both when the patch moves it.
pub(crate) fn ideal_text(row: &Row, arrow: &str) -> String {
    if row.before.ideal == row.after.ideal {
        row.after.ideal.to_string()
    } else {
        format!("{} {arrow} {}", row.before.ideal, row.after.ideal)
    }
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).collect::<String>() + "~"
    }
}

/// The per-CPU counts of a shrunk case under `title`, as many CPUs to a block as fit.
pub(crate) fn per_cpu(w: &WorstCase, title: &str, out: &mut String) {
    out.push_str(&wrap(
        &format!(
            "{title}: {}, {} probed as {} from counter {}. IRQs per CPU:",
            w.machine,
            w.devices,
            w.order.join(" "),
            w.counter
        ),
        "",
        "",
    ));
    out.push('\n');
    // Columns of four, or as wide as the widest number and one space, as many as fit in 72
    // after the label: 15 CPUs a row below CPU 1000.
    let widest = w
        .cpu
        .iter()
        .chain(&w.before)
        .chain(&w.after)
        .max()
        .copied()
        .unwrap_or(0);
    let width = (widest.to_string().len() + 1).max(4);
    let per_row = ((72 - 10) / width).max(1);
    for start in (0..w.cpu.len()).step_by(per_row) {
        let end = (start + per_row).min(w.cpu.len());
        let row = |label: &str, v: &[u32]| {
            let cells: String = v[start..end].iter().map(|x| format!("{x:>width$}")).collect();
            format!("  {label:<8}{cells}\n")
        };
        out.push_str(&row("CPU", &w.cpu));
        out.push_str(&row("before", &w.before));
        out.push_str(&row("after", &w.after));
        out.push('\n');
    }
    let hot = |v: &[u32], max: u32| -> String {
        let cpus: Vec<String> = w
            .cpu
            .iter()
            .zip(v)
            .filter(|(_, &x)| x == max)
            .map(|(c, _)| c.to_string())
            .collect();
        format!("CPU {}", cpus.join(", "))
    };
    out.push_str(&wrap(
        &format!(
            "Before, the busiest CPU serves {} ({}); after, {} ({}).",
            plural(u64::from(w.before_worst), "IRQ", "IRQs"),
            hot(&w.before, w.before_worst),
            plural(u64::from(w.after_worst), "IRQ", "IRQs"),
            hot(&w.after, w.after_worst),
        ),
        "",
        "",
    ));
    out.push('\n');
}

/// The whole reply.
pub fn text(r: &Review) -> String {
    let mut out = wrap(&r.subject, "> ", "> ");
    out.push('\n');
    out.push_str(&wrap(&verdict(r), "", ""));
    out.push('\n');
    let c = &r.classification;
    if let Some(d) = &c.first_difference {
        out.push_str(&wrap(&format!("First difference from the base's C: {d}."), "", ""));
        out.push('\n');
    }
    if let (Some(st), Some(d)) = (&c.stage_changed, &c.stage_difference) {
        out.push_str(&wrap(&format!("{st}(), shrunk: {d}."), "", ""));
        out.push('\n');
    }
    table(r, &mut out);
    spread(r, &mut out);
    if let Some(w) = &r.worst_case {
        per_cpu(w, "The worst case beyond the catalogue", &mut out);
    }
    if let Some(w) = r.claim.as_ref().and_then(|c| c.case.as_ref()) {
        per_cpu(w, "Where the claimed improvement does not hold", &mut out);
    }
    links(r, &mut out);
    if !out.ends_with("\n\n") {
        out.push('\n');
    }
    out.push_str(&wrap(&format!("Base: {}.", r.base.tried.join("; ")), "", ""));
    out.push_str(&wrap(
        &format!(
            "Builds: c:{} {}, c:{} {}; review {}.",
            r.base.build.name,
            &r.base.build.build_id[..12],
            r.patched.name,
            &r.patched.build_id[..12],
            r.id
        ),
        "",
        "",
    ));
    out.push('\n');
    out.push_str("Reproduce:\n");
    // An option and its value stay together unless they cannot share a line (a long path).
    let words: Vec<String> = r
        .command
        .split(" --")
        .enumerate()
        .map(|(i, w)| if i == 0 { w.to_string() } else { format!("--{w}") })
        .flat_map(|w| {
            if w.len() > 60 {
                w.split(' ').map(str::to_string).collect()
            } else {
                vec![w]
            }
        })
        .collect();
    command_block(&words, &mut out);
    out
}

fn links(r: &Review, out: &mut String) {
    let claim_case = r.claim.as_ref().is_some_and(|c| c.case.is_some());
    if r.rows.is_empty() && r.worst_case.is_none() && !claim_case {
        return;
    }
    out.push_str(&wrap(
        &format!(
            "Each link pins both builds; a server shows them when started with them: \
             irqscope serve --kernel-c {}=SOURCE --kernel-c {}=SOURCE \
             --kernel-c-patch {}=PATCH, where SOURCE is",
            r.base.build.name, r.patched.name, r.patched.name
        ),
        "",
        "",
    ));
    // A path is one word: on a line of its own, like a link, it is never broken.
    out.push_str(&format!("{}\n", r.base.source));
    // The table's rows, then those only the list of CPUs with IRQs shows.
    let table = 0..r.rows.len().min(TABLE_ROWS);
    let spread = spread_rows(r)
        .0
        .into_iter()
        .map(|(i, _)| i)
        .filter(|i| !table.contains(i));
    for row in table.clone().chain(spread).map(|i| &r.rows[i]) {
        out.push_str(&format!("  {}, {}:\n{}\n", row.machine, row.mix, row.link));
    }
    if let Some(w) = &r.worst_case {
        out.push_str(&format!("  the worst case, {}:\n{}\n", w.machine, w.link));
    }
    if let Some(w) = r.claim.as_ref().and_then(|c| c.case.as_ref()) {
        out.push_str(&format!(
            "  where the claim does not hold, {}:\n{}\n",
            w.machine, w.link
        ));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worst(cpu: Vec<u32>) -> WorstCase {
        let n = cpu.len();
        WorstCase {
            machine: format!("{n} CPUs, 1 node, x86_64"),
            cpus: n as u32,
            devices: "2x3:name=nvme,pre=1".into(),
            order: vec!["nvme0".into(), "nvme1".into()],
            counter: 0,
            before: (0..n as u32).map(|i| i % 2).collect(),
            after: (0..n as u32).map(|i| i % 3).collect(),
            cpu,
            before_worst: 1,
            after_worst: 2,
            topology_toml: String::new(),
            confirmed: true,
            tried: 1,
            shrink_steps: 0,
            link: String::new(),
        }
    }

    /// The per-CPU counts stand in columns under their CPU ids, every row of a block as long
    /// as the others and none over 72 columns, for small ids and for four-digit ones.
    #[test]
    fn per_cpu_counts_stand_in_columns() {
        for cpu in [(0..20).collect::<Vec<u32>>(), (4090..4130).collect()] {
            let mut out = String::new();
            per_cpu(&worst(cpu.clone()), "The worst case beyond the catalogue", &mut out);
            let table: Vec<&str> = out.lines().filter(|l| l.starts_with("  ")).collect();
            assert!(!table.is_empty(), "{out}");
            for block in table.chunks(3) {
                let widths: Vec<usize> = block.iter().map(|l| l.len()).collect();
                assert!(widths.iter().all(|&w| w == widths[0] && w <= 72), "{block:?}");
                assert!(block[0].trim_start().starts_with("CPU"), "{block:?}");
            }
            let shown: usize = table.iter().step_by(3).map(|l| l.split_whitespace().count() - 1).sum();
            assert_eq!(shown, cpu.len(), "every CPU once: {out}");
        }
    }
}
