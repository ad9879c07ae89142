//! `lscpu -p[=COLUMNS]` (comma-separated, `#` header) and `lscpu -e[=COLUMNS]` (a table with a
//! header line) output.
//!
//! Columns used: `CPU` (required), `NODE`, `SOCKET`, `CORE`, `CLUSTER`, `BOOK`, `DRAWER`,
//! `ONLINE`; others are ignored. A missing or empty `NODE` puts the CPU in node 0; a missing
//! `CORE` makes each CPU its own core. Cluster masks come only from a `CLUSTER` column: lscpu's
//! cache ids are not the kernel's cluster on every architecture. Empty fields (`-p`) and `-`
//! (`-e`) mean unknown, as lscpu prints for offline CPUs. Rows with `ONLINE` `N`/`no` are
//! present but offline; without `ONLINE`, every listed CPU is online.

use super::{check_text, parse_id, short, Draft, Format, ImportError, Imported, Place};
use crate::topology::{CpuSet, TopologySpec, CPUS_MAX, NODES_MAX};
use std::collections::BTreeMap;

const F: Format = Format::Lscpu;
/// Most columns in one line.
const COLUMNS_MAX: usize = 64;

/// Parse `lscpu -p` or `lscpu -e` output (told apart by the `#` header of `-p`).
pub fn parse(text: &str) -> Result<TopologySpec, ImportError> {
    import(text).map(|i| i.spec)
}

/// [`parse`] with what lscpu could not say: clusters (util-linux 2.38 leaves the column empty on
/// x86), distances (never printed), possible-but-absent CPUs, and any column left out.
pub fn import(text: &str) -> Result<Imported, ImportError> {
    check_text(F, text)?;
    let parsable = text.lines().any(|l| l.trim_start().starts_with('#'));
    let (columns, rows) = if parsable { table_p(text)? } else { table_e(text)? };
    from_table(&columns, &rows)
}

type Row = (usize, Vec<Option<String>>);

fn table_p(text: &str) -> Result<(Vec<String>, Vec<Row>), ImportError> {
    let mut columns: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let t = line.trim();
        if let Some(comment) = t.strip_prefix('#') {
            let names: Vec<String> = comment.split(',').map(|s| s.trim().to_ascii_uppercase()).collect();
            if names.first().is_some_and(|n| n == "CPU") {
                if !rows.is_empty() {
                    return Err(ImportError::new(
                        F,
                        Some(line_no),
                        "",
                        "a second `# CPU,…` header after data lines",
                    ));
                }
                if names.len() > COLUMNS_MAX {
                    return Err(ImportError::new(
                        F,
                        Some(line_no),
                        "",
                        format!("more than {COLUMNS_MAX} columns"),
                    ));
                }
                columns = Some(names);
            }
            continue;
        }
        if t.is_empty() {
            continue;
        }
        let Some(cols) = &columns else {
            return Err(ImportError::new(
                F,
                Some(line_no),
                "",
                "data before the `# CPU,…` header line (is this `lscpu -p` output?)",
            ));
        };
        let fields: Vec<Option<String>> = t
            .split(',')
            .map(|f| f.trim())
            .map(|f| (!f.is_empty()).then(|| f.to_string()))
            .collect();
        if fields.len() != cols.len() {
            return Err(ImportError::new(
                F,
                Some(line_no),
                "",
                format!(
                    "{} fields, but the header names {} columns (truncated line?)",
                    fields.len(),
                    cols.len()
                ),
            ));
        }
        rows.push((line_no, fields));
    }
    let Some(columns) = columns else {
        return Err(ImportError::new(
            F,
            None,
            "",
            "no `# CPU,…` header line (is this `lscpu -p` output?)",
        ));
    };
    Ok((columns, rows))
}

fn table_e(text: &str) -> Result<(Vec<String>, Vec<Row>), ImportError> {
    let mut columns: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        let Some(cols) = &columns else {
            if !words[0].eq_ignore_ascii_case("CPU") {
                return Err(ImportError::new(
                    F,
                    Some(line_no),
                    "",
                    format!(
                        "expected a header starting with CPU (lscpu -e), found {:?}",
                        short(line)
                    ),
                ));
            }
            if words.len() > COLUMNS_MAX {
                return Err(ImportError::new(
                    F,
                    Some(line_no),
                    "",
                    format!("more than {COLUMNS_MAX} columns"),
                ));
            }
            columns = Some(words.iter().map(|w| w.to_ascii_uppercase()).collect());
            continue;
        };
        if words.len() != cols.len() {
            return Err(ImportError::new(
                F,
                Some(line_no),
                "",
                format!(
                    "{} fields, but the header names {} columns (truncated line?)",
                    words.len(),
                    cols.len()
                ),
            ));
        }
        rows.push((
            line_no,
            words.iter().map(|w| (*w != "-").then(|| w.to_string())).collect(),
        ));
    }
    let Some(columns) = columns else {
        return Err(ImportError::new(
            F,
            None,
            "",
            "empty input (expected `lscpu -p` or `lscpu -e` output)",
        ));
    };
    Ok((columns, rows))
}

