//! [`Collector`], the agent's reading loop: it keeps the `/proc/interrupts` text, the parsed
//! rows, each IRQ's `/proc/irq/N/` files and the topology between readings, so a steady host
//! re-reads files into the same buffers, refreshes IRQ files in turn (at once for an IRQ whose
//! interrupts land outside its mask) and re-reads sysfs only when the online CPUs change.

use super::{
    borrowed, irq_fields_and_landing, irq_wire_fields, read_bounded, read_bounded_into, read_kernel_release,
    read_topology, set_opt_text, set_text, set_wire_fields, topology_of, update_irqs, IrqFiles, IrqWireFields, LandsOn,
    ProcFiles,
};
use crate::live::parse::{self, Interrupts, IrqRow, ParseError, ReadError, INTERRUPTS_BYTES_MAX, IRQ_FILE_BYTES_MAX};
use crate::live::protocol::{Delta, Snapshot, WireTopology, ARCH_SINCE, FULL_SNAPSHOT_SAME_SINCE, PROTOCOL_VERSION};
use crate::topology::import::sysfs;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Most IRQs whose `/proc/irq/N/` files one [`Collector::read`] refreshes in turn. An IRQ new
/// to the collector is always read, all are re-read when the online CPUs change, and an IRQ
/// whose interrupts land outside its known affinity is re-read at once
/// ([`LANDED_OUTSIDE_READS_MAX`]); on a host with more IRQs than this the others are refreshed
/// in turn, so no IRQ's files are more than `ceil(IRQs / IRQ_FILES_PER_READING)` readings old
/// (64 on a 4,096-IRQ host). A host with fewer re-reads every file on every reading. Each
/// IRQ's files cost an open, a read and a close apiece (2 files: `node` is read once per
/// action); 256 IRQs per reading were about 2 ms, a sixth of a steady reading of a 4,096-IRQ
/// host (`cargo bench --bench live`).
pub const IRQ_FILES_PER_READING: usize = 64;

/// Most IRQs one reading re-reads because their interrupts landed outside the CPUs their files
/// last named (effective affinity, else requested). An IRQ moved by irqbalance or a write to
/// `smp_affinity_list` counts on its new CPU from then on, so its files are read in the reading
/// that first shows it there, not when its turn comes. A re-read that finds the files
/// unchanged (a count on the old CPU just after a move, or a row whose counts never fit its
/// mask) doubles the readings before the IRQ is re-read for that reason again, up to
/// [`LANDED_OUTSIDE_BACKOFF_MAX`]; a change found resets it.
pub const LANDED_OUTSIDE_READS_MAX: usize = 192;

/// The longest wait, in readings, between re-reads of an IRQ whose landings outside its mask
/// found nothing new (`2^6`: the rotation's period on a 4,096-IRQ host).
pub(crate) const LANDED_OUTSIDE_BACKOFF_MAX: u64 = 64;

/// What the collector keeps of one IRQ's `/proc/irq/N/` files between readings.
#[derive(Debug)]
struct IrqState {
    /// The files parsed into wire fields when they were read (an error is kept and reported
    /// by every reading until the file is read again).
    fields: Result<IrqWireFields, ParseError>,
    /// The reading in which `fields` last changed: a snapshot built at or after it holds them.
    changed: u64,
    /// The CPUs the files say the interrupts land on; `None` when they say nothing.
    lands_on: Option<LandsOn>,
    /// The counts on CPUs outside `lands_on` when the IRQ was last checked; `None` until the
    /// first check since `lands_on` was set (which only records them).
    outside: Option<Vec<(u32, u64)>>,
    /// Re-reads for a landing outside that found the files unchanged since the last change.
    fruitless: u32,
    /// The reading of the last re-read for a landing outside.
    landed_read_at: u64,
}

impl IrqState {
    fn new(n: u32, files: &IrqFiles, reading: u64) -> IrqState {
        let (fields, lands_on) = match irq_fields_and_landing(n, files) {
            Ok((fields, lands_on)) => (Ok(fields), lands_on),
            Err(e) => (Err(e), None),
        };
        IrqState {
            fields,
            changed: reading,
            lands_on,
            outside: None,
            fruitless: 0,
            landed_read_at: 0,
        }
    }

