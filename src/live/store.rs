//! The bounded per-host store: each host's latest snapshot and validated topology, the rates over
//! the last interval, and a ring of history samples ([`HISTORY_LEN_MAX`]). At most
//! [`HOSTS_MAX`] hosts. Pure: no clock, no files (persistence is [`super::persist`]).
//!
//! Push pacing is by the server's clock, passed in as `received_ms` (a monotonic millisecond
//! count): each host may push once per [`AGENT_INTERVAL_MS_MIN`] on average, a push arriving up
//! to [`PUSH_EARLY_MS_MAX`] early against that schedule is accepted (network and scheduling
//! jitter), an earlier one is refused. This is the generic cell rate algorithm with one
//! interval of spacing: the host's next slot moves forward one interval per accepted push, so a
//! client cannot push faster by forging `taken_unix_ms`, and an agent at its minimum interval
//! is never refused. The snapshot's own timestamp only measures the interval of its rates.
//!
//! Rates are computed here from raw counters, so what the kernel did between two readings is
//! handled in one place and never an error:
//! * a new `boot_id`, or a timestamp that did not advance: the reading is a new baseline (no
//!   rates for that interval, the sample is marked `reset`);
//! * CPU hotplug: only CPUs that are columns in both readings get a delta; a CPU coming back
//!   online starts from its kept counter and is compared from the next reading on;
//! * an IRQ that appears has no rate until its second reading; one that vanishes is dropped;
//!   an IRQ number reused by another action (name or chip changed), or a counter that went
//!   down, is a new baseline for that IRQ only.

use super::limits::{AGENT_INTERVAL_MS_MIN, HISTORY_LEN_MAX, HOSTS_MAX, PUSH_EARLY_MS_MAX, UNBOUND_TOKEN_HOSTS_MAX};
use super::protocol::{Snapshot, WireIrq};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

/// One history entry: what a reading said in a few numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Readings accepted for this host so far, this one included.
    pub seq: u64,
    pub(crate) taken_unix_ms: u64,
    /// Milliseconds since the previous reading (0 for a baseline).
    pub(crate) interval_ms: u64,
    /// No rates: first reading, reboot, or clock step.
    pub(crate) reset: bool,
    /// Device (numbered) IRQs per second over all CPUs.
    pub(crate) irqs_per_s: f64,
    pub(crate) busiest_cpu: Option<u32>,
    pub(crate) busiest_irqs_per_s: f64,
}

/// Rates over the last interval.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rates {
    pub(crate) interval_ms: u64,
    /// Device (numbered) IRQs per second on each online CPU (every column present, zeros too).
    pub(crate) per_cpu: BTreeMap<u32, f64>,
    /// Per row of the snapshot (same order): interrupts per second, `None` without a baseline.
    pub(crate) per_irq: Vec<Option<f64>>,
}

/// What the store keeps of one host.
#[derive(Debug, Clone)]
pub struct HostState {
    pub snapshot: Snapshot,
    pub topology: Arc<Topology>,
    pub seq: u64,
    pub rates: Option<Rates>,
    pub history: VecDeque<Sample>,
    /// The server-clock time (`received_ms`) of this host's next push slot (pacing; not
    /// persisted: a restarted server starts every host afresh).
    pub next_push_ms: u64,
    /// The server-clock time of the last accepted push (or of the restore), for expiry.
    pub received_ms: u64,
    /// The unbound token that created this host (for its quota; the host may be evicted for a
    /// bound one, see [`LiveStore::ingest`]), [`RESTORED_OWNER`] for a host restored from disk
    /// that has not pushed since (learned at its next push), `None` for a bound token or a
    /// source the server reads itself.
    pub(crate) owner: Option<u32>,
}

/// The owner of a restored host until its next push says which token it comes through: it
/// counts against no token's quota and may be evicted like an unbound token's host.
pub(crate) const RESTORED_OWNER: u32 = u32::MAX;

/// How a push arrived: when by the server's clock, and through which unbound token (if any).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Arrival {
    pub received_ms: u64,
    pub unbound: Option<u32>,
}

