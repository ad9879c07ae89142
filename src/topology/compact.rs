//! A machine as one command-line word, so a mailed report reproduces an edited machine with no
//! file and no server: `cpus:name=Edited;nodes=0-3+4-7;smt=0,4+1,5;distances=10,21+21,10`.
//!
//! The grammar mirrors the explicit lists of the topology file (`spec.rs`):
//! - the word starts with [`PREFIX`]; fields are `key=value`, separated by `;`, each key at most
//!   once: `name`, `nodes`, `smt`, `clusters`, `packages`, `present`, `online`, `distances`,
//!   `nr_node_ids`, `arch` (`x86_64`, `arm64`), `irqchip` (`apic`, `gic-its`, `gic-v2m`,
//!   `gic-spi`, `gic-v5`);
//! - list fields (`nodes`, `smt`, `clusters`, `packages`) hold kernel cpulists separated by `+`
//!   (a cpulist never contains `+`); an empty item is a node without CPUs;
//! - `distances` holds rows separated by `+`, numbers within a row by `,`;
//! - `name` is percent-encoded (`%20` a space, `%3B` a `;`);
//! - ASCII whitespace anywhere is ignored: a long word may be broken over lines inside its
//!   shell quotes.
//!
//! Only the shape travels (not the note or source text); validation is
//! [`super::Topology::new`]'s, as for a file. Limits: [`COMPACT_BYTES_MAX`] bytes (the Linux
//! limit on one argument), [`COMPACT_ITEMS_MAX`] items in one list.

use super::arch::{Arch, Irqchip};
use super::spec::TopologySpec;
use super::{Topology, CPUS_MAX, NODES_MAX};

/// What starts a compact machine word.
pub(crate) const PREFIX: &str = "cpus:";
/// Longest compact word (Linux `MAX_ARG_STRLEN`, 32 pages).
pub(crate) const COMPACT_BYTES_MAX: usize = 128 * 1024;
/// Most items in one list field (every CPU its own set).
pub(crate) const COMPACT_ITEMS_MAX: usize = CPUS_MAX as usize;

/// Does this argument name a compact machine?
pub fn is_compact(word: &str) -> bool {
    word.starts_with(PREFIX)
}

/// The compact word of a validated topology (its exact explicit lists).
pub fn encode(topology: &Topology) -> String {
    encode_spec(&topology.to_spec())
}

/// How a command line names an edited machine: its compact word (from the validated topology,
/// so a `[generate]` table travels as its lists); a spec that does not validate keeps its
/// explicit lists as given.
pub fn label(spec: &TopologySpec) -> String {
    match Topology::new(spec) {
        Ok(t) => encode(&t),
        Err(_) => encode_spec(spec),
    }
}