fn from_table(columns: &[String], rows: &[Row]) -> Result<Imported, ImportError> {
    let col = |name: &str| columns.iter().position(|c| c == name);
    let cpu_col = col("CPU").unwrap_or(0);
    let (node_col, socket_col, core_col, cluster_col) = (col("NODE"), col("SOCKET"), col("CORE"), col("CLUSTER"));
    let (book_col, drawer_col, online_col) = (col("BOOK"), col("DRAWER"), col("ONLINE"));
    let mut draft = Draft::new(F, "imported from lscpu");
    let mut present = CpuSet::new(CPUS_MAX);
    let mut online = CpuSet::new(CPUS_MAX);
    // (drawer, book, socket, core) → CPUs; a core id alone may repeat across sockets.
    let mut cores: BTreeMap<(u64, u64, u64, u64), (CpuSet, Place)> = BTreeMap::new();
    let mut clusters: BTreeMap<(u64, u64, u64, u64), (CpuSet, Place)> = BTreeMap::new();
    let mut sockets: BTreeMap<(u64, u64, u64), (CpuSet, Place)> = BTreeMap::new();
    for (line_no, fields) in rows {
        let at = |c: usize| Place::new(Some(*line_no), format!("column {}", columns[c]));
        let num = |c: Option<usize>, what: &str, limit: u32| -> Result<Option<u32>, ImportError> {
            match c.and_then(|c| fields[c].as_deref().map(|v| (c, v))) {
                None => Ok(None),
                Some((c, v)) => parse_id(F, &at(c), v, what, limit).map(Some),
            }
        };
        let Some(cpu) = num(Some(cpu_col), "CPU", CPUS_MAX)? else {
            return Err(ImportError::new(F, Some(*line_no), "column CPU", "empty CPU number"));
        };
        if present.contains(cpu) {
            return Err(ImportError::new(
                F,
                Some(*line_no),
                "column CPU",
                format!("CPU {cpu} is listed twice"),
            ));
        }
        present.insert(cpu);
        let is_online = match online_col.and_then(|c| fields[c].as_deref()) {
            None => true,
            Some(v) => match v.to_ascii_lowercase().as_str() {
                "y" | "yes" => true,
                "n" | "no" => false,
                _ => {
                    return Err(ImportError::new(
                        F,
                        Some(*line_no),
                        "column ONLINE",
                        format!("{:?} is not Y/N/yes/no", short(v)),
                    ))
                }
            },
        };
        if is_online {
            online.insert(cpu);
        }
        let place = Place::new(Some(*line_no), "");
        // An unknown node (offline CPU) is settled by `Draft::finish`.
        match num(node_col, "node", NODES_MAX)? {
            Some(node) => draft.set_node(cpu, node, place.clone())?,
            None if node_col.is_none() => draft.set_node(cpu, 0, place.clone())?,
            None => {}
        }
        let limit = u32::MAX;
        let drawer = u64::from(num(drawer_col, "drawer", limit)?.unwrap_or(0));
        let book = u64::from(num(book_col, "book", limit)?.unwrap_or(0));
        let socket = num(socket_col, "socket", limit)?;
        let s = socket.map_or(0, u64::from);
        if let Some(socket) = socket {
            sockets
                .entry((drawer, book, u64::from(socket)))
                .or_insert_with(|| (CpuSet::new(CPUS_MAX), place.clone()))
                .0
                .insert(cpu);
        }
        if let Some(core) = num(core_col, "core", limit)? {
            cores
                .entry((drawer, book, s, u64::from(core)))
                .or_insert_with(|| (CpuSet::new(CPUS_MAX), place.clone()))
                .0
                .insert(cpu);
        }
        if let Some(cluster) = num(cluster_col, "cluster", limit)? {
            clusters
                .entry((drawer, book, s, u64::from(cluster)))
                .or_insert_with(|| (CpuSet::new(CPUS_MAX), place.clone()))
                .0
                .insert(cpu);
        }
    }
    if present.is_empty() {
        return Err(ImportError::new(F, None, "", "no CPU lines"));
    }
    for (set, place) in cores.into_values() {
        if set.weight() > 1 {
            draft.smt.add(F, set, place)?;
        }
    }
    // What the columns could not say.
    let missing = |c: Option<usize>, what: &str, default: &str| {
        c.is_none()
            .then(|| format!("no {what} column in lscpu output: {default}."))
    };
    draft.warnings.extend(
        [
            missing(node_col, "NODE", "every CPU is placed in node 0"),
            missing(
                core_col,
                "CORE",
                "each CPU is imported as its own core (no SMT siblings)",
            ),
            missing(socket_col, "SOCKET", "packages default to one per node"),
            missing(
                online_col,
                "ONLINE",
                "every listed CPU is taken as online, and CPUs lscpu did not list (offline ones, \
                 without --all) are missing",
            ),
        ]
        .into_iter()
        .flatten(),
    );
    if clusters.is_empty() {
        let why = if cluster_col.is_some() {
            "the CLUSTER column is empty, as util-linux 2.38 prints it on x86"
        } else {
            "no CLUSTER column"
        };
        draft.warnings.push(format!(
            "no cluster information in lscpu output ({why}): imported without clusters, so \
             cluster-aware spreading sees none; take clusters from sysfs cluster_cpus_list \
             (irqscope topology import sysfs)."
        ));
    }
    draft.warnings.push(
        "lscpu does not tell possible from present CPUs: possible CPUs that are not present \
         (hot-plug slots) are missing, which changes nr_cpu_ids and the spread over possible CPUs."
            .to_string(),
    );
    for (set, place) in clusters.into_values() {
        draft.clusters.add(F, set, place)?;
    }
    for (set, place) in sockets.into_values() {
        draft.packages.add(F, set, place)?;
    }
    draft.present = Some(present.clone());
    draft.possible = Some(present);
    draft.online = Some(online);
    draft.finish()
}
