//! The ideal bound: the best per-CPU maximum any placement could reach for a scenario.
//!
//! Constraints: the same vectors fire somewhere (shut-down vectors stay shut down), each vector
//! on one online CPU, CPUs interchangeable. Then no placement can do better than
//! * IRQs per CPU: `ceil(counted IRQs / online CPUs)`;
//! * devices per CPU: each device touches at least `min(its counted IRQs, online CPUs)` CPUs,
//!   so some CPU serves at least `ceil(Σ that / online CPUs)` devices;
//! and both are reached by dealing vectors round-robin over the CPUs, device after device, so
//! the bound is exact under these constraints.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdealBound {
    pub irqs_per_cpu_max: u32,
    pub devices_per_cpu_max: u32,
    pub cpus_online: u32,
}

/// `irqs_per_device[d]`: the counted vectors of device `d` that fire somewhere.
pub fn ideal_bound(irqs_per_device: &[u64], cpus_online: u32) -> IdealBound {
    let cpus_online = cpus_online.max(1);
    let irqs: u64 = irqs_per_device.iter().sum();
    let touches: u64 = irqs_per_device.iter().map(|&n| n.min(u64::from(cpus_online))).sum();
    IdealBound {
        irqs_per_cpu_max: irqs.div_ceil(u64::from(cpus_online)) as u32,
        devices_per_cpu_max: touches.div_ceil(u64::from(cpus_online)) as u32,
        cpus_online,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 000: 6 disks x 62 queues on 96 CPUs: no CPU needs more than 4 disks or IRQs.
    #[test]
    fn seed_l96as_v4() {
        let b = ideal_bound(&[62; 6], 96);
        assert_eq!((b.irqs_per_cpu_max, b.devices_per_cpu_max), (4, 4));
        // Seed 000, L48s v2: 6 x 32 on 48 CPUs: the "theoretical best of 4 IRQs/vCPU".
        assert_eq!(ideal_bound(&[32; 6], 48).irqs_per_cpu_max, 4);
        // More queues than CPUs: a device touches every CPU.
        assert_eq!(ideal_bound(&[20, 20], 8).devices_per_cpu_max, 2);
    }
}
