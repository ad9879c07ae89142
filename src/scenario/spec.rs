//! Scenario input as data: the JSON form (files, the HTTP API, permalinks) and the compact
//! command-line form (`6x62:pre=1`) that the text report prints so a reviewer can paste it back.
//!
//! Device grammar, one token per group of identical devices:
//!
//! ```text
//! [COUNT x] QUEUES [: key=value {, key=value}]
//! keys: name, pre, post, sets (a+b+...), managed (yes|no), node, blkmq (irq|cpumap), blkmq_queues,
//!       driver (mana|nvme), patched (yes|no, MANA only), msix (dynamic|static, MANA only),
//!       hv_pci (yes|no)
//! ```
//!
//! `QUEUES` counts the affinity (queue) vectors; a device has `pre + QUEUES + post` vectors.
//! With `driver=mana` the device is a MANA NIC offering `QUEUES` queue vectors plus its HWC
//! vector (`max_msix = QUEUES + 1`); the driver places its own non-managed IRQs
//! ([`crate::kernel::mana`]) and `node` is the device's NUMA node. `hv_pci=yes` marks a Hyper-V
//! vPCI device: without `node` it gets the node its kernel release gives such a device. With `driver=nvme` the device
//! is an NVMe controller: a generic device whose probe maps an admin tag set
//! (`group_cpus_evenly(1)`) before its vectors are spread, in the scenario's probe order
//! (`--probe sequential|parallel`, [`ProbeOrder`]).
//! `COUNT` devices named `p` become `p0 .. p{COUNT-1}` (one device keeps the name `p`); devices
//! without a name are `dev{i}` by their position in the whole list.

use super::request::format_sets;
use super::{BlkMqSource, BootParams, Device, Driver, ProbeOrder, Scenario, ScenarioError, DEVICES_MAX};
use crate::kernel::mana::MsixMode;
use crate::kernel::vector_matrix::EffectiveModel;
use crate::kernel::{External, SortGen, Variant};
use crate::policy::Proposal;
use crate::topology::{Topology, TopologySpec};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub const DEFAULT_VARIANT: Variant = Variant::Cluster;
pub(crate) const DEFAULT_SORT: SortGen = SortGen::HeapV6_11;
pub const DEFAULT_EFFECTIVE: EffectiveModel = EffectiveModel::X86Matrix;

/// A scenario as data. Names (variant, sort, effective model) are the frozen names of the
/// models; an unknown name is an error, never a substitution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    pub topology: TopologyRef,
    pub devices: Vec<DeviceSpec>,
    #[serde(default = "default_variant")]
    pub variant: String,
    #[serde(default = "default_sort")]
    pub sort: String,
    #[serde(default = "default_effective")]
    pub effective: String,
    #[serde(default)]
    pub spread_counter: u32,
    /// A `policy` proposal that forms the managed masks instead of the kernel variant. Absent in
    /// every link written before proposals existed, and omitted when unset, so those links
    /// decode and encode unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<String>,
    /// `irqaffinity=` (a cpulist). This and the three fields after it are absent in every link
    /// written before they existed and omitted when unset, so those links decode and encode
    /// unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irqaffinity: Option<String>,
    /// `isolcpus=` (`[FLAGS,]LIST`, e.g. `managed_irq,2-5`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolcpus: Option<String>,
    /// `nohz_full=` (a cpulist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nohz_full: Option<String>,
    /// Vectors other interrupts hold before the first device: `CPUS:N,...` (`0:16,1-3:2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors_held: Option<String>,
    /// With a `c:NAME` variant: the sha256 of the built source, which pins the code (a
    /// server runs the link only when it has that build). Absent in every other link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_c: Option<String>,
    /// Probe order of the NVMe controllers' admin tag sets and I/O spreads: `sequential` or
    /// `parallel` ([`ProbeOrder`]). Absent in every link written before it existed (which runs
    /// sequentially, as those links did) and omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    /// The kernel release the scenario is for (`6.12`, `6.12.107+deb12-cloud-amd64`), as the
    /// command line or the page named it; it picked the models this spec names. This and the
    /// three fields after it are absent in every link written before releases could be named
    /// and omitted when unset, so those links decode, run and encode unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The era of `irq_create_affinity_masks()`: `numgrps` (.. v6.16) or `nummasks` (absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<String>,
    /// The blk-mq mapper of `blkmq=cpumap` devices (absent: `current`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapper: Option<String>,
    /// Vectors a device may get on each online x86 CPU (absent: 203).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors_per_cpu: Option<u32>,
    /// Which probe orders the scenario stands for: `all` or `sample:N[:SEED]`
    /// ([`crate::analysis::orders::Orders`]). This and `counter_to` are absent in every link written
    /// before distributions existed (one run: the list order from `spread_counter`) and omitted
    /// when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orders: Option<String>,
    /// The last counter start of a range `spread_counter..=counter_to` (unknown earlier
    /// callers of `group_cpus_evenly()`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter_to: Option<u32>,
}

