//! Running a build: the harness as a separate process, answering `group_cpus_evenly()` calls
//! over its line protocol (`kernel-c/harness.c` says the format), under limits.
//!
//! One process answers many calls (a sweep is not a process per call): the machine is sent
//! once per change of topology, then one `call NUMGRPS COUNTER` line per call. Each process
//! has an address-space and a CPU-time limit (`setrlimit` in the harness before any kernel
//! code runs) and every call a wall-clock limit (a watchdog thread kills the process). A
//! crash, a loop, a wild write or malformed output ends that process and becomes an
//! [`ExternalError`] naming what happened; the next call starts a fresh process.
//!
//! Answers are remembered by (machine, numgrps, counter): the harness keeps no state between
//! calls but the counter it is given, so the same question has the same answer (and C
//! without a counter is asked once for every counter). The machine is named by a hash of
//! what the harness is sent ([`Machine`]), computed without writing the text; the text is
//! written once per machine and sent once per process.

use super::machine::{catalogue_instance, Machine};
use super::stages::Boot;
use super::{Built, Provenance};
use crate::kernel::blk_mq_cpumap::QueueMap;
use crate::kernel::irq_affinity::{AffinityMasks, AffinityRequest};
use crate::kernel::{BootMasks, ExternalError, ExternalGroupCpus, Grouping, KernelWarn, Stage, StageAnswer};
use crate::topology::{parse_cpulist, CpuSet, Topology};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The limits a harness process runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Address space of one process (MiB).
    pub memory_mib: u64,
    /// CPU time of one process over all its calls (seconds).
    pub cpu_s: u64,
    /// Wall-clock time of one call.
    pub call: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory_mib: 1024,
            cpu_s: 600,
            call: Duration::from_secs(10),
        }
    }
}

impl Limits {
    /// The defaults, with the call limit from `IRQSCOPE_KERNEL_C_CALL_MS` when it is set
    /// (100 ms to 10 minutes).
    pub fn from_env() -> Limits {
        let mut l = Limits::default();
        if let Some(ms) = std::env::var("IRQSCOPE_KERNEL_C_CALL_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|ms| (100..=600_000).contains(ms))
        {
            l.call = Duration::from_millis(ms);
        }
        l
    }
}

/// Most groups one call may ask for (the harness refuses more).
pub(crate) const NUMGRPS_MAX: u32 = 65_536;
/// Answers remembered before the memo starts over.
const MEMO_ENTRIES_MAX: usize = 16_384;
/// Machine texts remembered before that list starts over.
const TEXTS_MAX: usize = 64;
/// Longest line read from a harness.
const LINE_BYTES_MAX: usize = 1 << 20;

/// One running harness.
struct Proc {
    child: Arc<Mutex<Child>>,
    stdin: ChildStdin,
    stdout: Replies,
    /// The machine it holds ([`Machine`]'s key).
    topo: Option<u64>,
    /// The boot line it holds.
    boot: Option<String>,
    /// The watchdog's deadline ([`Watch`]).
    watch: Arc<Watch>,
    killed: Arc<AtomicBool>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.watch.close();
        let _ = self.stdin.write_all(b"quit\n");
        if let Ok(mut c) = self.child.lock() {
            super::exec::kill(&mut c);
            let _ = c.wait();
        }
    }
}

/// A call's answer as the harness gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// `None`: NULL.
    pub masks: Option<Vec<CpuSet>>,
    pub nummasks: u32,
    pub(crate) counter_after: u32,
    /// Each WARN the call hit.
    pub(crate) warnings: Vec<Warning>,
}

/// A WARN the C hit: the file (its last path component), the line and the condition as
/// written there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Warning {
    pub(crate) file: String,
    pub(crate) line: u32,
    pub(crate) condition: String,
}

impl Warning {
    pub(crate) fn to_kernel(&self) -> KernelWarn {
        KernelWarn::C {
            file: self.file.clone(),
            line: self.line,
            condition: self.condition.clone(),
        }
    }
}

