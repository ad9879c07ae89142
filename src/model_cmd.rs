//! The model commands of `irqscope`: `simulate`, `compare`, `sweep`, `blk-mq`, `mana` and
//! `sched`. Each parses its arguments into the spec the dashboard builds from a form, then
//! calls the same resolve, run and render functions as the pages (`render::view`), and prints
//! the page's text or JSON twin.

use crate::{input_object, machine, read_text, Machine};
use anyhow::Context;
use clap::ValueEnum;
use irqscope::analysis::orders::{CounterRange, Orders};
use irqscope::render::view::blkmq::BlkMqShown;
use irqscope::render::view::compare::{CompareQuery, CompareRun};
use irqscope::render::view::mana::ManaShown;
use irqscope::render::view::scenario::Run;
use irqscope::render::view::sched::SchedShown;
use irqscope::render::view::ViewError;
use irqscope::scenario::blkmq::BlkMqSpec;
use irqscope::scenario::kernel::{self, ModelNames};
use irqscope::scenario::request::{parse_devices_with, spec_for_machine, DeviceDefaults, Overrides};
use irqscope::scenario::spec::{self, ScenarioSpec, TopologyRef};
use irqscope::scenario::BootParams;
use irqscope::{golden, render};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum SweepFormat {
    Text,
    Csv,
    Json,
}

/// `c:NAME` on the command line: the build of that name in the cache (`kernel-c build`).
fn cached_kernel_c(name: &str, sha256: Option<&str>) -> Result<irqscope::kernel::External, ViewError> {
    crate::kernel_c_cmd::lookup(name, sha256).map_err(ViewError::from)
}

/// Print a twin: the text, or the JSON pretty-printed.
fn print_twin(
    format: Format,
    text: impl FnOnce() -> String,
    json: impl FnOnce() -> serde_json::Value,
) -> anyhow::Result<ExitCode> {
    match format {
        Format::Text => print!("{}", text()),
        Format::Json => println!("{}", serde_json::to_string_pretty(&json())?),
    }
    Ok(ExitCode::SUCCESS)
}

/// The kernel release and the models it picks beyond variant, sort and effective model
/// (`simulate` and `compare`).
#[derive(clap::Args)]
pub(crate) struct KernelArgs {
    /// The kernel release the answer is for (6.12, 6.1.0-57-amd64): picks the variant, sort,
    /// irq_create_affinity_masks era, blk-mq mapper, effective model and vectors per CPU
    /// together; flags still override. Default: the newest release modelled.
    #[arg(long, value_name = "RELEASE")]
    kernel: Option<String>,
    /// The irq_create_affinity_masks era: numgrps (.. v6.16) or nummasks (v6.17 ..).
    #[arg(long)]
    affinity: Option<String>,
    /// The blk-mq mapper of blkmq=cpumap devices: current, v6.3, legacy-v5.1, ….
    #[arg(long)]
    mapper: Option<String>,
    /// Vectors a device may get on each online x86 CPU (default: the release's window on this
    /// machine, 201 to 203).
    #[arg(long, value_name = "N")]
    vectors_per_cpu: Option<u32>,
}

impl KernelArgs {
    /// The models named on the command line beside these flags.
    fn named(&self, models: ModelNames) -> kernel::Named {
        kernel::Named {
            models,
            affinity: self.affinity.clone(),
            mapper: self.mapper.clone(),
            vectors_per_cpu: self.vectors_per_cpu,
        }
    }

