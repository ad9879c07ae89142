//! `irqscope kernel-c build|verify`, and the `c:NAME` lookup the other subcommands use.
//! Arguments, files and exit codes only; the work is in `irqscope::kernel_c`.

use irqscope::kernel::{External, SortGen, Variant};
use irqscope::kernel_c::{self, KernelC, Limits};
use irqscope::kernel_c_tools::{self as tools, verify, BuildOptions};
use irqscope::scenario::ScenarioError;
use irqscope::web::kernel_c::KernelCRegistry;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(clap::Subcommand)]
pub enum KernelCCommand {
    /// Build lib/group_cpus.c from a kernel tree, a single file or a Debian linux-source-X.Y
    /// package, with patches, into a variant `c:NAME`.
    Build(BuildArgs),
    /// Check a build against a model on random machines; shrink the first disagreement.
    Verify(VerifyArgs),
    /// One call of a build on one machine: its masks (the format of examples/gce_dump), or
    /// with --iters the call timed that many times inside the harness, each alone.
    Time(TimeArgs),
}

#[derive(clap::Args)]
pub struct SourceArgs {
    /// A kernel tree, a group_cpus.c, or a Debian package (linux-source-6.12).
    source: String,
    /// The variant's name (`c:NAME`); default from the tree's version.
    #[arg(long)]
    name: Option<String>,
    /// A patch to apply (mbox or unified diff, as mailed); repeatable, applied in order.
    #[arg(long = "patch", value_name = "FILE")]
    patches: Vec<PathBuf>,
    /// An apt option for the package download (e.g. a private sources.list); repeatable.
    #[arg(long = "apt-option", value_name = "OPTION")]
    apt_options: Vec<String>,
    /// The heapsort a single file is linked with (a tree uses its own lib/sort.c).
    #[arg(long)]
    sort: Option<String>,
    /// Where builds are cached (default: $IRQSCOPE_KERNEL_C_DIR, ~/.cache/irqscope/kernel-c).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Refuse a patch whose hunks apply only at an offset or with fuzz (the tree is not the
    /// one it was made against).
    #[arg(long)]
    strict: bool,
}

#[derive(clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    source: SourceArgs,
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// The model to check against (default: the one the tree's version selects).
    #[arg(long)]
    against: Option<String>,
    /// Random machines to run.
    #[arg(long, default_value_t = 1000)]
    cases: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where a disagreement's golden case is written (default: the cache directory).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct TimeArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// A preset, a topology file or a compact machine word.
    topology: String,
    /// The groups asked for.
    numgrps: u32,
    /// Time this many calls (after 5 untimed ones); 0 prints the masks instead.
    #[arg(long, default_value_t = 0)]
    iters: u32,
    /// The rotation counter before each call.
    #[arg(long, default_value_t = 0)]
    counter: u32,
    /// With --iters: write the masks of one call to FILE.
    #[arg(long, value_name = "FILE")]
    dump: Option<PathBuf>,
}

/// Most cases one run may ask for.
const VERIFY_CASES_MAX: u32 = 1_000_000;

fn options(a: &SourceArgs) -> anyhow::Result<BuildOptions> {
    let sort = match &a.sort {
        Some(s) => Some(
            SortGen::from_name(s)
                .ok_or_else(|| anyhow::anyhow!("unknown sort {s:?} (known: heap-v5.1, heap-v6.9, heap-v6.11)"))?,
        ),
        None => None,
    };
    Ok(BuildOptions {
        source: a.source.clone(),
        name: a.name.clone(),
        patches: a.patches.clone(),
        apt_options: a.apt_options.clone(),
        sort,
        cache: a.cache_dir.clone().unwrap_or_else(kernel_c::cache_dir),
        strict: a.strict,
    })
}

pub fn run(cmd: KernelCCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        KernelCCommand::Build(a) => build(a),
        KernelCCommand::Verify(a) => verify_cmd(a),
        KernelCCommand::Time(a) => time_cmd(a),
    }
}