impl ScenarioSpec {
    /// `devices` on `topology` with every other field at its default: the default variant,
    /// heapsort generation and effective-CPU model, counter 0, no proposal and no boot
    /// parameters. Callers name the fields they change (`ScenarioSpec { variant, ..new(…) }`),
    /// so a field added later touches no caller.
    pub fn new(topology: TopologyRef, devices: Vec<DeviceSpec>) -> ScenarioSpec {
        ScenarioSpec {
            topology,
            devices,
            variant: default_variant(),
            sort: default_sort(),
            effective: default_effective(),
            spread_counter: 0,
            proposal: None,
            irqaffinity: None,
            isolcpus: None,
            nohz_full: None,
            vectors_held: None,
            kernel_c: None,
            probe: None,
            kernel: None,
            affinity: None,
            mapper: None,
            vectors_per_cpu: None,
            orders: None,
            counter_to: None,
        }
    }

    /// The boot parameters of this spec.
    pub(crate) fn boot(&self) -> BootParams {
        BootParams {
            irqaffinity: self.irqaffinity.clone(),
            isolcpus: self.isolcpus.clone(),
            nohz_full: self.nohz_full.clone(),
            vectors_held: self.vectors_held.clone(),
        }
    }
}

fn default_variant() -> String {
    DEFAULT_VARIANT.name().into()
}
fn default_sort() -> String {
    DEFAULT_SORT.name().into()
}
fn default_effective() -> String {
    DEFAULT_EFFECTIVE.name().into()
}

/// The effective-CPU model for a scenario on `topology` that names none, and why in words:
/// the machine's interrupt controller decides (`catalogue::default_effective`). Only the
/// command line and the pages' forms call this where the user gave no model; a permalink always
/// carries its model (`effective` is serialized unconditionally), so old links keep theirs, and
/// the serde default above stays [`DEFAULT_EFFECTIVE`]. A topology that does not resolve is
/// answered with the default model; resolving the scenario reports its error.
pub(crate) fn effective_default(topology: &TopologyRef) -> (EffectiveModel, String) {
    match topology.resolve(crate::catalogue::get) {
        Ok(t) => crate::catalogue::default_effective(&t),
        Err(_) => (DEFAULT_EFFECTIVE, String::new()),
    }
}

/// A catalogue preset by name, or a whole topology inline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TopologyRef {
    Preset(String),
    Inline(Box<TopologySpec>),
}

impl TopologyRef {
    /// The validated machine, looking presets up with `preset`.
    pub fn resolve(&self, preset: impl Fn(&str) -> Option<Arc<Topology>>) -> Result<Arc<Topology>, ScenarioError> {
        match self {
            TopologyRef::Preset(name) => {
                preset(name).ok_or_else(|| ScenarioError(format!("unknown topology preset {name:?}")))
            }
            TopologyRef::Inline(spec) => Topology::new(spec)
                .map(Arc::new)
                .map_err(|e| ScenarioError(format!("topology: {e}"))),
        }
    }
}

