//! `serve --review`: patches pasted on `/review`, queued and reviewed one per worker.
//!
//! Each review runs as its own process, `irqscope review PATCH --out DIR --progress-lines`,
//! the same command a reviewer types (which builds and runs the patch's C in its sandbox):
//! the server keeps nothing of it but the review file, a crash or a leak ends with the
//! process, and a review past its deadline is killed with its whole process group. Its
//! progress lines become the job's status, which the job page follows over SSE.
//!
//! Admission is bounded three ways: the patch's size ([`PATCH_BYTES_MAX`]), the jobs one
//! client may have queued or running ([`QueueConfig::per_client_max`]), and the jobs the
//! queue holds in all ([`QueueConfig::queue_max`]). What is not a patch, or a patch to files
//! a review does not build, is refused at once and never queued. A patch that does not
//! apply, does not compile, or whose C crashes or loops fails in its own process with the
//! review's message and holds one worker at most until its deadline.

use crate::kernel_c::sha256_hex;
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::net::IpAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Largest patch the page takes (a series of placement patches is far smaller).
pub(crate) const PATCH_BYTES_MAX: usize = 512 << 10;
/// Finished jobs kept for their pages; the oldest go first.
const FINISHED_KEPT: usize = 64;
/// Longest failure message kept from a review's stderr.
const MESSAGE_CHARS_MAX: usize = 2000;
/// Longest stderr line read from a review (progress lines are far shorter).
const LINE_BYTES_MAX: u64 = 4096;
/// How often a worker looks at its review's process.
const POLL: Duration = Duration::from_millis(50);

/// How the queue runs reviews.
#[derive(Debug, Clone)]
pub struct QueueConfig {
    /// The `irqscope` binary each review runs as.
    pub program: PathBuf,
    /// Where reviews are written (and served from as `/r/<id>`); pasted patches are kept in
    /// its `patches/` so that a review's command line names a file that exists.
    pub dir: PathBuf,
    /// The build cache (`--cache-dir`).
    pub cache: PathBuf,
    /// `--base` for every review (`None`: the newest Debian source the patch fits).
    pub base: Option<String>,
    /// Reviews run at once.
    pub workers: usize,
    /// Jobs queued or running in all.
    pub queue_max: usize,
    /// Jobs queued or running for one client.
    pub per_client_max: usize,
    /// Longest one review may run before it is killed.
    pub deadline: Duration,
    /// Reviews the server takes before it must be restarted: each writes a file of at most
    /// 4 MiB and keeps its patch, so this bounds what pasting can put on the disk.
    pub reviews_max: u64,
    /// The check a patch passes before it is queued (`irqscope::review::check_text`: is it a
    /// patch, to files a review builds?): its mail subject if it has one, or why not.
    pub check: fn(&str) -> Result<Option<String>, String>,
}

/// Most workers, queued jobs and jobs per client `serve` accepts.
pub(crate) const WORKERS_MAX: usize = 16;
pub(crate) const QUEUE_MAX: usize = 256;

impl QueueConfig {
    /// Check the bounds `serve` was given.
    pub(crate) fn check(&self) -> Result<(), String> {
        if !(1..=WORKERS_MAX).contains(&self.workers) {
            return Err(format!("--review-workers {}: 1 to {WORKERS_MAX}", self.workers));
        }
        if !(1..=QUEUE_MAX).contains(&self.queue_max) {
            return Err(format!("--review-queue {}: 1 to {QUEUE_MAX}", self.queue_max));
        }
        if !(1..=self.queue_max).contains(&self.per_client_max) {
            return Err(format!(
                "--review-per-client {}: 1 to the queue's {}",
                self.per_client_max, self.queue_max
            ));
        }
        if !(1..=1_000_000).contains(&self.reviews_max) {
            return Err(format!("--review-max {}: 1 to 1000000", self.reviews_max));
        }
        if self.deadline.is_zero() || self.deadline > Duration::from_secs(3600) {
            return Err(format!("--review-seconds {}: 1 to 3600", self.deadline.as_secs()));
        }
        Ok(())
    }
}

/// Where a job is, as its page, its JSON and its SSE events say it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(crate) enum JobState {
    /// Waiting; `ahead` jobs go first.
    Queued { ahead: usize },
    /// Running: what the review does now and, where it counts, how far it is.
    Running {
        step: String,
        done: Option<u32>,
        of: Option<u32>,
    },
    /// Made: its page is `/r/<review>`.
    Done { review: String },
    /// Not made, and why.
    Failed { message: String },
}

