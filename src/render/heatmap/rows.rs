//! How a node's CPUs are cut into the heatmap's rows: whole clusters where they fit (else
//! whole cores), a new row at each new package or kind of core, and the rows of a run
//! balanced. The rules are the module's "Layout" paragraph ([`super`]).

use crate::topology::Topology;

/// One row of a node's block: its cores (each a run of SMT siblings in drawing order) and
/// the label its gutter carries ("P-cores", "E-cores"), if any.
pub(super) struct RowPlan<'o> {
    pub(super) cores: Vec<&'o [u32]>,
    pub(super) label: Option<&'static str>,
    /// The run of clusters (one package, one kind of core) the row belongs to.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) run: usize,
}

/// (package, first CPU of the cluster, first CPU of the core) of a CPU.
pub(super) fn unit_key(topo: &Topology, cpu: u32) -> (u32, u32, u32) {
    (
        topo.cpu_to_package(cpu),
        topo.drawn_cluster(cpu).first().unwrap_or(u32::MAX),
        topo.drawn_smt(cpu).first().unwrap_or(cpu),
    )
}

/// The index ranges of `order` over which `key` stays the same.
fn runs_by<K: PartialEq>(order: &[u32], key: impl Fn(u32) -> K) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let k = key(order[i]);
        let j = order[i..]
            .iter()
            .position(|&c| key(c) != k)
            .map_or(order.len(), |p| i + p);
        out.push((i, j));
        i = j;
    }
    out
}

/// The kind of each cluster of a hybrid node ("P-cores" for single-core clusters, "E-cores"
/// for multi-core clusters of single-thread cores); `None` when the node is not hybrid (one
/// shape of cluster, or shapes this rule does not name). `clusters` are lists of cores, each
/// a range of the drawing order.
fn core_kinds(topo: &Topology, clusters: &[Vec<(usize, usize)>]) -> Option<Vec<&'static str>> {
    let shape = |cl: &Vec<(usize, usize)>| (cl.len(), cl.iter().map(|(a, b)| b - a).max().unwrap_or(1));
    let mut shapes: Vec<(usize, usize)> = clusters.iter().map(shape).collect();
    shapes.sort_unstable();
    shapes.dedup();
    let [a, b] = shapes[..] else { return None };
    let (p, e) = if a.0 == 1 { (a, b) } else { (b, a) };
    if topo.arch().name() != "x86_64" || p.0 != 1 || e.0 < 2 || e.1 != 1 {
        return None;
    }
    Some(
        clusters
            .iter()
            .map(|cl| if shape(cl) == p { "P-cores" } else { "E-cores" })
            .collect(),
    )
}

/// A run of clusters of one package and kind (the kind's label), cut into units, each a
/// (start, end) range of the node's CPU order.
type Run = (Option<&'static str>, Vec<(usize, usize)>);

/// A node's rows: clusters kept whole when they fit a row, a new row at each package or core
/// kind, the rows of each run balanced.
pub(super) fn plan_rows<'o>(topo: &Topology, order: &'o [u32], row_cells: usize) -> Vec<RowPlan<'o>> {
    let key = |c: u32| unit_key(topo, c);
    let cores = runs_by(order, key);
    // Cores grouped by cluster (within a package).
    let mut clusters: Vec<Vec<(usize, usize)>> = Vec::new();
    for core in cores {
        let k = key(order[core.0]);
        match clusters.last_mut() {
            Some(cl) if key(order[cl[0].0]).0 == k.0 && key(order[cl[0].0]).1 == k.1 => cl.push(core),
            _ => clusters.push(vec![core]),
        }
    }
    let kinds = core_kinds(topo, &clusters);
    // Runs of clusters of one package and kind, each cut into units: a cluster that fits a
    // row, else its cores.
    let mut runs: Vec<Run> = Vec::new();
    for (i, cl) in clusters.iter().enumerate() {
        let kind = kinds.as_ref().map(|k| k[i]);
        let package = key(order[cl[0].0]).0;
        let same = runs
            .last()
            .is_some_and(|(k, units)| *k == kind && units.last().is_some_and(|u| key(order[u.0]).0 == package));
        if !same {
            runs.push((kind, Vec::new()));
        }
        let units = &mut runs.last_mut().expect("pushed above").1;
        let (start, end) = (cl[0].0, cl[cl.len() - 1].1);
        if end - start <= row_cells {
            units.push((start, end));
        } else {
            units.extend(cl.iter().copied());
        }
    }
    let mut rows = Vec::new();
    for (run, (kind, units)) in runs.into_iter().enumerate() {
        let sizes: Vec<usize> = units.iter().map(|(a, b)| b - a).collect();
        for (i, (start, end)) in balanced_rows(&sizes, row_cells).into_iter().enumerate() {
            let (from, to) = (units[start].0, units[end - 1].1);
            let slice = &order[from..to];
            let cores = runs_by(slice, key).into_iter().map(|(a, b)| &slice[a..b]).collect();
            // Only the first row of a run carries its label.
            let label = if i == 0 { kind } else { None };
            rows.push(RowPlan { cores, label, run });
        }
    }
    rows
}

