//! `irqscope review PATCH...`: arguments, files and exit codes; the work is in
//! `irqscope::review`. Progress goes to stderr when it is a terminal, the result to stdout.

use irqscope::analysis::orders::{CounterRange, Orders};
use irqscope::review::{self, ReviewOptions};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ReviewArgs {
    /// The patches, in order: mbox, git format-patch output or unified diffs.
    #[arg(required = true)]
    patches: Vec<PathBuf>,
    /// The tree the patches are against: a kernel tree or linux-source-X.Y (default: the
    /// newest Debian source in the cache, else from apt, that they apply to).
    #[arg(long)]
    base: Option<String>,
    /// Classify against this model only (default: every named group_cpus model).
    #[arg(long)]
    against: Option<String>,
    /// Catalogue machines: all, or a comma-separated list of presets.
    #[arg(long, default_value = "all")]
    machines: String,
    /// Probe orders per machine: all, fixed or sample:N[:SEED].
    #[arg(long, default_value = "all")]
    orders: String,
    /// Counter starts (calls of group_cpus_evenly() before these devices'): N or A..B. The
    /// rotation revisions' outcome depends on it; seed 000's D96plds v6 figure needs 2 to 6.
    #[arg(long, default_value = "0..7")]
    counter: String,
    /// Random machines for the classification.
    #[arg(long, default_value_t = 2000)]
    cases: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Random machines x device mixes the worst-case search tries.
    #[arg(long, default_value_t = review::SEARCH_DEFAULT)]
    search: u32,
    #[arg(long, default_value = "text")]
    format: String,
    /// Write the review as DIR/<id>.json and the worst case as DIR/<id>-worst.toml.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// An apt option for a package download; repeatable.
    #[arg(long = "apt-option", value_name = "OPTION")]
    apt_options: Vec<String>,
    /// Where builds are cached (default: $IRQSCOPE_KERNEL_C_DIR, ~/.cache/irqscope/kernel-c).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Print how long each step took on stderr.
    #[arg(long)]
    timings: bool,
    /// Progress as lines on stderr, terminal or not: `progress<TAB>DONE<TAB>OF<TAB>WHAT`
    /// (DONE and OF empty where nothing counts). `serve --review` reads them.
    #[arg(long, hide = true)]
    progress_lines: bool,
}

/// Most random machines `--cases` may ask for.
const CASES_MAX: u32 = 20_000;

fn options(a: &ReviewArgs) -> anyhow::Result<ReviewOptions> {
    anyhow::ensure!(
        (1..=CASES_MAX).contains(&a.cases),
        "--cases {}: 1 to {}",
        a.cases,
        CASES_MAX
    );
    anyhow::ensure!(a.search <= 10_000, "--search {}: 0 to 10000", a.search);
    anyhow::ensure!(
        ["text", "json"].contains(&a.format.as_str()),
        "--format {:?}: text or json",
        a.format
    );
    let machines: Vec<String> = if a.machines == "all" {
        irqscope::catalogue::names().map(str::to_string).collect()
    } else {
        a.machines.split(',').map(|m| m.trim().to_string()).collect()
    };
    for m in &machines {
        anyhow::ensure!(
            irqscope::catalogue::get(m).is_some(),
            "--machines: {m:?} is not a catalogue machine (irqscope topology list)"
        );
    }
    let against = match &a.against {
        Some(n) => Some(irqscope::scenario::spec::parse_variant(n)?),
        None => None,
    };
    // `patch` runs in a scratch tree: the files by their whole path.
    let patches = a
        .patches
        .iter()
        .map(|p| std::path::absolute(p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display())))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(ReviewOptions {
        patches,
        base: a.base.clone(),
        against,
        machines,
        orders: Orders::parse(&a.orders).map_err(anyhow::Error::msg)?,
        counters: CounterRange::parse(&a.counter).map_err(anyhow::Error::msg)?,
        cases: a.cases,
        seed: a.seed,
        search: a.search,
        cache: a.cache_dir.clone().unwrap_or_else(irqscope::kernel_c::cache_dir),
        apt_options: a.apt_options.clone(),
    })
}

/// Width of the terminal status line.
const STATUS_COLUMNS: usize = 78;

/// The terminal's status line: what runs now, and once the review has taken more than a
/// second, a bar where the step counts (`[#####.....]  40/182`).
fn status_line(what: &str, count: Option<(u32, u32)>, elapsed: std::time::Duration) -> String {
    let mut line = String::new();
    if let Some((done, of)) = count.filter(|_| elapsed.as_millis() > 1000) {
        const BAR: usize = 20;
        let filled = (done.min(of) as usize * BAR).checked_div(of as usize).unwrap_or(0);
        line = format!(
            "[{}{}] {done:>5}/{of:<5} ",
            "#".repeat(filled),
            ".".repeat(BAR - filled)
        );
    }
    line.push_str(what);
    line.chars().take(STATUS_COLUMNS).collect()
}

pub fn run(a: ReviewArgs) -> anyhow::Result<ExitCode> {
    let opts = options(&a)?;
    let terminal = std::io::stderr().is_terminal() && !a.progress_lines;
    let started = std::time::Instant::now();
    let progress = |what: &str, count: Option<(u32, u32)>| {
        let mut e = std::io::stderr().lock();
        if a.progress_lines {
            let (done, of) = count.map_or((String::new(), String::new()), |(d, o)| (d.to_string(), o.to_string()));
            let _ = writeln!(e, "progress\t{done}\t{of}\t{what}");
        } else if terminal {
            let line = status_line(what, count, started.elapsed());
            let _ = write!(e, "\r\x1b[K{line}");
            let _ = e.flush();
        }
    };
    let last = std::sync::Mutex::new(started);
    let done = |step: &'static str| {
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        if a.timings {
            eprintln!("review: {step:<18} {:>7} ms", last.elapsed().as_millis());
        }
        *last = std::time::Instant::now();
    };
    let result = review::run(&opts, &progress, &done);
    if terminal {
        eprint!("\r\x1b[K");
    }
    let r = result?;
    if a.timings {
        eprintln!("review: {:<18} {:>7} ms", "total", started.elapsed().as_millis());
    }
    let json = serde_json::to_string_pretty(&r)? + "\n";
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join(format!("{}.json", r.id)), &json)?;
        if let Some(w) = &r.worst_case {
            std::fs::write(dir.join(format!("{}-worst.toml", r.id)), &w.topology_toml)?;
        }
    }
    if a.format == "json" {
        print!("{json}");
    } else {
        print!("{}", irqscope::render::review::text(&r));
    }
    Ok(ExitCode::from(r.exit_status))
}

#[cfg(test)]
mod tests {
    use super::status_line;
    use std::time::Duration;

    #[test]
    fn the_bar_shows_after_a_second_where_the_step_counts() {
        let slow = Duration::from_secs(2);
        assert_eq!(
            status_line("catalogue (l96, nvme)", Some((40, 160)), slow),
            "[#####...............]    40/160   catalogue (l96, nvme)"
        );
        assert_eq!(
            status_line("catalogue", Some((40, 160)), Duration::from_millis(300)),
            "catalogue"
        );
        assert_eq!(status_line("building", None, slow), "building");
        assert!(status_line(&"x".repeat(200), Some((1, 1)), slow).chars().count() <= 78);
        assert!(status_line("odd", Some((5, 0)), slow).starts_with("[...................."));
    }
}