/// One group of identical devices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Affinity (queue) vectors per device.
    pub queues: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pre: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub post: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sets: Option<Vec<u32>>,
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub managed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blk_mq: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blk_mq_queues: Option<u32>,
    /// `None`: a generic driver; `"mana"`: the MANA NIC driver. Absent in specs written before
    /// MANA devices existed, which therefore decode and encode exactly as they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// MANA: the driver after the low-vCPU affinity patch (default: before it).
    #[serde(default, skip_serializing_if = "is_false")]
    pub patched: bool,
    /// MANA: `dynamic` (default) or `static` MSI-X allocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msix: Option<String>,
    /// A Hyper-V vPCI device (pci-hyperv.c): without `node`, the node the release gives a
    /// device the host says nothing about (`kernel::release::HV_PCI_NODES`). Absent in specs
    /// written before it, whose devices keep `NUMA_NO_NODE`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub hv_pci: bool,
}

fn is_false(v: &bool) -> bool {
    !*v
}

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
fn is_one(v: &u32) -> bool {
    *v == 1
}
fn is_zero(v: &u32) -> bool {
    *v == 0
}
fn is_true(v: &bool) -> bool {
    *v
}

impl DeviceSpec {
    pub fn new(count: u32, queues: u32) -> DeviceSpec {
        DeviceSpec {
            count,
            name: None,
            queues,
            pre: 0,
            post: 0,
            sets: None,
            managed: true,
            node: None,
            blk_mq: None,
            blk_mq_queues: None,
            driver: None,
            patched: false,
            msix: None,
            hv_pci: false,
        }
    }

    /// A MANA NIC offering `queues` queue vectors (plus the HWC vector).
    pub fn mana(queues: u32) -> DeviceSpec {
        DeviceSpec {
            driver: Some(DRIVER_MANA.into()),
            managed: false,
            ..DeviceSpec::new(1, queues)
        }
    }
}

/// The `driver` name of the MANA NIC driver.
pub(crate) const DRIVER_MANA: &str = "mana";

pub(crate) fn parse_msix_mode(name: &str) -> Result<MsixMode, ScenarioError> {
    match name {
        "dynamic" => Ok(MsixMode::Dynamic),
        "static" => Ok(MsixMode::Static),
        _ => err(format!("unknown MSI-X mode {name:?} (dynamic or static)")),
    }
}

pub(crate) fn msix_mode_name(mode: MsixMode) -> &'static str {
    match mode {
        MsixMode::Dynamic => "dynamic",
        MsixMode::Static => "static",
    }
}

fn driver_of(spec: &DeviceSpec) -> Result<Driver, ScenarioError> {
    match spec.driver.as_deref() {
        None => {
            if spec.patched || spec.msix.is_some() {
                return err("patched and msix apply to a MANA device only (driver=mana)");
            }
            Ok(Driver::Generic)
        }
        Some(DRIVER_MANA) => Ok(Driver::Mana {
            patched: spec.patched,
            mode: parse_msix_mode(spec.msix.as_deref().unwrap_or("dynamic"))?,
        }),
        Some(DRIVER_NVME) => {
            if spec.patched || spec.msix.is_some() {
                return err("patched and msix apply to a MANA device only (driver=mana)");
            }
            Ok(Driver::Nvme)
        }
        Some(other) => err(format!(
            "unknown driver {other:?} (known: {DRIVER_MANA}, {DRIVER_NVME})"
        )),
    }
}

/// The `driver` name of the NVMe PCI driver (an admin tag set before the I/O vectors).
pub(crate) const DRIVER_NVME: &str = "nvme";

