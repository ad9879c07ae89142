//! `numactl -H` (`--hardware`) output: nodes, their CPUs and the distance matrix.
//!
//! numactl says nothing of SMT, clusters or packages: each CPU comes back as its own core and
//! each node as its own package. `size:`/`free:` lines are ignored.

use super::{check_text, parse_id, short, Draft, Format, ImportError, Imported, Place};
use crate::topology::{TopologySpec, CPUS_MAX, NODES_MAX};

const F: Format = Format::Numactl;
/// Largest distance accepted (the SLIT holds bytes).
const DISTANCE_MAX: u32 = 255;

pub fn parse(text: &str) -> Result<TopologySpec, ImportError> {
    import(text).map(|i| i.spec)
}

/// [`parse`] with what numactl cannot say: SMT, clusters, packages, online state, and the
/// distances when the matrix is missing.
pub fn import(text: &str) -> Result<Imported, ImportError> {
    check_text(F, text)?;
    let mut draft = Draft::new(F, "imported from numactl -H");
    let mut matrix: Option<Matrix> = None;
    let mut n_cpu_lines = 0usize;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if t == "node distances:" {
            matrix.get_or_insert_with(Matrix::default);
            continue;
        }
        if let Some(m) = &mut matrix {
            m.read_line(&draft, t, line_no)?;
            continue;
        }
        if t.starts_with("available:") || t.starts_with("No distance information") {
            continue;
        }
        if read_node_line(&mut draft, t, line_no)? {
            n_cpu_lines += 1;
        }
    }
    if n_cpu_lines == 0 {
        return Err(draft.err(
            &Place::default(),
            "no `node N cpus:` lines (is this `numactl -H` output?)",
        ));
    }
    draft.warnings.push(
        "numactl -H carries no SMT, cluster or package information: each CPU is imported as its \
         own core, without clusters, one package per node."
            .to_string(),
    );
    draft.warnings.push(
        "numactl -H does not say which CPUs are possible, present or online: every listed CPU is \
         taken as present and online."
            .to_string(),
    );
    if let Some(m) = matrix {
        m.finish(&mut draft)?;
    }
    draft.finish()
}

/// A `node N …` line before the distance matrix; true for a `node N cpus: …` line, whose CPUs
/// go to node N. Other `node N` lines (`size:`, `free:`) are passed over.
fn read_node_line(draft: &mut Draft, t: &str, line_no: usize) -> Result<bool, ImportError> {
    let at = |field: &str| Place::new(Some(line_no), field);
    let Some(rest) = t.strip_prefix("node ") else {
        return Err(draft.err(
            &at(""),
            format!("unexpected line {:?} (is this `numactl -H` output?)", short(t)),
        ));
    };
    let Some((id, what)) = rest.trim_start().split_once(' ') else {
        return Err(draft.err(&at(""), format!("unexpected line {:?}", short(t))));
    };
    let node = parse_id(F, &at("node"), id, "node", NODES_MAX)?;
    let Some(cpus) = what.trim_start().strip_prefix("cpus:") else {
        return Ok(false);
    };
    draft.add_node_id(node);
    for w in cpus.split_whitespace() {
        let cpu = parse_id(F, &at(&format!("node {node} cpus")), w, "CPU", CPUS_MAX)?;
        draft.set_node(cpu, node, at(&format!("node {node} cpus")))?;
    }
    Ok(true)
}

/// The `node distances:` block as read so far: the `node 0 1 …` header and the `N: d d …`
/// rows.
#[derive(Default)]
struct Matrix {
    header: Option<Vec<u32>>,
    rows: Vec<(Vec<u32>, Place)>,
    row_ids: Vec<u32>,
}

impl Matrix {
    /// One line after `node distances:`: the header (once) or a row after it.
    fn read_line(&mut self, draft: &Draft, t: &str, line_no: usize) -> Result<(), ImportError> {
        let at = |field: &str| Place::new(Some(line_no), field);
        if let Some(rest) = t.strip_prefix("node") {
            if self.header.is_some() {
                return Err(draft.err(&at("node distances"), "a second header line in the distance matrix"));
            }
            let ids = rest
                .split_whitespace()
                .map(|w| parse_id(F, &at("node distances"), w, "node", NODES_MAX))
                .collect::<Result<Vec<_>, _>>()?;
            self.header = Some(ids);
            return Ok(());
        }
        let Some((id, values)) = t.split_once(':') else {
            return Err(draft.err(
                &at("node distances"),
                format!("expected `N: d d …`, found {:?}", short(t)),
            ));
        };
        if self.header.is_none() {
            return Err(draft.err(&at("node distances"), "distance row before the `node 0 1 …` header"));
        }
        let id = parse_id(F, &at("node distances"), id, "node", NODES_MAX)?;
        let values = values
            .split_whitespace()
            .map(|w| {
                parse_id(
                    F,
                    &at(&format!("distance from node {id}")),
                    w,
                    "distance",
                    DISTANCE_MAX + 1,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        if self.rows.len() >= NODES_MAX as usize {
            return Err(draft.err(&at("node distances"), format!("more than {NODES_MAX} rows")));
        }
        self.row_ids.push(id);
        self.rows.push((values, at(&format!("distance from node {id}"))));
        Ok(())
    }

    /// The matrix into the draft: its rows must be for the nodes its header names.
    fn finish(self, draft: &mut Draft) -> Result<(), ImportError> {
        let Some(ids) = self.header else {
            return Err(draft.err(
                &Place::new(None, "node distances"),
                "the distance matrix has no `node 0 1 …` header (truncated?)",
            ));
        };
        if self.row_ids.len() == ids.len() && self.row_ids != ids {
            return Err(draft.err(
                &self.rows[0].1,
                format!(
                    "distance rows are for nodes {:?}, but the header names {ids:?}",
                    self.row_ids
                ),
            ));
        }
        for &id in &ids {
            draft.add_node_id(id);
        }
        draft.distances = Some((ids, self.rows));
        Ok(())
    }
}
