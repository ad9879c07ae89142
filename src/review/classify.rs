//! What the patch is: the patched C on random machines (drawn as `kernel-c verify` draws
//! them) against the base's C, and against each named `group_cpus_evenly()` model.

use super::{Builds, Progress, ReviewError, ReviewOptions};
use crate::kernel::{SortGen, Variant};
use crate::kernel_c::runner::KernelC;
use crate::kernel_c::{Limits, Provenance};
use crate::kernel_c_tools::verify::{self, draw_shape, Models, Rng, Verdict};
pub(crate) use crate::render::review::Classification;

/// The models of a build's release (the newest's for a single file).
pub(crate) fn models_for(p: &Provenance) -> Models {
    let release = p
        .version
        .as_deref()
        .and_then(crate::kernel_c_tools::source::major_minor)
        .unwrap_or(crate::kernel::release::NEWEST);
    let g = crate::kernel::release::generation(release);
    Models {
        variant: Variant::from_name(g.variant).unwrap_or(Variant::Cluster),
        sort: SortGen::from_name(g.sort).unwrap_or(SortGen::HeapV6_11),
        era: g.affinity,
        mapper: g.mapper,
    }
}

fn fresh(b: &crate::kernel_c::Built) -> KernelC {
    KernelC::new(b.clone(), Limits::from_env())
}

/// Classify the patched build.
pub(crate) fn classify(
    builds: &Builds,
    opts: &ReviewOptions,
    progress: Progress<'_>,
) -> Result<Classification, ReviewError> {
    let models = models_for(&builds.base.provenance);
    let patched = fresh(&builds.patched);
    let (differ, n, first) = against_base(&fresh(&builds.base), &patched, opts.cases, opts.seed, progress)?;
    let out = verify::verify(&patched, models, opts.cases, opts.seed)?;
    let mut c = Classification {
        cases: opts.cases,
        seed: opts.seed,
        base_model: models.variant.name().into(),
        same_as_base: differ == 0 && out.disagreement.is_none(),
        behaves_as: None,
        group_cpus_differ: differ,
        group_cpus_cases: n,
        first_difference: first,
        stage_changed: None,
        stage_difference: None,
    };
    if let Some((
        stage,
        case,
        Verdict::Differ {
            field, c: cv, model, ..
        },
    )) = &out.disagreement
    {
        c.stage_changed = Some(stage.name().into());
        c.stage_difference = Some(format!(
            "{} CPU{}, {}: {field} is {} in the C, {} in `{}`",
            case.shape.cpus(),
            if case.shape.cpus() == 1 { "" } else { "s" },
            case.input.describe(),
            short(cv),
            short(model),
            models.variant.name()
        ));
    }
    if c.same_as_base {
        c.behaves_as = Some(models.variant.name().into());
        return Ok(c);
    }
    let named: Vec<Variant> = match opts.against {
        Some(v) => vec![v],
        None => Variant::ALL.into_iter().filter(|&v| v != models.variant).collect(),
    };
    for v in named {
        progress(
            &format!("{} random machines: patched against `{}`", opts.cases, v.name()),
            None,
        );
        let o = verify::verify(&patched, Models { variant: v, ..models }, opts.cases, opts.seed)?;
        if o.disagreement.is_none() {
            c.behaves_as = Some(v.name().into());
            break;
        }
    }
    Ok(c)
}

/// A value cut to fit a line.
fn short(v: &str) -> String {
    if v.chars().count() > 40 {
        v.chars().take(37).collect::<String>() + "..."
    } else {
        v.to_string()
    }
}

/// One `group_cpus_evenly()` call per random machine on both builds: how many differ, of
/// how many, and the first that does.
fn against_base(
    base: &KernelC,
    patched: &KernelC,
    cases: u32,
    seed: u64,
    progress: Progress<'_>,
) -> Result<(u32, u32, Option<String>), ReviewError> {
    let mut rng = Rng::new(seed ^ 0x7265_7669_6577);
    let (mut n, mut differ, mut first, mut drawn) = (0u32, 0u32, None, 0u64);
    while n < cases && drawn <= u64::from(cases) * 4 + 100 {
        drawn += 1;
        let shape = draw_shape(&mut rng);
        let Ok(topo) = shape.topology() else { continue };
        if n % 50 == 0 {
            progress("random machines: patched against the base", Some((n, cases)));
        }
        let cpus = shape.cpus();
        let numgrps = rng.range(1, cpus + 3);
        let counter = if rng.chance(50) {
            rng.range(0, 64)
        } else {
            rng.next_u64() as u32
        };
        let a = base.call(&topo, numgrps, counter)?;
        let b = patched.call(&topo, numgrps, counter)?;
        n += 1;
        if (&a.masks, a.nummasks, a.counter_after) == (&b.masks, b.nummasks, b.counter_after) {
            continue;
        }
        differ += 1;
        if first.is_none() {
            let masks = |m: &Option<Vec<crate::topology::CpuSet>>| match m {
                None => "NULL".to_string(),
                Some(m) => short(&m.iter().map(|s| s.to_cpulist()).collect::<Vec<_>>().join(" ")),
            };
            let what = if (&a.masks, a.nummasks) == (&b.masks, b.nummasks) {
                format!("counter after {} before, {} after", a.counter_after, b.counter_after)
            } else {
                format!("masks {} before, {} after", masks(&a.masks), masks(&b.masks))
            };
            first = Some(format!("{cpus} CPUs, numgrps {numgrps}, counter {counter}: {what}"));
        }
    }
    Ok((differ, n, first))
}
