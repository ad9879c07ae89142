//! The worst case beyond the catalogue: random machines (as `kernel-c verify` draws them) ×
//! random NVMe-like device mixes, seeded, searched for the largest rise of the worst CPU's
//! load; the largest shrunk (fewer nodes, cores, threads, devices, queues; a plainer
//! machine) while it still rises, then run again on fresh harnesses of the built C.

use super::matters::{link, pair};
use super::{Builds, Progress, ReviewError, ReviewOptions};
use crate::kernel_c_tools::verify::{draw_shape, Rng, Shape};
pub(crate) use crate::render::review::{ClaimCheck, WorstCase};
use crate::scenario::spec::{DeviceSpec, TopologyRef};
use crate::topology::Arch;

/// Most runs of both builds the shrinking may take.
const SHRINK_STEPS_MAX: u32 = 400;

/// A cut that applies (the flag) and how to make it.
type Cut<'a> = (bool, &'a dyn Fn(&mut Candidate));

#[derive(Debug, Clone, PartialEq, Eq)]
struct Candidate {
    shape: Shape,
    count: u32,
    queues: u32,
}

impl Candidate {
    fn devices(&self) -> Vec<DeviceSpec> {
        vec![DeviceSpec {
            pre: 1,
            name: Some("nvme".into()),
            ..DeviceSpec::new(self.count, self.queues)
        }]
    }
    fn topology(&self) -> TopologyRef {
        TopologyRef::Inline(Box::new(self.shape.spec()))
    }
    /// Smaller candidates, the biggest cuts first.
    fn smaller(&self) -> Vec<Candidate> {
        let mut out = Vec::new();
        let with = |f: &dyn Fn(&mut Candidate)| {
            let mut c = self.clone();
            f(&mut c);
            c
        };
        let nodes = self.shape.nodes.len();
        for i in (0..nodes).filter(|_| nodes > 1) {
            out.push(with(&|c| {
                c.shape.nodes.remove(i);
            }));
        }
        for i in 0..nodes {
            let n = &self.shape.nodes[i];
            if n.cores > 1 {
                out.push(with(&|c| c.shape.nodes[i].cores = n.cores.div_ceil(2)));
                out.push(with(&|c| c.shape.nodes[i].cores -= 1));
            }
            if n.smt > 1 {
                out.push(with(&|c| c.shape.nodes[i].smt = 1));
            }
            if n.cluster > 0 {
                out.push(with(&|c| c.shape.nodes[i].cluster = 0));
            }
        }
        if self.count > 1 {
            out.push(with(&|c| c.count -= 1));
        }
        if self.queues > 1 {
            out.push(with(&|c| c.queues = c.queues.div_ceil(2)));
            out.push(with(&|c| c.queues -= 1));
        }
        let s = &self.shape;
        let plainer: [Cut<'_>; 7] = [
            (!s.absent.is_empty(), &|c| c.shape.absent.clear()),
            (!s.offline.is_empty(), &|c| c.shape.offline.clear()),
            (s.hole > 0, &|c| c.shape.hole = 0),
            (s.memoryless > 0, &|c| c.shape.memoryless = 0),
            (s.reversed, &|c| c.shape.reversed = false),
            (s.split_smt, &|c| c.shape.split_smt = false),
            (s.arch != Arch::X86_64, &|c| c.shape.arch = Arch::X86_64),
        ];
        out.extend(plainer.into_iter().filter(|(b, _)| *b).map(|(_, f)| with(f)));
        out.retain(|c| c.shape.topology().is_ok());
        out
    }
}

/// The rise of the worst CPU's load from base to patched (negative: a fall), and the base's
/// room to improve (its worst CPU's load above the ideal).
fn rise(builds: &Builds, c: &Candidate, opts: &ReviewOptions) -> Result<(i64, i64), ReviewError> {
    let [b, a] = pair(builds, c.topology(), c.devices(), opts)?;
    let worst =
        |d: &crate::analysis::orders::Distribution| i64::from(d.worst_irqs_per_cpu.keys().copied().max().unwrap_or(0));
    Ok((worst(&a) - worst(&b), worst(&b) - i64::from(b.ideal_irqs_per_cpu)))
}