/// The compact word of an explicit spec (a `[generate]` table is not carried: call [`encode`]
/// on the validated topology for those).
pub fn encode_spec(spec: &TopologySpec) -> String {
    let mut fields = vec![format!("name={}", percent_encode(&spec.name))];
    if let Some(nodes) = &spec.nodes {
        fields.push(format!("nodes={}", nodes.join("+")));
    }
    if let Some(n) = spec.nr_node_ids {
        fields.push(format!("nr_node_ids={n}"));
    }
    for (key, list) in [
        ("smt", &spec.smt),
        ("clusters", &spec.clusters),
        ("packages", &spec.packages),
    ] {
        if !list.is_empty() {
            fields.push(format!("{key}={}", list.join("+")));
        }
    }
    for (key, set) in [("present", &spec.present), ("online", &spec.online)] {
        if let Some(set) = set {
            fields.push(format!("{key}={set}"));
        }
    }
    if let Some(a) = spec.arch {
        fields.push(format!("arch={}", a.name()));
    }
    if let Some(c) = spec.irqchip {
        fields.push(format!("irqchip={}", c.name()));
    }
    if let Some(d) = &spec.distances {
        let rows: Vec<String> = d
            .iter()
            .map(|r| r.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
            .collect();
        fields.push(format!("distances={}", rows.join("+")));
    }
    format!("{PREFIX}{}", fields.join(";"))
}

/// Read a compact word back into a spec (validate it with [`super::Topology::new`]).
pub fn decode(word: &str) -> Result<TopologySpec, String> {
    if word.len() > COMPACT_BYTES_MAX {
        return Err(format!("machine word is longer than {COMPACT_BYTES_MAX} bytes"));
    }
    let body: String = word.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let Some(body) = body.strip_prefix(PREFIX) else {
        return Err(format!("a machine word starts with {PREFIX:?}"));
    };
    let mut spec = TopologySpec::default();
    let mut seen: Vec<&str> = Vec::new();
    for field in body.split(';').filter(|f| !f.is_empty()) {
        let Some((key, value)) = field.split_once('=') else {
            return Err(format!("machine word: {:?} is not key=value", shorten(field)));
        };
        if seen.contains(&key) {
            return Err(format!("machine word: {key:?} given twice"));
        }
        set_field(&mut spec, key, value)?;
        seen.push(key);
    }
    if spec.nodes.is_none() {
        return Err("machine word: give nodes=, e.g. cpus:nodes=0-3+4-7".into());
    }
    Ok(spec)
}

/// One `key=value` of a machine word into `spec`; the error names the key.
fn set_field(spec: &mut TopologySpec, key: &str, value: &str) -> Result<(), String> {
    let list = |what: &str| -> Result<Vec<String>, String> {
        let items: Vec<String> = value.split('+').map(str::to_string).collect();
        if items.len() > COMPACT_ITEMS_MAX {
            return Err(format!("machine word: {what} has more than {COMPACT_ITEMS_MAX} items"));
        }
        Ok(items)
    };
    match key {
        "name" => spec.name = percent_decode(value)?,
        "nodes" => {
            let nodes = list("nodes")?;
            if nodes.len() > NODES_MAX as usize {
                return Err(format!("machine word: more than {NODES_MAX} nodes"));
            }
            spec.nodes = Some(nodes);
        }
        "nr_node_ids" => {
            spec.nr_node_ids = Some(
                value
                    .parse()
                    .map_err(|_| format!("machine word: nr_node_ids {:?} is not a number", shorten(value)))?,
            )
        }
        "smt" => spec.smt = list("smt")?,
        "clusters" => spec.clusters = list("clusters")?,
        "packages" => spec.packages = list("packages")?,
        "arch" => {
            spec.arch = Some(
                Arch::from_name(value)
                    .ok_or_else(|| format!("machine word: arch {:?} is not x86_64 or arm64", shorten(value)))?,
            )
        }
        "irqchip" => {
            spec.irqchip = Some(Irqchip::from_name(value).ok_or_else(|| {
                format!(
                    "machine word: irqchip {:?} is not one of {}",
                    shorten(value),
                    Irqchip::ALL.map(Irqchip::name).join(", ")
                )
            })?)
        }
        "present" => spec.present = Some(value.to_string()),
        "online" => spec.online = Some(value.to_string()),
        "distances" => spec.distances = Some(distances(value)?),
        _ => {
            return Err(format!(
                "machine word: unknown key {:?} (want name, nodes, nr_node_ids, smt, clusters, \
                 packages, present, online, distances, arch, irqchip)",
                shorten(key)
            ))
        }
    }
    Ok(())
}

/// The `distances=` rows (`10,20+20,10`): at most [`NODES_MAX`] rows of at most as many
/// numbers.
fn distances(value: &str) -> Result<Vec<Vec<u32>>, String> {
    let rows = value.split('+').collect::<Vec<_>>();
    if rows.len() > NODES_MAX as usize {
        return Err(format!("machine word: more than {NODES_MAX} distance rows"));
    }
    let mut matrix = Vec::with_capacity(rows.len());
    for row in rows {
        let row = row
            .split(',')
            .map(|v| {
                v.parse::<u32>()
                    .map_err(|_| format!("machine word: distance {:?} is not a number", shorten(v)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if row.len() > NODES_MAX as usize {
            return Err(format!("machine word: a distance row longer than {NODES_MAX}"));
        }
        matrix.push(row);
    }
    Ok(matrix)
}

fn shorten(text: &str) -> String {
    text.chars().take(40).collect()
}

fn percent_encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.,()[]/:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("machine word: bad %-escape in name {:?}", shorten(text)))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "machine word: name is not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_round_trips_through_the_compact_word() {
        for name in crate::catalogue::names() {
            let t = crate::catalogue::get(name).unwrap();
            let word = encode(&t);
            let back = Topology::new(&decode(&word).unwrap()).unwrap();
            assert_eq!(back.to_spec().nodes, t.to_spec().nodes, "{name}");
            assert_eq!(encode(&back), word, "{name}");
        }
    }

    #[test]
    fn whitespace_is_ignored_and_names_are_escaped() {
        let mut spec = TopologySpec {
            name: "Edited; 'box' 100%".into(),
            nodes: Some(vec!["0-3".into(), "".into(), "4-7".into()]),
            smt: vec!["0-1".into()],
            distances: Some(vec![vec![10, 20, 30], vec![20, 10, 20], vec![30, 20, 10]]),
            ..TopologySpec::default()
        };
        let word = encode_spec(&spec);
        assert!(!word.contains('\'') && !word.contains(' '), "{word}");
        let broken = word.replace('+', "+\n   ").replace(';', ";\n  ");
        assert_eq!(decode(&broken).unwrap(), spec);
        spec.name.clear();
        assert_eq!(decode(&encode_spec(&spec)).unwrap(), spec);
        spec.arch = Some(Arch::Arm64);
        spec.irqchip = Some(Irqchip::GicV2m);
        let word = encode_spec(&spec);
        assert!(word.contains(";arch=arm64;irqchip=gic-v2m"), "{word}");
        assert_eq!(decode(&word).unwrap(), spec);
        assert!(decode("cpus:nodes=0-3;irqchip=gic")
            .unwrap_err()
            .contains("not one of apic, gic-its"));
    }

    #[test]
    fn bad_words_are_refused_with_a_reason() {
        for (word, want) in [
            ("cpus:", "give nodes="),
            ("cpus:nodes=0-3;nodes=4", "twice"),
            ("cpus:nodes=0-3;bogus=1", "unknown key"),
            ("cpus:nodes=0-3;distances=10,x", "not a number"),
            ("cpus:name=%zz;nodes=0", "%-escape"),
            ("cpus:nodes", "key=value"),
        ] {
            let err = decode(word).unwrap_err();
            assert!(err.contains(want), "{word}: {err}");
        }
        assert!(decode(&format!("cpus:nodes={}", "0+".repeat(COMPACT_BYTES_MAX))).is_err());
    }
}