    /// Fill `spec`'s models from the release (the newest without `--kernel`), keeping what is
    /// named; a spec read from a file without `--kernel` keeps its own names and only takes
    /// the flags given. Returns where each model came from (printed on stderr), when picked.
    fn pick(&self, spec: &mut ScenarioSpec, named: &kernel::Named, from_file: bool) -> anyhow::Result<Option<String>> {
        if from_file && self.kernel.is_none() {
            named.models.apply_to(spec);
            if named.affinity.is_some() {
                spec.affinity.clone_from(&named.affinity);
            }
            if named.mapper.is_some() {
                spec.mapper.clone_from(&named.mapper);
            }
            if named.vectors_per_cpu.is_some() {
                spec.vectors_per_cpu = named.vectors_per_cpu;
            }
            return Ok(None);
        }
        let topology = spec.topology.resolve(irqscope::catalogue::get)?;
        let picked = kernel::pick(spec, &topology, self.kernel.as_deref(), named)?;
        Ok(Some(kernel::provenance(&picked)))
    }
}

/// Where each model came from goes to stderr, once the run succeeded: the report itself is the
/// page's text twin and its printed command reproduces it.
fn print_provenance(provenance: Option<String>) {
    if let Some(p) = provenance {
        eprintln!("{}", render::columns::wrap(&p, "irqscope: models: ", "  ").trim_end());
    }
}

/// The boot-parameter flags `simulate` and `compare` share.
#[derive(clap::Args)]
pub(crate) struct BootArgs {
    /// The irqaffinity= boot parameter: default affinity of non-managed interrupts (a cpulist).
    #[arg(long, value_name = "LIST")]
    irqaffinity: Option<String>,
    /// The isolcpus= boot parameter, e.g. managed_irq,2-5.
    #[arg(long, value_name = "[FLAGS,]LIST")]
    isolcpus: Option<String>,
    /// The nohz_full= boot parameter (a cpulist; checked, moves no interrupt).
    #[arg(long, value_name = "LIST")]
    nohz_full: Option<String>,
    /// Vectors other interrupts hold before the first device, e.g. 0:16,1-3:2.
    #[arg(long, value_name = "CPUS:N,...")]
    vectors_held: Option<String>,
}

/// `--variant`, `--sort`, `--effective`: the three models a command runs in place of those
/// the kernel release picks.
#[derive(clap::Args)]
pub(crate) struct ModelFlags {
    /// group_cpus_evenly variant: pre-cluster, cluster, rotation, rotation-ohcl, rotation-v1r,
    /// rotation-v1 (default: the kernel release's).
    #[arg(long)]
    variant: Option<String>,
    /// Heapsort generation: heap-v5.1, heap-v6.9, heap-v6.11 (default: the kernel release's).
    #[arg(long)]
    sort: Option<String>,
    /// Effective-CPU model: x86-matrix, first-cpu, arm64-its or arm64-gicv5 (default: the
    /// interrupt controller's: the machine's, or each captured IRQ's chip in /proc/interrupts).
    #[arg(long)]
    effective: Option<String>,
}

impl ModelFlags {
    pub(crate) fn names(&self) -> ModelNames {
        ModelNames {
            variant: self.variant.clone(),
            sort: self.sort.clone(),
            effective: self.effective.clone(),
        }
    }
}

impl BootArgs {
    fn params(&self) -> BootParams {
        BootParams {
            irqaffinity: self.irqaffinity.clone(),
            isolcpus: self.isolcpus.clone(),
            nohz_full: self.nohz_full.clone(),
            vectors_held: self.vectors_held.clone(),
        }
    }
}