/// A build ready to run: the [`ExternalGroupCpus`] of `c:NAME`.
pub struct KernelC {
    exe: PathBuf,
    provenance: Provenance,
    variant: String,
    describe: String,
    limits: Limits,
    idle: Mutex<Vec<Proc>>,
    memo: Mutex<HashMap<(u64, u32, u32), Arc<Answer>>>,
    /// The stages this build brings, from its provenance.
    pub(crate) stages: Vec<Stage>,
    /// The later stages' answers by (machine, boot and request text).
    pub(crate) stage_memo: Mutex<HashMap<(u64, String), Arc<super::stages::StageReply>>>,
}

/// Catalogue machines by address ([`catalogue_instance`]), keyed once per process: the
/// catalogue is made once per process and never changes.
fn preset_machines() -> &'static Mutex<HashMap<usize, Arc<Machine<'static>>>> {
    static PRESETS: std::sync::OnceLock<Mutex<HashMap<usize, Arc<Machine<'static>>>>> = std::sync::OnceLock::new();
    PRESETS.get_or_init(Default::default)
}

/// Machine texts by key, for every build of the process (the same key is the same text).
fn machine_texts() -> &'static Mutex<HashMap<u64, Arc<str>>> {
    static TEXTS: std::sync::OnceLock<Mutex<HashMap<u64, Arc<str>>>> = std::sync::OnceLock::new();
    TEXTS.get_or_init(Default::default)
}

impl std::fmt::Debug for KernelC {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelC({} {})", self.variant, self.provenance.id)
    }
}

