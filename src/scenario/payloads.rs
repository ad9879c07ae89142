//! Every NVMe-side permalink payload, in one place: what `/s/…` and `/c/…` carry inside the
//! [`permalink`](super::permalink) codec. No HTTP here; the pages and the CLI build these and
//! hand them to the codec.
//!
//! - [`ScenarioSpec`] (with [`TopologyRef`](super::spec::TopologyRef) and [`DeviceSpec`](super::spec::DeviceSpec), defined in [`spec`](super::spec)):
//!   `/s/{link}`, the JSON body of `POST /api/simulate` and `POST /fragment`.
//! - [`CompareSpec`] and its two [`SideSpec`]s: `/c/{link}`.
//!
//! **Compatibility rule.** A link, once handed out, decodes for ever and re-encodes to the same
//! bytes. So a payload field is only ever *added*, never renamed, retyped, reordered or removed;
//! an added field is optional (`#[serde(default)]`, decoding an old link gives the behaviour the
//! old link had) and omitted when absent (`skip_serializing_if`, so an old link re-encodes
//! byte for byte). Names inside a payload are the frozen names of models (variant, sort,
//! effective model, proposal); presets travel by name because released presets are frozen
//! (`tests/it/presets_frozen.rs`). Payloads deny unknown fields: a link from a newer build fails
//! with a message rather than being read as something else. The tests below and
//! `tests/data/permalink-before-*` pin the serialized forms.

pub(crate) use super::spec::ScenarioSpec;
use serde::{Deserialize, Serialize};

/// One side of a comparison: the base scenario's names unless overridden.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SideSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_counter: Option<u32>,
    /// With a `c:NAME` variant: the sha256 of the built source (as `ScenarioSpec::kernel_c`).
    /// Absent in every other link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_c: Option<String>,
}

impl SideSpec {
    /// The scenario this side runs: `base` with this side's overrides.
    pub(crate) fn apply(&self, base: &ScenarioSpec) -> ScenarioSpec {
        ScenarioSpec {
            variant: self.variant.clone().unwrap_or_else(|| base.variant.clone()),
            sort: self.sort.clone().unwrap_or_else(|| base.sort.clone()),
            effective: self.effective.clone().unwrap_or_else(|| base.effective.clone()),
            spread_counter: self.spread_counter.unwrap_or(base.spread_counter),
            // A side that names its variant brings its own pin; otherwise the base's holds.
            kernel_c: match &self.variant {
                Some(_) => self.kernel_c.clone(),
                None => base.kernel_c.clone(),
            },
            ..base.clone()
        }
    }
}

/// A comparison as data (what `/c/{permalink}` carries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareSpec {
    pub scenario: ScenarioSpec,
    pub a: SideSpec,
    pub b: SideSpec,
}

impl CompareSpec {
    /// The two scenarios compared, A then B.
    pub(crate) fn sides(&self) -> [ScenarioSpec; 2] {
        [self.a.apply(&self.scenario), self.b.apply(&self.scenario)]
    }
}

/// The variant side B runs when a form or the command line names none: another variant than
/// A's, so a comparison never opens on two identical sides. `pre-cluster` against `cluster`
/// (the pair seed 000 and seed 002 quote), and `cluster` against anything else; built C
/// (`c:NAME`, a patch under test) against the model of the kernel release the scenario names
/// (`kernel`, the newest modelled when none). Only forms use this; a `/c/…` link keeps the
/// sides it names.
pub(crate) fn other_variant(a: &str, kernel: Option<&str>) -> &'static str {
    if a.starts_with(super::spec::KERNEL_C_PREFIX) {
        return release_variant(kernel);
    }
    if a == "cluster" {
        "pre-cluster"
    } else {
        "cluster"
    }
}

/// The variant the kernel release `kernel` runs (the newest modelled when it names none or
/// none that parses).
pub(crate) fn release_variant(kernel: Option<&str>) -> &'static str {
    use crate::kernel::release;
    let r = kernel.and_then(release::parse_release).unwrap_or(release::NEWEST);
    release::generation(r).variant
}

/// How a side is named in reports: "rotation (heap-v6.11, x86-matrix, counter 3)".
pub(crate) fn side_label(s: &ScenarioSpec) -> String {
    format!(
        "{} ({}, {}, counter {})",
        s.variant, s.sort, s.effective, s.spread_counter
    )
}

#[cfg(test)]
mod tests {
    use super::super::permalink::{decode, encode};
    use super::super::spec::{DeviceSpec, TopologyRef};
    use super::*;