    /// The files were read again in `reading` and changed: parse them, and check the counts
    /// against the new mask from scratch.
    fn files_changed(&mut self, n: u32, files: &IrqFiles, reading: u64) {
        let (fruitless, landed_read_at) = (0, self.landed_read_at);
        *self = IrqState {
            fruitless,
            landed_read_at,
            ..IrqState::new(n, files, reading)
        };
    }

    /// Whether `counts` (the IRQ's non-zero counters, ordered by CPU) moved on a CPU outside
    /// `lands_on` since the last check: a new CPU, or a count that changed. The first check
    /// after the mask was read records them and reports nothing.
    fn landed_outside(&mut self, counts: &[(u32, u64)]) -> bool {
        match &self.lands_on {
            None => false,
            // The counts below and above the span: two slices, compared as memory.
            Some(LandsOn::Span(first, last)) => {
                let (first, last) = (*first, *last);
                let below = &counts[..counts.partition_point(|&(cpu, _)| cpu < first)];
                let above = &counts[counts.partition_point(|&(cpu, _)| cpu <= last)..];
                let same = |seen: &[(u32, u64)]| {
                    seen.len() == below.len() + above.len()
                        && seen[..below.len()] == *below
                        && seen[below.len()..] == *above
                };
                record_outside(&mut self.outside, same, || below.iter().chain(above).copied())
            }
            Some(LandsOn::Set(set)) => {
                let outside = || counts.iter().copied().filter(|&(cpu, _)| !set.contains(cpu));
                record_outside(&mut self.outside, |seen| seen.iter().copied().eq(outside()), outside)
            }
        }
    }

    /// Whether a landing outside may be re-read in `reading`: `2^fruitless` readings after the
    /// last such re-read, at most [`LANDED_OUTSIDE_BACKOFF_MAX`].
    fn may_reread(&self, reading: u64) -> bool {
        let wait = 1u64
            .checked_shl(self.fruitless)
            .unwrap_or(u64::MAX)
            .min(LANDED_OUTSIDE_BACKOFF_MAX);
        reading >= self.landed_read_at.saturating_add(wait)
    }
}

/// Keep the counts outside an IRQ's mask (`outside`) in `kept`; whether they differ from those
/// kept at the last check (`same` says whether they are the kept ones). The first check (`kept`
/// `None`) only keeps them.
fn record_outside<I: Iterator<Item = (u32, u64)>>(
    kept: &mut Option<Vec<(u32, u64)>>,
    same: impl Fn(&[(u32, u64)]) -> bool,
    outside: impl Fn() -> I,
) -> bool {
    match kept {
        Some(seen) if same(seen) => false,
        Some(seen) => {
            seen.clear();
            seen.extend(outside());
            true
        }
        None => {
            *kept = Some(outside().collect());
            false
        }
    }
}