impl KernelC {
    pub fn new(built: Built, limits: Limits) -> KernelC {
        let mut stages = vec![Stage::GroupCpusEvenly];
        stages.extend(built.provenance.stages.iter().filter_map(|s| Stage::from_name(s)));
        stages.sort();
        stages.dedup();
        KernelC {
            stages,
            stage_memo: Mutex::new(HashMap::new()),
            variant: format!("c:{}", built.provenance.name),
            describe: built.provenance.describe(),
            exe: built.exe,
            provenance: built.provenance,
            limits,
            idle: Mutex::new(Vec::new()),
            memo: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    /// End the idle harness processes and wait for them (the next call starts a fresh one),
    /// so their CPU time is counted to this process's children.
    pub fn stop(&self) {
        let procs = self
            .idle
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        drop(procs);
    }

    fn spawn(&self) -> Result<Proc, ExternalError> {
        let mut child = super::exec::spawn_harness(&self.exe, self.limits)
            .map_err(|e| ExternalError(format!("{}: the harness does not start: {e}", self.variant)))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = Replies {
            r: BufReader::with_capacity(1 << 16, child.stdout.take().expect("piped")),
            lines: 0,
            last_bytes: 0,
        };
        let child = Arc::new(Mutex::new(child));
        let killed = Arc::new(AtomicBool::new(false));
        let watch = Arc::new(Watch::default());
        let (w, c, k) = (watch.clone(), child.clone(), killed.clone());
        std::thread::spawn(move || watchdog(&w, c, k));
        Ok(Proc {
            child,
            stdin,
            stdout,
            topo: None,
            boot: None,
            watch,
            killed,
        })
    }

    /// Ask one question, on an idle process or a new one, under the boot parameters `boot`
    /// (a harness `boot` line). A process that failed is dropped.
    pub(crate) fn ask(&self, machine: &Machine, boot: &str, req: &Request) -> Result<Reply, ExternalError> {
        let idle = self.idle.lock().map(|mut v| v.pop()).unwrap_or(None);
        let mut proc = match idle {
            Some(p) => p,
            None => self.spawn()?,
        };
        let answer = self.exchange(&mut proc, machine, boot, req);
        if answer.is_ok() {
            if let Ok(mut v) = self.idle.lock() {
                v.push(proc);
            }
        }
        answer
    }

    fn exchange(&self, proc: &mut Proc, machine: &Machine, boot: &str, req: &Request) -> Result<Reply, ExternalError> {
        let calls = match req {
            Request::Call { .. } | Request::Stage { .. } => 1,
            Request::Time { iters, .. } => iters + 5,
        };
        let limit = Instant::now() + self.limits.call * calls;
        proc.watch
            .arm(Some(super::calls_end_at().map_or(limit, |at| at.min(limit))));
        // Err(None): the process stopped; Err(Some(why)): it said something unreadable.
        let result = (|| -> Result<Reply, Option<String>> {
            // The machine (when the process does not hold it yet) and the request go in one
            // write, and the answers are read after it: a pipe wakes the other side on every
            // write and every read that finds it empty.
            let request = match req {
                Request::Call { numgrps, counter } => format!("call {numgrps} {counter}\n"),
                Request::Time {
                    numgrps,
                    counter,
                    iters,
                } => format!("time {numgrps} {counter} {iters}\n"),
                Request::Stage { text, .. } => text.clone(),
            };
            let send_machine = proc.topo != Some(machine.key);
            let send_boot = send_machine || proc.boot.as_deref() != Some(boot);
            let mut all = String::new();
            if send_machine {
                proc.topo = None;
                all.push_str(&self.text_of(machine));
            }
            if send_boot {
                proc.boot = None;
                all.push_str(boot);
            }
            all.push_str(&request);
            proc.stdin.write_all(all.as_bytes()).map_err(|_| None)?;
            proc.stdout.lines = 0;
            // "ok" after the machine and after the boot line.
            for _ in 0..u8::from(send_machine) + u8::from(send_boot) {
                if read_line(&mut proc.stdout)? != "ok" {
                    return Err(Some("the machine or the boot parameters refused".into()));
                }
            }
            proc.topo = Some(machine.key);
            proc.boot = Some(boot.to_string());
            let width = machine.topo.nr_cpu_ids();
            match req {
                Request::Call { numgrps, .. } => read_answer(&mut proc.stdout, *numgrps, width).map(Reply::Answer),
                Request::Time { .. } => read_time(&mut proc.stdout).map(Reply::Time),
                Request::Stage { reply, .. } => super::stages::read_reply(&mut proc.stdout, *reply, width),
            }
        })();
        proc.watch.arm(None);
        result.map_err(|bad| self.failure(proc, bad))
    }

    /// Why a process stopped answering: the watchdog, a signal, an exit, or bad output.
    fn failure(&self, proc: &mut Proc, bad: Option<String>) -> ExternalError {
        let limit_s = self.limits.call.as_secs_f64();
        let status = {
            let mut child = proc.child.lock().expect("child lock");
            if bad.is_some() {
                super::exec::kill(&mut child);
            }
            child.wait().ok()
        };
        let why = if proc.killed.load(Ordering::SeqCst) {
            format!("the call ran longer than the {limit_s} s wall-clock limit and was killed")
        } else if let Some(b) = bad {
            // By its shape only: what the C printed is never repeated.
            format!(
                "the harness answered what irqscope cannot read (line {} of its reply, {} bytes: {b})",
                proc.stdout.lines, proc.stdout.last_bytes
            )
        } else {
            describe_exit(status, self.limits)
        };
        ExternalError(format!("{}: {why}", self.variant))
    }
}

/// A process's deadline, shared with its watchdog thread. Arming and disarming wake the
/// watchdog only when it would otherwise sleep past the new deadline (asleep with none, or
/// with a later one): a sweep arms and disarms once per call, and a wake-up per call would
/// cost more than the calls of a small machine.
#[derive(Default)]
struct Watch {
    state: Mutex<WatchState>,
    wake: std::sync::Condvar,
}

#[derive(Default)]
struct WatchState {
    deadline: Option<Instant>,
    /// What the watchdog sleeps until: `None` asleep with no deadline (or not yet asleep),
    /// `Some(t)` asleep until `t`.
    sleeping_until: Option<Instant>,
    asleep: bool,
    closed: bool,
}

impl Watch {
    /// `Some(deadline)` arms, `None` disarms.
    fn arm(&self, deadline: Option<Instant>) {
        let Ok(mut st) = self.state.lock() else { return };
        st.deadline = deadline;
        let late = match (deadline, st.sleeping_until) {
            (Some(d), Some(until)) => d < until,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if st.asleep && late {
            self.wake.notify_one();
        }
    }

    /// The process is gone: the watchdog ends.
    fn close(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.closed = true;
        }
        self.wake.notify_one();
    }
}

/// Kill the child when an armed deadline passes; end when the watch is closed.
fn watchdog(watch: &Watch, child: Arc<Mutex<Child>>, killed: Arc<AtomicBool>) {
    let Ok(mut st) = watch.state.lock() else { return };
    loop {
        if st.closed {
            return;
        }
        let now = Instant::now();
        match st.deadline {
            Some(d) if d <= now => {
                killed.store(true, Ordering::SeqCst);
                if let Ok(mut c) = child.lock() {
                    super::exec::kill(&mut c);
                }
                st.deadline = None;
            }
            deadline => {
                st.sleeping_until = deadline;
                st.asleep = true;
                st = match deadline {
                    None => match watch.wake.wait(st) {
                        Ok(g) => g,
                        Err(_) => return,
                    },
                    Some(d) => match watch.wake.wait_timeout(st, d - now) {
                        Ok((g, _)) => g,
                        Err(_) => return,
                    },
                };
                st.asleep = false;
            }
        }
    }
}

fn describe_exit(status: Option<std::process::ExitStatus>, limits: Limits) -> String {
    use std::os::unix::process::ExitStatusExt;
    let Some(status) = status else {
        return "the harness stopped".into();
    };
    // A sandbox's bwrap passes on a signal that ended the harness as status 128 + signal.
    let (code, signal) = match (status.code(), status.signal()) {
        (Some(c), None) if (129..160).contains(&c) => (None, Some(c - 128)),
        other => other,
    };
    match (code, signal) {
        (Some(3), _) => "the C hit BUG() (see the harness's last line)".into(),
        (Some(4), _) => "the harness could not install its seccomp filter (a kernel without seccomp?)".into(),
        (Some(c), _) => format!("the harness exited with status {c}"),
        (None, Some(11)) => "the C crashed (SIGSEGV: a wild read or write)".into(),
        (None, Some(6)) => format!(
            "the C aborted (SIGABRT; often an allocation past the {} MiB memory limit or a corrupted heap)",
            limits.memory_mib
        ),
        (None, Some(7)) => "the C crashed (SIGBUS)".into(),
        (None, Some(8)) => "the C crashed (SIGFPE: a division by zero)".into(),
        (None, Some(24)) | (None, Some(9)) => format!(
            "the harness was killed (SIGKILL or SIGXCPU: past the {} s CPU limit or the memory limit)",
            limits.cpu_s
        ),
        (None, Some(31)) => {
            "the C made a system call the sandbox refuses (SIGSYS: files, processes, the network)".into()
        }
        (None, Some(s)) => format!("the C was ended by signal {s}"),
        _ => "the harness stopped".into(),
    }
}

/// The number at place `i` of a reply line's words.
pub(crate) fn number_at(words: &[&str], i: usize) -> Result<u32, Option<String>> {
    words
        .get(i)
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| Some(format!("word {} is not a number", i + 1)))
}

/// A harness's output, with the shape of what was read of the current reply: how many lines,
/// and the length of the last (what an error about it says, never its bytes).
pub(crate) struct Replies {
    r: BufReader<ChildStdout>,
    lines: u32,
    last_bytes: usize,
}

/// One line without its newline; `Err(None)` at end of output (the process ended).
pub(crate) fn read_line(replies: &mut Replies) -> Result<String, Option<String>> {
    let mut buf = Vec::new();
    replies.lines += 1;
    let r = &mut replies.r;
    let n = std::io::Read::take(&mut *r, LINE_BYTES_MAX as u64)
        .read_until(b'\n', &mut buf)
        .map_err(|_| None)?;
    replies.last_bytes = n;
    if n == 0 {
        return Err(None);
    }
    if buf.last() != Some(&b'\n') {
        return Err(Some("a line without end".into()));
    }
    buf.pop();
    String::from_utf8(buf).map_err(|_| Some("bytes that are not text".into()))
}

/// An answer whose masks are `width` bits wide (the machine's `nr_cpu_ids`); a mask holding a
/// CPU at or above it is read as wide as any machine, for the caller to name that CPU.
fn read_answer(r: &mut Replies, numgrps: u32, width: u32) -> Result<Answer, Option<String>> {
    let head = read_line(r)?;
    let bad = |what: &str| Some(what.to_string());
    let words: Vec<&str> = head.split(' ').collect();
    let num = |i: usize| number_at(&words, i);
    let (masks, nummasks, counter_after, nwarn) = match words.first() {
        Some(&"null") => (None, 0, num(1)?, num(2)?),
        Some(&"masks") => {
            let (nummasks, counter_after, nwarn, n) = (num(1)?, num(2)?, num(3)?, num(4)?);
            if n != numgrps {
                return Err(bad("another group count"));
            }
            let mut masks = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let line = read_line(r)?;
                let list = line.strip_prefix("m ").ok_or_else(|| bad("a mask line expected"))?;
                masks.push(read_mask(list, width)?);
            }
            (Some(masks), nummasks, counter_after, nwarn)
        }
        Some(&"bug") => return Err(bad("the C hit BUG")),
        _ => return Err(bad("an answer expected")),
    };
    let warnings = read_warnings(r, nwarn)?;
    Ok(Answer {
        masks,
        nummasks,
        counter_after,
        warnings,
    })
}

