//! `irqscope review`: a mailed patch in, a verdict and a mail reply out (DESIGN.md §5c).
//!
//! The patches are read and checked ([`base`]), the base tree they fit is found and built
//! with and without them (confined, cached: `kernel_c_tools::build`), and then:
//! - what the patch is ([`classify`]): the patched C against the base's C and against each
//!   named `group_cpus_evenly()` model on random machines, as `kernel-c verify` draws them;
//! - where it matters ([`matters`]): every catalogue machine × the standard device mixes ×
//!   the probe-order distribution, base against patched, ranked;
//! - the worst case beyond the catalogue ([`worst`]): a seeded search over random machines and
//!   device mixes for the largest regression of the worst CPU's load, shrunk and confirmed on
//!   fresh harnesses of the built C;
//! - the reply ([`crate::render::review::text`]): 72 columns, the way a reviewer writes it.
//!
//! A top room beside `kernel_c_tools` and `golden`: it reads those below it, nothing below
//! reads it.

pub(crate) mod base;
pub use base::check_text;
pub(crate) mod classify;
pub(crate) mod matters;
pub(crate) mod worst;

use crate::analysis::orders::{CounterRange, Orders};
use crate::kernel::External;
use crate::kernel_c::{sha256_hex, Built, KernelCError};
pub(crate) use crate::render::review::{BaseInfo, BuildInfo, PatchInfo, Review};
use crate::scenario::spec::ScenarioSpec;
use crate::scenario::ScenarioError;
use std::path::PathBuf;

/// The version of the models a review ran (pinned in its id).
pub(crate) const MODEL_VERSION: &str = env!("CARGO_PKG_VERSION");
/// Random machines × mixes the worst-case search tries by default.
pub const SEARCH_DEFAULT: u32 = 1000;

/// Why a review could not be made: bad input (not a patch, a patch that does not apply or
/// does not compile, C that crashed), always with a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReviewError(pub(crate) String);

impl ReviewError {
    pub(crate) fn new(m: impl Into<String>) -> ReviewError {
        ReviewError(m.into())
    }
}

impl From<KernelCError> for ReviewError {
    fn from(e: KernelCError) -> ReviewError {
        ReviewError(e.to_string())
    }
}

impl From<crate::kernel::ExternalError> for ReviewError {
    fn from(e: crate::kernel::ExternalError) -> ReviewError {
        ReviewError(e.0)
    }
}

impl From<ScenarioError> for ReviewError {
    fn from(e: ScenarioError) -> ReviewError {
        ReviewError(e.0)
    }
}

/// What to review and how.
#[derive(Debug, Clone)]
pub struct ReviewOptions {
    pub patches: Vec<PathBuf>,
    /// A tree, a `linux-source-X.Y` package; `None`: the newest Debian source they fit.
    pub base: Option<String>,
    /// The one named model to classify against (default: every named one).
    pub against: Option<crate::kernel::Variant>,
    /// Catalogue machines (every one by default).
    pub machines: Vec<String>,
    pub orders: Orders,
    pub counters: CounterRange,
    pub cases: u32,
    pub seed: u64,
    /// Random machines × mixes the worst-case search tries.
    pub search: u32,
    pub cache: PathBuf,
    pub apt_options: Vec<String>,
}

/// Progress for a terminal or a queue's page: what runs now, and where it counts, how many
/// of how many are done.
pub(crate) type Progress<'a> = &'a (dyn Fn(&str, Option<(u32, u32)>) + Sync);

/// The two builds a review compares, as variants the scenarios resolve.
pub(crate) struct Builds {
    pub(crate) base: Built,
    pub(crate) patched: Built,
    base_c: External,
    patched_c: External,
    /// The base's release (`7.2`), which picks the stages the C does not hold.
    pub(crate) kernel: Option<String>,
}

impl Builds {
    pub(crate) fn new(base: Built, patched: Built) -> Builds {
        let kernel = base
            .provenance
            .version
            .as_deref()
            .and_then(crate::kernel_c_tools::source::major_minor)
            .map(|(a, b)| format!("{a}.{b}"));
        let ext = |b: &Built| {
            External(std::sync::Arc::new(crate::kernel_c::KernelC::new(
                b.clone(),
                crate::kernel_c::Limits::from_env(),
            )))
        };
        Builds {
            base_c: ext(&base),
            patched_c: ext(&patched),
            base,
            patched,
            kernel,
        }
    }

    /// `c:NAME` of either build.
    pub(crate) fn lookup(&self, name: &str) -> Result<External, ScenarioError> {
        if name == self.base.provenance.name {
            Ok(self.base_c.clone())
        } else if name == self.patched.provenance.name {
            Ok(self.patched_c.clone())
        } else {
            Err(ScenarioError(format!("c:{name}: not a build of this review")))
        }
    }