/// A host's reading loop: the buffers and the topology kept between readings.
pub struct Collector {
    root: PathBuf,
    host: String,
    proc: ProcFiles,
    /// The chunk buffer `/proc/interrupts` is read and parsed through (bytes: only the fields
    /// that become strings are checked as UTF-8, by the parser).
    interrupts: Vec<u8>,
    irq_files: IrqFileReader,
    parsed: Interrupts,
    /// The last reading, updated in place by the next one.
    snapshot: Snapshot,
    /// The reading `snapshot` holds whole (its number in `readings`), or 0 when it is not
    /// whole (never read, or a reading failed half way).
    built_at: u64,
    /// The acknowledged reading ([`Collector::acknowledge`]) and the reading it holds; its
    /// buffers are kept when it is forgotten (`has_acked` false) and reused.
    acked: Snapshot,
    acked_built_at: u64,
    has_acked: bool,
    /// Readings made ([`Collector::read_ref`] calls).
    readings: u64,
    /// The `cpu/online` text the topology was read with, and the topology.
    topology: Option<(String, WireTopology)>,
    online: String,
    /// The protocol version the snapshot is stamped with ([`Collector::stamp_version`]).
    version: u32,
    /// The numbered IRQs of this reading, sorted, each with a digest of its action (chip,
    /// hwirq, name), and where the next refresh starts. Built again only when `numbered_stale`:
    /// a parse rewrote a row's text, changed the number of rows, or failed.
    numbered: Vec<(u32, u64)>,
    numbered_stale: bool,
    refresh_at: usize,
    /// The action digest of each IRQ when its `node` file was read: a number given to another
    /// action (a new descriptor) has its node read again.
    node_read_for: BTreeMap<u32, u64>,
    /// Each IRQ's files as parsed when they were read, the reading they last changed in, and
    /// where its interrupts were seen landing.
    wire: BTreeMap<u32, IrqState>,
    /// This reading's IRQs whose interrupts landed outside their mask: (IRQ, row).
    landed: Vec<(u32, usize)>,
    /// The rows whose text this reading's parse wrote ([`parse::parse_interrupts_read_noting`]),
    /// and for each row of `parsed` the reading in which its text last changed: a snapshot
    /// built at or after it holds that text at that row. Empty after a parse that failed (its
    /// rows are partly written), so the next reading compares every row.
    rewritten: Vec<u32>,
    text_at: Vec<u64>,
    /// For each row of the last reading, the reading in which its `/proc/irq` fields last
    /// changed (0 for a row without files).
    fields_at: Vec<u64>,
}

/// Bytes of `/proc/interrupts` read at a time: each chunk is parsed while it is still in the
/// cache, so the file's bytes come from memory once (a whole 46 MB file read, then parsed,
/// goes through memory twice). 64 KiB to 1 MiB cost about the same (`cargo bench --bench
/// live` prints each); a seq_file read returns at most this much per call.
pub const INTERRUPTS_CHUNK_BYTES: usize = 256 << 10;

/// Reads `/proc/irq/N/{smp_affinity_list,effective_affinity_list,node}` into an [`IrqFiles`]
/// kept between readings: one reused read buffer, the texts written in place (their
/// allocations kept) and only when they changed, so a steady host's refresh allocates nothing.
#[derive(Debug, Default)]
pub(crate) struct IrqFileReader {
    /// `…/irq/`.
    dir: PathBuf,
    /// `…/irq/` open, the files opened relative to it (`N/name`): the kernel walks two path
    /// components per file instead of the whole path. Opened again by every
    /// [`IrqFileReader::reopen`] (once per reading), so a directory made or replaced after the
    /// reader is seen; `None` when it cannot be opened (every file then reads as absent until
    /// the next reading tries again).
    dir_fd: Option<rustix::fd::OwnedFd>,
    /// Opens of `…/irq/` tried: a directory that cannot be opened is tried again at the next
    /// reading, not at every file.
    opens: u64,
    /// `N/name` while a file is read.
    path: String,
    buf: Vec<u8>,
    /// IRQs whose files were read ([`IrqFileReader::read_files`] calls).
    reads: u64,
}

impl IrqFileReader {
    /// A reader of the IRQ directories under `proc` (the `/proc` directory).
    pub(crate) fn new(proc: &Path) -> IrqFileReader {
        IrqFileReader {
            dir: proc.join("irq"),
            dir_fd: None,
            opens: 0,
            path: String::new(),
            buf: vec![0; 4096],
            reads: 0,
        }
    }