/// A mask line's cpulist: as wide as the machine; past it, as wide as any machine, so that the
/// caller names the CPU at or above nr_cpu_ids. What the C printed is never repeated.
pub(crate) fn read_mask(list: &str, width: u32) -> Result<CpuSet, Option<String>> {
    parse_cpulist(list, width)
        .or_else(|_| parse_cpulist(list, crate::topology::CPUS_MAX))
        .map_err(|_| Some("a mask irqscope cannot read".to_string()))
}

/// Longest WARN condition kept.
const WARN_TEXT_CHARS_MAX: usize = 200;

/// `n` lines `warn FILE:LINE TEXT` (a harness of an older build: `warn LINE TEXT`, in
/// group_cpus.c). The text is the condition as the source wrote it, kept to printable ASCII
/// and [`WARN_TEXT_CHARS_MAX`] characters.
pub(crate) fn read_warnings(r: &mut Replies, n: u32) -> Result<Vec<Warning>, Option<String>> {
    let mut warnings = Vec::new();
    for _ in 0..n {
        let line = read_line(r)?;
        let rest = line
            .strip_prefix("warn ")
            .ok_or(Some("a warn line expected".to_string()))?;
        let (at, cond) = rest.split_once(' ').unwrap_or((rest, ""));
        let (file, l) = at.rsplit_once(':').unwrap_or(("group_cpus.c", at));
        let clean = |t: &str, max: usize| -> String {
            t.chars()
                .filter(|c| c.is_ascii_graphic() || *c == ' ')
                .take(max)
                .collect()
        };
        warnings.push(Warning {
            file: clean(file, 64),
            line: l
                .parse()
                .map_err(|_| Some("a warn line irqscope cannot read".to_string()))?,
            condition: clean(cond, WARN_TEXT_CHARS_MAX),
        });
    }
    Ok(warnings)
}