/// Shrink `start` while it still rises: take the first smaller candidate (the biggest cuts
/// first) that does, until none does or [`SHRINK_STEPS_MAX`] tries; the smallest found and
/// the tries taken.
fn shrink(
    start: Candidate,
    rises: &mut dyn FnMut(&Candidate) -> Result<i64, ReviewError>,
) -> Result<(Candidate, u32), ReviewError> {
    let mut cur = start;
    let mut steps = 0;
    'shrink: while steps < SHRINK_STEPS_MAX {
        for c in cur.smaller() {
            steps += 1;
            if rises(&c)? > 0 {
                cur = c;
                continue 'shrink;
            }
            if steps >= SHRINK_STEPS_MAX {
                break 'shrink;
            }
        }
        break;
    }
    Ok((cur, steps))
}

/// What the search found: the largest regression, and for a claimed improvement its check.
pub(crate) struct Found {
    pub(crate) worst: Option<WorstCase>,
    pub(crate) claim: Option<ClaimCheck>,
}

/// Search, shrink and confirm: the largest regression of the worst CPU (`None` when no tried
/// machine regresses); and where the mail claims an improvement (`claim`), the machines with
/// room to improve, how many improved, and the weakest, shrunk while it still does not.
pub(crate) fn search(
    builds: &Builds,
    opts: &ReviewOptions,
    claim: Option<&str>,
    progress: Progress<'_>,
) -> Result<Found, ReviewError> {
    let mut rng = Rng::new(opts.seed ^ 0x0077_6f72_7374);
    let mut best: Option<(i64, Candidate)> = None;
    // The weakest improvement: (gain, room, candidate), the least gain, then the most room.
    let mut weakest: Option<(i64, i64, Candidate)> = None;
    let (mut tried, mut with_room, mut improved) = (0, 0, 0);
    while tried < opts.search {
        let shape = draw_shape(&mut rng);
        if shape.topology().is_err() {
            continue;
        }
        tried += 1;
        progress("search over random machines", Some((tried, opts.search)));
        let cpus = shape.cpus();
        let c = Candidate {
            count: rng.range(1, 6),
            queues: rng.range(1, (cpus * 2).min(64)),
            shape,
        };
        let (r, room) = rise(builds, &c, opts)?;
        if claim.is_some() && room > 0 {
            with_room += 1;
            improved += u32::from(r < 0);
            if weakest.as_ref().is_none_or(|(g, rm, _)| (-r, -room) < (*g, -*rm)) {
                weakest = Some((-r, room, c.clone()));
            }
        }
        if r > 0 && best.as_ref().is_none_or(|(b, _)| r > *b) {
            best = Some((r, c));
        }
    }
    let worst = match best {
        None => None,
        Some((_, cur)) => {
            let (cur, steps) = shrink(cur, &mut |c| {
                progress(&format!("shrinking: {} CPUs", c.shape.cpus()), None);
                Ok(rise(builds, c, opts)?.0)
            })?;
            progress("confirming the worst case on fresh harnesses", None);
            Some(describe(builds, &cur, opts, tried, steps)?.0)
        }
    };
    let claim = match claim {
        None => None,
        Some(words) => Some(claim_check(
            builds,
            opts,
            words,
            weakest,
            (tried, with_room, improved),
            progress,
        )?),
    };
    Ok(Found { worst, claim })
}

/// The claim's check: where the weakest improvement is none at all, that machine shrunk while
/// the patch still does not improve on it (the base above the ideal, the patched no lower).
fn claim_check(
    builds: &Builds,
    opts: &ReviewOptions,
    words: &str,
    weakest: Option<(i64, i64, Candidate)>,
    (tried, with_room, improved): (u32, u32, u32),
    progress: Progress<'_>,
) -> Result<ClaimCheck, ReviewError> {
    let mut check = ClaimCheck {
        claim: words.to_string(),
        with_room,
        improved,
        smallest_gain: weakest.as_ref().map_or(0, |w| w.0),
        case: None,
        case_ideal: 0,
    };
    if let Some((_, _, cur)) = weakest.filter(|w| w.0 <= 0) {
        let (cur, steps) = shrink(cur, &mut |c| {
            progress(
                &format!("shrinking where it does not improve: {} CPUs", c.shape.cpus()),
                None,
            );
            // Still room, and the patched worst no lower than the base's.
            let (r, room) = rise(builds, c, opts)?;
            Ok(i64::from(room > 0 && r >= 0))
        })?;
        progress("confirming the claim's weakest case on fresh harnesses", None);
        let (case, ideal) = describe(builds, &cur, opts, tried, steps)?;
        check.case = Some(case);
        check.case_ideal = ideal;
    }
    Ok(check)
}