    /// A scenario spec run on the base (`patched` false) or the patched build, with the
    /// models the C does not hold picked as `compare --kernel X.Y` picks them: the base's
    /// release and the machine (its interrupt controller's effective-CPU model, its vectors
    /// per CPU). Left at `ScenarioSpec::new`'s defaults, every machine would run x86's vector
    /// matrix, which spreads what an arm64 GIC stacks on the first CPU of each mask.
    pub(crate) fn spec(&self, base: ScenarioSpec, patched: bool) -> Result<ScenarioSpec, ReviewError> {
        let p = if patched {
            &self.patched.provenance
        } else {
            &self.base.provenance
        };
        let mut spec = ScenarioSpec {
            kernel_c: Some(p.id.clone()),
            ..base
        };
        let topology = spec.topology.resolve(crate::catalogue::get)?;
        let named = crate::scenario::kernel::Named {
            models: crate::scenario::kernel::ModelNames {
                variant: Some(format!("c:{}", p.name)),
                ..Default::default()
            },
            ..Default::default()
        };
        crate::scenario::kernel::pick(&mut spec, &topology, self.kernel.as_deref(), &named)?;
        Ok(spec)
    }

    /// Resolve a spec made by [`Builds::spec`].
    pub(crate) fn resolve(&self, spec: &ScenarioSpec) -> Result<crate::scenario::Scenario, ReviewError> {
        Ok(spec.resolve_with(crate::catalogue::get, &|name, _| self.lookup(name))?)
    }
}

/// Make the review. `done` is told each step's name as it ends (`--timings` times them).
pub fn run(opts: &ReviewOptions, progress: Progress<'_>, done: &dyn Fn(&'static str)) -> Result<Review, ReviewError> {
    let lap = |name: &'static str| done(name);
    let patches = base::read(&opts.patches)?;
    let (builds, base_info) = base::build(opts, &patches, progress)?;
    lap("builds");
    let classification = classify::classify(&builds, opts, progress)?;
    lap("classification");
    let (pairs_run, rows) = matters::rows(&builds, opts, progress)?;
    lap("catalogue");
    let id = review_id(opts, &patches, &builds, &base_info);
    let claimed = patches.iter().find_map(|p| p.claim.as_deref());
    let found = worst::search(&builds, opts, claimed, progress)?;
    lap("search and shrink");
    let worst_case = found.worst;
    let changed = !rows.is_empty() || !classification.same_as_base || worst_case.is_some();
    let patched = BuildInfo {
        name: builds.patched.provenance.name.clone(),
        build_id: builds.patched.provenance.id.clone(),
    };
    let review = Review {
        id,
        subject: patches[0].subject.clone(),
        command: command(opts, &base_info),
        patches: patches.iter().map(|p| p.info.clone()).collect(),
        base: base_info,
        patched,
        model_version: MODEL_VERSION.into(),
        classification,
        pairs_run,
        rows,
        worst_case,
        // A patch that changes nothing is not checked against what it claims.
        claim: found.claim.filter(|_| changed),
        exit_status: u8::from(changed),
    };
    Ok(review)
}

/// The review's id: a content hash of what pins it.
fn review_id(opts: &ReviewOptions, patches: &[base::ReadPatch], builds: &Builds, base: &BaseInfo) -> String {
    let mut text = format!(
        "base {} {:?} {}\npatched {}\nmodels {MODEL_VERSION}\n",
        base.package, base.version, builds.base.provenance.id, builds.patched.provenance.id
    );
    for p in patches {
        text.push_str(&format!("patch {}\n", p.info.sha256));
    }
    text.push_str(&format!(
        "cases {} seed {} orders {} counter {}..{} search {} against {:?} machines {}\n",
        opts.cases,
        opts.seed,
        opts.orders.name(),
        opts.counters.from,
        opts.counters.to,
        opts.search,
        opts.against.map(|v| v.name()),
        opts.machines.join(",")
    ));
    sha256_hex(text.as_bytes())[..16].to_string()
}

/// The one command that makes the same review.
fn command(opts: &ReviewOptions, base: &BaseInfo) -> String {
    let mut words = vec!["irqscope review".to_string()];
    words.extend(opts.patches.iter().map(|p| p.display().to_string()));
    words.push(format!("--base {}", base.source));
    if let Some(v) = opts.against {
        words.push(format!("--against {}", v.name()));
    }
    if opts.machines.len() != crate::catalogue::names().count() {
        words.push(format!("--machines {}", opts.machines.join(",")));
    }
    words.push(format!("--orders {}", opts.orders.name()));
    words.push(format!("--counter {}..{}", opts.counters.from, opts.counters.to));
    words.push(format!("--cases {}", opts.cases));
    words.push(format!("--seed {}", opts.seed));
    if opts.search != SEARCH_DEFAULT {
        words.push(format!("--search {}", opts.search));
    }
    words.join(" ")
}