pub fn parse_probe(name: &str) -> Result<ProbeOrder, ScenarioError> {
    ProbeOrder::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = ProbeOrder::ALL.iter().map(|p| p.name()).collect();
        ScenarioError(format!("unknown probe order {name:?} (known: {})", known.join(", ")))
    })
}

fn err<T>(m: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError(m.into()))
}

pub fn parse_variant(name: &str) -> Result<Variant, ScenarioError> {
    Variant::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
        ScenarioError(format!("unknown variant {name:?} (known: {})", known.join(", ")))
    })
}

pub fn parse_sort(name: &str) -> Result<SortGen, ScenarioError> {
    SortGen::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = SortGen::ALL.iter().map(|v| v.name()).collect();
        ScenarioError(format!("unknown sort {name:?} (known: {})", known.join(", ")))
    })
}

pub fn parse_effective(name: &str) -> Result<EffectiveModel, ScenarioError> {
    EffectiveModel::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = EffectiveModel::ALL.iter().map(|v| v.name()).collect();
        ScenarioError(format!(
            "unknown effective model {name:?} (known: {})",
            known.join(", ")
        ))
    })
}

pub(crate) fn parse_proposal(name: &str) -> Result<Proposal, ScenarioError> {
    Proposal::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Proposal::ALL.iter().map(|p| p.name()).collect();
        ScenarioError(format!("unknown proposal {name:?} (known: {})", known.join(", ")))
    })
}

/// Expand device groups into devices with their final names.
pub fn expand_devices(specs: &[DeviceSpec]) -> Result<Vec<Device>, ScenarioError> {
    let total: u64 = specs.iter().map(|s| u64::from(s.count)).sum();
    if total > DEVICES_MAX as u64 {
        return err(format!("{total} devices; at most {DEVICES_MAX} are allowed"));
    }
    let mut devices = Vec::with_capacity(total as usize);
    for spec in specs {
        if spec.count == 0 {
            return err("a device group needs a count of at least 1");
        }
        let blk_mq = match spec.blk_mq.as_deref() {
            None => None,
            Some(name) => Some(
                BlkMqSource::from_name(name)
                    .ok_or_else(|| ScenarioError(format!("unknown blk-mq source {name:?} (irq or cpumap)")))?,
            ),
        };
        let driver = driver_of(spec)?;
        // A MANA device's vectors are its MSI-X table: the HWC plus the queue vectors.
        let hwc = u64::from(driver.is_mana());
        let vectors = u64::from(spec.pre) + u64::from(spec.queues) + u64::from(spec.post) + hwc;
        let vectors = u32::try_from(vectors).map_err(|_| ScenarioError("too many vectors".into()))?;
        for k in 0..spec.count {
            let name = match &spec.name {
                Some(p) if spec.count == 1 => p.clone(),
                Some(p) => format!("{p}{k}"),
                None => format!("dev{}", devices.len()),
            };
            devices.push(Device {
                name,
                vectors,
                pre_vectors: spec.pre,
                post_vectors: spec.post,
                sets: spec.sets.clone(),
                // MANA IRQs are never managed; `managed` does not apply to it.
                managed_affinity: spec.managed && !driver.is_mana(),
                node: spec.node,
                hv_pci: spec.hv_pci,
                blk_mq,
                blk_mq_queues: spec.blk_mq_queues,
                driver,
            });
        }
    }
    Ok(devices)
}

/// The prefix of a variant that names built C (`c:NAME`, see `kernel_c`).
pub const KERNEL_C_PREFIX: &str = "c:";

/// Finds built C for a `c:NAME` variant: the name and, from a permalink, the pinned sha256.
pub type KernelCLookup<'a> = &'a dyn Fn(&str, Option<&str>) -> Result<External, ScenarioError>;

/// The lookup where no C is registered: every `c:` variant is refused, saying how to get one.
pub fn no_kernel_c(name: &str, _sha256: Option<&str>) -> Result<External, ScenarioError> {
    Err(ScenarioError(format!(
        "variant c:{name} is built C; build it with `irqscope kernel-c build SOURCE --name {name}` \
         (or register it with `irqscope serve --kernel-c {name}=SOURCE`)"
    )))
}

