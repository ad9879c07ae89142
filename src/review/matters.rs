//! Where it matters: every catalogue machine × the standard device mixes × the probe-order
//! distribution, on the base's C and the patched C; the pairs that changed, ranked by the
//! change in the worst CPU's load, then P(worst > ideal), then NUMA excess. Each row has a
//! `/c/` permalink pinning both builds, probing in the order that shows the change.

use super::{Builds, Progress, ReviewError, ReviewOptions};
use crate::analysis::orders::{distribution, Distribution};
use crate::analysis::sweep::Mix;

/// Device mixes a review runs on every catalogue machine beside the sweep's named ones: seed
/// 000's own disks (six NVMe controllers of 62 I/O queues, L96as v4; two of 6, D16plds v6)
/// and virtio-blk disks (a config vector and four request queues each).
const REVIEW_MIXES: &[&str] = &[
    "nvme-6x62=6x62:name=nvme,pre=1",
    "nvme-2x6=2x6:name=nvme,pre=1",
    "virtio-blk-4x4=4x4:name=vd,pre=1",
];

/// The mixes of a review: [`Mix::named`], then [`REVIEW_MIXES`].
pub(crate) fn review_mixes() -> Vec<Mix> {
    let extra = REVIEW_MIXES.iter().map(|m| Mix::parse(m).expect("review mixes parse"));
    Mix::named().into_iter().chain(extra).collect()
}
pub(crate) use crate::render::review::{CpusWithIrqs, Figures, Row};
use crate::scenario::payloads::{CompareSpec, SideSpec};
use crate::scenario::permalink;
use crate::scenario::spec::{DeviceSpec, ScenarioSpec, TopologyRef};

/// One side's figures over its distribution.
fn figures(d: &Distribution) -> Figures {
    Figures {
        worst: d.worst_irqs_per_cpu.keys().copied().max().unwrap_or(0),
        ideal: d.ideal_irqs_per_cpu,
        p_above_ideal: d.p_worst_above_ideal(),
        numa_excess: d.numa_excess_expected(),
        runs: d.runs,
        cpus_with_irqs: match (d.cpus_with_irqs.keys().next(), d.cpus_with_irqs.keys().last()) {
            (Some(&fewest), Some(&most)) => Some(CpusWithIrqs { fewest, most }),
            _ => None,
        },
    }
}

/// The device groups one device each, named as the scenario names them, so an order (indexes
/// into the scenario's devices) can be written as a device list.
pub(crate) fn expanded(devices: &[DeviceSpec]) -> Vec<DeviceSpec> {
    let mut out = Vec::new();
    for d in devices {
        for k in 0..d.count {
            let name = match &d.name {
                Some(p) if d.count == 1 => p.clone(),
                Some(p) => format!("{p}{k}"),
                None => format!("dev{}", out.len()),
            };
            out.push(DeviceSpec {
                count: 1,
                name: Some(name),
                ..d.clone()
            });
        }
    }
    out
}

/// The `/c/` link of base against patched, the devices probed in `order` from `counter`.
pub(crate) fn link(
    builds: &Builds,
    topology: TopologyRef,
    devices: &[DeviceSpec],
    order: &[usize],
    counter: u32,
) -> Result<(String, Vec<String>), ReviewError> {
    let one = expanded(devices);
    let ordered: Vec<DeviceSpec> = order.iter().filter_map(|&i| one.get(i).cloned()).collect();
    let names = ordered.iter().filter_map(|d| d.name.clone()).collect();
    let scenario = builds.spec(
        ScenarioSpec {
            spread_counter: counter,
            ..ScenarioSpec::new(topology, ordered)
        },
        false,
    )?;
    let p = &builds.patched.provenance;
    let cmp = CompareSpec {
        scenario,
        a: SideSpec::default(),
        b: SideSpec {
            variant: Some(format!("c:{}", p.name)),
            kernel_c: Some(p.id.clone()),
            ..SideSpec::default()
        },
    };
    let encoded = permalink::encode(&cmp).map_err(|e| ReviewError::new(format!("permalink: {e:?}")))?;
    Ok((format!("/c/{encoded}"), names))
}

