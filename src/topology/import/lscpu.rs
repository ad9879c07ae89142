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

/// A fault in the table's layout (no field to name).
fn table_error(line: Option<usize>, message: impl Into<String>) -> ImportError {
    ImportError::new(F, line, "", message)
}

/// A data line whose field count is not the header's.
fn width_error(line_no: usize, fields: usize, columns: usize) -> ImportError {
    table_error(
        Some(line_no),
        format!("{fields} fields, but the header names {columns} columns (truncated line?)"),
    )
}

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
                    return Err(table_error(Some(line_no), "a second `# CPU,…` header after data lines"));
                }
                if names.len() > COLUMNS_MAX {
                    return Err(table_error(Some(line_no), format!("more than {COLUMNS_MAX} columns")));
                }
                columns = Some(names);
            }
            continue;
        }
        if t.is_empty() {
            continue;
        }
        let Some(cols) = &columns else {
            return Err(table_error(
                Some(line_no),
                "data before the `# CPU,…` header line (is this `lscpu -p` output?)",
            ));
        };
        let fields: Vec<Option<String>> = t
            .split(',')
            .map(|f| f.trim())
            .map(|f| (!f.is_empty()).then(|| f.to_string()))
            .collect();
        if fields.len() != cols.len() {
            return Err(width_error(line_no, fields.len(), cols.len()));
        }
        rows.push((line_no, fields));
    }
    let Some(columns) = columns else {
        return Err(table_error(
            None,
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
                return Err(table_error(
                    Some(line_no),
                    format!(
                        "expected a header starting with CPU (lscpu -e), found {:?}",
                        short(line)
                    ),
                ));
            }
            if words.len() > COLUMNS_MAX {
                return Err(table_error(Some(line_no), format!("more than {COLUMNS_MAX} columns")));
            }
            columns = Some(words.iter().map(|w| w.to_ascii_uppercase()).collect());
            continue;
        };
        if words.len() != cols.len() {
            return Err(width_error(line_no, words.len(), cols.len()));
        }
        rows.push((
            line_no,
            words.iter().map(|w| (*w != "-").then(|| w.to_string())).collect(),
        ));
    }
    let Some(columns) = columns else {
        return Err(table_error(
            None,
            "empty input (expected `lscpu -p` or `lscpu -e` output)",
        ));
    };
    Ok((columns, rows))
}

/// The CPUs of an lscpu table and the sets they share, each with the place of its first CPU:
/// cores and clusters keyed by (drawer, book, socket, id), for a core id alone may repeat
/// across sockets, and sockets by (drawer, book, socket).
struct Table {
    present: CpuSet,
    online: CpuSet,
    cores: BTreeMap<(u64, u64, u64, u64), (CpuSet, Place)>,
    clusters: BTreeMap<(u64, u64, u64, u64), (CpuSet, Place)>,
    sockets: BTreeMap<(u64, u64, u64), (CpuSet, Place)>,
}

/// Where each column this parser reads sits (`CPU` defaults to the first).
struct Columns<'a> {
    names: &'a [String],
    cpu: usize,
    node: Option<usize>,
    socket: Option<usize>,
    core: Option<usize>,
    cluster: Option<usize>,
    book: Option<usize>,
    drawer: Option<usize>,
    online: Option<usize>,
}

