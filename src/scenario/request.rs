//! What a command line or a form names on top of a machine and its devices: the defaults the
//! devices take where their tokens are silent ([`DeviceDefaults`], `irqscope simulate --pre 1
//! --sets 4+2 …`), and the names a request sets over a base spec ([`Overrides`]: variant,
//! sort, effective model, counter, proposal, probe order, boot parameters). `irqscope simulate` and the
//! scenario page's query both build their [`ScenarioSpec`] through here, then resolve and run
//! it the same way (`render::view::scenario::Run`).

use super::kernel::ModelNames;
use super::spec::{effective_default, parse_device_token, DeviceSpec, ScenarioSpec, TopologyRef};
use super::{BootParams, ScenarioError};

/// What every device takes where its token does not say (`pre=`, `post=`, `sets=`,
/// `managed=`, `blkmq=`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceDefaults {
    pub pre: u32,
    pub post: u32,
    /// Interrupt sets, `4+2`.
    pub sets: Option<String>,
    /// Devices allocate without managed affinity.
    pub unmanaged: bool,
    /// `irq` or `cpumap`.
    pub blk_mq: Option<String>,
}

/// `4+2` as sets.
pub(crate) fn parse_sets(text: &str) -> Result<Vec<u32>, ScenarioError> {
    split_numbers(text, '+', |_| format!("sets {text:?}: give sizes like 4+2"))
}

/// Sets as [`parse_sets`] reads them: `4+2`.
pub(crate) fn format_sets(sets: &[u32]) -> String {
    sets.iter().map(u32::to_string).collect::<Vec<_>>().join("+")
}

/// `text` split at `sep` into numbers; `why` says what is wrong with a word that is not one.
pub(crate) fn split_numbers(text: &str, sep: char, why: impl Fn(&str) -> String) -> Result<Vec<u32>, ScenarioError> {
    text.split(sep)
        .map(|word| word.trim().parse::<u32>().map_err(|_| ScenarioError(why(word))))
        .collect()
}

/// Device tokens (`6x62:pre=1,name=nvme`), each with `defaults` where it is silent.
pub fn parse_devices_with(tokens: &[String], defaults: &DeviceDefaults) -> Result<Vec<DeviceSpec>, ScenarioError> {
    let sets = defaults.sets.as_deref().map(parse_sets).transpose()?;
    tokens
        .iter()
        .map(|token| {
            let mut d = parse_device_token(token)?;
            let explicit = token.split_once(':').map(|(_, o)| o).unwrap_or("");
            let has = |key: &str| explicit.split(',').any(|kv| kv.split('=').next() == Some(key));
            if !has("pre") {
                d.pre = defaults.pre;
            }
            if !has("post") {
                d.post = defaults.post;
            }
            if !has("sets") && sets.is_some() {
                d.sets = sets.clone();
            }
            if !has("managed") && defaults.unmanaged {
                d.managed = false;
            }
            if !has("blkmq") {
                d.blk_mq = defaults.blk_mq.clone();
            }
            Ok(d)
        })
        .collect()
}

/// Names a request sets over a base spec; `None` keeps the base's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub models: ModelNames,
    pub counter: Option<u32>,
    /// The last counter start of a range (`--counter A..B`).
    pub counter_to: Option<u32>,
    /// Probe orders (`all`, `sample:N[:SEED]`).
    pub orders: Option<String>,
    pub proposal: Option<String>,
    /// Probe order of `driver=nvme` devices (`sequential` or `parallel`).
    pub probe: Option<String>,
    pub boot: BootParams,
}

impl Overrides {
    /// `spec` with every name this request gives.
    pub fn apply(&self, mut spec: ScenarioSpec) -> ScenarioSpec {
        self.models.apply_to(&mut spec);
        if let Some(c) = self.counter {
            spec.spread_counter = c;
        }
        if self.counter_to.is_some() {
            spec.counter_to = self.counter_to;
        }
        if self.orders.is_some() {
            spec.orders.clone_from(&self.orders);
        }
        if self.proposal.is_some() {
            spec.proposal.clone_from(&self.proposal);
        }
        if self.probe.is_some() {
            spec.probe.clone_from(&self.probe);
        }
        let boot = self.boot.clone();
        for (field, flag) in [
            (&mut spec.irqaffinity, boot.irqaffinity),
            (&mut spec.isolcpus, boot.isolcpus),
            (&mut spec.nohz_full, boot.nohz_full),
            (&mut spec.vectors_held, boot.vectors_held),
        ] {
            if flag.is_some() {
                *field = flag;
            }
        }
        spec
    }
}

/// `devices` on `topology`, every name at its default but the effective-CPU model, which the
/// machine's interrupt controller decides (`catalogue::default_effective`): what a form or
/// command line that names no model means.
pub fn spec_for_machine(topology: TopologyRef, devices: Vec<DeviceSpec>) -> ScenarioSpec {
    let effective = effective_default(&topology).0.name().to_string();
    ScenarioSpec {
        effective,
        ..ScenarioSpec::new(topology, devices)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_only_what_a_token_leaves_out() {
        let defaults = DeviceDefaults {
            pre: 1,
            post: 2,
            sets: Some("4+2".into()),
            unmanaged: true,
            blk_mq: Some("irq".into()),
        };
        let d = parse_devices_with(&["6:pre=0,managed=yes".into(), "6".into()], &defaults).unwrap();
        assert_eq!((d[0].pre, d[0].post, d[0].managed), (0, 2, true));
        assert_eq!((d[1].pre, d[1].post, d[1].managed), (1, 2, false));
        assert_eq!(d[1].sets, Some(vec![4, 2]));
        assert_eq!(d[1].blk_mq.as_deref(), Some("irq"));
        assert!(parse_sets("4+x").unwrap_err().0.contains("4+x"));
    }

    #[test]
    fn overrides_set_only_what_they_name() {
        let base = spec_for_machine(TopologyRef::Preset("azure-d16plds-v6".into()), Vec::new());
        assert_eq!(base.effective, "first-cpu", "the arm64 preset's controller decides");
        let o = Overrides {
            counter: Some(3),
            boot: BootParams {
                isolcpus: Some("managed_irq,2".into()),
                ..BootParams::default()
            },
            ..Overrides::default()
        };
        let s = o.apply(base.clone());
        assert_eq!((s.spread_counter, s.isolcpus.as_deref()), (3, Some("managed_irq,2")));
        assert_eq!((s.variant, s.effective), (base.variant, base.effective));
    }
}