/// What one `time` line of the harness says: nanoseconds per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub iters: u32,
    pub median_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
}

/// Most calls one `time` request may run.
pub const TIME_ITERS_MAX: u32 = 1_000_000;

impl KernelC {
    /// One call, as the harness answered it (masks `nr_cpu_ids` wide, ids checked against it).
    pub fn call(&self, topo: &Topology, numgrps: u32, counter: u32) -> Result<Answer, ExternalError> {
        self.shared_call(topo, numgrps, counter)
            .map(|(a, counter_after)| Answer {
                counter_after,
                ..(*a).clone()
            })
    }

    /// [`KernelC::call`] without copying the remembered answer: the answer, and the counter
    /// after the call (the one before for C without a counter, whatever the answer says).
    fn shared_call(&self, topo: &Topology, numgrps: u32, counter: u32) -> Result<(Arc<Answer>, u32), ExternalError> {
        self.check_numgrps(numgrps)?;
        self.with_machine(topo, |machine| self.shared_call_on(machine, numgrps, counter))
    }

    /// `f` of the machine `topo` is: a preset's, keyed once for the life of the process, or
    /// any other's, keyed now.
    pub(crate) fn with_machine<T>(&self, topo: &Topology, f: impl FnOnce(&Machine) -> T) -> T {
        match catalogue_instance(topo) {
            Some(preset) => f(&self.preset_machine(preset)),
            None => f(&Machine::of(topo)),
        }
    }

