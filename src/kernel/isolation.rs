//! Model of `kernel/sched/isolation.c` as far as interrupt placement reads it: the housekeeping
//! masks that `isolcpus=` and `nohz_full=` set up at boot (`housekeeping_setup()`).
//!
//! Only `HK_TYPE_MANAGED_IRQ` (`isolcpus=managed_irq,…`) moves interrupts: `irq_do_set_affinity()`
//! in `kernel/irq/manage.c` programs a managed interrupt to the housekeeping CPUs of its mask
//! (see [`crate::kernel::manage::managed_irq_prog_mask`]). `nohz_full=` sets
//! `HK_TYPE_KERNEL_NOISE` and `isolcpus=domain,…` (or no flag) `HK_TYPE_DOMAIN`; the IRQ core
//! reads neither, so they change no interrupt here (they are still checked the way
//! `housekeeping_setup()` checks them). Modelled on the file as of v6.15 (the flag is
//! `HK_FLAG_KERNEL_NOISE`; older kernels split it into TICK, WQ, TIMER, RCU, MISC, KTHREAD, which
//! the IRQ core does not read either).

use crate::topology::cpulist::parse_cpulist;
use crate::topology::CpuSet;

/// The housekeeping types this model keeps (`enum hk_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum HkType {
    Domain,
    ManagedIrq,
    KernelNoise,
}

impl HkType {}

/// Housekeeping masks by type; a type is enabled when its mask is set (`housekeeping.flags`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Housekeeping {
    masks: Vec<(HkType, CpuSet)>,
}

impl Housekeeping {
    /// `housekeeping_enabled()`.
    pub(crate) fn enabled(&self, t: HkType) -> bool {
        self.masks.iter().any(|(k, _)| *k == t)
    }

    /// `housekeeping_cpumask()` for an enabled type; `None` stands for `cpu_possible_mask`.
    pub(crate) fn cpumask(&self, t: HkType) -> Option<&CpuSet> {
        self.masks.iter().find(|(k, _)| *k == t).map(|(_, m)| m)
    }

