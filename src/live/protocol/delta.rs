//! Protocol 3's delta push: a reading said as what changed since the one the server
//! acknowledged last ([`Delta::between`]), and rebuilt on the server from the host's current
//! reading ([`Delta::apply`]).

use super::{gzip_into, Snapshot, WireIrq, PROTOCOL_VERSION, PUSH_GZIP_LEVEL};
use crate::live::limits::IRQS_MAX;
use serde::{Deserialize, Serialize};

/// `Content-Type` of a delta push (protocol 3).
pub const DELTA_CONTENT_TYPE: &str = "application/vnd.irqscope.delta+json";
/// How a 409 answer to a delta push starts when its base is not the host's current reading
/// (the server restarted, another reading landed, the host expired): send a full reading.
pub const BASE_MISMATCH: &str = "base-mismatch";

/// The reading a [`Delta`] is against: the one the server acknowledged last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeltaBase {
    pub(crate) taken_unix_ms: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) boot_id: String,
}

/// A reading as its changes against a base reading of the same boot, topology and columns
/// (protocol 3). Counters are sent as increases: the kernel's counters only grow within a
/// boot, and an increase has fewer digits than the count. A reading in which any counter went
/// down or to zero (a 32-bit per-CPU count wrapping), or whose topology, columns or boot
/// changed, is sent in full instead ([`Delta::between`] gives `None`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delta {
    pub(crate) version: u32,
    pub(crate) host: String,
    pub(crate) taken_unix_ms: u64,
    pub(crate) base: DeltaBase,
    /// Every IRQ's label in order, when that differs from the base (IRQs came, went or moved);
    /// absent: the base's order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<String>>,
    /// IRQs new since the base, or whose other fields (name, affinity, node…) changed: in
    /// full, counters absolute.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub irqs: Vec<WireIrq>,
    /// The other IRQs whose counters moved: `[label, [[cpu, increase], …]]`, ordered by CPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counts: Vec<(String, Vec<(u32, u64)>)>,
}

/// Why a delta could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DeltaError {
    /// Its base is not the reading given: 409 [`BASE_MISMATCH`].
    #[error("{BASE_MISMATCH}: the delta's base is not this host's latest reading; send a full reading")]
    BaseMismatch,
    /// Not a delta that applies to any base (unknown IRQ, bad increase): 400.
    #[error("bad delta: {0}")]
    Bad(String),
}

/// `new`'s counters as increases over `old`'s (both ordered by CPU); `None` when one went down
/// or to zero.
fn increases(old: &[(u32, u64)], new: &[(u32, u64)], out: &mut Vec<(u32, u64)>) -> Option<()> {
    let mut o = old.iter().peekable();
    for &(cpu, n) in new {
        if o.peek().is_some_and(|&&(c, _)| c < cpu) {
            // A CPU whose counter the base has and this reading lacks: it went to zero.
            return None;
        }
        match o.peek() {
            Some(&&(c, before)) if c == cpu => {
                o.next();
                match n.checked_sub(before)? {
                    0 => {}
                    inc => out.push((cpu, inc)),
                }
            }
            _ => out.push((cpu, n)),
        }
    }
    o.next().is_none().then_some(())
}

impl Delta {
    /// `cur` as a delta against `base`, or `None` when it must be sent in full (another host,
    /// boot, topology or set of columns, or a counter that went down).
    pub fn between(base: &Snapshot, cur: &Snapshot) -> Option<Delta> {
        Delta::between_known(base, cur, |_| false)
    }