    fn shared_call_on(
        &self,
        machine: &Machine,
        numgrps: u32,
        counter: u32,
    ) -> Result<(Arc<Answer>, u32), ExternalError> {
        let topo = machine.topo;
        // C without a rotation counter cannot read it: every counter is one question, and
        // the counter after the call is the one before.
        let (asked, fixed) = match self.provenance.counter {
            Some(_) => (counter, None),
            None => (0, Some(counter)),
        };
        let keep = |a: Arc<Answer>| {
            let after = fixed.unwrap_or(a.counter_after);
            (a, after)
        };
        let key = (machine.key, numgrps, asked);
        if let Some(a) = self.memo.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(keep(a));
        }
        let answer = self.ask(
            machine,
            NO_BOOT,
            &Request::Call {
                numgrps,
                counter: asked,
            },
        )?;
        let Reply::Answer(answer) = answer else {
            unreachable!("a call is answered by an answer")
        };
        if let Some(masks) = &answer.masks {
            if let Some(cpu) = masks.iter().flat_map(|m| m.iter()).find(|&c| c >= topo.nr_cpu_ids()) {
                return Err(ExternalError(format!(
                    "{}: a mask holds CPU {cpu}, at or above nr_cpu_ids {}",
                    self.variant,
                    topo.nr_cpu_ids()
                )));
            }
        }
        let answer = Arc::new(answer);
        if let Ok(mut m) = self.memo.lock() {
            if m.len() >= MEMO_ENTRIES_MAX {
                m.clear();
            }
            m.insert(key, answer.clone());
        }
        Ok(keep(answer))
    }

    /// `iters` calls of one shape timed inside the harness, each alone, after 5 untimed ones
    /// (the C's side of `scripts/bench-vs-kernel-c`). The wall-clock limit is the call limit
    /// for each of them.
    pub fn time(&self, topo: &Topology, numgrps: u32, counter: u32, iters: u32) -> Result<Timing, ExternalError> {
        self.check_numgrps(numgrps)?;
        if !(1..=TIME_ITERS_MAX).contains(&iters) {
            return Err(ExternalError(format!(
                "{}: {iters} timed calls; 1 to {TIME_ITERS_MAX}",
                self.variant
            )));
        }
        let machine = Machine::of(topo);
        match self.ask(
            &machine,
            NO_BOOT,
            &Request::Time {
                numgrps,
                counter,
                iters,
            },
        )? {
            Reply::Time(t) => Ok(t),
            _ => unreachable!("a time request is answered by a time line"),
        }
    }

    /// A preset's machine, keyed once for the life of the process.
    fn preset_machine(&self, preset: &'static Topology) -> Arc<Machine<'static>> {
        let at = preset as *const Topology as usize;
        if let Some(m) = preset_machines().lock().ok().and_then(|m| m.get(&at).cloned()) {
            return m;
        }
        let m = Arc::new(Machine::of(preset));
        if let Ok(mut all) = preset_machines().lock() {
            all.insert(at, m.clone());
        }
        m
    }

    fn check_numgrps(&self, numgrps: u32) -> Result<(), ExternalError> {
        if numgrps > NUMGRPS_MAX {
            return Err(ExternalError(format!(
                "{}: {numgrps} groups; the harness takes at most {NUMGRPS_MAX}",
                self.variant
            )));
        }
        Ok(())
    }

    /// The machine's text, remembered per key (a sweep's processes each need it once).
    fn text_of(&self, machine: &Machine) -> Arc<str> {
        if let Some(t) = machine_texts().lock().ok().and_then(|m| m.get(&machine.key).cloned()) {
            return t;
        }
        let text: Arc<str> = machine.text().into();
        if let Ok(mut m) = machine_texts().lock() {
            if m.len() >= TEXTS_MAX {
                m.clear();
            }
            m.insert(machine.key, text.clone());
        }
        text
    }
}

/// What is asked of a harness process.
#[derive(Debug, Clone)]
pub(crate) enum Request {
    Call {
        numgrps: u32,
        counter: u32,
    },
    Time {
        numgrps: u32,
        counter: u32,
        iters: u32,
    },
    /// A later stage: its line(s), and what answers them.
    Stage {
        text: String,
        reply: super::stages::ReplyKind,
    },
}

