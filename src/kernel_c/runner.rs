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
//! calls but the counter it is given, so the same question has the same answer.

use super::build::{Built, Provenance};
use crate::kernel::{ExternalError, ExternalGroupCpus, Grouping, KernelWarn};
use crate::topology::{parse_cpulist, CpuSet, Topology};
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
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
pub const NUMGRPS_MAX: u32 = 65_536;
/// Answers remembered before the memo starts over.
const MEMO_ENTRIES_MAX: usize = 16_384;
/// Longest line read from a harness.
const LINE_BYTES_MAX: usize = 1 << 20;

/// One running harness.
struct Proc {
    child: Arc<Mutex<Child>>,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The machine it holds (its protocol text's hash).
    topo: Option<u64>,
    /// Arms (`Some(deadline)`) and disarms (`None`) the watchdog.
    watch: mpsc::Sender<Option<Instant>>,
    killed: Arc<AtomicBool>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.stdin.write_all(b"quit\n");
        if let Ok(mut c) = self.child.lock() {
            let _ = c.kill();
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
    pub counter_after: u32,
    /// (line, condition) of each WARN the call hit.
    pub warnings: Vec<(u32, String)>,
}

/// A build ready to run: the [`ExternalGroupCpus`] of `c:NAME`.
pub struct KernelC {
    exe: PathBuf,
    provenance: Provenance,
    variant: String,
    describe: String,
    limits: Limits,
    idle: Mutex<Vec<Proc>>,
    memo: Mutex<HashMap<(u64, u32, u32), Answer>>,
}

impl std::fmt::Debug for KernelC {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelC({} {})", self.variant, self.provenance.id)
    }
}

impl KernelC {
    pub fn new(built: Built, limits: Limits) -> KernelC {
        KernelC {
            variant: format!("c:{}", built.provenance.name),
            describe: built.provenance.describe(),
            exe: built.exe,
            provenance: built.provenance,
            limits,
            idle: Mutex::new(Vec::new()),
            memo: Mutex::new(HashMap::new()),
        }
    }

    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    fn spawn(&self) -> Result<Proc, ExternalError> {
        let mut child = Command::new(&self.exe)
            .arg(self.limits.memory_mib.to_string())
            .arg(self.limits.cpu_s.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| ExternalError(format!("{}: the harness does not start: {e}", self.variant)))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let child = Arc::new(Mutex::new(child));
        let killed = Arc::new(AtomicBool::new(false));
        let (watch, armed) = mpsc::channel::<Option<Instant>>();
        let (c, k) = (child.clone(), killed.clone());
        std::thread::spawn(move || watchdog(armed, c, k));
        Ok(Proc {
            child,
            stdin,
            stdout,
            topo: None,
            watch,
            killed,
        })
    }

    /// Ask one question, on an idle process or a new one. A process that failed is dropped.
    fn ask(&self, topo_text: &str, topo_key: u64, numgrps: u32, counter: u32) -> Result<Answer, ExternalError> {
        let idle = self.idle.lock().map(|mut v| v.pop()).unwrap_or(None);
        let mut proc = match idle {
            Some(p) => p,
            None => self.spawn()?,
        };
        let answer = self.exchange(&mut proc, topo_text, topo_key, numgrps, counter);
        if answer.is_ok() {
            if let Ok(mut v) = self.idle.lock() {
                v.push(proc);
            }
        }
        answer
    }

    fn exchange(
        &self,
        proc: &mut Proc,
        topo_text: &str,
        topo_key: u64,
        numgrps: u32,
        counter: u32,
    ) -> Result<Answer, ExternalError> {
        let _ = proc.watch.send(Some(Instant::now() + self.limits.call));
        // Err(None): the process stopped; Err(Some(why)): it said something unreadable.
        let result = (|| -> Result<Answer, Option<String>> {
            if proc.topo != Some(topo_key) {
                proc.topo = None;
                proc.stdin.write_all(topo_text.as_bytes()).map_err(|_| None)?;
                proc.stdin.flush().map_err(|_| None)?;
                let line = read_line(&mut proc.stdout)?;
                if line != "ok" {
                    return Err(Some(format!("the machine was refused: {line:?}")));
                }
                proc.topo = Some(topo_key);
            }
            writeln!(proc.stdin, "call {numgrps} {counter}").map_err(|_| None)?;
            proc.stdin.flush().map_err(|_| None)?;
            read_answer(&mut proc.stdout, numgrps)
        })();
        let _ = proc.watch.send(None);
        result.map_err(|bad| self.failure(proc, bad))
    }

