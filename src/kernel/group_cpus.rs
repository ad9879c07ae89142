//! Model of `lib/group_cpus.c`: `group_cpus_evenly()` in five named variants.
//!
//! | variant | code modelled |
//! |---|---|
//! | `pre-cluster` | v6.3 `lib/group_cpus.c` (and `irq_build_affinity_masks()` of v5.x..v6.2): NUMA-aware only |
//! | `cluster` | upstream "lib/group_cpus: make group CPU cluster aware" |
//! | `rotation` | the per-caller rotation ("spread counter") patch, newest revision |
//! | `rotation-ohcl` | an earlier revision of that patch ("pooled extras" with a stride) |
//! | `rotation-v1r` | a **reconstruction** of the first posted revision from its commit message |
//!
//! Pure: no I/O, no globals. The present and possible masks come from the [`Topology`]
//! parameter and the rotation patch's global counter is a `&mut u32` owned by the caller, so a
//! scenario decides the probe order and the counter's starting value. Kernel `WARN`s come back
//! as [`KernelWarn`] values.
//!
//! Postcondition of [`group_cpus_evenly`] (the kernel's, checked by a property test): every
//! possible CPU lands in exactly one group. The result is therefore stored as "the group of each
//! CPU" ([`Grouping`]), which is both cheaper than an array of cpumasks and makes "a CPU in two
//! groups" unrepresentable.

use super::sort::{sort, SortGen};
use super::KernelWarn;
use crate::topology::{CpuSet, Topology};

/// The named `group_cpus_evenly` variants. A variant's behaviour never changes once named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {
    PreCluster,
    Cluster,
    Rotation,
    RotationOhcl,
    RotationV1r,
}

impl Variant {
    pub const ALL: [Variant; 5] = [
        Variant::PreCluster,
        Variant::Cluster,
        Variant::Rotation,
        Variant::RotationOhcl,
        Variant::RotationV1r,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Variant::PreCluster => "pre-cluster",
            Variant::Cluster => "cluster",
            Variant::Rotation => "rotation",
            Variant::RotationOhcl => "rotation-ohcl",
            Variant::RotationV1r => "rotation-v1r",
        }
    }

    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// One line saying what code the variant models.
    pub fn describe(self) -> &'static str {
        match self {
            Variant::PreCluster => "lib/group_cpus.c as of v6.3, NUMA-node aware only",
            Variant::Cluster => "upstream cluster-aware lib/group_cpus.c",
            Variant::Rotation => "per-caller rotation patch, newest revision (proposed)",
            Variant::RotationOhcl => "per-caller rotation patch, pooled-extras revision (proposed)",
            Variant::RotationV1r => {
                "RECONSTRUCTION of the posted v1 rotation patch from its commit message, not published code"
            }
        }
    }

    /// Whether the variant reads and advances the global spread counter.
    pub fn uses_counter(self) -> bool {
        matches!(self, Variant::Rotation | Variant::RotationOhcl | Variant::RotationV1r)
    }

    fn cluster_aware(self) -> bool {
        self != Variant::PreCluster
    }
}

/// Marks a CPU that belongs to no group.
pub const NO_GROUP: u32 = u32::MAX;

/// The result of one `group_cpus_evenly(numgrps)` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grouping {
    numgrps: u32,
    nummasks: u32,
    group_of: Vec<u32>,
    spread_offset: Option<u32>,
}

impl Grouping {
    /// Groups asked for; the kernel returns this many masks.
    pub fn numgrps(&self) -> u32 {
        self.numgrps
    }
    /// Initialized masks (`min(nr_present + nr_others, numgrps)`).
    pub fn nummasks(&self) -> u32 {
        self.nummasks
    }
    /// The counter value this call used (rotation variants only).
    pub fn spread_offset(&self) -> Option<u32> {
        self.spread_offset
    }
    /// Group index of a CPU, `None` for CPUs in no group (ids that are not possible).
    pub fn group_of(&self, cpu: u32) -> Option<u32> {
        self.group_of.get(cpu as usize).copied().filter(|&g| g != NO_GROUP)
    }
    /// All `numgrps` masks in group order, empty ones included.
    pub fn masks(&self) -> Vec<CpuSet> {
        let width = self.group_of.len() as u32;
        let mut masks = vec![CpuSet::new(width); self.numgrps as usize];
        for (cpu, &g) in self.group_of.iter().enumerate() {
            if g != NO_GROUP {
                masks[g as usize].insert(cpu as u32);
            }
        }
        masks
    }
}