pub(crate) enum Reply {
    Answer(Answer),
    Time(Timing),
    Stage(super::stages::StageReply),
}

/// The boot line of calls that name no boot parameters: every CPU, no housekeeping.
pub(crate) const NO_BOOT: &str = "boot - -\n";

fn read_time(r: &mut Replies) -> Result<Timing, Option<String>> {
    let line = read_line(r)?;
    let w: Vec<&str> = line.split(' ').collect();
    let num = |i: usize| w.get(i).and_then(|x| x.parse::<u64>().ok());
    match (w.first(), num(1), num(2), num(3), num(4)) {
        (Some(&"time"), Some(iters), Some(median_ns), Some(min_ns), Some(max_ns)) if w.len() == 5 => Ok(Timing {
            iters: u32::try_from(iters).map_err(|_| Some("a time line expected".to_string()))?,
            median_ns,
            min_ns,
            max_ns,
        }),
        _ => Err(Some("a time line expected".to_string())),
    }
}

impl ExternalGroupCpus for KernelC {
    fn name(&self) -> &str {
        &self.variant
    }
    fn describe(&self) -> &str {
        &self.describe
    }
    fn id(&self) -> &str {
        &self.provenance.id
    }
    fn tree_version(&self) -> Option<&str> {
        self.provenance.version.as_deref()
    }
    fn patches(&self) -> &[String] {
        &self.provenance.patches
    }
    fn uses_counter(&self) -> bool {
        self.provenance.counter.is_some()
    }
    fn stages(&self) -> &[Stage] {
        &self.stages
    }
    fn irq_create_affinity_masks(
        &self,
        topo: &Topology,
        req: &AffinityRequest,
        boot: BootMasks<'_>,
        counter: &mut u32,
        warnings: &mut Vec<KernelWarn>,
    ) -> StageAnswer<Option<AffinityMasks>> {
        self.stages.contains(&Stage::IrqCreateAffinityMasks).then(|| {
            let a = self.affinity(topo, &Boot::of(topo, boot), req, *counter)?;
            Ok(KernelC::affinity_masks(a, counter, warnings))
        })
    }
    fn blk_mq_map_queues(
        &self,
        topo: &Topology,
        nr_queues: u32,
        queue_offset: u32,
        boot: BootMasks<'_>,
        counter: &mut u32,
        warnings: &mut Vec<KernelWarn>,
    ) -> StageAnswer<QueueMap> {
        self.stages.contains(&Stage::BlkMqMapQueues).then(|| {
            let a = self.map_queues(topo, &Boot::of(topo, boot), nr_queues, queue_offset, *counter)?;
            Ok(KernelC::queue_map(a, counter, warnings))
        })
    }
    fn blk_mq_map_hw_queues(
        &self,
        topo: &Topology,
        nr_queues: u32,
        queue_offset: u32,
        masks: Option<&[CpuSet]>,
        offset: u32,
        boot: BootMasks<'_>,
        counter: &mut u32,
        warnings: &mut Vec<KernelWarn>,
    ) -> StageAnswer<QueueMap> {
        self.stages.contains(&Stage::BlkMqMapHwQueues).then(|| {
            let boot = Boot::of(topo, boot);
            let a = self.map_hw_queues(topo, &boot, nr_queues, queue_offset, masks, offset, *counter)?;
            Ok(KernelC::queue_map(a, counter, warnings))
        })
    }
    fn group_cpus_evenly(
        &self,
        topo: &Topology,
        numgrps: u32,
        counter: &mut u32,
        warnings: &mut Vec<KernelWarn>,
    ) -> Result<Option<Grouping>, ExternalError> {
        let (answer, after) = self.shared_call(topo, numgrps, *counter)?;
        let before = *counter;
        *counter = after;
        warnings.extend(answer.warnings.iter().map(Warning::to_kernel));
        let Some(masks) = &answer.masks else {
            return Ok(None);
        };
        let consumed = (after != before).then_some(before);
        Grouping::from_masks(topo.nr_cpu_ids(), masks, answer.nummasks, consumed)
            .map(Some)
            .map_err(|e| {
                ExternalError(format!(
                    "{}: {e}: not a grouping irqscope's pipeline can run (kernel-c verify shows it)",
                    self.variant
                ))
            })
    }
}