impl JobState {
    /// Done or failed: nothing more will change.
    pub(crate) fn finished(&self) -> bool {
        matches!(self, JobState::Done { .. } | JobState::Failed { .. })
    }
}

/// A job as its page shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct JobStatus {
    pub(crate) id: String,
    /// The mail's subject, or the patch's hash for a bare diff.
    pub(crate) subject: String,
    #[serde(flatten)]
    pub(crate) state: JobState,
}

/// Why a patch was not queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not a patch, too large, or a patch to other files (400 / 413).
    BadPatch(String),
    TooLarge(String),
    /// This client has as many jobs as it may (429).
    ClientFull(String),
    /// The queue is full (503).
    QueueFull(String),
}

struct Job {
    client: IpAddr,
    patch: PathBuf,
    /// The job's status, read by its page and its watchers.
    tx: watch::Sender<JobStatus>,
}

impl Job {
    fn finished(&self) -> bool {
        self.tx.borrow().state.finished()
    }
}

#[derive(Default)]
struct Inner {
    next: u64,
    jobs: BTreeMap<String, Job>,
    queued: VecDeque<String>,
    finished: VecDeque<String>,
    stopping: bool,
    /// Jobs admitted since the server started (each may write a review file).
    admitted: u64,
}

struct Shared {
    config: QueueConfig,
    inner: Mutex<Inner>,
    wake: Condvar,
}

/// The queue and its workers. Cheap to clone.
#[derive(Clone)]
pub struct ReviewQueue(Arc<Shared>);

impl std::fmt::Debug for ReviewQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReviewQueue").field("config", &self.0.config).finish()
    }
}

impl ReviewQueue {
    /// Start `config.workers` worker threads. The directories are made here.
    pub fn start(config: QueueConfig) -> Result<ReviewQueue, String> {
        let q = ReviewQueue::idle(config)?;
        for n in 0..q.0.config.workers {
            let shared = q.0.clone();
            std::thread::Builder::new()
                .name(format!("review-{n}"))
                .spawn(move || worker(&shared))
                .map_err(|e| format!("starting a review worker: {e}"))?;
        }
        Ok(q)
    }

    /// The queue without workers: jobs wait (tests of admission).
    fn idle(config: QueueConfig) -> Result<ReviewQueue, String> {
        config.check()?;
        for d in [config.dir.clone(), config.dir.join("patches"), config.cache.clone()] {
            std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        Ok(ReviewQueue(Arc::new(Shared {
            config,
            inner: Mutex::new(Inner::default()),
            wake: Condvar::new(),
        })))
    }

    pub(crate) fn config(&self) -> &QueueConfig {
        &self.0.config
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.0)
    }

    /// Queue a pasted patch for `client`; its job id.
    pub(crate) fn submit(&self, client: IpAddr, patch: &[u8]) -> Result<String, Refused> {
        if patch.len() > PATCH_BYTES_MAX {
            return Err(Refused::TooLarge(format!(
                "the patch has {} bytes; at most {PATCH_BYTES_MAX}",
                patch.len()
            )));
        }
        let text = String::from_utf8_lossy(patch);
        let subject = (self.0.config.check)(&text).map_err(Refused::BadPatch)?;
        let hash = sha256_hex(patch);
        let subject = subject.unwrap_or_else(|| format!("patch {}", &hash[..12]));
        let cfg = &self.0.config;
        let mut inner = self.lock();
        if inner.stopping {
            return Err(Refused::QueueFull("the server is stopping".into()));
        }
        if inner.admitted >= cfg.reviews_max {
            return Err(Refused::QueueFull(format!(
                "this server has taken the {} reviews it may make before it is restarted \
                 (--review-max); the reviews made stay at /r/<id>",
                cfg.reviews_max
            )));
        }
        let open = |j: &&Job| !j.finished();
        let mine = inner.jobs.values().filter(open).filter(|j| j.client == client).count();
        if mine >= cfg.per_client_max {
            return Err(Refused::ClientFull(format!(
                "you have {mine} review{} queued or running; at most {} per address: wait for one to end",
                if mine == 1 { "" } else { "s" },
                cfg.per_client_max
            )));
        }
        let all = inner.jobs.values().filter(open).count();
        if all >= cfg.queue_max {
            return Err(Refused::QueueFull(format!(
                "the review queue is full ({all} reviews queued or running); try again later"
            )));
        }
        // The file the review's command line names: the patch by its content.
        let file = cfg.dir.join("patches").join(format!("{}.patch", &hash[..16]));
        std::fs::write(&file, patch)
            .map_err(|e| Refused::QueueFull(format!("the server cannot keep the patch now: {e}")))?;
        inner.next += 1;
        inner.admitted += 1;
        let id = sha256_hex(format!("{hash} {} {}", inner.next, std::process::id()).as_bytes())[..16].to_string();
        let status = JobStatus {
            id: id.clone(),
            subject,
            state: JobState::Queued {
                ahead: inner.queued.len(),
            },
        };
        inner.jobs.insert(
            id.clone(),
            Job {
                client,
                patch: file,
                tx: watch::Sender::new(status),
            },
        );
        inner.queued.push_back(id.clone());
        drop(inner);
        self.0.wake.notify_one();
        tracing::info!("review job {id} queued for {client}");
        Ok(id)
    }