fn build(a: BuildArgs) -> anyhow::Result<ExitCode> {
    let opts = options(&a.source)?;
    let started = std::time::Instant::now();
    let built = tools::build(&opts)?;
    let p = &built.provenance;
    inexact_hunks(p);
    println!("c:{}", p.name);
    println!("  source   {}", p.origin);
    if let Some(v) = &p.version {
        println!("  version  {v}");
    }
    println!("  sha256   {}", p.source_sha256);
    for s in &p.patches {
        println!("  patch    {s}");
    }
    println!("  id       {}", p.id);
    println!("  sort     {}", p.sort);
    println!("  api      {}", p.api);
    if let Some(c) = &p.counter {
        println!("  counter  {c} (set by --counter)");
    }
    print!(
        "{}",
        irqscope::render::text::wrap(&p.stages_line(), "  stages   ", "           ")
    );
    println!("  built in {} ms", started.elapsed().as_millis());
    Ok(ExitCode::SUCCESS)
}

/// `kernel-c time`: the C's side of `scripts/bench-vs-kernel-c`, in the format of
/// `examples/gce_dump` (masks as `nummasks N` then `INDEX CPULIST` lines; the timing as one
/// `c NAME NUMGRPS iters=… median_us=… min_us=… max_us=… nummasks=…` line).
fn time_cmd(a: TimeArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        a.iters <= kernel_c::runner::TIME_ITERS_MAX,
        "--iters {}: 0 to {}",
        a.iters,
        kernel_c::runner::TIME_ITERS_MAX
    );
    let topo = crate::load_topology(&a.topology)?;
    let opts = options(&a.source)?;
    let built = tools::build(&opts)?;
    let name = built.provenance.name.clone();
    let c = KernelC::new(built, Limits::from_env());
    let answer = c.call(&topo, a.numgrps, a.counter)?;
    let masks = answer
        .masks
        .ok_or_else(|| anyhow::anyhow!("c:{name}: numgrps {}: the C returned NULL", a.numgrps))?;
    let mut text = format!("nummasks {}\n", answer.nummasks);
    for (i, m) in masks.iter().enumerate() {
        text.push_str(&format!("{i} {}\n", m.to_cpulist()));
    }
    if a.iters == 0 {
        anyhow::ensure!(a.dump.is_none(), "--dump goes with --iters");
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(file) = &a.dump {
        std::fs::write(file, &text).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    }
    let t = c.time(&topo, a.numgrps, a.counter, a.iters)?;
    let us = |ns: u64| ns as f64 / 1000.0;
    println!(
        "c {name} {} iters={} median_us={:.1} min_us={:.1} max_us={:.1} nummasks={}",
        a.numgrps,
        t.iters,
        us(t.median_ns),
        us(t.min_ns),
        us(t.max_ns),
        answer.nummasks
    );
    Ok(ExitCode::SUCCESS)
}

/// The hunks that applied at an offset or with fuzz, one warning line each on stderr.
fn inexact_hunks(p: &kernel_c::Provenance) {
    for n in &p.patch_notes {
        eprintln!("irqscope: warning: {n} (--strict refuses it)");
    }
}

/// The models a version selects (the release table of `kernel::release`).
fn models_for(version: Option<&str>) -> Option<verify::Models> {
    let (major, minor) = tools::source::major_minor(version?)?;
    let g = irqscope::kernel::release::generation((major, minor));
    Some(verify::Models {
        variant: Variant::from_name(g.variant)?,
        sort: SortGen::from_name(g.sort)?,
        era: g.affinity,
        mapper: g.mapper,
    })
}

/// The models a verify run compares with: the version's, the variant `--against` names
/// replacing its variant (a single file has no version: its `--sort`, the newest era and
/// mapper).
fn verify_models(a: &VerifyArgs, opts: &BuildOptions, p: &kernel_c::Provenance) -> anyhow::Result<verify::Models> {
    let by_version = models_for(p.version.as_deref());
    let newest = models_for(Some("7.2")).expect("the release table knows 7.2");
    let mut models = by_version.unwrap_or(newest);
    match &a.against {
        Some(name) => models.variant = irqscope::scenario::spec::parse_variant(name)?,
        None if by_version.is_none() => anyhow::bail!(
            "{}: no kernel version to select a model by; name one with --against",
            p.origin
        ),
        None => {}
    }
    if let Some(s) = opts.sort {
        models.sort = s;
    } else if by_version.is_none() {
        models.sort = SortGen::HeapV6_11;
    }
    Ok(models)
}