    /// Why a process stopped answering: the watchdog, a signal, an exit, or bad output.
    fn failure(&self, proc: &mut Proc, bad: Option<String>) -> ExternalError {
        let limit_s = self.limits.call.as_secs_f64();
        let status = {
            let mut child = proc.child.lock().expect("child lock");
            if bad.is_some() {
                let _ = child.kill();
            }
            child.wait().ok()
        };
        let why = if proc.killed.load(Ordering::SeqCst) {
            format!("the call ran longer than the {limit_s} s wall-clock limit and was killed")
        } else if let Some(b) = bad {
            format!("the harness answered what irqscope cannot read ({b})")
        } else {
            describe_exit(status, self.limits)
        };
        ExternalError(format!("{}: {why}", self.variant))
    }
}

/// Kill the child when an armed deadline passes.
fn watchdog(armed: mpsc::Receiver<Option<Instant>>, child: Arc<Mutex<Child>>, killed: Arc<AtomicBool>) {
    let mut deadline: Option<Instant> = None;
    loop {
        let next = match deadline {
            None => armed.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            Some(d) => armed.recv_timeout(d.saturating_duration_since(Instant::now())),
        };
        match next {
            Ok(d) => deadline = d,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                killed.store(true, Ordering::SeqCst);
                if let Ok(mut c) = child.lock() {
                    let _ = c.kill();
                }
                deadline = None;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn describe_exit(status: Option<std::process::ExitStatus>, limits: Limits) -> String {
    use std::os::unix::process::ExitStatusExt;
    let Some(status) = status else {
        return "the harness stopped".into();
    };
    match (status.code(), status.signal()) {
        (Some(3), _) => "the C hit BUG() (see the harness's last line)".into(),
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
        (None, Some(s)) => format!("the C was ended by signal {s}"),
        _ => "the harness stopped".into(),
    }
}

/// One line without its newline; `Err(None)` at end of output (the process ended).
fn read_line(r: &mut BufReader<ChildStdout>) -> Result<String, Option<String>> {
    let mut buf = Vec::new();
    let n = std::io::Read::take(&mut *r, LINE_BYTES_MAX as u64)
        .read_until(b'\n', &mut buf)
        .map_err(|_| None)?;
    if n == 0 {
        return Err(None);
    }
    if buf.last() != Some(&b'\n') {
        return Err(Some("a line without end".into()));
    }
    buf.pop();
    String::from_utf8(buf).map_err(|_| Some("bytes that are not text".into()))
}

fn read_answer(r: &mut BufReader<ChildStdout>, numgrps: u32) -> Result<Answer, Option<String>> {
    let head = read_line(r)?;
    let bad = |what: &str| Some(format!("{what}: {head:?}"));
    let words: Vec<&str> = head.split(' ').collect();
    let num = |i: usize| -> Result<u32, Option<String>> {
        words
            .get(i)
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| bad("a number expected"))
    };
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
                let list = line
                    .strip_prefix("m ")
                    .ok_or_else(|| Some(format!("a mask line expected: {line:?}")))?;
                // Parsed as wide as any machine; the caller checks ids against nr_cpu_ids.
                let set = parse_cpulist(list, crate::topology::CPUS_MAX)
                    .map_err(|e| Some(format!("a mask irqscope cannot read ({e}): {list:?}")))?;
                masks.push(set);
            }
            (Some(masks), nummasks, counter_after, nwarn)
        }
        Some(&"bug") => return Err(Some(format!("the C hit BUG: {}", &head[4..]))),
        _ => return Err(bad("an answer expected")),
    };
    let mut warnings = Vec::new();
    for _ in 0..nwarn {
        let line = read_line(r)?;
        let rest = line
            .strip_prefix("warn ")
            .ok_or_else(|| Some(format!("a warn line expected: {line:?}")))?;
        let (l, cond) = rest.split_once(' ').unwrap_or((rest, ""));
        warnings.push((
            l.parse().map_err(|_| Some(format!("bad warn line {line:?}")))?,
            cond.to_string(),
        ));
    }
    Ok(Answer {
        masks,
        nummasks,
        counter_after,
        warnings,
    })
}