    /// [`Delta::between`], told by `same_but_counts(k)` that row `k` of `cur` holds the IRQ of
    /// row `k` of `base` with the same fields but its counters (a collector knows which rows it
    /// wrote since it built `base`): those rows are not compared. The answer is that of
    /// [`Delta::between`] as long as the hint is true only of such rows.
    pub(crate) fn between_known(
        base: &Snapshot,
        cur: &Snapshot,
        same_but_counts: impl Fn(usize) -> bool,
    ) -> Option<Delta> {
        if base.host != cur.host
            || base.boot_id != cur.boot_id
            || base.cpus != cur.cpus
            || base.topology != cur.topology
            || cur.irqs.len() > IRQS_MAX
        {
            return None;
        }
        let same_order = base.irqs.len() == cur.irqs.len()
            && (base.irqs.iter().zip(&cur.irqs).enumerate())
                .all(|(k, (a, b))| same_but_counts(k) || a.label == b.label);
        let by_label: std::collections::HashMap<&str, &WireIrq> = if same_order {
            Default::default()
        } else {
            base.irqs.iter().map(|i| (i.label.as_str(), i)).collect()
        };
        let mut delta = Delta {
            version: PROTOCOL_VERSION,
            host: cur.host.clone(),
            taken_unix_ms: cur.taken_unix_ms,
            base: DeltaBase {
                taken_unix_ms: base.taken_unix_ms,
                boot_id: base.boot_id.clone(),
            },
            labels: (!same_order).then(|| cur.irqs.iter().map(|i| i.label.clone()).collect()),
            irqs: Vec::new(),
            counts: Vec::new(),
        };
        let mut incs = Vec::new();
        for (k, irq) in cur.irqs.iter().enumerate() {
            let old = if same_order {
                Some(&base.irqs[k])
            } else {
                by_label.get(irq.label.as_str()).copied()
            };
            match old {
                Some(old) if (same_order && same_but_counts(k)) || old.same_but_counts(irq) => {
                    incs.clear();
                    increases(&old.counts, &irq.counts, &mut incs)?;
                    if !incs.is_empty() {
                        delta.counts.push((irq.label.clone(), incs.clone()));
                    }
                }
                _ => delta.irqs.push(irq.clone()),
            }
        }
        Some(delta)
    }

    /// The full reading: `base` with this delta applied. `base` must be the reading named by
    /// [`Delta::base`]; the result is checked by the store like any pushed snapshot.
    pub(crate) fn apply(&self, base: &Snapshot) -> Result<Snapshot, DeltaError> {
        let bad = |m: String| Err(DeltaError::Bad(m));
        self.check_shape(base)?;
        let (mut irqs, known) = self.irqs_in_order(base);
        let (full, moved) = self.changes_by_irq(&irqs, &known)?;
        for (k, irq) in irqs.iter_mut().enumerate() {
            if let Some(given) = full[k] {
                irq.clone_from(given);
            } else if !known[k] {
                return bad(format!(
                    "IRQ {} is new but not given in full",
                    crate::live::parse::short(&irq.label)
                ));
            } else if let Some(incs) = moved[k] {
                irq.counts = add_increases(&irq.counts, incs).ok_or_else(|| {
                    DeltaError::Bad(format!("IRQ {}: bad increases", crate::live::parse::short(&irq.label)))
                })?;
            }
        }
        Ok(Snapshot {
            version: PROTOCOL_VERSION,
            host: self.host.clone(),
            taken_unix_ms: self.taken_unix_ms,
            boot_id: base.boot_id.clone(),
            topology: base.topology.clone(),
            cpus: base.cpus.clone(),
            irqs,
        })
    }

    /// The version, the base named and the list sizes.
    fn check_shape(&self, base: &Snapshot) -> Result<(), DeltaError> {
        let bad = |m: String| Err(DeltaError::Bad(m));
        if self.version < 3 || self.version > PROTOCOL_VERSION {
            return bad(format!(
                "protocol version {} has no deltas (this server reads 3 to {PROTOCOL_VERSION})",
                self.version
            ));
        }
        if base.taken_unix_ms != self.base.taken_unix_ms || base.boot_id != self.base.boot_id {
            return Err(DeltaError::BaseMismatch);
        }
        for (what, n) in [
            ("labels", self.labels.as_ref().map_or(0, Vec::len)),
            ("irqs", self.irqs.len()),
            ("counts", self.counts.len()),
        ] {
            if n > IRQS_MAX {
                return bad(format!("{n} {what}; at most {IRQS_MAX}"));
            }
        }
        Ok(())
    }

    /// The reading's IRQs in the delta's order (`labels`, else the base's), the base's own
    /// entry for each it had, and which ones it had (`known`).
    fn irqs_in_order(&self, base: &Snapshot) -> (Vec<WireIrq>, Vec<bool>) {
        let irqs: Vec<WireIrq> = match &self.labels {
            None => base.irqs.clone(),
            Some(labels) => {
                let old: std::collections::HashMap<&str, &WireIrq> =
                    base.irqs.iter().map(|i| (i.label.as_str(), i)).collect();
                labels
                    .iter()
                    .map(|l| match old.get(l.as_str()) {
                        Some(i) => (*i).clone(),
                        // A new IRQ: given in full below (checked there).
                        None => WireIrq {
                            label: l.clone(),
                            ..WireIrq::default()
                        },
                    })
                    .collect()
            }
        };
        let mut known = vec![false; irqs.len()];
        if let Some(labels) = &self.labels {
            let old: std::collections::HashSet<&str> = base.irqs.iter().map(|i| i.label.as_str()).collect();
            for (k, l) in labels.iter().enumerate() {
                known[k] = old.contains(l.as_str());
            }
        } else {
            known.fill(true);
        }
        (irqs, known)
    }