/// Per-CPU loads of one run on both builds: the online CPUs, before, after.
fn loads(builds: &Builds, c: &Candidate, order: &[usize], counter: u32) -> Result<[Vec<u32>; 3], ReviewError> {
    let mut out: [Vec<u32>; 3] = Default::default();
    for (k, patched) in [false, true].into_iter().enumerate() {
        let spec = builds.spec(
            crate::scenario::spec::ScenarioSpec::new(c.topology(), c.devices()),
            patched,
        )?;
        let s = builds.resolve(&spec)?.reordered(order, counter);
        let outcome = crate::scenario::try_run(&s)?;
        let m = crate::metrics::compute(&s, &outcome);
        let online: Vec<&crate::metrics::CpuLoad> = m.per_cpu.iter().filter(|l| l.online).collect();
        out[0] = online.iter().map(|l| l.cpu).collect();
        // Counted as the headline figures count them (the queues' vectors when managed).
        out[k + 1] = online.iter().map(|l| l.counted_irqs(m.basis)).collect();
    }
    Ok(out)
}

/// The case as the reply draws it, run again on fresh harnesses; with its ideal worst load.
fn describe(
    builds: &Builds,
    c: &Candidate,
    opts: &ReviewOptions,
    tried: u32,
    steps: u32,
) -> Result<(WorstCase, u32), ReviewError> {
    let [_, after] = pair(builds, c.topology(), c.devices(), opts)?;
    let (order, counter) = (after.worst.order.clone(), after.worst.counter);
    let [cpu, before, after_loads] = loads(builds, c, &order, counter)?;
    // Fresh harnesses: nothing remembered from the runs above.
    let fresh = Builds::new(builds.base.clone(), builds.patched.clone());
    let again = loads(&fresh, c, &order, counter)?;
    let (link, names) = link(builds, c.topology(), &c.devices(), &order, counter)?;
    let nodes = c.shape.nodes.len();
    let cpus = cpu.len() as u32;
    let max = |v: &[u32]| v.iter().copied().max().unwrap_or(0);
    let case = WorstCase {
        machine: format!(
            "{cpus} CPU{}, {nodes} node{}, {}",
            if cpus == 1 { "" } else { "s" },
            if nodes == 1 { "" } else { "s" },
            c.shape.arch.name()
        ),
        cpus,
        devices: format!("{}x{}:name=nvme,pre=1", c.count, c.queues),
        order: names,
        counter,
        confirmed: again == [cpu.clone(), before.clone(), after_loads.clone()],
        before_worst: max(&before),
        after_worst: max(&after_loads),
        cpu,
        before,
        after: after_loads,
        topology_toml: toml::to_string(&c.shape.spec()).map_err(|e| ReviewError::new(e.to_string()))?,
        tried,
        shrink_steps: steps,
        link,
    };
    Ok((case, after.ideal_irqs_per_cpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large drawn machine whose "regression" needs two nodes of two cores and two devices
    /// of three queues shrinks to exactly that; one that needs nothing shrinks to one CPU,
    /// one device, one queue; and the steps stop at the bound.
    #[test]
    fn shrinking_reaches_the_smallest_candidate_that_still_rises() {
        let mut rng = Rng::new(7);
        let big = loop {
            let shape = draw_shape(&mut rng);
            if shape.nodes.len() >= 3 && shape.cpus() >= 32 && shape.topology().is_ok() {
                break Candidate {
                    shape,
                    count: 5,
                    queues: 40,
                };
            }
        };
        let needs = |c: &Candidate| {
            c.shape.nodes.len() >= 2
                && c.shape.nodes.iter().filter(|n| n.cores >= 2).count() >= 2
                && c.count >= 2
                && c.queues >= 3
        };
        assert!(needs(&big));
        let (small, steps) = shrink(big.clone(), &mut |c| Ok(i64::from(needs(c)))).unwrap();
        assert!(needs(&small) && steps > 0);
        assert_eq!((small.shape.nodes.len(), small.count, small.queues), (2, 2, 3));
        assert!(
            small.shape.nodes.iter().all(|n| n.cores == 2 && n.smt == 1),
            "{small:?}"
        );
        assert!(
            small.smaller().iter().all(|c| !needs(c)),
            "a smaller one still rises: {small:?}"
        );
        let (one, _) = shrink(big.clone(), &mut |_| Ok(1)).unwrap();
        assert_eq!((one.shape.cpus(), one.count, one.queues), (1, 1, 1), "{one:?}");
        let (_, bounded) = shrink(big.clone(), &mut |_| Ok(0)).unwrap();
        assert!(bounded <= SHRINK_STEPS_MAX);
        let err = shrink(big, &mut |_| Err(ReviewError::new("the C crashed")));
        assert_eq!(err.unwrap_err().to_string(), "the C crashed");
    }
}