    fn compare() -> CompareSpec {
        CompareSpec {
            scenario: ScenarioSpec::new(
                TopologyRef::Preset("azure-l96as-v4".into()),
                vec![DeviceSpec {
                    pre: 1,
                    name: Some("nvme".into()),
                    ..DeviceSpec::new(6, 62)
                }],
            ),
            a: SideSpec {
                variant: Some("pre-cluster".into()),
                ..SideSpec::default()
            },
            b: SideSpec {
                variant: Some("rotation".into()),
                spread_counter: Some(3),
                ..SideSpec::default()
            },
        }
    }

    /// The serialized form of a comparison, field order included. Changing it breaks every
    /// `/c/…` link handed out.
    #[test]
    fn compare_spec_serialized_form_is_frozen() {
        let json = serde_json::to_string(&compare()).unwrap();
        assert_eq!(
            json,
            r#"{"scenario":{"topology":"azure-l96as-v4","devices":[{"count":6,"name":"nvme","queues":62,"pre":1}],"variant":"cluster","sort":"heap-v6.11","effective":"x86-matrix","spread_counter":0},"a":{"variant":"pre-cluster"},"b":{"variant":"rotation","spread_counter":3}}"#
        );
        let link = encode(&compare()).unwrap();
        assert_eq!(
            link,
            "v1.bY7dCsIwDIXfJdetOJWifRURiV2mha2d_WM69u6mgojgVeCcL18yQzTkMFgPeobkR9_76wM04DMHkv1BYZRlBwJaKtZQBH2cwfjsEmglwOFATLvCQ8A9U66I2ggYAxfNchJQWI-VB9PnmCgwGX2owY1wlEWtmoYz6joyyZYqnPZKDpiCnSrMLmzP76u8rdeLAKz_fs1MyI-d28tvG3zCZL3749ouyws"
        );
        assert_eq!(decode::<CompareSpec>(&link).unwrap(), compare());
        assert_eq!(encode(&decode::<CompareSpec>(&link).unwrap()).unwrap(), link);
    }

    /// A link recorded before MANA devices and proposals existed decodes and re-encodes to the
    /// same bytes (the fixture the HTTP tests replay).
    #[test]
    fn old_scenario_link_reencodes_byte_for_byte() {
        let link = include_str!("../../tests/data/permalink-before-mana.txt").trim();
        let spec: ScenarioSpec = decode(link).unwrap();
        assert_eq!(spec.proposal, None);
        assert!(spec.devices.iter().all(|d| d.driver.is_none()));
        assert_eq!(encode(&spec).unwrap(), link);
    }

    /// The probe order and the NVMe driver are optional fields: absent, a spec serializes as
    /// before they existed; present, they are named and decode to the same scenario.
    #[test]
    fn probe_order_and_nvme_driver_are_optional_fields() {
        let base = compare().scenario;
        let json = serde_json::to_string(&base).unwrap();
        assert!(!json.contains("probe") && !json.contains("driver"), "{json}");
        let spec = ScenarioSpec {
            probe: Some("parallel".into()),
            devices: vec![DeviceSpec {
                driver: Some("nvme".into()),
                ..base.devices[0].clone()
            }],
            ..base
        };
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(
            json,
            r#"{"topology":"azure-l96as-v4","devices":[{"count":6,"name":"nvme","queues":62,"pre":1,"driver":"nvme"}],"variant":"cluster","sort":"heap-v6.11","effective":"x86-matrix","spread_counter":0,"probe":"parallel"}"#
        );
        let link = encode(&spec).unwrap();
        assert_eq!(decode::<ScenarioSpec>(&link).unwrap(), spec);
        let scenario = spec.resolve(crate::catalogue::get).unwrap();
        assert_eq!(scenario.probe(), Some(crate::scenario::ProbeOrder::Parallel));
        assert!(scenario
            .devices()
            .iter()
            .all(|d| d.driver == crate::scenario::Driver::Nvme));
        let bad = ScenarioSpec {
            probe: Some("random".into()),
            ..spec
        };
        let e = bad.resolve(crate::catalogue::get).unwrap_err().to_string();
        assert!(e.contains("unknown probe order \"random\""), "{e}");
    }

    #[test]
    fn sides_override_only_what_they_name() {
        let [a, b] = compare().sides();
        assert_eq!((a.variant.as_str(), a.spread_counter), ("pre-cluster", 0));
        assert_eq!((b.variant.as_str(), b.spread_counter), ("rotation", 3));
        assert_eq!((a.sort.as_str(), b.effective.as_str()), ("heap-v6.11", "x86-matrix"));
        assert_eq!(side_label(&b), "rotation (heap-v6.11, x86-matrix, counter 3)");
        let json = serde_json::to_string(&SideSpec::default()).unwrap();
        assert_eq!(json, "{}");
        assert!(serde_json::from_str::<SideSpec>(r#"{"colour":"red"}"#).is_err());
    }
}