    /// Each IRQ's change: given in full, or its counts' increases; an IRQ listed twice, a
    /// change for an IRQ not in the reading, or two changes for one are errors.
    fn changes_by_irq<'d>(&'d self, irqs: &[WireIrq], known: &[bool]) -> Result<Changes<'d>, DeltaError> {
        let bad = |m: String| Err(DeltaError::Bad(m));
        let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::with_capacity(irqs.len());
        for (k, irq) in irqs.iter().enumerate() {
            if at.insert(irq.label.as_str(), k).is_some() {
                return bad(format!("IRQ {} is listed twice", crate::live::parse::short(&irq.label)));
            }
        }
        let mut full = vec![None; irqs.len()];
        for irq in &self.irqs {
            let Some(&k) = at.get(irq.label.as_str()) else {
                return bad(format!(
                    "IRQ {} is not in the reading",
                    crate::live::parse::short(&irq.label)
                ));
            };
            if full[k].replace(irq).is_some() {
                return bad(format!("IRQ {} is given twice", crate::live::parse::short(&irq.label)));
            }
        }
        let mut moved = vec![None; irqs.len()];
        for (label, incs) in &self.counts {
            let Some(&k) = at.get(label.as_str()) else {
                return bad(format!(
                    "counts for IRQ {}, not in the reading",
                    crate::live::parse::short(label)
                ));
            };
            if !known[k] || full[k].is_some() || moved[k].replace(incs).is_some() {
                return bad(format!(
                    "counts for IRQ {} that is new, given in full or given twice",
                    crate::live::parse::short(label)
                ));
            }
        }
        Ok((full, moved))
    }
}

/// What a delta says of each IRQ of the reading, by position: its entry given in full, or
/// the increases of its counts.
type Changes<'d> = (Vec<Option<&'d WireIrq>>, Vec<Option<&'d Vec<(u32, u64)>>>);

/// `old` counters plus `incs` (both ordered by CPU, increases non-zero); `None` for an
/// unordered or zero increase or an overflow.
fn add_increases(old: &[(u32, u64)], incs: &[(u32, u64)]) -> Option<Vec<(u32, u64)>> {
    if incs.windows(2).any(|w| w[0].0 >= w[1].0) || incs.iter().any(|&(_, n)| n == 0) {
        return None;
    }
    let mut out = Vec::with_capacity(old.len() + incs.len());
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < incs.len() {
        match (old.get(i), incs.get(j)) {
            (Some(&(c, n)), Some(&(d, m))) if c == d => {
                out.push((c, n.checked_add(m)?));
                i += 1;
                j += 1;
            }
            (Some(&(c, n)), Some(&(d, _))) if c < d => {
                out.push((c, n));
                i += 1;
            }
            (Some(&(c, n)), None) => {
                out.push((c, n));
                i += 1;
            }
            (_, Some(&(d, m))) => {
                out.push((d, m));
                j += 1;
            }
            (None, None) => break,
        }
    }
    Some(out)
}