impl<'a> Columns<'a> {
    fn of(names: &'a [String]) -> Columns<'a> {
        let col = |name: &str| names.iter().position(|c| c == name);
        Columns {
            names,
            cpu: col("CPU").unwrap_or(0),
            node: col("NODE"),
            socket: col("SOCKET"),
            core: col("CORE"),
            cluster: col("CLUSTER"),
            book: col("BOOK"),
            drawer: col("DRAWER"),
            online: col("ONLINE"),
        }
    }
}

fn from_table(columns: &[String], rows: &[Row]) -> Result<Imported, ImportError> {
    let cols = Columns::of(columns);
    let mut draft = Draft::new(F, "imported from lscpu");
    let mut table = Table {
        present: CpuSet::new(CPUS_MAX),
        online: CpuSet::new(CPUS_MAX),
        cores: BTreeMap::new(),
        clusters: BTreeMap::new(),
        sockets: BTreeMap::new(),
    };
    for (line_no, fields) in rows {
        read_row(&cols, *line_no, fields, &mut draft, &mut table)?;
    }
    if table.present.is_empty() {
        return Err(ImportError::new(F, None, "", "no CPU lines"));
    }
    for (set, place) in table.cores.into_values() {
        if set.weight() > 1 {
            draft.smt.add(F, set, place)?;
        }
    }
    draft.warnings.extend(missing_columns(&cols, table.clusters.is_empty()));
    for (set, place) in table.clusters.into_values() {
        draft.clusters.add(F, set, place)?;
    }
    for (set, place) in table.sockets.into_values() {
        draft.packages.add(F, set, place)?;
    }
    draft.present = Some(table.present.clone());
    draft.possible = Some(table.present);
    draft.online = Some(table.online);
    draft.finish()
}

/// One CPU line: its number (once), whether it is online, its node into the draft and its
/// core, cluster and socket into the table. An unknown node (offline CPU) is settled by
/// `Draft::finish`.
fn read_row(
    cols: &Columns,
    line_no: usize,
    fields: &[Option<String>],
    draft: &mut Draft,
    table: &mut Table,
) -> Result<(), ImportError> {
    let num = |c: Option<usize>, what: &str, limit: u32| -> Result<Option<u32>, ImportError> {
        match c.and_then(|c| fields[c].as_deref().map(|v| (c, v))) {
            None => Ok(None),
            Some((c, v)) => {
                let at = Place::new(Some(line_no), format!("column {}", cols.names[c]));
                parse_id(F, &at, v, what, limit).map(Some)
            }
        }
    };
    let Some(cpu) = num(Some(cols.cpu), "CPU", CPUS_MAX)? else {
        return Err(ImportError::new(F, Some(line_no), "column CPU", "empty CPU number"));
    };
    if table.present.contains(cpu) {
        return Err(ImportError::new(
            F,
            Some(line_no),
            "column CPU",
            format!("CPU {cpu} is listed twice"),
        ));
    }
    table.present.insert(cpu);
    if is_online(cols.online.and_then(|c| fields[c].as_deref()), line_no)? {
        table.online.insert(cpu);
    }
    let place = Place::new(Some(line_no), "");
    match num(cols.node, "node", NODES_MAX)? {
        Some(node) => draft.set_node(cpu, node, place.clone())?,
        None if cols.node.is_none() => draft.set_node(cpu, 0, place.clone())?,
        None => {}
    }
    let limit = u32::MAX;
    let drawer = u64::from(num(cols.drawer, "drawer", limit)?.unwrap_or(0));
    let book = u64::from(num(cols.book, "book", limit)?.unwrap_or(0));
    let socket = num(cols.socket, "socket", limit)?;
    let s = socket.map_or(0, u64::from);
    let add = |set: &mut (CpuSet, Place)| {
        set.0.insert(cpu);
    };
    let new_set = || (CpuSet::new(CPUS_MAX), place.clone());
    if let Some(socket) = socket {
        add(table
            .sockets
            .entry((drawer, book, u64::from(socket)))
            .or_insert_with(new_set));
    }
    if let Some(core) = num(cols.core, "core", limit)? {
        add(table
            .cores
            .entry((drawer, book, s, u64::from(core)))
            .or_insert_with(new_set));
    }
    if let Some(cluster) = num(cols.cluster, "cluster", limit)? {
        add(table
            .clusters
            .entry((drawer, book, s, u64::from(cluster)))
            .or_insert_with(new_set));
    }
    Ok(())
}

/// The `ONLINE` field: Y/N/yes/no in any case; a CPU without one is online.
fn is_online(field: Option<&str>, line_no: usize) -> Result<bool, ImportError> {
    let Some(v) = field else {
        return Ok(true);
    };
    match v.to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(true),
        "n" | "no" => Ok(false),
        _ => Err(ImportError::new(
            F,
            Some(line_no),
            "column ONLINE",
            format!("{:?} is not Y/N/yes/no", short(v)),
        )),
    }
}

/// What the columns could not say: one warning per column left out, the clusters, and the
/// possible CPUs lscpu never tells from present ones.
fn missing_columns(cols: &Columns, no_clusters: bool) -> Vec<String> {
    let missing = |c: Option<usize>, what: &str, default: &str| {
        c.is_none()
            .then(|| format!("no {what} column in lscpu output: {default}."))
    };
    let mut warnings: Vec<String> = [
        missing(cols.node, "NODE", "every CPU is placed in node 0"),
        missing(
            cols.core,
            "CORE",
            "each CPU is imported as its own core (no SMT siblings)",
        ),
        missing(cols.socket, "SOCKET", "packages default to one per node"),
        missing(
            cols.online,
            "ONLINE",
            "every listed CPU is taken as online, and CPUs lscpu did not list (offline ones, \
             without --all) are missing",
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if no_clusters {
        let why = if cols.cluster.is_some() {
            "the CLUSTER column is empty, as util-linux 2.38 prints it on x86"
        } else {
            "no CLUSTER column"
        };
        warnings.push(format!(
            "no cluster information in lscpu output ({why}): imported without clusters, so \
             cluster-aware spreading sees none; take clusters from sysfs cluster_cpus_list \
             (irqscope topology import sysfs)."
        ));
    }
    warnings.push(
        "lscpu does not tell possible from present CPUs: possible CPUs that are not present \
         (hot-plug slots) are missing, which changes nr_cpu_ids and the spread over possible CPUs."
            .to_string(),
    );
    warnings
}