/// Cut a run of units (clusters or cores, `sizes` cells each, in order) into as few rows of at
/// most `row_cells` cells as it takes, the rows as even as the units allow: each row aims at
/// its share of what is left, so the last row is never a lone unit left over (56 cells in units
/// of 2 at 24 a row are rows of 18, 18 and 20, not 18, 18, 18 and 2). Rows as ranges of unit
/// indices.
fn balanced_rows(sizes: &[usize], row_cells: usize) -> Vec<(usize, usize)> {
    let total: usize = sizes.iter().sum();
    let mut k = total.div_ceil(row_cells).max(1);
    loop {
        if k >= sizes.len() {
            return (0..sizes.len()).map(|i| (i, i + 1)).collect();
        }
        if let Some(rows) = cut_into(sizes, k, row_cells) {
            return rows;
        }
        k += 1;
    }
}

/// `sizes` cut into exactly `k` rows, each aiming at an even share of what is left; `None`
/// when a row of more than one unit would pass `row_cells`.
fn cut_into(sizes: &[usize], k: usize, row_cells: usize) -> Option<Vec<(usize, usize)>> {
    let mut rows = Vec::with_capacity(k);
    let mut left: usize = sizes.iter().sum();
    let mut i = 0;
    for r in (1..=k).rev() {
        let start = i;
        let mut cells = 0;
        if r == 1 {
            cells = left;
            i = sizes.len();
        } else {
            let target = left.div_ceil(r);
            // At least one unit, and one left for each row after this one.
            while i < sizes.len() - (r - 1) {
                let with = cells + sizes[i];
                let further = with.abs_diff(target) >= cells.abs_diff(target);
                if cells > 0 && (with > row_cells || (with > target && further)) {
                    break;
                }
                cells = with;
                i += 1;
                if cells >= target {
                    break;
                }
            }
        }
        if cells > row_cells && i - start > 1 {
            return None;
        }
        rows.push((start, i));
        left -= cells;
    }
    Some(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue;
    use crate::render::heatmap::{layout_order, ROW_CELLS_NUMBERED, ROW_CELLS_PLAIN};
    use crate::topology::CpuSet;

    fn rows_of(preset: &str) -> Vec<(Option<&'static str>, Vec<u32>)> {
        let t = catalogue::get(preset).unwrap();
        let mut out = Vec::new();
        for node in t.nodes_with_cpus() {
            let order = layout_order(&t, node);
            for r in plan_rows(&t, &order, ROW_CELLS_NUMBERED) {
                out.push((r.label, r.cores.iter().flat_map(|c| c.iter().copied()).collect()));
            }
        }
        out
    }

    /// Rows break at the kind of core on a hybrid part, each kind named, clusters whole.
    #[test]
    fn hybrid_rows_name_p_and_e_cores() {
        let rows = rows_of("intel-core-ultra-7-265k");
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[0], (Some("P-cores"), (0..8).collect()));
        assert_eq!(rows[1], (Some("E-cores"), (8..20).collect()));
        let rows = rows_of("intel-core-i9-13900k");
        assert_eq!((rows[0].0, rows[0].1.len()), (Some("P-cores"), 16));
        assert_eq!((rows[1].0, rows[1].1.len()), (Some("E-cores"), 16));
        // Not hybrid: one shape of cluster, no kind named.
        assert!(rows_of("azure-l96as-v4").iter().all(|r| r.0.is_none()));
    }

    /// A node's rows are balanced and never split a cluster that fits a row.
    #[test]
    fn rows_are_balanced_and_keep_clusters_whole() {
        let rows = rows_of("azure-l96as-v4");
        assert_eq!(rows.iter().map(|r| r.1.len()).collect::<Vec<_>>(), [24, 24, 24, 24]);
        let t = catalogue::get("amd-epyc-9654-2s-nps4").unwrap();
        for node in t.nodes_with_cpus() {
            let order = layout_order(&t, node);
            for r in plan_rows(&t, &order, ROW_CELLS_NUMBERED) {
                let cpus: CpuSet = r.cores.iter().flat_map(|c| c.iter().copied()).collect();
                assert!(cpus.weight() as usize <= ROW_CELLS_NUMBERED);
                for c in cpus.iter() {
                    let cl = t.drawn_cluster(c).and(t.node_cpus(node));
                    if cl.weight() as usize <= ROW_CELLS_NUMBERED {
                        assert!(cl.iter().all(|x| cpus.contains(x)), "cluster of {c} split");
                    }
                }
            }
        }
    }

    /// No row of any preset's heatmap holds a lone core where its run (one package, one kind
    /// of core) has more than one, at either row width (the whole machine, and one node
    /// drawn alone): the Xeon SNC2 nodes of 28 cores and synthetic-1024's of 64 used to end
    /// in one.
    #[test]
    fn no_row_holds_a_lone_core() {
        for (name, t) in catalogue::all() {
            let t = t.as_ref().unwrap();
            for node in t.nodes_with_cpus() {
                let order = layout_order(t, node);
                for cells in [ROW_CELLS_NUMBERED, ROW_CELLS_PLAIN] {
                    let rows = plan_rows(t, &order, cells);
                    for (i, r) in rows.iter().enumerate() {
                        let cores_in_run: usize = rows.iter().filter(|o| o.run == r.run).map(|o| o.cores.len()).sum();
                        assert!(
                            r.cores.len() > 1 || cores_in_run == 1,
                            "{name} node {node}, {cells} a row: row {i} holds one core ({:?}) of a run of {cores_in_run}",
                            r.cores[0]
                        );
                        let n: usize = r.cores.iter().map(|c| c.len()).sum();
                        assert!(
                            n <= cells || r.cores.len() == 1,
                            "{name} node {node}: row {i} has {n} cells"
                        );
                    }
                }
            }
        }
    }
}