#[derive(clap::Args)]
pub(crate) struct SimulateArgs {
    /// A preset name (`irqscope topology list`) or a topology file (.toml); with --scenario, omit.
    topology: Option<String>,
    /// Devices: [COUNTx]QUEUES[:key=value,...], e.g. `6x62:pre=1,name=nvme`.
    devices: Vec<String>,
    /// Read the whole scenario from a JSON file instead.
    #[arg(long, conflicts_with_all = ["topology", "devices"])]
    scenario: Option<PathBuf>,
    /// Default pre vectors for devices that do not say (NVMe's admin queue is 1).
    #[arg(long, default_value_t = 0)]
    pre: u32,
    #[arg(long, default_value_t = 0)]
    post: u32,
    /// Default interrupt sets, e.g. 4+2.
    #[arg(long)]
    sets: Option<String>,
    /// Devices allocate without managed affinity.
    #[arg(long)]
    unmanaged: bool,
    /// Default blk-mq map: irq or cpumap.
    #[arg(long)]
    blk_mq: Option<String>,
    #[command(flatten)]
    models: ModelFlags,
    /// Starting value of the rotation patch's spread counter: N, or A..B (both included) for
    /// the distribution over unknown earlier callers.
    #[arg(long, value_name = "N|A..B")]
    counter: Option<String>,
    /// Probe orders: all (every order the model allows) or sample:N[:SEED]; the answer is
    /// then a distribution over orders and counter starts.
    #[arg(long, value_name = "all|sample:N[:SEED]")]
    orders: Option<String>,
    /// Form the managed masks with a policy proposal instead (offset-by-probed).
    #[arg(long)]
    proposal: Option<String>,
    /// Probe order of driver=nvme controllers: sequential (default: each admin tag set, then
    /// its I/O spread) or parallel (every admin tag set before the first I/O spread).
    #[arg(long)]
    probe: Option<String>,
    #[command(flatten)]
    kernel: KernelArgs,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Also print every vector (mask, effective CPU).
    #[arg(long)]
    vectors: bool,
    #[command(flatten)]
    boot: BootArgs,
    /// Always report the vector space per CPU (shown anyway when it runs out or a boot
    /// parameter is set).
    #[arg(long)]
    vector_space: bool,
}

/// `--counter` and `--orders`, checked, as the overrides they make. `--counter A..B` asks for
/// a distribution over counter starts even when A = B; `--counter N` does not.
fn counter_overrides(counter: Option<&str>, orders: Option<&str>) -> anyhow::Result<Overrides> {
    let counters = counter
        .map(CounterRange::parse)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    if let Some(text) = orders {
        Orders::parse(text).map_err(anyhow::Error::msg)?;
    }
    Ok(Overrides {
        counter: counters.map(|c| c.from),
        counter_to: counters
            .filter(|_| counter.is_some_and(|t| t.contains("..")))
            .map(|c| c.to),
        orders: orders.map(str::to_string),
        ..Overrides::default()
    })
}

pub(crate) fn simulate(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    let models = args.models.names();
    let overrides = Overrides {
        models: models.clone(),
        proposal: args.proposal.clone(),
        probe: args.probe.clone(),
        boot: args.boot.params(),
        ..counter_overrides(args.counter.as_deref(), args.orders.as_deref())?
    };
    let named = args.kernel.named(models);
    let (base, label) = match (&args.scenario, &args.topology) {
        (Some(path), _) => {
            let spec: ScenarioSpec =
                serde_json::from_str(&read_text(path)?).with_context(|| format!("{}", path.display()))?;
            let label = match &spec.topology {
                TopologyRef::Preset(name) => name.clone(),
                TopologyRef::Inline(_) => format!("--scenario {}", path.display()),
            };
            (spec, label)
        }
        (None, None) => anyhow::bail!("give a topology (preset or file) and devices, or --scenario FILE"),
        (None, Some(arg)) => {
            anyhow::ensure!(!args.devices.is_empty(), "give at least one device, e.g. 6x62:pre=1");
            let Machine { reference, label } = machine(arg)?;
            let defaults = DeviceDefaults {
                pre: args.pre,
                post: args.post,
                sets: args.sets.clone(),
                unmanaged: args.unmanaged,
                blk_mq: args.blk_mq.clone(),
            };
            (
                spec_for_machine(reference, parse_devices_with(&args.devices, &defaults)?),
                label,
            )
        }
    };
    let mut spec = overrides.apply(base);
    let provenance = args.kernel.pick(&mut spec, &named, args.scenario.is_some())?;
    let run = Run::resolve(spec, &cached_kernel_c)?;
    print_provenance(provenance);
    let vs_extra = args.vector_space && !render::vector_space::shown(&run.scenario, &run.outcome);
    print_twin(
        args.format,
        || {
            let mut out = run.report(&render::text::TextOptions {
                topology_label: label,
                vectors: args.vectors,
                permalink: None,
                orders_flags: None,
            });
            if vs_extra {
                render::vector_space::text_block(&run.scenario, &run.outcome, &mut out);
            }
            out
        },
        || {
            let mut value = run.json();
            if args.vector_space {
                value["vector_space"] = render::vector_space::json(&run.outcome.vector_space);
            }
            value
        },
    )
}