    /// Open `…/irq/` again (the start of a reading).
    fn reopen(&mut self) {
        use rustix::fs::{Mode, OFlags};
        self.opens += 1;
        self.dir_fd = rustix::fs::open(
            &self.dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok();
    }

    /// Read IRQ `n`'s files into `files`; true when any of them changed (a file that is absent,
    /// larger than [`IRQ_FILE_BYTES_MAX`] or not UTF-8 is `None`). `node` is left as it is
    /// unless `with_node`: an IRQ's node is set
    /// when its descriptor is made (`desc_smp_init()` in kernel/irq/irqdesc.c) and never
    /// changes after, so only an IRQ new to the reader, or a number given to another action,
    /// needs it read again.
    pub(crate) fn read_files(&mut self, n: u32, files: &mut IrqFiles, with_node: bool) -> bool {
        if self.opens == 0 {
            self.reopen();
        }
        self.reads += 1;
        let mut changed = false;
        let node = if with_node { Some(&mut files.node) } else { None };
        for (name, text) in [
            ("smp_affinity_list", Some(&mut files.smp_affinity_list)),
            ("effective_affinity_list", Some(&mut files.effective_affinity_list)),
            ("node", node),
        ] {
            let Some(text) = text else { continue };
            self.path.clear();
            crate::topology::cpulist::push_u64(&mut self.path, u64::from(n));
            self.path.push('/');
            self.path.push_str(name);
            let read = self
                .dir_fd
                .as_ref()
                .and_then(|dir| read_small(dir, &self.path, IRQ_FILE_BYTES_MAX, &mut self.buf));
            let new = read.and_then(|len| std::str::from_utf8(&self.buf[..len]).ok());
            if text.as_deref() != new {
                set_opt_text(text, new);
                changed = true;
            }
        }
        changed
    }
}

/// A small file (`/proc/irq/N/*`, `path` relative to the open directory `dir`) into `buf`
/// (grown when a file does not fit, never shrunk): open, read until a short read, close. A
/// regular file or a kernel seq_file gives its whole text in one read when it fits, so this
/// costs three system calls (no `fstat`, unlike `read_to_end`). The length read; `None` when
/// absent, unreadable or larger than `bytes_max`.
fn read_small(dir: &rustix::fd::OwnedFd, path: &str, bytes_max: usize, buf: &mut Vec<u8>) -> Option<usize> {
    use rustix::fs::{Mode, OFlags};
    let f = rustix::fs::openat(dir, path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let mut len = 0;
    loop {
        if len == buf.len() {
            if len > bytes_max {
                return None;
            }
            buf.resize((2 * len).max(4096).min(bytes_max + 1), 0);
        }
        match rustix::io::read(&f, &mut buf[len..]) {
            Ok(n) => {
                len += n;
                if len < buf.len() {
                    break;
                }
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return None,
        }
    }
    (len <= bytes_max).then_some(len)
}

/// What tells one action on an IRQ number from another: its chip, hwirq and name (a number
/// freed and given to another device shows a new one).
fn action_digest(row: &IrqRow) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&row.chip, &row.hwirq, &row.name).hash(&mut h);
    h.finish()
}

/// A reading that failed: which file, and why.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error("reading {0}: {1}")]
    Io(String, std::io::Error),
    #[error(transparent)]
    Parse(#[from] ParseError),
}

impl Collector {
    pub fn new(root: &Path, host: &str) -> Collector {
        let empty = || Snapshot {
            version: PROTOCOL_VERSION,
            host: host.to_string(),
            taken_unix_ms: 0,
            boot_id: String::new(),
            topology: WireTopology::default(),
            cpus: Vec::new(),
            irqs: Vec::new(),
        };
        Collector {
            root: root.to_path_buf(),
            host: host.to_string(),
            proc: ProcFiles::default(),
            interrupts: Vec::new(),
            irq_files: IrqFileReader::new(&root.join("proc")),
            parsed: Interrupts::default(),
            snapshot: empty(),
            built_at: 0,
            acked: empty(),
            acked_built_at: 0,
            has_acked: false,
            readings: 0,
            topology: None,
            online: String::new(),
            version: PROTOCOL_VERSION,
            numbered: Vec::new(),
            numbered_stale: true,
            refresh_at: 0,
            node_read_for: BTreeMap::new(),
            wire: BTreeMap::new(),
            landed: Vec::new(),
            rewritten: Vec::new(),
            text_at: Vec::new(),
            fields_at: Vec::new(),
        }
    }