    /// A job's status now, and its changes to come.
    pub(crate) fn watch(&self, id: &str) -> Option<watch::Receiver<JobStatus>> {
        self.lock().jobs.get(id).map(|j| j.tx.subscribe())
    }

    /// Jobs queued and running now.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let inner = self.lock();
        let running = inner
            .jobs
            .values()
            .filter(|j| matches!(j.tx.borrow().state, JobState::Running { .. }))
            .count();
        (inner.queued.len(), running)
    }

    /// Stop taking jobs and kill the reviews running (the server is shutting down).
    pub fn stop(&self) {
        self.lock().stopping = true;
        self.0.wake.notify_all();
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, Inner> {
    shared.inner.lock().unwrap_or_else(|e| e.into_inner())
}

/// Set a job's state and tell its watchers; the queued jobs' places move with it.
fn set_state(inner: &mut Inner, id: &str, state: JobState) {
    if let Some(j) = inner.jobs.get(id) {
        j.tx.send_if_modified(|s| {
            let changed = s.state != state;
            s.state = state;
            changed
        });
    }
}

fn publish_places(inner: &mut Inner) {
    let queued: Vec<String> = inner.queued.iter().cloned().collect();
    for (ahead, id) in queued.iter().enumerate() {
        set_state(inner, id, JobState::Queued { ahead });
    }
}

/// A worker: take the oldest queued job, run it, record how it ended; until the queue stops.
fn worker(shared: &Shared) {
    while let Some((id, patch)) = next_job(shared) {
        let report = |(step, count): Step| {
            let mut inner = lock(shared);
            let state = JobState::Running {
                step,
                done: count.map(|c| c.0),
                of: count.map(|c| c.1),
            };
            set_state(&mut inner, &id, state);
        };
        let started = Instant::now();
        let end = run_review(shared, &patch, &report);
        let mut inner = lock(shared);
        let state = match end {
            Ok(review) => JobState::Done { review },
            Err(message) => {
                // A patch whose review failed names nothing: its file goes.
                let _ = std::fs::remove_file(&patch);
                JobState::Failed { message }
            }
        };
        tracing::info!("review job {id}: {state:?} after {} ms", started.elapsed().as_millis());
        set_state(&mut inner, &id, state);
        inner.finished.push_back(id);
        while inner.finished.len() > FINISHED_KEPT {
            if let Some(old) = inner.finished.pop_front() {
                inner.jobs.remove(&old);
            }
        }
    }
}

/// The oldest queued job, marked running; `None` once the queue stops.
fn next_job(shared: &Shared) -> Option<(String, PathBuf)> {
    let mut inner = lock(shared);
    loop {
        if inner.stopping {
            return None;
        }
        if let Some(id) = inner.queued.pop_front() {
            let patch = inner.jobs.get(&id).map(|j| j.patch.clone())?;
            let state = JobState::Running {
                step: "starting".into(),
                done: None,
                of: None,
            };
            set_state(&mut inner, &id, state);
            publish_places(&mut inner);
            return Some((id, patch));
        }
        inner = shared.wake.wait(inner).unwrap_or_else(|e| e.into_inner());
    }
}

/// A step of a running review: what it does, and how many of how many where it counts.
type Step = (String, Option<(u32, u32)>);

/// Run one review to its end: the review's id, or the message it failed with.
fn run_review(shared: &Shared, patch: &Path, report: &dyn Fn(Step)) -> Result<String, String> {
    let cfg = &shared.config;
    let mut cmd = Command::new(&cfg.program);
    cmd.arg("review")
        .arg(patch)
        .args(["--format", "json", "--progress-lines", "--out"])
        .arg(&cfg.dir)
        .arg("--cache-dir")
        .arg(&cfg.cache);
    if let Some(b) = &cfg.base {
        cmd.args(["--base", b]);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| {
        tracing::error!("starting {}: {e}", cfg.program.display());
        "the server could not start the review".to_string()
    })?;
    let stdout = child.stdout.take();
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(o) = stdout {
            let _ = o
                .take(crate::render::view::review::FILE_BYTES_MAX)
                .read_to_end(&mut bytes);
        }
        bytes
    });
    let stderr = child.stderr.take();
    let (tx, steps) = std::sync::mpsc::channel::<Step>();
    let said = std::thread::spawn(move || stderr.map(|e| read_stderr(e, &tx)).unwrap_or_default());
    let deadline = Instant::now() + cfg.deadline;
    let ended = loop {
        while let Ok(step) = steps.try_recv() {
            report(step);
        }
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {}
            Err(e) => break Err(format!("waiting for the review: {e}")),
        }
        if Instant::now() >= deadline {
            kill(&mut child);
            break Err(format!(
                "the review ran longer than {} s and was stopped",
                cfg.deadline.as_secs()
            ));
        }
        if lock(shared).stopping {
            kill(&mut child);
            break Err("the server stopped before the review ended".into());
        }
        std::thread::sleep(POLL);
    };
    let said = said.join().unwrap_or_default();
    let stdout = out.join().unwrap_or_default();
    let status = ended?;
    match status.code() {
        Some(0 | 1) => review_id(&stdout, &cfg.dir),
        Some(_) if !said.trim().is_empty() => Err(said.trim().to_string()),
        _ => Err(format!("the review ended without a result ({status})")),
    }
}

