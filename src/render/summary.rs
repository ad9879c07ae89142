//! The one-line summaries reviewers write by hand, from [`Metrics`]: "28 CPUs (34-47,82-95)
//! serve all 6 devices; 68 CPUs (0-33,48-81) serve 3". The mail text, the JSON view and the
//! pages print the same sentences. Also the page headlines naming the ideal and the variant.

use crate::metrics::Metrics;
use crate::scenario::Scenario;
use crate::topology::plural;

/// Most parts of a sentence shown; the middle ones are folded into a count.
pub const PARTS_SHOWN_MAX: usize = 4;

/// "28 CPUs (34-47,82-95) serve all 6 devices; 68 CPUs (0-33,48-81) serve 3".
pub fn devices_line(m: &Metrics) -> String {
    let groups = m.group_online(|c| c.counted_devices(m.basis));
    let parts: Vec<String> = groups
        .iter()
        .rev()
        .enumerate()
        .map(|(i, (value, cpus))| {
            let n = cpus.weight();
            let what = if i == 0 {
                if *value == m.devices_total && m.devices_total > 1 {
                    format!("serve all {value} devices")
                } else {
                    format!(
                        "serve{} {value} device{}",
                        if n == 1 { "s" } else { "" },
                        plural(*value as usize)
                    )
                }
            } else {
                format!("serve{} {value}", if n == 1 { "s" } else { "" })
            };
            format!("{n} CPU{} ({cpus}) {what}", plural(n as usize))
        })
        .collect();
    fold_parts(parts)
}

/// "32 CPUs (...) get 3 IRQs; 16 CPUs (...) get 6".
pub fn irqs_line(m: &Metrics) -> String {
    let groups = m.group_online(|c| c.counted_irqs(m.basis));
    let parts: Vec<String> = groups
        .iter()
        .enumerate()
        .map(|(i, (value, cpus))| {
            let n = cpus.weight();
            let unit = if i == 0 {
                format!(" IRQ{}", plural(*value as usize))
            } else {
                String::new()
            };
            format!(
                "{n} CPU{} ({cpus}) get{} {value}{unit}",
                plural(n as usize),
                if n == 1 { "s" } else { "" }
            )
        })
        .collect();
    fold_parts(parts)
}

/// "per node: 36 36 30 30 30 30 IRQs (fair share 32)".
pub fn nodes_line(m: &Metrics) -> String {
    let counts: Vec<String> = m.per_node.iter().map(|n| n.irqs.to_string()).collect();
    let shares: Vec<u64> = m.per_node.iter().map(|n| n.fair_share_milli).collect();
    let share = if shares.windows(2).all(|w| w[0] == w[1]) {
        format!("fair share {}", milli(shares.first().copied().unwrap_or(0)))
    } else {
        format!(
            "fair shares {}",
            shares.iter().map(|&s| milli(s)).collect::<Vec<_>>().join(" ")
        )
    };
    format!("per node: {} IRQs ({share})", counts.join(" "))
}

/// "ideal: at most 32 IRQs and 2 devices per CPU (managed (queue) vectors)".
pub fn ideal_line(m: &Metrics) -> String {
    format!(
        "ideal: at most {} IRQs and {} devices per CPU ({})",
        m.ideal.irqs_per_cpu_max,
        m.ideal.devices_per_cpu_max,
        m.basis.describe()
    )
}

/// "variant rotation-v1r: RECONSTRUCTION of …": every view names the code it ran.
pub fn variant_line(scenario: &Scenario) -> String {
    format!(
        "variant {}: {}",
        scenario.variant().name(),
        scenario.variant().describe()
    )
}

/// At most [`PARTS_SHOWN_MAX`] parts; the middle ones are folded into a count.
fn fold_parts(parts: Vec<String>) -> String {
    if parts.len() <= PARTS_SHOWN_MAX {
        return parts.join("; ");
    }
    let mut shown: Vec<String> = parts[..PARTS_SHOWN_MAX - 1].to_vec();
    shown.push(format!("… {} more groups", parts.len() - (PARTS_SHOWN_MAX - 1)));
    shown.join("; ")
}

/// Thousandths as a short decimal: 32000 → "32", 21333 → "21.3".
pub fn milli(v: u64) -> String {
    if v % 1000 == 0 {
        (v / 1000).to_string()
    } else {
        format!("{}.{}", v / 1000, (v % 1000) / 100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::spec::{parse_device_token, ScenarioSpec, TopologyRef};

    fn metrics_of(preset: &str, devices: &str, variant: &str) -> Metrics {
        let spec = ScenarioSpec {
            topology: TopologyRef::Preset(preset.into()),
            devices: devices.split(' ').map(|t| parse_device_token(t).unwrap()).collect(),
            variant: variant.into(),
            sort: "heap-v6.11".into(),
            effective: "x86-matrix".into(),
            spread_counter: 0,
            proposal: None,
            irqaffinity: None,
            isolcpus: None,
            nohz_full: None,
            vectors_held: None,
        };
        let scenario = spec.resolve(crate::catalogue::get).unwrap();
        let outcome = crate::scenario::run(&scenario);
        crate::metrics::compute(&scenario, &outcome)
    }

    /// The seed-000 thread's sentences (six NVMe disks on the 96-vCPU, 6-node VM), read from
    /// the numbers rather than written here: every CPU named once, counts matching the metrics.
    #[test]
    fn sentences_agree_with_the_numbers() {
        let m = metrics_of("azure-l96as-v4", "6x62:pre=1,name=nvme", "cluster");
        let d = devices_line(&m);
        let total: u32 = d
            .split("; ")
            .map(|part| part.split(' ').next().unwrap().parse::<u32>().unwrap())
            .sum();
        assert_eq!(total, m.ideal.cpus_online, "{d}");
        assert!(d.contains(&format!("serve all {} devices", m.devices_total)), "{d}");
        let i = irqs_line(&m);
        assert!(i.contains(&format!("get {} IRQs", m.irqs_per_cpu_min)), "{i}");
        let n = nodes_line(&m);
        let counts: Vec<String> = m.per_node.iter().map(|n| n.irqs.to_string()).collect();
        assert!(n.starts_with(&format!("per node: {} IRQs", counts.join(" "))), "{n}");
        let ideal = ideal_line(&m);
        assert!(
            ideal.contains(&format!("at most {} IRQs", m.ideal.irqs_per_cpu_max)),
            "{ideal}"
        );
    }

    #[test]
    fn milli_is_short() {
        assert_eq!(milli(32_000), "32");
        assert_eq!(milli(21_333), "21.3");
        assert_eq!(milli(999), "0.9");
    }

    #[test]
    fn many_groups_fold() {
        let parts: Vec<String> = (0..6).map(|i| format!("p{i}")).collect();
        assert_eq!(fold_parts(parts[..4].to_vec()), "p0; p1; p2; p3");
        assert_eq!(fold_parts(parts), "p0; p1; p2; … 3 more groups");
    }
}