    /// Bring the `/proc/irq/N/` files of this reading's numbered IRQs up to date: new ones
    /// read, vanished ones dropped, [`IRQ_FILES_PER_READING`] of the others refreshed (all of
    /// them when `all`). A file is parsed again only when its text changed. This is the IRQ
    /// files step of [`Collector::read_ref`], public so that it can be measured alone; it
    /// refreshes the IRQs of the last reading.
    pub fn refresh_irq_files(&mut self, all: bool) {
        // Files read outside a reading are newer than every snapshot built.
        self.readings += 1;
        self.refresh(all);
    }

    /// [`Collector::refresh_irq_files`] within reading number `self.readings`.
    fn refresh(&mut self, all: bool) {
        self.irq_files.reopen();
        // A steady host keeps its IRQs: the kept files are then those of this reading already,
        // and none is new. Rows whose text the parse did not rewrite keep their numbers and
        // actions, and the files kept are those of `numbered` after every refresh.
        let same_irqs = !self.numbered_stale || {
            self.numbered.clear();
            self.numbered.extend(
                self.parsed
                    .rows
                    .iter()
                    .filter_map(|r| r.irq().map(|n| (n, action_digest(r)))),
            );
            self.numbered.sort_unstable_by_key(|&(n, _)| n);
            self.numbered.dedup_by_key(|&mut (n, _)| n);
            self.numbered_stale = false;
            self.proc.irqs.keys().copied().eq(self.numbered.iter().map(|&(n, _)| n))
        };
        let numbered = &self.numbered;
        if !same_irqs {
            let kept = |n: &u32| numbered.binary_search_by_key(n, |&(k, _)| k).is_ok();
            self.proc.irqs.retain(|n, _| kept(n));
            self.wire.retain(|n, _| kept(n));
            self.node_read_for.retain(|n, _| kept(n));
        }
        let reader = &mut self.irq_files;
        let wire = &mut self.wire;
        let node_read_for = &mut self.node_read_for;
        let reading = self.readings;
        let mut in_dir = |(n, action): (u32, u64), irqs: &mut BTreeMap<u32, IrqFiles>| {
            let files = irqs.entry(n).or_default();
            let with_node = node_read_for.get(&n) != Some(&action);
            if with_node {
                node_read_for.insert(n, action);
            }
            let changed = reader.read_files(n, files, with_node);
            match wire.get_mut(&n) {
                Some(_) if !changed => {}
                Some(state) => state.files_changed(n, files, reading),
                None => {
                    wire.insert(n, IrqState::new(n, files, reading));
                }
            }
        };
        // New IRQs are read at once; when `all`, the rotation below reads them.
        for &irq in numbered.iter().filter(|_| !same_irqs && !all) {
            if !self.proc.irqs.contains_key(&irq.0) {
                in_dir(irq, &mut self.proc.irqs);
            }
        }
        let len = numbered.len();
        let count = if all { len } else { len.min(IRQ_FILES_PER_READING) };
        let start = if len == 0 { 0 } else { self.refresh_at % len };
        for k in 0..count {
            in_dir(numbered[(start + k) % len], &mut self.proc.irqs);
        }
        self.refresh_at = if len == 0 { 0 } else { (start + count) % len };
    }

    /// Re-read the files of this reading's IRQs whose interrupts landed outside their mask (at
    /// most [`LANDED_OUTSIDE_READS_MAX`], each no sooner than its back-off allows), and write
    /// what changed into the snapshot.
    fn reread_landed_outside(&mut self) -> Result<(), ParseError> {
        let reading = self.readings;
        let mut reads = 0;
        for &(n, row) in &self.landed {
            let (Some(state), Some(files)) = (self.wire.get_mut(&n), self.proc.irqs.get_mut(&n)) else {
                continue;
            };
            if reads == LANDED_OUTSIDE_READS_MAX || !state.may_reread(reading) {
                continue;
            }
            reads += 1;
            let landed_read_at = reading;
            if self.irq_files.read_files(n, files, false) {
                state.files_changed(n, files, reading);
                self.fields_at[row] = reading;
                let irq = &mut self.snapshot.irqs[row];
                // The new mask's first check: it records the counts outside it.
                state.landed_outside(&irq.counts);
                match &state.fields {
                    Ok(fields) => set_wire_fields(irq, borrowed(fields)),
                    Err(e) => return Err(e.clone()),
                }
            } else {
                state.fruitless = state.fruitless.saturating_add(1);
            }
            state.landed_read_at = landed_read_at;
        }
        Ok(())
    }