/// The review's stderr: progress lines go to `tx`, anything else is its message (the
/// `irqscope: ` prefix dropped, bounded in length), returned once the review closes it.
fn read_stderr(e: impl Read, tx: &std::sync::mpsc::Sender<Step>) -> String {
    let mut r = BufReader::new(e);
    let mut line = Vec::new();
    let mut said = String::new();
    loop {
        line.clear();
        match r.by_ref().take(LINE_BYTES_MAX).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return said,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end();
        if let Some(p) = parse_progress(text) {
            let _ = tx.send(p);
            continue;
        }
        if said.chars().count() < MESSAGE_CHARS_MAX {
            let text = text.strip_prefix("irqscope: ").unwrap_or(text);
            said.extend(text.chars().take(MESSAGE_CHARS_MAX));
            said.push('\n');
        }
    }
}

/// End a review and every process it started (it leads its process group), and reap it.
fn kill(child: &mut Child) {
    crate::kernel_c::exec::kill(child);
    let _ = child.wait();
}

/// `progress<TAB>DONE<TAB>OF<TAB>WHAT` (`review --progress-lines`).
fn parse_progress(line: &str) -> Option<Step> {
    let mut f = line.strip_prefix("progress\t")?.splitn(3, '\t');
    let (done, of, what) = (f.next()?, f.next()?, f.next()?);
    let count = done.parse().ok().zip(of.parse().ok());
    Some((what.chars().take(200).collect(), count))
}