#[derive(clap::Args)]
pub(crate) struct CompareArgs {
    /// A preset name (`irqscope topology list`) or a topology file (.toml).
    topology: String,
    /// Devices: [COUNTx]QUEUES[:key=value,...], e.g. `6x62:pre=1,name=nvme`.
    #[arg(required = true)]
    devices: Vec<String>,
    /// Side A's variant (default: cluster).
    #[arg(long)]
    a: Option<String>,
    /// Side B's variant (default: another variant than A's; for built C, `c:NAME`, the
    /// variant of the release `--kernel` names, the newest without one).
    #[arg(long)]
    b: Option<String>,
    /// Side A's heapsort generation: heap-v5.1, heap-v6.9, heap-v6.11 (default).
    #[arg(long)]
    a_sort: Option<String>,
    /// Side B's heapsort generation (default: heap-v6.11).
    #[arg(long)]
    b_sort: Option<String>,
    /// Side A's effective-CPU model (default: the machine's interrupt controller's: apic
    /// x86-matrix, gic-its arm64-its, gic-v2m and gic-spi first-cpu, gic-v5 arm64-gicv5).
    #[arg(long)]
    a_effective: Option<String>,
    /// Side B's effective-CPU model (default: as side A's default).
    #[arg(long)]
    b_effective: Option<String>,
    /// Side A's starting value of the rotation patch's spread counter (default 0).
    #[arg(long)]
    a_counter: Option<u32>,
    /// Side B's starting value of the rotation patch's spread counter (default 0).
    #[arg(long)]
    b_counter: Option<u32>,
    /// Both sides form their managed masks with a policy proposal instead (offset-by-probed).
    #[arg(long)]
    proposal: Option<String>,
    /// Probe order of driver=nvme controllers: sequential (default) or parallel (every admin
    /// tag set before the first I/O spread).
    #[arg(long)]
    probe: Option<String>,
    /// Probe orders both sides stand for: all or sample:N[:SEED]; each side is then a
    /// distribution, and the report compares them.
    #[arg(long, value_name = "all|sample:N[:SEED]")]
    orders: Option<String>,
    /// Both sides' counter starts: N, or A..B (both included) with --orders.
    #[arg(long, value_name = "N|A..B")]
    counter: Option<String>,
    #[command(flatten)]
    kernel: KernelArgs,
    #[command(flatten)]
    boot: BootArgs,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

pub(crate) fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let Machine { reference, label } = machine(&args.topology)?;
    let devices = parse_devices_with(&args.devices, &DeviceDefaults::default())?;
    let mut base = Overrides {
        proposal: args.proposal.clone(),
        probe: args.probe.clone(),
        boot: args.boot.params(),
        ..counter_overrides(args.counter.as_deref(), args.orders.as_deref())?
    }
    .apply(spec_for_machine(reference, devices));
    // Both sides run what the release picks (the newest without --kernel); side A's variant
    // is --a or the release's, side B's another one unless --b names it.
    let named = args.kernel.named(ModelNames {
        variant: args.a.clone(),
        ..ModelNames::default()
    });
    let provenance = args.kernel.pick(&mut base, &named, false)?;
    let sides = CompareQuery {
        a: args.a,
        b: args.b,
        a_sort: args.a_sort,
        b_sort: args.b_sort,
        a_effective: args.a_effective,
        b_effective: args.b_effective,
        a_counter: args.a_counter,
        b_counter: args.b_counter,
        ..CompareQuery::default()
    };
    let run = CompareRun::resolve(sides.sides_over(base), &cached_kernel_c)?;
    print_provenance(provenance);
    print_twin(args.format, || run.report(&label, None), || run.json())
}