    /// Stamp the snapshots of the next readings with protocol `version` instead of this
    /// build's, for a server that reads only older ones: `version` must be at least
    /// [`FULL_SNAPSHOT_SAME_SINCE`], whose full snapshots are this build's.
    pub fn stamp_version(&mut self, version: u32) {
        assert!(
            (FULL_SNAPSHOT_SAME_SINCE..=PROTOCOL_VERSION).contains(&version),
            "version {version}"
        );
        self.version = version;
        // Versions before ARCH_SINCE have no architecture or controller: read the topology
        // again with the next reading, without them (or with them again).
        self.topology = None;
    }

    /// Keep the last reading as the acknowledged one (the base of the next delta). The two
    /// readings' buffers are exchanged, not copied: the next [`Collector::read_ref`] updates
    /// the previous acknowledged reading in place, writing what differs from the reading it
    /// holds, so its result does not depend on which buffer it starts from.
    pub fn acknowledge(&mut self) {
        std::mem::swap(&mut self.snapshot, &mut self.acked);
        std::mem::swap(&mut self.built_at, &mut self.acked_built_at);
        self.has_acked = true;
    }

    /// Forget the acknowledged reading (the server has another base): the next push is whole.
    pub fn forget_acknowledged(&mut self) {
        self.has_acked = false;
    }

    /// The acknowledged reading, if one is kept.
    pub fn acknowledged(&self) -> Option<&Snapshot> {
        self.has_acked.then_some(&self.acked)
    }

    /// The last reading as a delta against the acknowledged one ([`Delta::between`]; `None`
    /// without an acknowledged reading, or when it must be sent in full). Rows whose text and
    /// files have not changed since the acknowledged reading was built are not compared.
    pub fn delta(&self) -> Option<Delta> {
        let base = self.acknowledged()?;
        let (acked, text_at, fields_at) = (self.acked_built_at, &self.text_at, &self.fields_at);
        let rows = self.snapshot.irqs.len();
        if acked == 0 || self.built_at == 0 || fields_at.len() != rows || text_at.len() != rows {
            return Delta::between(base, &self.snapshot);
        }
        Delta::between_known(base, &self.snapshot, |k| text_at[k] <= acked && fields_at[k] <= acked)
    }

    /// IRQs whose `/proc/irq/N/` files this collector has read, all readings together.
    pub fn irq_reads(&self) -> u64 {
        self.irq_files.reads
    }