/// The id of the review the command wrote (its JSON on stdout), checked against its file.
fn review_id(stdout: &[u8], dir: &Path) -> Result<String, String> {
    let v: serde_json::Value =
        serde_json::from_slice(stdout).map_err(|e| format!("the review's result did not read: {e}"))?;
    let id = v["id"].as_str().unwrap_or_default();
    if !crate::render::view::review::valid_id(id) || !dir.join(format!("{id}.json")).is_file() {
        return Err("the review wrote no result".into());
    }
    Ok(id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_read_with_and_without_a_count() {
        assert_eq!(
            parse_progress("progress\t40\t182\tcatalogue (l96, nvme)"),
            Some(("catalogue (l96, nvme)".into(), Some((40, 182))))
        );
        assert_eq!(
            parse_progress("progress\t\t\tbuilding linux-source-7.2"),
            Some(("building linux-source-7.2".into(), None))
        );
        assert_eq!(parse_progress("irqscope: not a patch"), None);
        assert_eq!(parse_progress("progress\tx"), None);
    }

    fn queue(dir: &Path, per_client: usize, queue_max: usize) -> ReviewQueue {
        ReviewQueue::idle(QueueConfig {
            program: PathBuf::from("/nonexistent"),
            dir: dir.join("reviews"),
            cache: dir.join("cache"),
            base: None,
            workers: 1,
            queue_max,
            per_client_max: per_client,
            deadline: Duration::from_secs(5),
            reviews_max: 5,
            check: |text| {
                if !text.contains("+++ b/") {
                    return Err("not a patch".into());
                }
                if text.contains("+++ b/mm/") {
                    return Err("changes mm/slab.c".into());
                }
                Ok(None)
            },
        })
        .unwrap()
    }

    const PATCH: &str = "--- a/lib/group_cpus.c\n+++ b/lib/group_cpus.c\n@@ -1 +1 @@\n-a\n+b\n";

    fn scratch(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("irqscope-review-queue-{}-{tag}", std::process::id()))
    }

    #[test]
    fn what_is_not_a_reviewable_patch_is_refused_before_the_queue() {
        let dir = scratch("refused");
        let q = queue(&dir, 2, 4);
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        assert!(matches!(q.submit(ip, b"hello"), Err(Refused::BadPatch(m)) if m.contains("not a patch")));
        let other = PATCH.replace("lib/group_cpus.c", "mm/slab.c");
        assert!(matches!(q.submit(ip, other.as_bytes()), Err(Refused::BadPatch(m)) if m.contains("mm/slab.c")));
        let big = format!("{PATCH}{}", "x".repeat(PATCH_BYTES_MAX));
        assert!(matches!(q.submit(ip, big.as_bytes()), Err(Refused::TooLarge(_))));
        assert_eq!(q.counts(), (0, 0));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn clients_and_the_queue_are_bounded_and_places_are_told() {
        let dir = scratch("bounds");
        let q = queue(&dir, 2, 3);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let first = q.submit(ip("192.0.2.1"), PATCH.as_bytes()).unwrap();
        let second = q.submit(ip("192.0.2.1"), PATCH.as_bytes()).unwrap();
        let refused = q.submit(ip("192.0.2.1"), PATCH.as_bytes());
        assert!(matches!(refused, Err(Refused::ClientFull(m)) if m.contains("at most 2 per address")));
        let third = q.submit(ip("192.0.2.2"), PATCH.as_bytes()).unwrap();
        let refused = q.submit(ip("192.0.2.3"), PATCH.as_bytes());
        assert!(matches!(refused, Err(Refused::QueueFull(m)) if m.contains("queue is full")));
        assert_eq!(q.counts(), (3, 0));
        let place = |id: &str| q.watch(id).unwrap().borrow().state.clone();
        assert_eq!(place(&third), JobState::Queued { ahead: 2 });
        // The first starts: the others move up, and its client may queue one more.
        let (taken, _) = next_job(&q.0).unwrap();
        assert_eq!(taken, first);
        assert!(matches!(place(&first), JobState::Running { .. }));
        assert_eq!(place(&second), JobState::Queued { ahead: 0 });
        assert_eq!(place(&third), JobState::Queued { ahead: 1 });
        assert!(q.watch("0000000000000000").is_none());
        q.stop();
        assert!(next_job(&q.0).is_none());
        let refused = q.submit(ip("192.0.2.4"), PATCH.as_bytes());
        assert!(matches!(refused, Err(Refused::QueueFull(m)) if m.contains("stopping")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_server_takes_so_many_reviews_and_no_more() {
        let dir = scratch("max");
        let q = queue(&dir, 2, 3);
        for n in 0..5 {
            let client: IpAddr = format!("192.0.2.{n}").parse().unwrap();
            q.submit(client, PATCH.as_bytes()).unwrap();
            // Finished at once: the queue has room, the count goes on.
            let (id, _) = next_job(&q.0).unwrap();
            set_state(&mut q.lock(), &id, JobState::Failed { message: "x".into() });
        }
        let refused = q.submit("192.0.2.9".parse().unwrap(), PATCH.as_bytes());
        assert!(matches!(refused, Err(Refused::QueueFull(m)) if m.contains("--review-max")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