fn verify_cmd(a: VerifyArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        (1..=VERIFY_CASES_MAX).contains(&a.cases),
        "--cases {}: 1 to {}",
        a.cases,
        VERIFY_CASES_MAX
    );
    let opts = options(&a.source)?;
    let built = tools::build(&opts)?;
    let p = built.provenance.clone();
    inexact_hunks(&p);
    let models = verify_models(&a, &opts, &p)?;
    let c = KernelC::new(built, Limits::from_env());
    let outcome = verify::verify(&c, models, a.cases, a.seed)?;
    println!("c:{}, seed {}", p.name, a.seed);
    println!(
        "against {} ({}, {}, mapper {}):",
        models.variant.name(),
        models.sort.name(),
        models.era.name(),
        models.mapper.name(),
    );
    let failed = outcome.disagreement.as_ref().map(|(s, _, _)| *s);
    for (stage, n) in &outcome.agreed {
        let then = if Some(*stage) == failed {
            ", then a disagreement"
        } else {
            ""
        };
        println!("  {:<26} {n} agree{then}", stage.name());
    }
    let Some((stage, case, verdict)) = outcome.disagreement else {
        println!(
            "{} machines, {} stages: all agree",
            outcome.machines,
            outcome.agreed.len()
        );
        return Ok(ExitCode::SUCCESS);
    };
    report_disagreement(&a, &opts, &p, stage, &case, verdict)?;
    Ok(ExitCode::from(1))
}

/// The shrunk case of a disagreement: the machine, the input, both answers at the first
/// differing field, the files written and the command that reproduces the run.
fn report_disagreement(
    a: &VerifyArgs,
    opts: &BuildOptions,
    p: &kernel_c::Provenance,
    stage: irqscope::kernel::Stage,
    case: &verify::Case,
    verdict: verify::Verdict,
) -> anyhow::Result<()> {
    let verify::Verdict::Differ {
        field,
        c,
        model,
        golden,
    } = verdict
    else {
        unreachable!("a disagreement is reported with its difference")
    };
    let dir = a.out.clone().unwrap_or_else(|| opts.cache.join("verify"));
    std::fs::create_dir_all(&dir)?;
    // Per build: two patches verified with one seed keep their own files.
    let file = dir.join(format!("disagreement-{}-{}-seed{}.json", p.name, &p.id[..12], a.seed));
    std::fs::write(&file, serde_json::to_string_pretty(&golden)? + "\n")?;
    let toml_file = file.with_extension("toml");
    std::fs::write(&toml_file, toml::to_string(&case.shape.spec())?)?;
    let topo = case.shape.topology().map_err(|e| anyhow::anyhow!(e))?;
    let nodes = case.shape.nodes.len() + case.shape.memoryless as usize;
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let cpus = case.shape.cpus() as usize;
    let mut head = format!(
        "{cpus} CPU{}, {nodes} node{}, {}",
        plural(cpus),
        plural(nodes),
        case.shape.arch.name()
    );
    let offline = topo.present().andnot(topo.online());
    if !offline.is_empty() {
        head.push_str(&format!(", {offline} offline"));
    }
    let boot = case.boot.describe(&topo);
    if !boot.is_empty() {
        head.push_str(&format!(", {boot}"));
    }
    let wrap = |t: &str, first: &str, rest: &str| irqscope::render::text::wrap(t, first, rest);
    println!("shrunk to");
    print!("{}", wrap(&head, "", ""));
    print!(
        "{}",
        wrap(&format!("{}(): {}", stage.name(), case.input.describe()), "", "  ")
    );
    println!("  first difference: {field}");
    println!("  C:     {}", short(&c));
    println!("  model: {}", short(&model));
    println!("case (golden format, expected = the C's answer):");
    println!("  {}", file.display());
    println!("machine: {}", toml_file.display());
    println!("reproduce:");
    let mut out = String::new();
    irqscope::render::text::command_block(&reproduce_words(a), &mut out);
    print!("{out}");
    println!("  irqscope check-golden {}", file.display());
    Ok(())
}