    /// `housekeeping_isolcpus_setup()`: the flags before the CPU list (`nohz,`, `domain,`,
    /// `managed_irq,`; none means `domain`), then [`Self::setup`]. An unknown flag the kernel
    /// would skip is an error here, so a typo cannot silently change nothing.
    pub(crate) fn isolcpus_setup(&mut self, text: &str, possible: &CpuSet, present: &CpuSet) -> Result<(), String> {
        let mut rest = text;
        let mut flags = Vec::new();
        while rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
            let (word, tail) = rest.split_once(',').unwrap_or((rest, ""));
            match word {
                "nohz" => flags.push(HkType::KernelNoise),
                "domain" => flags.push(HkType::Domain),
                "managed_irq" => flags.push(HkType::ManagedIrq),
                _ => {
                    return Err(format!(
                        "isolcpus: unknown flag {word:?} (known: nohz, domain, managed_irq; the kernel would skip it)"
                    ))
                }
            }
            rest = tail;
        }
        if flags.is_empty() {
            flags.push(HkType::Domain);
        }
        flags.sort();
        flags.dedup();
        self.setup("isolcpus", rest, &flags, possible, present)
    }

    /// `housekeeping_nohz_full_setup()`: `HK_TYPE_KERNEL_NOISE` (assumes `CONFIG_NO_HZ_FULL`).
    pub(crate) fn nohz_full_setup(&mut self, text: &str, possible: &CpuSet, present: &CpuSet) -> Result<(), String> {
        self.setup("nohz_full", text, &[HkType::KernelNoise], possible, present)
    }

    /// `housekeeping_setup()`: the housekeeping mask is the possible CPUs outside the list.
    /// With no present CPU in it the boot CPU (0) is added and taken out of the list. An empty
    /// list changes nothing. A second call (the other parameter) must give the same mask for
    /// a type both set, and keep a present CPU outside both `nohz_full=` and
    /// `isolcpus=domain`; the kernel prints a warning and ignores such a setting, which is an
    /// error here.
    fn setup(
        &mut self,
        param: &str,
        list: &str,
        flags: &[HkType],
        possible: &CpuSet,
        present: &CpuSet,
    ) -> Result<(), String> {
        let n = possible.last().map_or(0, |c| c + 1);
        let mut non_housekeeping = parse_cpulist(list, n)
            .map_err(|e| format!("{param}: {e} (nohz_full= or isolcpus= incorrect CPU range)"))?;
        let mut staging = possible.andnot(&non_housekeeping);
        if !staging.intersects(present) {
            staging.insert(0);
            non_housekeeping.remove(0);
        }
        if non_housekeeping.is_empty() {
            return Ok(());
        }
        if !self.masks.is_empty() {
            for &t in flags {
                if let Some(m) = self.cpumask(t) {
                    if *m != staging {
                        return Err(format!(
                            "{param}: Housekeeping: nohz_full= must match isolcpus= (the kernel ignores this setting)"
                        ));
                    }
                }
            }
            let before = [HkType::KernelNoise, HkType::Domain]
                .into_iter()
                .find(|&t| self.enabled(t));
            let now = flags.iter().any(|t| matches!(t, HkType::KernelNoise | HkType::Domain));
            if let (Some(t), true) = (before, now) {
                let keeps = self.cpumask(t).is_some_and(|m| m.and(&staging).intersects(present));
                if !keeps {
                    return Err(format!(
                        "{param}: Housekeeping: must include one present CPU neither in nohz_full= nor in isolcpus=domain (the kernel ignores this setting)"
                    ));
                }
            }
        }
        for &t in flags {
            if !self.enabled(t) {
                self.masks.push((t, staging.clone()));
            }
        }
        self.masks.sort_by_key(|(t, _)| *t);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(n: u32) -> CpuSet {
        CpuSet::full(n)
    }

    /// housekeeping_isolcpus_setup(): `managed_irq,` sets HK_TYPE_MANAGED_IRQ only, and the
    /// housekeeping mask is cpu_possible_mask minus the list (housekeeping_setup()).
    #[test]
    fn isolcpus_managed_irq_sets_only_that_type() {
        let mut hk = Housekeeping::default();
        hk.isolcpus_setup("managed_irq,2-5", &all(8), &all(8)).unwrap();
        assert!(hk.enabled(HkType::ManagedIrq));
        assert!(!hk.enabled(HkType::Domain) && !hk.enabled(HkType::KernelNoise));
        assert_eq!(hk.cpumask(HkType::ManagedIrq).unwrap().to_cpulist(), "0-1,6-7");
    }

    /// housekeeping_isolcpus_setup(): no flag means `domain`, which interrupts do not read.
    #[test]
    fn isolcpus_without_flags_is_domain() {
        let mut hk = Housekeeping::default();
        hk.isolcpus_setup("1-3", &all(8), &all(8)).unwrap();
        assert!(hk.enabled(HkType::Domain) && !hk.enabled(HkType::ManagedIrq));
        assert!(hk.isolcpus_setup("bogus,1", &all(8), &all(8)).is_err());
    }

    /// housekeeping_setup(): a list naming every CPU keeps the boot CPU for housekeeping
    /// ("must include one present CPU, using boot CPU:0").
    #[test]
    fn boot_cpu_stays_housekeeping() {
        let mut hk = Housekeeping::default();
        hk.isolcpus_setup("managed_irq,0-7", &all(8), &all(8)).unwrap();
        assert_eq!(hk.cpumask(HkType::ManagedIrq).unwrap().to_cpulist(), "0");
    }

    /// housekeeping_nohz_full_setup() sets HK_TYPE_KERNEL_NOISE; with isolcpus=managed_irq
    /// before it no type is shared, so both stand (the second-call check only compares types
    /// set twice).
    #[test]
    fn nohz_full_is_kernel_noise_and_independent_of_managed_irq() {
        let mut hk = Housekeeping::default();
        hk.isolcpus_setup("managed_irq,4-7", &all(8), &all(8)).unwrap();
        hk.nohz_full_setup("1-3", &all(8), &all(8)).unwrap();
        assert_eq!(hk.cpumask(HkType::KernelNoise).unwrap().to_cpulist(), "0,4-7");
        assert_eq!(hk.cpumask(HkType::ManagedIrq).unwrap().to_cpulist(), "0-3");
        // isolcpus=nohz is nohz_full: a second, different nohz mask is ignored by the kernel.
        assert!(hk.isolcpus_setup("nohz,2-3", &all(8), &all(8)).is_err());
    }

    #[test]
    fn empty_list_changes_nothing() {
        let mut hk = Housekeeping::default();
        hk.isolcpus_setup("managed_irq,", &all(4), &all(4)).unwrap();
        assert!(!hk.enabled(HkType::ManagedIrq));
    }
}