/// A host as persisted (and restored): the latest raw snapshot and the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersistedHost {
    pub(crate) snapshot: Snapshot,
    pub(crate) seq: u64,
    pub history: Vec<Sample>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IngestError {
    #[error("bad snapshot: {0}")]
    Bad(String),
    #[error("snapshot names host {snapshot:?} but was sent for {path:?}")]
    HostMismatch { snapshot: String, path: String },
    #[error("the server already keeps {HOSTS_MAX} hosts")]
    TooManyHosts,
    #[error("this token already pushes for {UNBOUND_TOKEN_HOSTS_MAX} hosts (bind tokens to hosts: HOST=TOKEN)")]
    QuotaExceeded,
    #[error(
        "too fast: one snapshot per {AGENT_INTERVAL_MS_MIN} ms per host by the server's clock; retry in {retry_ms} ms"
    )]
    TooFast { retry_ms: u64 },
}

/// Hosts by name. Each state is shared (`Arc`): readers clone the pointer under the caller's
/// lock and render or run the model after releasing it; an accepted snapshot replaces the
/// pointer and never changes a state a reader holds.
///
/// Who may take the table's [`HOSTS_MAX`] places: each unbound token at most its quota
/// ([`LiveStore::with_unbound_tokens`]: [`UNBOUND_TOKEN_HOSTS_MAX`], less when so many unbound
/// tokens are configured that their quotas together would fill the table), so unbound tokens
/// alone never fill it; and when it is full anyway (bound hosts, hosts restored from disk), a
/// new host through a bound token takes the place of the unbound host (or restored one not
/// heard from since) that has been idle longest, and one through an unbound token the place
/// of the longest-idle restored host. A bound host is refused only when every place is held by
/// a bound host.
#[derive(Debug, Clone)]
pub struct LiveStore {
    hosts: BTreeMap<String, Arc<HostState>>,
    /// Hosts one unbound token may hold.
    unbound_quota: usize,
    /// Hosts dropped to make room since [`LiveStore::take_evicted`] was last called.
    evicted: Vec<String>,
}

impl Default for LiveStore {
    fn default() -> Self {
        LiveStore {
            hosts: BTreeMap::new(),
            unbound_quota: UNBOUND_TOKEN_HOSTS_MAX,
            evicted: Vec::new(),
        }
    }
}

/// What [`LiveStore::ingest`] checks of a snapshot on its own (no store state): it names
/// `host` and it is valid; returns its validated topology. Pure.
pub(crate) fn check(host: &str, snap: &Snapshot) -> Result<Arc<Topology>, IngestError> {
    if snap.host != host {
        return Err(IngestError::HostMismatch {
            snapshot: super::parse::short(&snap.host),
            path: super::parse::short(host),
        });
    }
    validate(snap)
}

fn validate(snap: &Snapshot) -> Result<Arc<Topology>, IngestError> {
    snap.check().map_err(IngestError::Bad)?;
    let topo =
        Topology::new(&snap.topology.to_spec(&snap.host)).map_err(|e| IngestError::Bad(format!("topology: {e}")))?;
    if let Some(&cpu) = snap.cpus.iter().find(|&&c| c >= topo.nr_cpu_ids()) {
        return Err(IngestError::Bad(format!(
            "column CPU{cpu} is not in the topology ({} CPU ids)",
            topo.nr_cpu_ids()
        )));
    }
    Ok(Arc::new(topo))
}

impl LiveStore {
    pub fn new() -> LiveStore {
        LiveStore::default()
    }

    /// The store for `n` configured unbound tokens: each may hold
    /// min([`UNBOUND_TOKEN_HOSTS_MAX`], [`HOSTS_MAX`] / `n`) hosts (at least one).
    pub(crate) fn with_unbound_tokens(mut self, n: usize) -> LiveStore {
        self.unbound_quota = UNBOUND_TOKEN_HOSTS_MAX.min(HOSTS_MAX / n.max(1)).max(1);
        self
    }

    /// Hosts one unbound token may hold.
    #[cfg(test)]
    pub(crate) fn unbound_quota(&self) -> usize {
        self.unbound_quota
    }

    /// The hosts dropped to make room for new ones since the last call (their records are
    /// the caller's to remove from disk).
    pub(crate) fn take_evicted(&mut self) -> Vec<String> {
        std::mem::take(&mut self.evicted)
    }