    /// The last reading (what [`Collector::read_ref`] returned last).
    pub fn last_reading(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Read the host once and build its snapshot, stamped `taken_unix_ms`.
    pub fn read(&mut self, taken_unix_ms: u64) -> Result<Snapshot, CollectError> {
        self.read_ref(taken_unix_ms).cloned()
    }

    /// [`Collector::read`] without the copy: the collector's own snapshot, which the next
    /// reading updates in place (only what changed is written, every buffer is kept).
    pub fn read_ref(&mut self, taken_unix_ms: u64) -> Result<&Snapshot, CollectError> {
        self.readings += 1;
        // Whole again only when this reading succeeds.
        let built_at = std::mem::take(&mut self.built_at);
        let proc_dir = self.root.join("proc");
        self.read_interrupts(&proc_dir)?;
        if self.proc.boot_id.is_empty() {
            self.proc.boot_id = read_bounded(&proc_dir.join("sys/kernel/random/boot_id"), 64)
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            self.proc.kernel_release = read_kernel_release(&proc_dir);
        }
        let online_changed = self.refresh_topology()?;
        // Effective affinities move when CPUs go on- or offline: re-read them all then.
        self.refresh(online_changed);
        let topology = &self.topology.as_ref().expect("set above").1;
        let snap = &mut self.snapshot;
        snap.version = self.version;
        set_text(&mut snap.host, &self.host);
        snap.taken_unix_ms = taken_unix_ms;
        set_text(&mut snap.boot_id, &self.proc.boot_id);
        if snap.topology != *topology {
            snap.topology.clone_from(topology);
        }
        let wire = &mut self.wire;
        let landed = &mut self.landed;
        landed.clear();
        let fields_at = &mut self.fields_at;
        fields_at.clear();
        fields_at.resize(self.parsed.rows.len(), 0);
        let reading = self.readings;
        let text_at = &self.text_at;
        let text_same = |row: usize| built_at != 0 && text_at[row] <= built_at;
        update_irqs(snap, &self.parsed, &self.proc, text_same, |n, f, irq, same_irq, row| {
            fields_at[row] = reading;
            match wire.get_mut(&n) {
                Some(state) => {
                    fields_at[row] = state.changed;
                    if state.landed_outside(&irq.counts) {
                        landed.push((n, row));
                    }
                    match &state.fields {
                        // Unchanged since the reading this row was built from: nothing to write.
                        Ok(_) if same_irq && state.changed <= built_at => {}
                        Ok(fields) => set_wire_fields(irq, borrowed(fields)),
                        Err(e) => return Err(e.clone()),
                    }
                }
                None => set_wire_fields(irq, borrowed(&irq_wire_fields(n, f)?)),
            }
            Ok(())
        })?;
        self.reread_landed_outside()?;
        self.built_at = self.readings;
        Ok(&self.snapshot)
    }

    /// `/proc/interrupts` into the parsed rows, noting the rows whose text changed (and
    /// whether the numbered view must be rebuilt).
    fn read_interrupts(&mut self, proc_dir: &Path) -> Result<(), CollectError> {
        let path = proc_dir.join("interrupts");
        let file = std::fs::File::open(&path).map_err(io_error(&path))?;
        let rows_before = self.parsed.rows.len();
        let read = parse::parse_interrupts_read_noting(
            file,
            INTERRUPTS_CHUNK_BYTES,
            INTERRUPTS_BYTES_MAX,
            &mut self.interrupts,
            &mut self.parsed,
            &mut self.rewritten,
        );
        if read.is_err() {
            self.text_at.clear();
        }
        if read.is_err() || !self.rewritten.is_empty() || self.parsed.rows.len() != rows_before {
            self.numbered_stale = true;
        }
        match read {
            Ok(()) => {}
            Err(ReadError::Io(e)) => return Err(io_error(&path)(e)),
            Err(ReadError::Parse(e)) => return Err(e.into()),
        }
        self.text_at.resize(self.parsed.rows.len(), self.readings);
        for &row in &self.rewritten {
            self.text_at[row as usize] = self.readings;
        }
        Ok(())
    }

    /// The online CPUs, and the topology again when they changed (true then).
    fn refresh_topology(&mut self) -> Result<bool, CollectError> {
        let online_path = sysfs::system_dir(&self.root).join("cpu/online");
        if read_bounded_into(&online_path, sysfs::FILE_BYTES_MAX, &mut self.online).is_err() {
            self.online.clear();
        }
        let online_changed = self.topology.as_ref().is_none_or(|(o, _)| *o != self.online);
        if online_changed {
            let files = read_topology(&self.root).map_err(io_error(&sysfs::system_dir(&self.root)))?;
            let mut topology = topology_of(&files, &self.host)?;
            topology.kernel_release = self.proc.kernel_release.clone();
            if self.version >= ARCH_SINCE {
                // The controller (and so the architecture) the interrupts' chips name.
                topology.irqchip =
                    crate::live::devices::machine_irqchip(self.parsed.rows.iter().map(|r| r.chip.as_str()));
                topology.arch = topology.irqchip.map(crate::topology::Irqchip::arch);
            }
            self.topology = Some((self.online.clone(), topology));
        }
        Ok(online_changed)
    }
}

/// An I/O error of reading `what`, naming it.
fn io_error(what: &Path) -> impl FnOnce(std::io::Error) -> CollectError {
    let what = what.display().to_string();
    move |e| CollectError::Io(what, e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::CpuSet;
    use proptest::prelude::*;

    fn state(lands_on: LandsOn) -> IrqState {
        IrqState {
            fields: Ok((None, None, None)),
            changed: 0,
            lands_on: Some(lands_on),
            outside: None,
            fruitless: 0,
            landed_read_at: 0,
        }
    }

    fn counts(cpus: &[(u32, u64)]) -> Vec<(u32, u64)> {
        let mut c: Vec<(u32, u64)> = cpus.iter().copied().filter(|&(_, n)| n > 0).collect();
        c.sort_unstable();
        c.dedup_by_key(|&mut (cpu, _)| cpu);
        c
    }

    proptest! {
        /// The span's slices find what a filter of the whole set finds, over a run of
        /// readings: the same answer and the same counts kept.
        #[test]
        fn a_span_sees_the_landings_a_set_sees(
            first in 0u32..40,
            len in 1u32..8,
            readings in prop::collection::vec(prop::collection::vec((0u32..48, 0u64..4), 0..12), 1..8),
        ) {
            let set = CpuSet::from_cpus(first..first + len);
            prop_assert_eq!(LandsOn::of(&set), LandsOn::Span(first, first + len - 1));
            let (mut span, mut any) = (state(LandsOn::of(&set)), state(LandsOn::Set(set)));
            for r in &readings {
                let c = counts(r);
                prop_assert_eq!(span.landed_outside(&c), any.landed_outside(&c));
                prop_assert_eq!(&span.outside, &any.outside);
            }
        }
    }

    #[test]
    fn a_missing_irq_directory_is_tried_once_a_reading() {
        let proc = std::env::temp_dir().join(format!("irqscope-irq-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&proc);
        std::fs::create_dir_all(&proc).unwrap();
        let mut reader = IrqFileReader::new(&proc);
        let mut files = IrqFiles::default();
        for n in [24, 25, 24] {
            assert!(!reader.read_files(n, &mut files, true), "absent files stay absent");
        }
        assert!(files.smp_affinity_list.is_none() && files.effective_affinity_list.is_none() && files.node.is_none());
        assert_eq!(reader.opens, 1, "one open for the three IRQs read");
        // Made after the reader: seen from the next reading on, and read relative to it.
        std::fs::create_dir_all(proc.join("irq/24")).unwrap();
        std::fs::write(proc.join("irq/24/smp_affinity_list"), "0-3\n").unwrap();
        assert!(!reader.read_files(24, &mut files, true), "not before the next reading");
        reader.reopen();
        assert!(reader.read_files(24, &mut files, true));
        assert_eq!(files.smp_affinity_list.as_deref(), Some("0-3\n"));
        assert_eq!(
            (files.effective_affinity_list.as_deref(), files.node.as_deref()),
            (None, None)
        );
        assert_eq!(reader.opens, 2);
        std::fs::remove_dir_all(&proc).unwrap();
    }

    #[test]
    fn a_landing_is_a_count_outside_that_moved() {
        let mut s = state(LandsOn::of(&CpuSet::from_cpus([2, 5])));
        assert!(matches!(s.lands_on, Some(LandsOn::Set(_))));
        assert!(!s.landed_outside(&[(1, 4), (2, 9)]), "the first check keeps the counts");
        assert!(!s.landed_outside(&[(1, 4), (2, 10), (5, 1)]), "inside the mask");
        assert!(s.landed_outside(&[(1, 5), (2, 10)]), "CPU 1 counted");
        assert!(s.landed_outside(&[(1, 5), (2, 10), (3, 1)]), "a new CPU");
        assert!(!s.landed_outside(&[(1, 5), (2, 11), (3, 1)]));
        assert_eq!(s.outside.as_deref(), Some(&[(1, 5), (3, 1)][..]));
    }
}