impl ScenarioSpec {
    /// Validate into a [`Scenario`], looking presets up with `preset`. A `c:` variant is
    /// refused: [`ScenarioSpec::resolve_with`] takes a lookup for built C.
    pub fn resolve(&self, preset: impl Fn(&str) -> Option<Arc<Topology>>) -> Result<Scenario, ScenarioError> {
        self.resolve_with(preset, &no_kernel_c)
    }

    /// [`ScenarioSpec::resolve`], with `c:NAME` variants looked up by `kernel_c`.
    pub(crate) fn resolve_with(
        &self,
        preset: impl Fn(&str) -> Option<Arc<Topology>>,
        kernel_c: KernelCLookup<'_>,
    ) -> Result<Scenario, ScenarioError> {
        let topology = self.topology.resolve(preset)?;
        let proposal = self.proposal.as_deref().map(parse_proposal).transpose()?;
        let external = match self.variant.strip_prefix(KERNEL_C_PREFIX) {
            Some(name) => Some(kernel_c(name, self.kernel_c.as_deref())?),
            None if self.kernel_c.is_some() => {
                return err(format!(
                    "kernel_c is set, but variant {:?} is not a c: variant",
                    self.variant
                ))
            }
            None => None,
        };
        // The named variant is unused when outside code answers; it stays the default.
        let variant = match external {
            Some(_) => DEFAULT_VARIANT,
            None => parse_variant(&self.variant)?,
        };
        let scenario = Scenario::new(
            topology,
            expand_devices(&self.devices)?,
            variant,
            parse_sort(&self.sort)?,
            parse_effective(&self.effective)?,
            self.spread_counter,
        )?
        .with_external(external);
        let scenario = if proposal.is_some() {
            scenario.with_proposal(proposal)
        } else {
            scenario
        };
        let scenario = match self.probe.as_deref() {
            Some(name) => scenario.with_probe(Some(parse_probe(name)?)),
            None => scenario,
        };
        let pick = super::kernel::KernelPick::of_spec(self)?;
        let scenario = if pick == super::kernel::KernelPick::default() {
            scenario
        } else {
            scenario.with_kernel(pick)?
        };
        let boot = self.boot();
        if boot.is_empty() {
            Ok(scenario)
        } else {
            scenario.with_boot(boot)
        }
    }
}

/// Parse one compact device token (`6x62:pre=1,name=nvme`).
pub fn parse_device_token(token: &str) -> Result<DeviceSpec, ScenarioError> {
    const TOKEN_BYTES_MAX: usize = 512;
    if token.len() > TOKEN_BYTES_MAX {
        return err(format!(
            "device {:?}…: longer than {TOKEN_BYTES_MAX} bytes",
            &token[..(0..=40).rev().find(|&i| token.is_char_boundary(i)).unwrap_or(0)]
        ));
    }
    let bad = |why: &str| {
        ScenarioError(format!(
            "device {token:?}: {why} (form: [COUNTx]QUEUES[:key=value,...])"
        ))
    };
    let (head, opts) = match token.split_once(':') {
        Some((h, o)) => (h, Some(o)),
        None => (token, None),
    };
    let number = |s: &str, what: &str| -> Result<u32, ScenarioError> {
        s.trim()
            .parse::<u32>()
            .map_err(|_| bad(&format!("{what} {s:?} is not a number")))
    };
    let mut spec = match head.split_once(['x', 'X']) {
        Some((count, queues)) => DeviceSpec::new(number(count, "count")?, number(queues, "queue count")?),
        None => DeviceSpec::new(1, number(head, "queue count")?),
    };
    let Some(opts) = opts else { return Ok(spec) };
    let mut managed_given = false;
    let mut rest = opts;
    while !rest.is_empty() {
        let (pair, tail) = rest.split_once(',').unwrap_or((rest, ""));
        rest = tail;
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| bad(&format!("{pair:?} is not key=value")))?;
        managed_given |= key == "managed";
        set_device_option(&mut spec, key, value).map_err(|why| bad(&why))?;
    }
    if spec.driver.as_deref() == Some(DRIVER_MANA) {
        if managed_given {
            return Err(bad("MANA IRQs are not managed; drop the managed key"));
        }
        spec.managed = false;
    }
    driver_of(&spec).map_err(|e| bad(&e.0))?;
    Ok(spec)
}