    /// The host to drop for a new one arriving `at` when the table is full: for a bound token
    /// the longest-idle host of an unbound token or restored, for an unbound token the
    /// longest-idle restored host.
    fn eviction_candidate(&self, at: Arrival) -> Option<String> {
        let evictable = |owner: Option<u32>| match at.unbound {
            None => owner.is_some(),
            Some(_) => owner == Some(RESTORED_OWNER),
        };
        self.hosts
            .iter()
            .filter(|(_, h)| evictable(h.owner))
            .min_by_key(|(name, h)| (h.received_ms, name.as_str()))
            .map(|(name, _)| name.clone())
    }

    pub fn host(&self, host: &str) -> Option<&Arc<HostState>> {
        self.hosts.get(host)
    }

    pub(crate) fn hosts(&self) -> impl Iterator<Item = (&String, &Arc<HostState>)> {
        self.hosts.iter()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.hosts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Accept a snapshot for `host` (the name it was sent under), received at `received_ms` by
    /// the server's monotonic clock (see the pacing rule above). On error nothing changes.
    pub fn ingest(&mut self, host: &str, snap: Snapshot, at: Arrival) -> Result<Arc<HostState>, IngestError> {
        let topology = check(host, &snap)?;
        self.ingest_checked(host, snap, topology, at)
    }

    /// [`LiveStore::ingest`] of a snapshot [`check`] accepted (with the topology it built), so
    /// the validation runs before a caller takes its lock around the store.
    pub(crate) fn ingest_checked(
        &mut self,
        host: &str,
        snap: Snapshot,
        topology: Arc<Topology>,
        at: Arrival,
    ) -> Result<Arc<HostState>, IngestError> {
        let received_ms = at.received_ms;
        let prev = self.hosts.get(host);
        let mut evict = None;
        if prev.is_none() {
            if let Some(token) = at.unbound {
                if self.hosts.values().filter(|h| h.owner == Some(token)).count() >= self.unbound_quota {
                    return Err(IngestError::QuotaExceeded);
                }
            }
            if self.hosts.len() >= HOSTS_MAX {
                evict = Some(self.eviction_candidate(at).ok_or(IngestError::TooManyHosts)?);
            }
        }
        let owner = match prev {
            Some(p) if p.owner == Some(RESTORED_OWNER) => at.unbound,
            Some(p) => p.owner,
            None => at.unbound,
        };
        let slot = prev.map_or(0, |p| p.next_push_ms).max(received_ms);
        if slot > received_ms + PUSH_EARLY_MS_MAX {
            return Err(IngestError::TooFast {
                retry_ms: slot - PUSH_EARLY_MS_MAX - received_ms,
            });
        }
        let rates = match prev {
            None => None,
            Some(p) => {
                let same_boot = p.snapshot.boot_id == snap.boot_id;
                match snap.taken_unix_ms.checked_sub(p.snapshot.taken_unix_ms) {
                    Some(dt) if same_boot && dt > 0 => Some(rates(&p.snapshot, &snap, dt)),
                    _ => None,
                }
            }
        };
        let seq = prev.map_or(0, |p| p.seq) + 1;
        // Nothing can fail from here on: make room, take the old history (without a copy when
        // no reader holds the old state).
        if let Some(gone) = evict {
            self.hosts.remove(&gone);
            self.evicted.push(gone);
        }
        let mut history = match self.hosts.remove(host) {
            Some(old) => Arc::try_unwrap(old).map_or_else(|shared| shared.history.clone(), |own| own.history),
            None => VecDeque::new(),
        };
        let sample = sample_of(seq, &snap, rates.as_ref());
        if history.len() >= HISTORY_LEN_MAX {
            history.pop_front();
        }
        history.push_back(sample);
        let state = HostState {
            snapshot: snap,
            topology,
            seq,
            rates,
            history,
            next_push_ms: slot + AGENT_INTERVAL_MS_MIN,
            received_ms,
            owner,
        };
        let state = Arc::new(state);
        self.hosts.insert(host.to_string(), state.clone());
        Ok(state)
    }

    /// Change `host`'s kept state in place (a source that brings its own rates and history);
    /// the new state, or `None` for an unknown host. No copy while no reader holds the state.
    pub(crate) fn amend(&mut self, host: &str, f: impl FnOnce(&mut HostState)) -> Option<Arc<HostState>> {
        let st = self.hosts.get_mut(host)?;
        f(Arc::make_mut(st));
        Some(st.clone())
    }

    /// Drop `host`; whether it was kept.
    pub(crate) fn remove(&mut self, host: &str) -> bool {
        self.hosts.remove(host).is_some()
    }

    /// Drop every host whose last push is more than `idle_ms` before `now_ms`; their names.
    pub(crate) fn expire(&mut self, now_ms: u64, idle_ms: u64) -> Vec<String> {
        let gone: Vec<String> = self
            .hosts
            .iter()
            .filter(|(_, h)| now_ms.saturating_sub(h.received_ms) > idle_ms)
            .map(|(n, _)| n.clone())
            .collect();
        for n in &gone {
            self.hosts.remove(n);
        }
        gone
    }

    /// Put back a persisted host (after a restart, at `now_ms` by the server's clock). The next
    /// reading computes rates against it.
    pub(crate) fn restore(&mut self, p: PersistedHost, now_ms: u64) -> Result<(), IngestError> {
        let topology = validate(&p.snapshot)?;
        if !self.hosts.contains_key(&p.snapshot.host) && self.hosts.len() >= HOSTS_MAX {
            return Err(IngestError::TooManyHosts);
        }
        let history: VecDeque<Sample> = p.history.into_iter().rev().take(HISTORY_LEN_MAX).rev().collect();
        let host = p.snapshot.host.clone();
        self.hosts.insert(
            host,
            Arc::new(HostState {
                snapshot: p.snapshot,
                topology,
                seq: p.seq,
                rates: None,
                history,
                next_push_ms: 0,
                received_ms: now_ms,
                owner: Some(RESTORED_OWNER),
            }),
        );
        Ok(())
    }
}

impl HostState {
    #[cfg(test)]
    pub(crate) fn persisted(&self) -> PersistedHost {
        PersistedHost {
            snapshot: self.snapshot.clone(),
            seq: self.seq,
            history: self.history.iter().cloned().collect(),
        }
    }
}

fn sample_of(seq: u64, snap: &Snapshot, rates: Option<&Rates>) -> Sample {
    let (irqs_per_s, busiest) = match rates {
        Some(r) => {
            let total: f64 = r.per_cpu.values().sum();
            let busiest = r
                .per_cpu
                .iter()
                .fold(None, |best: Option<(u32, f64)>, (&c, &v)| match best {
                    Some((_, bv)) if bv >= v => best,
                    _ => Some((c, v)),
                });
            (total, busiest)
        }
        None => (0.0, None),
    };
    Sample {
        seq,
        taken_unix_ms: snap.taken_unix_ms,
        interval_ms: rates.map_or(0, |r| r.interval_ms),
        reset: rates.is_none(),
        irqs_per_s,
        busiest_cpu: busiest.map(|b| b.0),
        busiest_irqs_per_s: busiest.map_or(0.0, |b| b.1),
    }
}

/// Per-IRQ and per-CPU rates between two readings of one boot, `dt_ms` apart.
pub(crate) fn rates(prev: &Snapshot, cur: &Snapshot, dt_ms: u64) -> Rates {
    let dt_s = dt_ms.max(1) as f64 / 1000.0;
    let both = |cpu: u32| cur.cpus.binary_search(&cpu).is_ok() && prev.cpus.binary_search(&cpu).is_ok();
    let by_label: HashMap<&str, &WireIrq> = prev.irqs.iter().map(|i| (i.label.as_str(), i)).collect();
    let mut per_cpu: BTreeMap<u32, f64> = cur.cpus.iter().map(|&c| (c, 0.0)).collect();
    let mut per_irq = Vec::with_capacity(cur.irqs.len());
    let mut deltas: Vec<(u32, u64)> = Vec::new();
    for irq in &cur.irqs {
        let Some(old) = by_label
            .get(irq.label.as_str())
            .filter(|o| o.name == irq.name && o.chip == irq.chip)
        else {
            per_irq.push(None);
            continue;
        };
        deltas.clear();
        let mut reset = false;
        // Merge-walk two CPU-ordered sparse lists; a CPU missing from a list counted 0.
        let (mut i, mut j) = (0, 0);
        while i < irq.counts.len() || j < old.counts.len() {
            let (cpu, new_c, old_c) = match (irq.counts.get(i), old.counts.get(j)) {
                (Some(&(a, ca)), Some(&(b, cb))) if a == b => {
                    i += 1;
                    j += 1;
                    (a, ca, cb)
                }
                (Some(&(a, ca)), Some(&(b, _))) if a < b => {
                    i += 1;
                    (a, ca, 0)
                }
                (Some(&(a, ca)), None) => {
                    i += 1;
                    (a, ca, 0)
                }
                (_, Some(&(b, cb))) => {
                    j += 1;
                    (b, 0, cb)
                }
                (None, None) => unreachable!("loop condition"),
            };
            if !both(cpu) {
                continue;
            }
            if new_c < old_c {
                reset = true;
                break;
            }
            if new_c > old_c {
                deltas.push((cpu, new_c - old_c));
            }
        }
        if reset {
            per_irq.push(None);
            continue;
        }
        let total: u64 = deltas.iter().map(|d| d.1).sum();
        per_irq.push(Some(total as f64 / dt_s));
        if irq.label.bytes().all(|b| b.is_ascii_digit()) {
            for &(cpu, d) in &deltas {
                *per_cpu.entry(cpu).or_insert(0.0) += d as f64 / dt_s;
            }
        }
    }
    Rates {
        interval_ms: dt_ms,
        per_cpu,
        per_irq,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::protocol::{WireTopology, PROTOCOL_VERSION};

    /// An IRQ's name, its device, and its (CPU, count) cells.
    type IrqRow<'a> = (&'a str, &'a str, &'a [(u32, u64)]);

    fn snap(t: u64, cpus: &[u32], irqs: &[IrqRow]) -> Snapshot {
        Snapshot {
            version: PROTOCOL_VERSION,
            host: "h".into(),
            taken_unix_ms: t,
            boot_id: "b".into(),
            topology: WireTopology {
                nodes: vec!["0-3".into()],
                ..Default::default()
            },
            cpus: cpus.to_vec(),
            irqs: irqs
                .iter()
                .map(|(l, n, c)| WireIrq {
                    label: l.to_string(),
                    name: n.to_string(),
                    counts: c.to_vec(),
                    ..blank()
                })
                .collect(),
        }
    }
    fn blank() -> WireIrq {
        WireIrq {
            label: String::new(),
            chip: String::new(),
            hwirq: String::new(),
            name: String::new(),
            counts: vec![],
            affinity: None,
            effective: None,
            node: None,
        }
    }

    /// Ingest received at the snapshot's own timestamp.
    fn at(s: &mut LiveStore, host: &str, snap: Snapshot) -> Result<Arc<HostState>, IngestError> {
        let received_ms = snap.taken_unix_ms;
        s.ingest(
            host,
            snap,
            Arrival {
                received_ms,
                unbound: None,
            },
        )
    }

    #[test]
    fn rates_resets_hotplug_and_churn() {
        let mut s = LiveStore::new();
        at(
            &mut s,
            "h",
            snap(
                1000,
                &[0, 1, 2, 3],
                &[
                    ("24", "nvme0q1", &[(1, 100)]),
                    ("25", "nvme0q2", &[(2, 50)]),
                    ("LOC", "Local", &[(0, 9)]),
                ],
            ),
        )
        .unwrap();
        assert!(s.host("h").unwrap().rates.is_none());
        // One second later: CPU 3 went offline, IRQ 25 vanished, IRQ 26 appeared.
        let st = at(
            &mut s,
            "h",
            snap(
                2000,
                &[0, 1, 2],
                &[
                    ("24", "nvme0q1", &[(1, 300)]),
                    ("26", "x", &[(0, 5)]),
                    ("LOC", "Local", &[(0, 19)]),
                ],
            ),
        )
        .unwrap();
        let r = st.rates.as_ref().unwrap();
        assert_eq!(r.per_irq, vec![Some(200.0), None, Some(10.0)]);
        assert_eq!(r.per_cpu.get(&1), Some(&200.0));
        assert_eq!(r.per_cpu.get(&0), Some(&0.0), "arch rows do not count");
        assert!(!r.per_cpu.contains_key(&3));
        // A counter going down resets that IRQ only.
        let st = at(
            &mut s,
            "h",
            snap(
                3000,
                &[0, 1, 2],
                &[("24", "nvme0q1", &[(1, 10)]), ("26", "x", &[(0, 15)])],
            ),
        )
        .unwrap();
        assert_eq!(st.rates.as_ref().unwrap().per_irq, vec![None, Some(10.0)]);
        // Too fast by the server clock (received at the stamp here).
        assert!(matches!(
            at(&mut s, "h", snap(3040, &[0], &[])),
            Err(IngestError::TooFast { .. })
        ));
        // Reboot: new boot id is a baseline.
        let mut reboot = snap(4000, &[0, 1, 2, 3], &[("24", "nvme0q1", &[(1, 1)])]);
        reboot.boot_id = "c".into();
        let st = at(&mut s, "h", reboot).unwrap();
        assert!(st.rates.is_none());
        assert_eq!(st.seq, 4);
        assert!(st.history.back().unwrap().reset);
        // Host mismatch and bad topology leave the store alone.
        assert!(matches!(
            at(&mut s, "other", snap(5000, &[0], &[])),
            Err(IngestError::HostMismatch { .. })
        ));
        let mut bad = snap(5000, &[0, 9], &[]);
        bad.topology.nodes = vec!["0-3".into()];
        assert!(at(&mut s, "h", bad).is_err());
        assert_eq!(s.host("h").unwrap().seq, 4);
        // Persist and restore keeps seq and history.
        let p = s.host("h").unwrap().persisted();
        let mut s2 = LiveStore::new();
        s2.restore(p, 0).unwrap();
        let mut next = snap(6000, &[0, 1, 2, 3], &[("24", "nvme0q1", &[(1, 2001)])]);
        next.boot_id = "c".into();
        let st = at(&mut s2, "h", next).unwrap();
        assert_eq!(st.seq, 5);
        assert_eq!(st.rates.as_ref().unwrap().per_irq, vec![Some(1000.0)]);
    }

    fn rx(received_ms: u64) -> Arrival {
        Arrival {
            received_ms,
            unbound: None,
        }
    }

    /// A push through unbound token `token`.
    fn by(token: u32, received_ms: u64) -> Arrival {
        Arrival {
            received_ms,
            unbound: Some(token),
        }
    }

    /// An empty snapshot of host `n` taken at `t`.
    fn named(n: &str, t: u64) -> Snapshot {
        Snapshot {
            host: n.to_string(),
            ..snap(t, &[0], &[])
        }
    }

    #[test]
    fn pushes_are_paced_by_the_server_clock() {
        let mut s = LiveStore::new();
        // Forged timestamps a second apart, all received within 30 ms: one is accepted.
        let accepted = (0..30u64)
            .filter(|&i| s.ingest("h", snap(1_000 * (i + 1), &[0], &[]), rx(i)).is_ok())
            .count();
        assert_eq!(accepted, 1);
        assert_eq!(
            s.ingest("h", snap(99_000, &[0], &[]), rx(40)).err(),
            Some(IngestError::TooFast { retry_ms: 10 })
        );
        // An agent at its minimum interval whose pushes arrive up to 25 ms early or late each
        // (it stamps after reading): every push is accepted, and rates use the stamps.
        let mut t = 0;
        let mut s = LiveStore::new();
        let mut next_slot = 0;
        for (i, jitter) in [0i64, -20, 15, 25, -25, 10, 0, -20].into_iter().enumerate() {
            let received = (100 * i as i64 + jitter) as u64;
            t += 95;
            let st = s
                .ingest("h", snap(t, &[0], &[]), rx(received))
                .unwrap_or_else(|e| panic!("push {i} at {received} ms: {e}"));
            assert_eq!(st.rates.as_ref().map(|r| r.interval_ms), (i > 0).then_some(95));
            next_slot = st.next_push_ms;
        }
        // No faster than one per interval on average: earlier than the margin is refused.
        let early = next_slot - PUSH_EARLY_MS_MAX - 1;
        assert!(matches!(
            s.ingest("h", snap(t + 95, &[0], &[]), rx(early)),
            Err(IngestError::TooFast { retry_ms: 1 })
        ));
        assert!(s.ingest("h", snap(t + 95, &[0], &[]), rx(early + 1)).is_ok());
    }

    #[test]
    fn idle_hosts_expire_and_unbound_tokens_have_a_quota() {
        let mut s = LiveStore::new();
        for i in 0..UNBOUND_TOKEN_HOSTS_MAX {
            let h = format!("h{i}");
            s.ingest(&h, named(&h, 1), by(7, 0)).unwrap();
        }
        assert_eq!(
            s.ingest("one-more", named("one-more", 1), by(7, 0)).err(),
            Some(IngestError::QuotaExceeded)
        );
        // Another token, or a bound one, still creates hosts; a kept host still takes pushes.
        s.ingest("other", named("other", 1), by(8, 0)).unwrap();
        s.ingest("bound", named("bound", 1), rx(0)).unwrap();
        s.ingest("h0", named("h0", 1_000), by(7, 1_000)).unwrap();
        // Idle for more than the limit: dropped, and the quota frees up.
        let gone = s.expire(60_500, 60_000);
        assert_eq!(gone.len(), UNBOUND_TOKEN_HOSTS_MAX + 1, "all but h0: {gone:?}");
        assert!(s.host("h0").is_some() && s.host("h1").is_none());
        s.ingest("one-more", named("one-more", 1), by(7, 60_500)).unwrap();
        assert!(s.remove("one-more") && !s.remove("one-more"));
    }

    /// Five unbound tokens cannot lock a bound host out: their quotas together leave a place,
    /// and when the table is full a bound host takes the place of the longest-idle unbound one
    /// (a restored host first learns its owner at its next push).
    #[test]
    fn unbound_tokens_never_lock_a_bound_host_out() {
        let mut s = LiveStore::new().with_unbound_tokens(5);
        let quota = s.unbound_quota();
        assert_eq!(quota, HOSTS_MAX / 5);
        for t in 0..5u32 {
            for i in 0..quota {
                let h = format!("u{t}-{i}");
                // Token 0's hosts are the oldest, u0-0 the oldest of all.
                s.ingest(&h, named(&h, 1), by(t, u64::from(t) * 1_000 + i as u64))
                    .unwrap();
            }
            let more = format!("u{t}-more");
            assert_eq!(
                s.ingest(&more, named(&more, 1), by(t, 9_000)).err(),
                Some(IngestError::QuotaExceeded)
            );
        }
        assert_eq!(s.len(), 5 * quota);
        assert!(s.len() < HOSTS_MAX, "unbound tokens alone filled the table");
        // The table fills with bound hosts; each one past it evicts the longest-idle unbound host.
        let mut bound = 0;
        while s.len() < HOSTS_MAX {
            let h = format!("b{bound}");
            s.ingest(&h, named(&h, 1), rx(10_000)).unwrap();
            bound += 1;
        }
        assert!(s.take_evicted().is_empty());
        // u0-0 pushes again: it is no longer the longest idle.
        s.ingest("u0-0", named("u0-0", 2), by(0, 10_500)).unwrap();
        s.ingest("b-late", named("b-late", 1), rx(11_000)).unwrap();
        assert_eq!(s.take_evicted(), ["u0-1"]);
        assert!(s.host("u0-1").is_none() && s.host("b-late").is_some() && s.host("u0-0").is_some());
        // An unbound token under its quota may not evict another token's host.
        assert_eq!(
            s.ingest("u0-new", named("u0-new", 1), by(0, 11_000)).err(),
            Some(IngestError::TooManyHosts)
        );
        // Bound hosts take every unbound place, then the table is theirs.
        for i in 0..5 * quota - 1 {
            let h = format!("b-more{i}");
            s.ingest(&h, named(&h, 1), rx(12_000)).unwrap();
        }
        assert_eq!(s.take_evicted().len(), 5 * quota - 1);
        assert!(s.hosts().all(|(_, h)| h.owner.is_none()));
        assert_eq!(
            s.ingest("b-last", named("b-last", 1), rx(13_000)).err(),
            Some(IngestError::TooManyHosts)
        );
        // A restored host is evictable until it pushes, and then it is its token's.
        let restored = s.host("b0").unwrap().persisted();
        assert!(s.remove("b0"));
        s.restore(restored, 14_000).unwrap();
        assert_eq!(s.host("b0").unwrap().owner, Some(RESTORED_OWNER));
        s.ingest("u4-new", named("u4-new", 1), by(4, 15_000)).unwrap();
        assert_eq!(s.take_evicted(), ["b0"]);
        let restored = s.host("b-late").unwrap().persisted();
        assert!(s.remove("b-late"));
        s.restore(restored, 14_000).unwrap();
        s.ingest("b-late", named("b-late", 2), rx(15_000)).unwrap();
        assert_eq!(s.host("b-late").unwrap().owner, None);
    }
}