#[derive(clap::Args)]
pub(crate) struct SweepArgs {
    /// Presets separated by commas (default: the whole catalogue); repeat to add more.
    #[arg(long, conflicts_with = "all")]
    topologies: Vec<String>,
    /// The whole catalogue.
    #[arg(long)]
    all: bool,
    /// A named mix (nvme-6x32, nvme-6x14, nic-2x16-sets, nvme-4x8+nic-2x16) or device tokens
    /// separated by spaces, optionally NAME=TOKENS; repeat for several (default: the named mixes).
    #[arg(long)]
    mix: Vec<String>,
    /// Variants and proposals separated by commas, or `all` (default); repeat to add more.
    #[arg(long)]
    variants: Vec<String>,
    /// Starting spread counters: a..b (b excluded), a..=b or n.
    #[arg(long, default_value = "0..8")]
    counters: String,
    /// The starting counters as `simulate` takes them: A..B with both ends included, or N
    /// (in place of --counters).
    #[arg(long, conflicts_with = "counters", value_name = "A..B")]
    counter: Option<String>,
    /// Probe orders each row also stands for: all or sample:N[:SEED]; every row gains the
    /// share of them, from its counter start, with the worst CPU above the ideal.
    #[arg(long, value_name = "all|sample:N[:SEED]")]
    orders: Option<String>,
    #[arg(long)]
    sort: Option<String>,
    #[arg(long)]
    effective: Option<String>,
    /// The kernel release every row is for: its heapsort, irq_create_affinity_masks era,
    /// blk-mq mapper and vectors per CPU (the variants stay the rows).
    #[arg(long, value_name = "RELEASE")]
    kernel: Option<String>,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    #[arg(long, value_enum, default_value_t = SweepFormat::Text)]
    format: SweepFormat,
}

/// The sweep's placements: names of models and proposals, and built C (`c:NAME`) from the
/// build cache.
fn placements(variants: &str) -> anyhow::Result<Vec<irqscope::analysis::sweep::Placement>> {
    use irqscope::analysis::sweep::{ExternalRef, Placement, SweepConfig};
    let (c_names, model_names): (Vec<&str>, Vec<&str>) = variants
        .split(',')
        .map(str::trim)
        .partition(|v| v.starts_with(spec::KERNEL_C_PREFIX));
    let mut placements = if model_names.iter().all(|v| v.is_empty()) && !c_names.is_empty() {
        Vec::new()
    } else {
        SweepConfig::parse_placements(&model_names.join(","))?
    };
    for name in c_names {
        let (_, external) = crate::kernel_c_cmd::variant_arg(Some(name))?;
        let e = external.expect("a c: name is built C");
        placements.push(Placement::External(ExternalRef::register(e)));
    }
    Ok(placements)
}