/// Encode a delta as a gzip push body into `out`, through `json` (as [`encode_push_body`]).
///
/// [`encode_push_body`]: super::encode_push_body
pub fn encode_delta_body(delta: &Delta, json: &mut Vec<u8>, out: &mut Vec<u8>) -> std::io::Result<()> {
    json.clear();
    serde_json::to_writer(&mut *json, delta)?;
    gzip_into(json, PUSH_GZIP_LEVEL, out)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{irq, reading};
    use super::super::{decode_push_body, encode_push_body};
    use super::*;

    fn round_trip(base: &Snapshot, cur: &Snapshot) -> (Delta, Snapshot) {
        let d = Delta::between(base, cur).expect("a delta");
        let (mut json, mut gz) = (Vec::new(), Vec::new());
        encode_delta_body(&d, &mut json, &mut gz).unwrap();
        let read = decode_push_body::<Delta>(Some("gzip"), &gz, 1 << 20).unwrap();
        assert_eq!(read, d);
        (d.clone(), read.apply(base).unwrap())
    }

    #[test]
    fn a_delta_rebuilds_the_reading_it_was_made_from() {
        let base = reading(
            10,
            vec![
                irq("24", &[(1, 5)], "1"),
                irq("25", &[(0, 7), (2, 9)], "0,2"),
                irq("26", &[], "3"),
            ],
        );
        // Counters moved (one to a new CPU), nothing else: increases only, in base order.
        let cur = reading(
            20,
            vec![
                irq("24", &[(1, 8)], "1"),
                irq("25", &[(0, 7), (2, 9), (3, 1)], "0,2"),
                irq("26", &[], "3"),
            ],
        );
        let (d, rebuilt) = round_trip(&base, &cur);
        assert_eq!(rebuilt, cur);
        assert_eq!((d.labels.is_none(), d.irqs.len()), (true, 0));
        assert_eq!(d.counts, vec![("24".into(), vec![(1, 3)]), ("25".into(), vec![(3, 1)])]);
        // An IRQ removed, one added, one whose affinity changed.
        let cur = reading(
            30,
            vec![
                irq("24", &[(1, 9)], "2"),
                irq("26", &[(3, 4)], "3"),
                irq("27", &[(0, 1)], "0"),
            ],
        );
        let (d, rebuilt) = round_trip(&base, &cur);
        assert_eq!(rebuilt, cur);
        assert_eq!(d.labels.as_deref().map(<[String]>::len), Some(3));
        assert_eq!(
            d.irqs.iter().map(|i| i.label.as_str()).collect::<Vec<_>>(),
            ["24", "27"]
        );
        // A counter that went down or to zero, another boot or other columns: a full reading.
        for changed in [
            reading(40, vec![irq("24", &[(1, 4)], "1")]),
            reading(
                40,
                vec![
                    irq("24", &[], "1"),
                    irq("25", &[(0, 7), (2, 9)], "0,2"),
                    irq("26", &[], "3"),
                ],
            ),
            Snapshot {
                boot_id: "b2".into(),
                ..cur.clone()
            },
            Snapshot {
                cpus: vec![0, 1, 2],
                ..cur.clone()
            },
        ] {
            assert_eq!(Delta::between(&base, &changed), None);
        }
    }

    #[test]
    fn a_delta_against_another_base_or_that_does_not_apply_is_refused() {
        let base = reading(10, vec![irq("24", &[(1, 5)], "1")]);
        let cur = reading(20, vec![irq("24", &[(1, 6)], "1")]);
        let d = Delta::between(&base, &cur).unwrap();
        let other = reading(11, base.irqs.clone());
        assert_eq!(d.apply(&other), Err(DeltaError::BaseMismatch));
        assert!(DeltaError::BaseMismatch.to_string().starts_with(BASE_MISMATCH));
        let other_boot = Snapshot {
            boot_id: "b2".into(),
            ..base.clone()
        };
        assert_eq!(d.apply(&other_boot), Err(DeltaError::BaseMismatch));
        let bad = |d: Delta| match d.apply(&base) {
            Err(DeltaError::Bad(m)) => m,
            other => panic!("{other:?}"),
        };
        let mut unknown = d.clone();
        unknown.counts[0].0 = "99".into();
        assert!(bad(unknown).contains("99"));
        let mut zero = d.clone();
        zero.counts[0].1 = vec![(1, 0)];
        assert!(bad(zero).contains("bad increases"));
        let mut overflow = d.clone();
        overflow.counts[0].1 = vec![(1, u64::MAX)];
        assert!(bad(overflow).contains("bad increases"));
        let mut new_without_fields = d.clone();
        new_without_fields.labels = Some(vec!["24".into(), "30".into()]);
        assert!(bad(new_without_fields).contains("new but not given"));
        let mut twice = d.clone();
        twice.labels = Some(vec!["24".into(), "24".into()]);
        assert!(bad(twice).contains("twice"));
        let mut v2 = d;
        v2.version = 2;
        assert!(bad(v2).contains("no deltas"));
        // A full snapshot is not a delta, nor the reverse.
        let (mut json, mut gz) = (Vec::new(), Vec::new());
        encode_push_body(&cur, &mut json, &mut gz).unwrap();
        assert_eq!(
            decode_push_body::<Delta>(Some("gzip"), &gz, 1 << 20)
                .unwrap_err()
                .status(),
            400
        );
    }
}
