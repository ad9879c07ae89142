//! The per-caller rotation ("spread counter") patches to `lib/group_cpus.c`, apart from upstream.
//!
//! Three revisions, each a row of [`Rules`](super::Rules) (spec §7):
//!
//! * `rotation` (namancse/linux `9dd308490b7e`, newest): equal-capacity classes at node and
//!   cluster level (`Alloc::EqualClasses`), a rotated few-groups walk when all nodes are equal,
//!   modular extras, and a rotating cursor inside each domain.
//! * `rotation-ohcl` (microsoft/OHCL-Linux-Kernel `42964c436995`, middle): pooled extras dealt
//!   with a stride at node and cluster level (`Alloc::PooledExtras`), an always-rotated
//!   few-groups walk, modular extras, lowest-CPU filling.
//! * `rotation-v1` (microsoft/OHCL-Linux-Kernel `e21bb8ee0b0b`, the first posted revision as
//!   published): upstream at node level and in the few-groups walk, pooled extras with a
//!   stride at cluster level (after the upstream split, from `spread_offset % ncluster`),
//!   unreduced modular extras (`Extras::ModularUnreduced`), lowest-CPU filling; every call
//!   takes a counter value, one-group calls included.
//! * `rotation-v1r` (a reconstruction of v1 from its commit message, kept frozen for old
//!   links): `rotation-v1` with a one-group call taking no counter value and the offset
//!   reduced before the extras test (`Extras::Modular`).
//!
//! The offset is the counter's value for a call with `numgrps >= 2` (for `rotation-v1`, for
//! every call), 0 otherwise (`group_cpus_evenly()` in `group_cpus.rs`). Each function here
//! replaces the upstream step it names; `group_cpus.rs` calls it at the branch point its rule
//! decides.

use super::window::Window;
use super::{Domain, Extras, FewGroups, Fill, Spread, INACTIVE};
use crate::kernel::KernelWarn;