/// `{id, ncpus, ngroups}` of one node or cluster. `ncpus == INACTIVE` marks a node with no CPU
/// in the current stage. The kernel keeps `ncpus` and `ngroups` in a union in the upstream
/// variants; nothing reads `ncpus` after `ngroups` is written, so two fields are equivalent.
#[derive(Debug, Clone, Copy)]
struct Domain {
    id: u32,
    ncpus: u32,
    ngroups: u32,
}

const INACTIVE: u32 = u32::MAX;

/// The kernel's comparator: `ncpus` subtracted as unsigned, read as signed. INACTIVE therefore
/// compares like -1 and sorts to the front.
fn ncpus_cmp(l: &Domain, r: &Domain) -> i32 {
    l.ncpus.wrapping_sub(r.ncpus) as i32
}

/// One call's working state: the fixed inputs and the output being built.
struct Spread<'a> {
    topo: &'a Topology,
    variant: Variant,
    sort: SortGen,
    numgrps: u32,
    offset: u32,
    group_of: Vec<u32>,
    warnings: &'a mut Vec<KernelWarn>,
}

/// Spread `numgrps` groups over the possible CPUs: present CPUs first, then possible CPUs that
/// are not present, each stage NUMA-node (and, in cluster-aware variants, cluster) balanced.
///
/// Returns `None` for `numgrps == 0`, as the kernel returns NULL. `counter` is the rotation
/// patch's global counter: rotation variants use its value as the offset and advance it by one
/// for every call with `numgrps >= 2`; other variants ignore it.
pub fn group_cpus_evenly(
    topo: &Topology,
    numgrps: u32,
    variant: Variant,
    sort: SortGen,
    counter: &mut u32,
    warnings: &mut Vec<KernelWarn>,
) -> Option<Grouping> {
    if numgrps == 0 {
        return None;
    }
    let (offset, spread_offset) = if !variant.uses_counter() {
        (0, None)
    } else if numgrps == 1 {
        (0, Some(0))
    } else {
        let offset = *counter;
        *counter = counter.wrapping_add(1);
        (offset, Some(offset))
    };
    let mut spread = Spread {
        topo,
        variant,
        sort,
        numgrps,
        offset,
        group_of: vec![NO_GROUP; topo.nr_cpu_ids() as usize],
        warnings,
    };

    // Stage 1: present CPUs from group 0. Stage 2: possible but absent CPUs, from the first
    // group stage 1 did not use, or from group 0 when stage 1 used them all.
    let present = topo.present().and(topo.possible());
    let nr_present = spread.spread_stage(0, &present);
    let curgrp = if nr_present < numgrps { nr_present } else { 0 };
    let absent = topo.possible().andnot(&present);
    let nr_others = spread.spread_stage(curgrp, &absent);

    let initialized = u64::from(nr_present) + u64::from(nr_others);
    if initialized < u64::from(numgrps) {
        spread.warnings.push(KernelWarn::GroupsUnfilled {
            numgrps,
            initialized: initialized as u32,
        });
    }
    let nummasks = initialized.min(u64::from(numgrps)) as u32;
    Some(Grouping {
        numgrps,
        nummasks,
        group_of: spread.group_of,
        spread_offset,
    })
}