/// The command that runs the same verify again: the source, its patches, the apt options a
/// package needs, the model named and the run's size and seed.
fn reproduce_words(a: &VerifyArgs) -> Vec<String> {
    let mut words = vec![
        "irqscope".to_string(),
        "kernel-c".into(),
        "verify".into(),
        a.source.source.clone(),
    ];
    if let Some(n) = &a.source.name {
        words.push(format!("--name {n}"));
    }
    for pth in &a.source.patches {
        words.push(format!("--patch {}", pth.display()));
    }
    for o in &a.source.apt_options {
        words.push(format!("--apt-option {o}"));
    }
    if let Some(s) = &a.source.sort {
        words.push(format!("--sort {s}"));
    }
    if a.source.strict {
        words.push("--strict".into());
    }
    if let Some(v) = &a.against {
        words.push(format!("--against {v}"));
    }
    words.push(format!("--cases {}", a.cases));
    words.push(format!("--seed {}", a.seed));
    words
}

/// A field's value, cut to fit a line.
fn short(v: &str) -> String {
    if v.chars().count() > 62 {
        v.chars().take(59).collect::<String>() + "..."
    } else {
        v.to_string()
    }
}

/// `c:NAME` on the command line: the build of that name in the cache (`kernel-c build`).
pub fn lookup(name: &str, sha256: Option<&str>) -> Result<External, ScenarioError> {
    let built = kernel_c::load(&kernel_c::cache_dir(), name).map_err(|e| ScenarioError(e.to_string()))?;
    if let Some(want) = sha256 {
        if want != built.provenance.id {
            return Err(ScenarioError(format!(
                "c:{name}: the link pins build {want}, the cache holds {} (rebuild the link's source)",
                built.provenance.id
            )));
        }
    }
    Ok(External(Arc::new(KernelC::new(built, Limits::from_env()))))
}

/// A variant name from the command line: a model, or built C.
pub fn variant_arg(name: Option<&str>) -> anyhow::Result<(Variant, Option<External>)> {
    let name = name.unwrap_or(irqscope::scenario::spec::DEFAULT_VARIANT.name());
    match name.strip_prefix(irqscope::scenario::spec::KERNEL_C_PREFIX) {
        Some(c) => Ok((irqscope::scenario::spec::DEFAULT_VARIANT, Some(lookup(c, None)?))),
        None => Ok((irqscope::scenario::spec::parse_variant(name)?, None)),
    }
}

/// `serve --kernel-c NAME=SOURCE`: build each source now, for the server's state. A source
/// that does not build is registered with its message (its links answer 400); a malformed
/// flag is an error before the server starts.
pub fn register_for_serve(sources: &[String], patches: &[String]) -> anyhow::Result<KernelCRegistry> {
    use irqscope::web::kernel_c::Registered;
    let split = |flag: &str, v: &str| -> anyhow::Result<(String, String)> {
        let (n, s) = v
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("{flag} {v:?}: give NAME=VALUE"))?;
        anyhow::ensure!(
            kernel_c::valid_name(n),
            "{flag} {v:?}: NAME is letters, digits, '.', '_', '-'"
        );
        Ok((n.to_string(), s.to_string()))
    };
    let patches: Vec<(String, String)> = patches
        .iter()
        .map(|p| split("--kernel-c-patch", p))
        .collect::<Result<_, _>>()?;
    let mut entries = Vec::with_capacity(sources.len());
    for v in sources {
        let (name, source) = split("--kernel-c", v)?;
        let opts = BuildOptions {
            source: source.clone(),
            name: Some(name.clone()),
            patches: patches
                .iter()
                .filter(|(n, _)| *n == name)
                .map(|(_, f)| PathBuf::from(f))
                .collect(),
            apt_options: Vec::new(),
            sort: None,
            cache: kernel_c::cache_dir(),
            strict: false,
        };
        let build = tools::build(&opts)
            .map(|b| {
                let p = b.provenance.clone();
                (p, External(Arc::new(KernelC::new(b, Limits::from_env()))))
            })
            .map_err(|e| e.to_string());
        if let Err(e) = &build {
            eprintln!("irqscope: --kernel-c {name}: {}", e.lines().next().unwrap_or(""));
        }
        entries.push(Registered { name, source, build });
    }
    Ok(KernelCRegistry::new(entries))
}