/// One `key=value` of a device token into `spec`; the error says which key and why.
fn set_device_option(spec: &mut DeviceSpec, key: &str, value: &str) -> Result<(), String> {
    let number = |what: &str| -> Result<u32, String> {
        value
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("{what} {value:?} is not a number"))
    };
    let yes_no = || match value {
        "yes" | "true" => Ok(true),
        "no" | "false" => Ok(false),
        _ => Err(format!("{key} is yes or no")),
    };
    match key {
        "name" => spec.name = Some(value.to_string()),
        "pre" => spec.pre = number("pre")?,
        "post" => spec.post = number("post")?,
        "node" => spec.node = Some(number("node")?),
        "hv_pci" => spec.hv_pci = yes_no()?,
        "sets" => {
            spec.sets = Some(
                value
                    .split('+')
                    .map(|s| {
                        s.trim()
                            .parse::<u32>()
                            .map_err(|_| format!("set size {s:?} is not a number"))
                    })
                    .collect::<Result<_, _>>()?,
            )
        }
        "managed" => spec.managed = yes_no()?,
        "blkmq" => spec.blk_mq = Some(value.to_string()),
        "blkmq_queues" => spec.blk_mq_queues = Some(number("blkmq_queues")?),
        "driver" => spec.driver = Some(value.to_string()),
        "patched" => spec.patched = yes_no()?,
        "msix" => spec.msix = Some(value.to_string()),
        _ => return Err(format!("unknown key {key:?}")),
    }
    Ok(())
}

/// The compact device tokens that rebuild `devices` (identical neighbours folded into `Nx`).
pub fn format_device_tokens(devices: &[Device]) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < devices.len() {
        let d = &devices[i];
        let (run, name) = named_run(devices, i);
        let opts = device_options(d, name);
        let queues = d.queue_vectors();
        let head = if run > 1 {
            format!("{run}x{queues}")
        } else {
            queues.to_string()
        };
        tokens.push(if opts.is_empty() {
            head
        } else {
            format!("{head}:{}", opts.join(","))
        });
        i += run;
    }
    tokens
}

/// The longest run of identical devices from `devices[i]` named p0, p1, ... or dev{i},
/// dev{i+1}, ..., and the `name=` its token carries: none for default names, the prefix for a
/// run, the whole name for a single device (one named like "nvme0" keeps its digits).
fn named_run(devices: &[Device], i: usize) -> (usize, Option<String>) {
    let d = &devices[i];
    let prefix = d.name.trim_end_matches(|c: char| c.is_ascii_digit());
    let digits = &d.name[prefix.len()..];
    let start_index: Option<u64> = (!digits.is_empty() && (digits == "0" || !digits.starts_with('0')))
        .then(|| digits.parse().ok())
        .flatten();
    let mut run = 1;
    if let Some(k0) = start_index {
        let defaults = prefix == "dev" && k0 == i as u64;
        if k0 == 0 || defaults {
            while let Some(next) = devices.get(i + run) {
                let same = Device {
                    name: next.name.clone(),
                    ..d.clone()
                } == *next;
                if !same || next.name != format!("{prefix}{}", k0 + run as u64) {
                    break;
                }
                run += 1;
            }
        }
    }
    let is_default_name = prefix == "dev" && start_index == Some(i as u64);
    let name = if is_default_name {
        None
    } else if run > 1 {
        Some(prefix.to_string())
    } else {
        Some(d.name.clone())
    };
    (run, name)
}