impl Spread<'_> {
    /// The few-groups walk's first active node (`__group_cpus_evenly()`, `numgrps <= nodes`):
    /// `offset % nodes`, for [`FewGroups::RotatedIfEqual`] only when every active node has as
    /// many CPUs in the stage as the first (the patch stops comparing at the first difference).
    pub(super) fn few_groups_start_rotation(&self, rule: FewGroups, active: &[u32]) -> usize {
        let k = active.len();
        let rotated = self.offset as usize % k;
        match rule {
            FewGroups::Lowest => 0,
            FewGroups::Rotated => rotated,
            FewGroups::RotatedIfEqual => {
                let first = self.spans[active[0] as usize].ncpus;
                if active.iter().all(|&n| self.spans[n as usize].ncpus == first) {
                    rotated
                } else {
                    0
                }
            }
        }
    }

    /// `rotation`'s `alloc_groups_to_nodes()` (`Alloc::EqualClasses`), after the sort: the
    /// upstream ratio split, then inside every run of equal-sized domains the run's groups are
    /// re-dealt evenly and the remainder goes to positions picked from the rotating offset.
    pub(super) fn alloc_equal_classes(&mut self, domains: &mut [Domain], g: u32, n: u32) {
        let Some(fa) = domains.iter().position(|d| d.ncpus != INACTIVE) else {
            return;
        };
        self.split_by_ratio(&mut domains[fa..], g, n);
        let mut i = fa;
        while i < domains.len() {
            let mut j = i + 1;
            while j < domains.len() && domains[j].ncpus == domains[i].ncpus {
                j += 1;
            }
            let run = &mut domains[i..j];
            let count = run.len() as u64;
            let total: u64 = run.iter().map(|d| u64::from(d.ngroups)).sum();
            let (base, extra) = (total / count, total % count);
            run.iter_mut().for_each(|d| d.ngroups = base as u32);
            let start = u64::from(self.offset) % count;
            let stride = count.checked_div(extra).unwrap_or(1);
            for k in 0..extra {
                run[((start + k * stride) % count) as usize].ngroups += 1;
            }
            i = j;
        }
    }

    /// `rotation-ohcl`'s `alloc_groups_to_nodes()` (`Alloc::PooledExtras`), after the sort:
    /// every domain first gets its share of the whole (`G0*ncpus/N0`, capped by the ratio split);
    /// the difference is pooled and dealt out with a stride from the offset, never giving a
    /// domain more groups than CPUs.
    pub(super) fn alloc_pooled_extras(&mut self, domains: &mut [Domain], g: u32, n: u32) {
        let Some(fa) = domains.iter().position(|d| d.ncpus != INACTIVE) else {
            return;
        };
        let nact = (domains.len() - fa) as u64;
        let (g0, n0) = (g, n);
        let (mut rem_cpus, mut rem_grps, mut pool_extra) = (n, g, 0u32);
        for d in domains[fa..].iter_mut() {
            let ng = rem_grps.wrapping_mul(d.ncpus).checked_div(rem_cpus).unwrap_or(0).max(1);
            let whole = g0.wrapping_mul(d.ncpus).checked_div(n0).unwrap_or(0).max(1);
            let base = whole.min(ng);
            pool_extra = pool_extra.wrapping_add(ng - base);
            d.ngroups = base;
            rem_cpus = rem_cpus.wrapping_sub(d.ncpus);
            rem_grps = rem_grps.wrapping_sub(ng);
        }
        let start = u64::from(self.offset) % nact;
        let stride = if pool_extra > 0 && u64::from(pool_extra) < nact {
            nact / u64::from(pool_extra)
        } else {
            1
        };
        for j in 0..nact {
            if pool_extra == 0 {
                break;
            }
            let d = &mut domains[fa + ((start + j * stride) % nact) as usize];
            if d.ngroups < d.ncpus {
                d.ngroups += 1;
                pool_extra -= 1;
            }
        }
        while pool_extra > 0 {
            let before = pool_extra;
            for d in domains[fa..].iter_mut() {
                if pool_extra == 0 {
                    break;
                }
                if d.ngroups < d.ncpus {
                    d.ngroups += 1;
                    pool_extra -= 1;
                }
            }
            if pool_extra == before {
                // Divergence from C: the patch would spin here forever (every domain is full);
                // the model stops and reports it.
                self.warnings.push(KernelWarn::ExtrasUnplaced { left: pool_extra });
                break;
            }
        }
    }

    /// The rotation revisions' `assign_cpus_to_groups()`: which groups get the rounding CPU is
    /// modular (`Extras::Modular`: group `v` iff `(v + offset % ngroups) % ngroups < extra`;
    /// `Extras::ModularUnreduced`: iff `extra > 0` and `((v + offset) mod 2^32) % ngroups <
    /// extra`), and `rotation` fills from a cursor (`Fill::Cursor`) that starts at a rotated
    /// position of the domain. `ngroups > 0` (checked by the caller).
    ///
    /// Under `ModularUnreduced` the number of larger groups is not bounded by `extra`: near
    /// 2^32 the wrapped sums of the last groups fall below `extra` again, the domain's CPUs
    /// run out early and `grp_spread_init_one()` leaves its last groups short or empty (its
    /// "should not happen" return), which the C does too.
    pub(super) fn assign_cpus_to_groups_rotation(
        &mut self,
        ncpus: u32,
        nmsk: &mut Window,
        ngroups: u32,
        curgrp: &mut u32,
    ) {
        let extra = ncpus % ngroups;
        let per_group = ncpus / ngroups;
        let spread = if self.rules.extras == Extras::Modular {
            self.offset % ngroups
        } else {
            0
        };
        let use_cursor = self.rules.fill == Fill::Cursor;
        let mut cursor: i64 = -1;
        if use_cursor && extra > 0 {
            let mut stride = ncpus / 2 + 1;
            if ncpus.is_multiple_of(2) && stride.is_multiple_of(2) {
                stride += 1;
            }
            let start = ((u64::from(self.offset % ncpus) * u64::from(stride)) % u64::from(ncpus)) as u32;
            cursor = nmsk.nth(start).map_or(-1, |c| i64::from(c) - 1);
        }
        let mut hint = 0u32;
        for v in 0..ngroups {
            let big = if self.rules.extras == Extras::ModularUnreduced {
                extra > 0 && v.wrapping_add(self.offset) % ngroups < extra
            } else if spread == 0 {
                v < extra
            } else {
                (u64::from(v) + u64::from(spread)) % u64::from(ngroups) < u64::from(extra)
            };
            let size = per_group + u32::from(big);
            if *curgrp >= self.numgrps {
                *curgrp = 0;
            }
            if use_cursor {
                self.grp_spread_init_one_cursor(*curgrp, nmsk, size, &mut cursor);
            } else {
                self.grp_spread_init_one(*curgrp, nmsk, size, &mut hint);
            }
            *curgrp += 1;
        }
    }

    /// `rotation`'s `grp_spread_init_one()`: the first CPU is the lowest one above the domain's
    /// cursor (wrapping to the lowest), and it moves the cursor; siblings taken with it do not.
    fn grp_spread_init_one_cursor(&mut self, grp: u32, nmsk: &mut Window, mut k: u32, cursor: &mut i64) {
        while k > 0 {
            let Some(cpu) = nmsk.next_wrap(*cursor) else {
                return;
            };
            *cursor = i64::from(cpu);
            k = self.take_with_siblings(grp, nmsk, cpu, k);
        }
    }
}