impl Spread<'_> {
    /// `__group_cpus_evenly()`: one stage over the CPUs in `stage`, starting at group `startgrp`.
    /// Returns how many groups the stage initialized (by the kernel's count).
    fn spread_stage(&mut self, startgrp: u32, stage: &CpuSet) -> u32 {
        if stage.is_empty() {
            return 0;
        }
        let topo = self.topo;
        let active: Vec<u32> = (0..topo.nr_node_ids())
            .filter(|&n| topo.node_cpus(n).intersects(stage))
            .collect();
        let last = self.numgrps;
        let mut cur = startgrp;

        // Few groups: every active node is one group's worth; several nodes may share a group.
        if self.numgrps as usize <= active.len() {
            let k = active.len();
            let start = match self.variant {
                Variant::RotationOhcl => self.offset as usize % k,
                Variant::Rotation => {
                    let first = topo.node_cpus(active[0]).and_weight(stage);
                    let all_equal = active.iter().all(|&n| topo.node_cpus(n).and_weight(stage) == first);
                    if all_equal {
                        self.offset as usize % k
                    } else {
                        0
                    }
                }
                _ => 0,
            };
            for i in 0..k {
                let node = active[(start + i) % k];
                for cpu in topo.node_cpus(node).and(stage).iter() {
                    self.group_of[cpu as usize] = cur;
                }
                cur += 1;
                if cur == last {
                    cur = 0;
                }
            }
            return self.numgrps;
        }

        let mut nodes: Vec<Domain> = (0..topo.nr_node_ids())
            .map(|n| {
                let w = topo.node_cpus(n).and_weight(stage);
                Domain {
                    id: n,
                    ncpus: if w == 0 { INACTIVE } else { w },
                    ngroups: 0,
                }
            })
            .collect();
        let total: u32 = nodes.iter().filter(|d| d.ncpus != INACTIVE).map(|d| d.ncpus).sum();
        let g = total.min(self.numgrps);
        self.alloc(&mut nodes, g, total, false);

        let mut done: u32 = 0;
        for node in nodes.iter().filter(|d| d.ncpus != INACTIVE) {
            let mut pool = topo.node_cpus(node.id).and(stage);
            let ncpus = pool.weight();
            if ncpus == 0 {
                continue;
            }
            if node.ngroups > ncpus {
                self.warnings.push(KernelWarn::GroupsExceedCpus {
                    node: node.id,
                    ngroups: node.ngroups,
                    ncpus,
                });
            }
            if self.variant.cluster_aware() && self.try_group_cluster_cpus(&pool, ncpus, node.ngroups, &mut cur) {
                done = done.wrapping_add(node.ngroups);
                continue;
            }
            self.assign_cpus_to_groups(&mut pool, ncpus, node.ngroups, &mut cur);
            done = done.wrapping_add(node.ngroups);
        }
        done
    }

    /// Node- or cluster-level allocation of `g` groups over domains holding `n` CPUs, with the
    /// variant's rule. `cluster_level` selects the rule where a variant differs by level.
    fn alloc(&mut self, domains: &mut [Domain], g: u32, n: u32, cluster_level: bool) {
        sort(domains, self.sort, ncpus_cmp);
        match (self.variant, cluster_level) {
            (Variant::Rotation, _) => self.alloc_rot(domains, g, n),
            (Variant::RotationOhcl, _) | (Variant::RotationV1r, true) => self.alloc_ohcl(domains, g, n),
            _ => self.alloc_floor(domains, g, n),
        }
    }

    /// `alloc_nodes_groups()`' proportional split, smallest domain first. Because domains are
    /// visited smallest-first, rounding losses drift toward the larger (later) domains.
    ///
    /// Why no domain gets more groups than CPUs (the kernel's proof, restated): visiting in
    /// ascending `ncpus`, `ngroups = max(1, rem_grps * ncpus / rem_cpus)`. With `rem_grps <=
    /// rem_cpus` at the start (`g <= n`), the ratio `rem_grps / rem_cpus` never exceeds 1 after a
    /// domain takes `floor` of its share, and a domain of size `ncpus >= 1` taking `max(1, ..)`
    /// only raises the ratio when the share rounded to 0, which later, larger domains absorb.
    fn alloc_floor(&mut self, domains: &mut [Domain], g: u32, n: u32) {
        let (mut rem_cpus, mut rem_grps) = (n, g);
        for d in domains.iter_mut().filter(|d| d.ncpus != INACTIVE) {
            if rem_grps == 0 {
                self.warnings.push(KernelWarn::GroupsExhausted { domain: d.id });
            }
            let share = if rem_cpus == 0 {
                0
            } else {
                rem_grps.wrapping_mul(d.ncpus) / rem_cpus
            };
            d.ngroups = share.max(1);
            debug_assert!(d.ngroups <= d.ncpus || rem_grps > rem_cpus);
            rem_cpus = rem_cpus.wrapping_sub(d.ncpus);
            rem_grps = rem_grps.wrapping_sub(d.ngroups);
        }
    }

    /// `rotation`: the floor split, then inside every run of equal-sized domains the run's groups
    /// are re-dealt evenly and the remainder goes to positions picked from the rotating offset.
    fn alloc_rot(&mut self, domains: &mut [Domain], g: u32, n: u32) {
        let Some(fa) = domains.iter().position(|d| d.ncpus != INACTIVE) else {
            return;
        };
        self.alloc_floor(&mut domains[fa..], g, n);
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
            let stride = if extra > 0 { count / extra } else { 1 };
            for k in 0..extra {
                run[((start + k * stride) % count) as usize].ngroups += 1;
            }
            i = j;
        }
    }

    /// `rotation-ohcl`: every domain first gets the share of the whole (`G0*ncpus/N0`, capped by
    /// the floor split); the difference is pooled and dealt out with a stride from the offset,
    /// never giving a domain more groups than CPUs.
    fn alloc_ohcl(&mut self, domains: &mut [Domain], g: u32, n: u32) {
        let Some(fa) = domains.iter().position(|d| d.ncpus != INACTIVE) else {
            return;
        };
        let nact = (domains.len() - fa) as u64;
        let (g0, n0) = (g, n);
        let (mut rem_cpus, mut rem_grps, mut pool_extra) = (n, g, 0u32);
        for d in domains[fa..].iter_mut() {
            let ng = if rem_cpus == 0 {
                0
            } else {
                rem_grps.wrapping_mul(d.ncpus) / rem_cpus
            }
            .max(1);
            let whole = if n0 == 0 { 0 } else { g0.wrapping_mul(d.ncpus) / n0 }.max(1);
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
                // The kernel would spin here forever; every domain is already full.
                self.warnings.push(KernelWarn::ExtrasUnplaced { left: pool_extra });
                break;
            }
        }
    }

    /// `__try_group_cluster_cpus()`: split the node's groups over its clusters and assign inside
    /// each cluster. Fails (and the node falls back to plain assignment) when a remaining CPU has
    /// an empty cluster mask or when there are more clusters than groups.
    fn try_group_cluster_cpus(&mut self, pool: &CpuSet, ncpus: u32, ngroups: u32, cur: &mut u32) -> bool {
        let topo = self.topo;
        let mut reps = Vec::new();
        let mut rest = pool.clone();
        while let Some(c) = rest.first() {
            let cluster = topo.cluster(c);
            if cluster.is_empty() {
                return false;
            }
            rest.andnot_assign(cluster);
            reps.push(c);
        }
        if reps.len() as u64 > u64::from(ngroups) {
            return false;
        }
        let mut clusters: Vec<Domain> = reps
            .iter()
            .enumerate()
            .map(|(i, &c)| Domain {
                id: i as u32,
                ncpus: topo.cluster(c).and_weight(pool),
                ngroups: 0,
            })
            .collect();
        self.alloc(&mut clusters, ngroups, ncpus, true);
        for cl in &clusters {
            let mut cpool = pool.and(topo.cluster(reps[cl.id as usize]));
            let nc = cpool.weight();
            if nc == 0 {
                continue;
            }
            // The rotation revisions size the domain by the record (equal to |cpool| here).
            let size = if matches!(self.variant, Variant::Rotation | Variant::RotationOhcl) {
                cl.ncpus
            } else {
                nc
            };
            self.assign_cpus_to_groups(&mut cpool, size, cl.ngroups, cur);
        }
        true
    }

    /// `assign_cpus_to_groups()`: cut one domain (a node or a cluster) into `ngroups` groups of
    /// `ncpus / ngroups` CPUs, `ncpus % ngroups` of them one larger, starting at group `*cur`.
    fn assign_cpus_to_groups(&mut self, pool: &mut CpuSet, ncpus: u32, ngroups: u32, cur: &mut u32) {
        if ngroups == 0 {
            self.warnings.push(KernelWarn::ZeroGroups);
            return;
        }
        let extra = ncpus % ngroups;
        let per_group = ncpus / ngroups;
        // Which groups get the extra CPU: the first `extra` (upstream) or, in every rotation
        // revision, those with `(v + offset % ngroups) % ngroups < extra`.
        let spread = if self.variant.uses_counter() {
            self.offset % ngroups
        } else {
            0
        };
        let mut cursor: i64 = -1;
        let use_cursor = self.variant == Variant::Rotation;
        if use_cursor && extra > 0 {
            let mut stride = ncpus / 2 + 1;
            if ncpus % 2 == 0 && stride % 2 == 0 {
                stride += 1;
            }
            let start = ((u64::from(self.offset % ncpus) * u64::from(stride)) % u64::from(ncpus)) as u32;
            cursor = pool.nth(start).map_or(-1, |c| i64::from(c) - 1);
        }
        let mut hint = 0u32;
        for v in 0..ngroups {
            let big = if spread == 0 {
                v < extra
            } else {
                (u64::from(v) + u64::from(spread)) % u64::from(ngroups) < u64::from(extra)
            };
            let size = per_group + u32::from(big);
            if *cur >= self.numgrps {
                *cur = 0;
            }
            if use_cursor {
                self.fill_rot(*cur, pool, size, &mut cursor);
            } else {
                self.fill(*cur, pool, size, &mut hint);
            }
            *cur += 1;
        }
    }

    /// `grp_spread_init_one()`: take the lowest CPU of the pool, then its SMT siblings that are
    /// still in the pool (lower ids included), until the group has `k` CPUs or the pool is empty.
    /// `hint` is a lower bound on the pool's lowest CPU, kept across the groups of one domain:
    /// every CPU below the last one picked has left the pool.
    fn fill(&mut self, grp: u32, pool: &mut CpuSet, mut k: u32, hint: &mut u32) {
        while k > 0 {
            let Some(cpu) = pool.first_from(*hint) else {
                return;
            };
            *hint = cpu;
            k = self.take_with_siblings(grp, pool, cpu, k);
        }
    }

    /// `rotation`'s fill: the first CPU is the lowest one above the domain's cursor (wrapping to
    /// the lowest), and it moves the cursor; siblings taken with it do not.
    fn fill_rot(&mut self, grp: u32, pool: &mut CpuSet, mut k: u32, cursor: &mut i64) {
        while k > 0 {
            let Some(cpu) = pool.next_wrap(*cursor) else {
                return;
            };
            *cursor = i64::from(cpu);
            k = self.take_with_siblings(grp, pool, cpu, k);
        }
    }

    fn take_with_siblings(&mut self, grp: u32, pool: &mut CpuSet, cpu: u32, mut k: u32) -> u32 {
        pool.remove(cpu);
        self.group_of[cpu as usize] = grp;
        k -= 1;
        for sibling in self.topo.smt(cpu).iter() {
            if k == 0 {
                break;
            }
            if pool.contains(sibling) {
                pool.remove(sibling);
                self.group_of[sibling as usize] = grp;
                k -= 1;
            }
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::TopologySpec;

    fn topo(toml_text: &str) -> Topology {
        Topology::new(&toml::from_str::<TopologySpec>(toml_text).unwrap()).unwrap()
    }

    fn run(t: &Topology, n: u32, v: Variant, counter: u32) -> (Vec<String>, u32, u32) {
        let mut c = counter;
        let mut w = Vec::new();
        let g = group_cpus_evenly(t, n, v, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        (g.masks().iter().map(CpuSet::to_cpulist).collect(), g.nummasks(), c)
    }

    /// The spec's worked example for `pre-cluster` (golden `edge-nonpresent-g6-pre-cluster`).
    #[test]
    fn two_stage_nonpresent() {
        let t = topo(
            r#"name = "t"
            nodes = ["0-7", "8-15"]
            smt = ["0-1","2-3","4-5","6-7","8-9","10-11","12-13","14-15"]
            present = "0-4,8-12""#,
        );
        let (masks, nummasks, _) = run(&t, 6, Variant::PreCluster, 0);
        assert_eq!(masks, ["8-9,13", "10-11,14", "12,15", "0-1,5", "2-3,6", "4,7"]);
        assert_eq!(nummasks, 6);
    }

    /// The spec's worked example for `rotation` (golden `d16plds_v6-gce6-rotation-c1`).
    #[test]
    fn rotation_cursor_wraps() {
        let t = topo("name = \"t\"\nnodes = [\"0-15\"]\nclusters = [\"0-15\"]");
        let (masks, _, after) = run(&t, 6, Variant::Rotation, 1);
        assert_eq!(masks, ["9-11", "12-14", "0-1,15", "2-3", "4-5", "6-8"]);
        assert_eq!(after, 2);
    }

    #[test]
    fn counter_rules() {
        let t = topo("name = \"t\"\nnodes = [\"0-3\"]");
        let mut c = u32::MAX;
        let mut w = Vec::new();
        assert!(group_cpus_evenly(&t, 0, Variant::Rotation, SortGen::HeapV6_11, &mut c, &mut w).is_none());
        assert_eq!(c, u32::MAX);
        let g = group_cpus_evenly(&t, 1, Variant::Rotation, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        assert_eq!((g.spread_offset(), c), (Some(0), u32::MAX));
        let g = group_cpus_evenly(&t, 2, Variant::Rotation, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        assert_eq!((g.spread_offset(), c), (Some(u32::MAX), 0));
        let g = group_cpus_evenly(&t, 2, Variant::Cluster, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        assert_eq!((g.spread_offset(), c), (None, 0));
    }

    #[test]
    fn more_groups_than_cpus_warns() {
        let t = topo("name = \"t\"\nnodes = [\"0-3\"]");
        let mut c = 0;
        let mut w = Vec::new();
        let g = group_cpus_evenly(&t, 6, Variant::PreCluster, SortGen::HeapV6_11, &mut c, &mut w).unwrap();
        assert_eq!(g.nummasks(), 4);
        assert_eq!(
            w,
            vec![KernelWarn::GroupsUnfilled {
                numgrps: 6,
                initialized: 4
            }]
        );
    }
}