/// A device's `key=value` options in token order, those at their defaults left out.
fn device_options(d: &Device, name: Option<String>) -> Vec<String> {
    let mut opts = Vec::new();
    if let Some(n) = name {
        opts.push(format!("name={n}"));
    }
    if d.driver == Driver::Nvme {
        opts.push(format!("driver={DRIVER_NVME}"));
    }
    if let Driver::Mana { patched, mode } = d.driver {
        opts.push(format!("driver={DRIVER_MANA}"));
        if patched {
            opts.push("patched=yes".into());
        }
        if mode != MsixMode::Dynamic {
            opts.push(format!("msix={}", msix_mode_name(mode)));
        }
    }
    for (key, n) in [("pre", d.pre_vectors), ("post", d.post_vectors)] {
        if n > 0 {
            opts.push(format!("{key}={n}"));
        }
    }
    if let Some(sets) = &d.sets {
        opts.push(format!("sets={}", format_sets(sets)));
    }
    if !d.managed_affinity && !d.driver.is_mana() {
        opts.push("managed=no".into());
    }
    if let Some(node) = d.node {
        opts.push(format!("node={node}"));
    }
    if d.hv_pci {
        opts.push("hv_pci=yes".into());
    }
    if let Some(b) = d.blk_mq {
        opts.push(format!("blkmq={}", b.name()));
    }
    if let Some(q) = d.blk_mq_queues {
        opts.push(format!("blkmq_queues={q}"));
    }
    opts
}