pub(crate) fn sweep(args: SweepArgs) -> anyhow::Result<ExitCode> {
    use irqscope::analysis::sweep::{self, Mix, SweepConfig};
    use irqscope::render::view::sweep::link;
    let mut config = SweepConfig::catalogue_default();
    if !args.topologies.is_empty() && !args.all {
        config.topologies = SweepConfig::parse_topologies(&args.topologies.join(","))?;
    }
    if !args.mix.is_empty() {
        config.mixes = args.mix.iter().map(|m| Mix::parse(m)).collect::<Result<_, _>>()?;
    }
    if !args.variants.is_empty() {
        config.placements = placements(&args.variants.join(","))?;
    }
    config.counters = match &args.counter {
        Some(text) => {
            let r = irqscope::analysis::orders::CounterRange::parse(text).map_err(anyhow::Error::msg)?;
            (r.from..=r.to).collect()
        }
        None => sweep::parse_counters(&args.counters)?,
    };
    if let Some(text) = &args.orders {
        config.orders = irqscope::analysis::orders::Orders::parse(text).map_err(anyhow::Error::msg)?;
    }
    // The release's heapsort, era, mapper and vectors per CPU (the variants are the rows).
    let release = match &args.kernel {
        Some(k) => irqscope::kernel::release::parse_release(k)
            .ok_or_else(|| anyhow::anyhow!("--kernel {k:?}: not a kernel release (e.g. 6.12)"))?,
        None => irqscope::kernel::release::NEWEST,
    };
    config.sort = spec::parse_sort(
        args.sort
            .as_deref()
            .unwrap_or(irqscope::kernel::release::generation(release).sort),
    )?;
    config.kernel.clone_from(&args.kernel);
    if let Some(e) = &args.effective {
        config.effective = spec::parse_effective(e)?;
    }
    config.threads = args.threads;
    let result = sweep::run(&config)?;
    match args.format {
        SweepFormat::Text => print!("{}", render::sweep::text(&result)),
        SweepFormat::Csv => print!("{}", render::sweep::csv(&result, &link)),
        SweepFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&render::sweep::json(&result, &link))?
        ),
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args)]
pub(crate) struct BlkMqArgs {
    /// A preset name or a topology file.
    topology: String,
    #[arg(long)]
    queues: u32,
    /// current, v6.3, legacy-v5.1, legacy-v4.13, legacy-v4.10, or all (the text of /blkmq)
    /// (default: the release's).
    #[arg(long)]
    mapper: Option<String>,
    /// The kernel release whose mapper, variant and sort run (default: the newest modelled).
    #[arg(long, value_name = "RELEASE")]
    kernel: Option<String>,
    #[arg(long, default_value_t = 0)]
    queue_offset: u32,
    /// group_cpus_evenly variant (current and v6.3 only).
    #[arg(long)]
    variant: Option<String>,
    #[arg(long)]
    sort: Option<String>,
    #[arg(long, default_value_t = 0)]
    counter: u32,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

pub(crate) fn blk_mq(args: BlkMqArgs) -> anyhow::Result<ExitCode> {
    let Machine { reference, label } = machine(&args.topology)?;
    let release = match &args.kernel {
        Some(k) => irqscope::kernel::release::parse_release(k)
            .ok_or_else(|| anyhow::anyhow!("--kernel {k:?}: not a kernel release (e.g. 6.12 or 6.1.0-57-amd64)"))?,
        None => irqscope::kernel::release::NEWEST,
    };
    let g = irqscope::kernel::release::generation(release);
    let spec = BlkMqSpec {
        mapper: Some(args.mapper.unwrap_or_else(|| g.mapper.name().to_string())),
        queue_offset: args.queue_offset,
        variant: args.variant.unwrap_or_else(|| g.variant.to_string()),
        sort: args.sort.unwrap_or_else(|| g.sort.to_string()),
        counter: args.counter,
        kernel: args.kernel,
        ..BlkMqSpec::new(reference, args.queues)
    };
    let shown = BlkMqShown::with_kernel_c(spec, &cached_kernel_c)?;
    print_twin(args.format, || shown.report_for(&label), || shown.json())
}

#[derive(clap::Args)]
pub(crate) struct ManaArgs {
    /// A preset name or topology file (every CPU id possible); or use --input.
    topology: Option<String>,
    /// A JSON file with a MANA `input` object (the golden-vector form), or a whole case.
    #[arg(long, conflicts_with = "topology")]
    input: Option<PathBuf>,
    /// NUMA node of the device; -1 for none.
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    device_node: i32,
    /// dynamic or static MSI-X.
    #[arg(long, default_value = "dynamic")]
    mode: String,
    #[arg(long, default_value_t = 64)]
    max_msix: u32,
    /// Vectors already held on each CPU before the probe, e.g. 0,1,1,1.
    #[arg(long)]
    load: Option<String>,
    /// The irqaffinity= boot option (a cpulist).
    #[arg(long)]
    irqaffinity: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// The command that reproduces a run from a golden-style input file.
fn input_command(what: &str, path: &std::path::Path) -> String {
    format!(
        "irqscope {what} --input {}",
        spec::shell_word(&path.display().to_string())
    )
}

pub(crate) fn mana(args: ManaArgs) -> anyhow::Result<ExitCode> {
    use irqscope::scenario::mana::{self as m, ManaSpec};
    let (run, command, json) = match (&args.input, &args.topology) {
        (Some(path), _) => {
            let input = golden::mana_sched::parse_mana_input(&input_object(path)?)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let run = m::run_input(input)?;
            let json = render::json_mana_sched::mana_run_json(&run);
            (run, input_command("mana", path), json)
        }
        (None, Some(name)) => {
            let spec = ManaSpec {
                topology: machine(name)?.reference,
                device_node: args.device_node,
                mode: args.mode,
                max_msix: args.max_msix,
                load: args
                    .load
                    .as_deref()
                    .map(|l| m::parse_count_list(l, "--load"))
                    .transpose()?,
                irqaffinity: args.irqaffinity,
            };
            ManaShown::new(spec)?.into_twin()
        }
        (None, None) => anyhow::bail!("give a topology (preset or file) or --input FILE"),
    };
    let text = || {
        render::mana_sched::with_command(
            &command,
            &render::mana_sched::mana_report(&run.input, &run.unpatched, &run.patched),
            None,
        )
    };
    print_twin(args.format, text, || json)
}

#[derive(clap::Args)]
pub(crate) struct SchedArgs {
    /// A preset name or topology file with a distance matrix; or use --input.
    topology: Option<String>,
    /// A JSON file with a sched `input` object (the golden-vector form), or a whole case.
    #[arg(long, conflicts_with = "topology")]
    input: Option<PathBuf>,
    /// Node running the communicating pair (on its two lowest CPUs).
    #[arg(long, default_value_t = 1)]
    pair_node: u32,
    /// Extra runnable tasks on otherwise idle CPUs of the pair's node.
    #[arg(long, default_value_t = 0)]
    noise: u32,
    #[arg(long, default_value_t = 30)]
    node_reclaim_distance: u32,
    /// Last-level caches per node (sets imb_numa_nr); default 1, an assumption the report names.
    #[arg(long, value_name = "N")]
    llcs_per_node: Option<u32>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

pub(crate) fn sched(args: SchedArgs) -> anyhow::Result<ExitCode> {
    use irqscope::scenario::sched::{self as s, SchedSpec};
    let (run, command, json) = match (&args.input, &args.topology) {
        (Some(path), _) => {
            let input = golden::mana_sched::parse_sched_input(&input_object(path)?)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let run = s::run_input(input)?;
            let json = render::json_mana_sched::sched_outcome_json(&run.outcome);
            (run, input_command("sched", path), json)
        }
        (None, Some(name)) => {
            let spec = SchedSpec {
                topology: machine(name)?.reference,
                pair_node: args.pair_node,
                noise: args.noise,
                node_reclaim_distance: args.node_reclaim_distance,
                llcs_per_node: args.llcs_per_node,
            };
            SchedShown::new(spec)?.into_twin()
        }
        (None, None) => anyhow::bail!("give a topology (preset or file) or --input FILE"),
    };
    let text = || render::mana_sched::with_command(&command, &render::mana_sched::sched_run_report(&run), None);
    print_twin(args.format, text, || json)
}