/// Both builds' distributions of one machine and device list.
pub(crate) fn pair(
    builds: &Builds,
    topology: TopologyRef,
    devices: Vec<DeviceSpec>,
    opts: &ReviewOptions,
) -> Result<[Distribution; 2], ReviewError> {
    let spec = ScenarioSpec::new(topology, devices);
    let run = |patched: bool| -> Result<Distribution, ReviewError> {
        let s = builds.resolve(&builds.spec(spec.clone(), patched)?)?;
        Ok(distribution(&s, opts.orders, opts.counters)?)
    };
    Ok([run(false)?, run(true)?])
}

/// Whether two distributions differ in anything a row shows, or in which CPUs carry more than
/// the ideal.
pub(crate) fn differ(a: &Distribution, b: &Distribution) -> bool {
    a.worst_irqs_per_cpu != b.worst_irqs_per_cpu
        || a.worst_above_ideal != b.worst_above_ideal
        || a.numa_excess_milli_sum != b.numa_excess_milli_sum
        // The same worst load, spread over more or fewer CPUs.
        || a.cpus_with_irqs != b.cpus_with_irqs
        // The same worst load, but on other CPUs.
        || a.cpu_above_ideal != b.cpu_above_ideal
}

/// Every machine × mix; the rows that changed, most changed first.
pub(crate) fn rows(
    builds: &Builds,
    opts: &ReviewOptions,
    progress: Progress<'_>,
) -> Result<(u32, Vec<Row>), ReviewError> {
    let mixes = review_mixes();
    let total = opts.machines.len() * mixes.len();
    let mut rows = Vec::new();
    let mut n = 0u32;
    for machine in &opts.machines {
        for mix in &mixes {
            n += 1;
            progress(&format!("catalogue ({machine}, {})", mix.name), Some((n, total as u32)));
            let topo = TopologyRef::Preset(machine.clone());
            let [before, after] = pair(builds, topo.clone(), mix.devices.clone(), opts)?;
            if !differ(&before, &after) {
                continue;
            }
            let (b, a) = (figures(&before), figures(&after));
            let change = match (a.worst.cmp(&b.worst), a.p_above_ideal.total_cmp(&b.p_above_ideal)) {
                (std::cmp::Ordering::Greater, _) | (std::cmp::Ordering::Equal, std::cmp::Ordering::Greater) => {
                    "regression"
                }
                (std::cmp::Ordering::Less, _) | (std::cmp::Ordering::Equal, std::cmp::Ordering::Less) => "improvement",
                _ => "changed",
            };
            // The run that shows it: the patched worst run for a regression, the base's for
            // the rest.
            let shows = if change == "regression" {
                &after.worst
            } else {
                &before.worst
            };
            let (link, order) = link(builds, topo, &mix.devices, &shows.order, shows.counter)?;
            rows.push(Row {
                machine: machine.clone(),
                mix: mix.name.clone(),
                before: b,
                after: a,
                change: change.into(),
                order,
                counter: shows.counter,
                link,
            });
        }
    }
    rows.sort_by(|x, y| {
        y.delta()
            .abs()
            .cmp(&x.delta().abs())
            .then(y.delta_p().abs().total_cmp(&x.delta_p().abs()))
            .then(y.delta_numa().abs().total_cmp(&x.delta_numa().abs()))
    });
    Ok((n, rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::orders::tests::scenario;
    use crate::analysis::orders::CounterRange;
    use crate::kernel::vector_matrix::EffectiveModel;
    use std::collections::BTreeMap;

    /// A pair that differs only in how many CPUs serve IRQs is a change, and the row's
    /// figures give the fewest and the most over the runs.
    #[test]
    fn the_cpus_with_irqs_alone_make_a_change() {
        let s = scenario(
            "azure-d16plds-v6",
            &["2x6:name=nvme,pre=1"],
            "cluster",
            EffectiveModel::FirstCpu,
        );
        let counters = CounterRange { from: 0, to: 0 };
        let a = distribution(&s, crate::analysis::orders::Orders::All, counters).unwrap();
        assert!(!differ(&a, &a.clone()));
        assert_eq!(figures(&a).cpus_with_irqs, Some(CpusWithIrqs { fewest: 6, most: 6 }));
        let b = Distribution {
            cpus_with_irqs: BTreeMap::from([(8, 1), (12, 3), (10, 2)]),
            ..a.clone()
        };
        assert!(differ(&a, &b));
        assert_eq!(figures(&b).cpus_with_irqs, Some(CpusWithIrqs { fewest: 8, most: 12 }));
    }
}