/// The machine as the harness reads it: `topo`, `node`, `present`, then one `smt` and one
/// `cluster` line per distinct mask, taken from the same accessors the models read
/// ([`Topology::smt`], [`Topology::cluster`], [`Topology::cpu_to_node`]), so the C sees the
/// kernel's view the models see.
pub fn topology_text(topo: &Topology) -> String {
    let n = topo.nr_cpu_ids();
    let possible = topo.possible();
    let mut s = format!("topo {n} {}\nnode", topo.nr_node_ids());
    for cpu in 0..n {
        if possible.contains(cpu) {
            s.push_str(&format!(" {}", topo.cpu_to_node(cpu)));
        } else {
            s.push_str(" -1");
        }
    }
    s.push_str(&format!("\npresent {}\n", topo.present().to_cpulist()));
    for (kind, get) in [
        ("smt", Topology::smt as fn(&Topology, u32) -> &CpuSet),
        ("cluster", Topology::cluster),
    ] {
        let mut by_mask: BTreeMap<String, CpuSet> = BTreeMap::new();
        for cpu in possible.iter() {
            let m = get(topo, cpu);
            if m.is_empty() {
                continue;
            }
            by_mask
                .entry(m.to_cpulist())
                .or_insert_with(|| CpuSet::new(n))
                .insert(cpu);
        }
        for (mask, who) in by_mask {
            s.push_str(&format!("{kind} {} {mask}\n", who.to_cpulist()));
        }
    }
    s.push_str("end\n");
    s
}

fn text_key(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

impl KernelC {
    /// One call, as the harness answered it (masks unchecked).
    pub fn call(&self, topo: &Topology, numgrps: u32, counter: u32) -> Result<Answer, ExternalError> {
        if numgrps > NUMGRPS_MAX {
            return Err(ExternalError(format!(
                "{}: {numgrps} groups; the harness takes at most {NUMGRPS_MAX}",
                self.variant
            )));
        }
        let text = topology_text(topo);
        let key = (text_key(&text), numgrps, counter);
        if let Some(a) = self.memo.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(a);
        }
        let answer = self.ask(&text, key.0, numgrps, counter)?;
        if let Some(masks) = &answer.masks {
            if let Some(cpu) = masks.iter().flat_map(|m| m.iter()).find(|&c| c >= topo.nr_cpu_ids()) {
                return Err(ExternalError(format!(
                    "{}: a mask holds CPU {cpu}, at or above nr_cpu_ids {}",
                    self.variant,
                    topo.nr_cpu_ids()
                )));
            }
        }
        if let Ok(mut m) = self.memo.lock() {
            if m.len() >= MEMO_ENTRIES_MAX {
                m.clear();
            }
            m.insert(key, answer.clone());
        }
        Ok(answer)
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
    fn uses_counter(&self) -> bool {
        self.provenance.counter.is_some()
    }
    fn group_cpus_evenly(
        &self,
        topo: &Topology,
        numgrps: u32,
        counter: &mut u32,
        warnings: &mut Vec<KernelWarn>,
    ) -> Result<Option<Grouping>, ExternalError> {
        let answer = self.call(topo, numgrps, *counter)?;
        let before = *counter;
        *counter = answer.counter_after;
        warnings.extend(answer.warnings.iter().map(|(line, condition)| KernelWarn::C {
            line: *line,
            condition: condition.clone(),
        }));
        let Some(masks) = answer.masks else {
            return Ok(None);
        };
        let masks: Vec<CpuSet> = masks.iter().map(|m| resize(m, topo.nr_cpu_ids())).collect();
        let consumed = (answer.counter_after != before).then_some(before);
        Grouping::from_masks(topo.nr_cpu_ids(), &masks, answer.nummasks, consumed)
            .map(Some)
            .map_err(|e| {
                ExternalError(format!(
                    "{}: {e}: not a grouping irqscope's pipeline can run (kernel-c verify shows it)",
                    self.variant
                ))
            })
    }
}

/// A mask re-made `n` bits wide (ids below `n` were checked).
pub(crate) fn resize(m: &CpuSet, n: u32) -> CpuSet {
    let mut out = CpuSet::new(n);
    for cpu in m.iter().filter(|&c| c < n) {
        out.insert(cpu);
    }
    out
}

/// Run a command to its end within `limit`, killing it past that (the compiler's limit).
pub(crate) fn output_within(cmd: &mut Command, limit: Duration) -> std::io::Result<std::process::Output> {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = tx.send(());
        out
    });
    if rx.recv_timeout(limit).is_err() {
        // Past the limit: end it the way a shell would (the process is ours, by its id).
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
    waiter
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the waiting thread failed")))
}