/// Quote a word for a POSIX shell when it needs it.
pub fn shell_word(word: &str) -> String {
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.,:=+/@%".contains(c));
    if plain && !word.is_empty() {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The `irqscope simulate` command that reproduces `scenario`, as words; an option and its
/// value are one word.
pub(crate) fn command_words(scenario: &Scenario, topology: &str) -> Vec<String> {
    let mut words = vec!["irqscope".to_string(), "simulate".into(), shell_word(topology)];
    words.extend(format_device_tokens(scenario.devices()).iter().map(|t| shell_word(t)));
    words.push(format!("--variant {}", scenario.variant_name()));
    words.push(format!("--sort {}", scenario.sort().name()));
    words.push(format!("--effective {}", scenario.effective().name()));
    words.push(format!("--counter {}", scenario.spread_counter()));
    if let Some(p) = scenario.proposal() {
        words.push(format!("--proposal {}", p.name()));
    }
    if let Some(p) = scenario.probe() {
        words.push(format!("--probe {}", p.name()));
    }
    words.extend(
        scenario
            .kernel_pick()
            .command_words(scenario.topology(), scenario.effective()),
    );
    let boot = scenario.boot();
    for (name, value) in boot.named() {
        if let Some(v) = value {
            words.push(format!("--{} {}", name.replace('_', "-"), shell_word(v)));
        }
    }
    words
}

/// Rebuild a spec from a validated scenario (names kept exactly).
pub fn spec_of(scenario: &Scenario, topology: TopologyRef) -> ScenarioSpec {
    let devices = scenario
        .devices()
        .iter()
        .map(|d| DeviceSpec {
            count: 1,
            name: Some(d.name.clone()),
            queues: d.queue_vectors(),
            pre: d.pre_vectors,
            post: d.post_vectors,
            sets: d.sets.clone(),
            managed: d.managed_affinity || d.driver.is_mana(),
            node: d.node,
            hv_pci: d.hv_pci,
            blk_mq: d.blk_mq.map(|b| b.name().to_string()),
            blk_mq_queues: d.blk_mq_queues,
            driver: match d.driver {
                Driver::Generic => None,
                Driver::Mana { .. } => Some(DRIVER_MANA.to_string()),
                Driver::Nvme => Some(DRIVER_NVME.to_string()),
            },
            patched: matches!(d.driver, Driver::Mana { patched: true, .. }),
            msix: match d.driver {
                Driver::Mana {
                    mode: MsixMode::Static, ..
                } => Some("static".into()),
                _ => None,
            },
        })
        .collect();
    ScenarioSpec {
        topology,
        devices,
        variant: scenario.variant_name().into(),
        sort: scenario.sort().name().into(),
        effective: scenario.effective().name().into(),
        spread_counter: scenario.spread_counter(),
        proposal: scenario.proposal().map(|p| p.name().to_string()),
        irqaffinity: scenario.boot().irqaffinity.clone(),
        isolcpus: scenario.boot().isolcpus.clone(),
        nohz_full: scenario.boot().nohz_full.clone(),
        vectors_held: scenario.boot().vectors_held.clone(),
        kernel_c: scenario.external().map(|e| e.0.id().to_string()),
        probe: scenario.probe().map(|p| p.name().to_string()),
        kernel: scenario.kernel_pick().kernel.clone(),
        affinity: scenario.kernel_pick().affinity_field(),
        mapper: scenario.kernel_pick().mapper_field(),
        vectors_per_cpu: scenario.kernel_pick().vectors_per_cpu_field(),
        orders: None,
        counter_to: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_tokens() {
        let d = parse_device_token("6x62:pre=1,name=nvme,blkmq=irq").unwrap();
        assert_eq!(
            (d.count, d.queues, d.pre, d.name.as_deref(), d.blk_mq.as_deref()),
            (6, 62, 1, Some("nvme"), Some("irq"))
        );
        let d = parse_device_token("8:sets=4+2,post=1,managed=no,node=1").unwrap();
        assert_eq!(
            (d.count, d.sets, d.post, d.managed, d.node),
            (1, Some(vec![4, 2]), 1, false, Some(1))
        );
        for bad in [
            "",
            "x",
            "6x",
            "6xq",
            "4:pre",
            "4:bogus=1",
            "4:managed=maybe",
            "4:sets=1++2",
        ] {
            assert!(parse_device_token(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tokens_round_trip() {
        let specs: Vec<DeviceSpec> = [
            "6x62:pre=1,name=nvme",
            "2x8",
            "4:name=nic7,managed=no",
            "3:sets=2+1,pre=1,post=1",
        ]
        .iter()
        .map(|t| parse_device_token(t).unwrap())
        .collect();
        let devices = expand_devices(&specs).unwrap();
        assert_eq!(devices[0].name, "nvme0");
        assert_eq!(devices[6].name, "dev6");
        let tokens = format_device_tokens(&devices);
        assert_eq!(
            tokens,
            [
                "6x62:name=nvme,pre=1",
                "2x8",
                "4:name=nic7,managed=no",
                "3:pre=1,post=1,sets=2+1"
            ]
        );
        let again: Vec<DeviceSpec> = tokens.iter().map(|t| parse_device_token(t).unwrap()).collect();
        assert_eq!(expand_devices(&again).unwrap(), devices);
    }

    /// `driver=nvme` survives the round trip through tokens and the spec, and refuses the
    /// MANA-only keys.
    #[test]
    fn nvme_driver_tokens() {
        let spec = parse_device_token("6x32:name=nvme,pre=1,driver=nvme").unwrap();
        assert_eq!(spec.driver.as_deref(), Some("nvme"));
        let devices = expand_devices(&[spec]).unwrap();
        assert!(devices.iter().all(|d| d.driver == Driver::Nvme && d.vectors == 33));
        assert_eq!(format_device_tokens(&devices), ["6x32:name=nvme,driver=nvme,pre=1"]);
        for bad in [
            "4:driver=nvme,patched=yes",
            "4:driver=nvme,msix=static",
            "4:driver=scsi",
        ] {
            assert!(parse_device_token(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_word("6x62:pre=1"), "6x62:pre=1");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
    }
}
