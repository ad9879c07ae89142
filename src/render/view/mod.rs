//! Every page's view model as plain data, one module per page: [`scenario`] (`/`, `/s/…`, the
//! result fragment), [`compare`] (`/compare`, `/c/…`), [`mana`] (`/mana`, `/m/…`), [`sched`]
//! (`/sched`, `/n/…`), [`blkmq`] (`/blkmq`), [`sweep`] (`/sweep`), [`seeds`] (`/seeds`),
//! [`fleet`] (`/fleet`) and [`live`] (`/live/HOST`).
//!
//! A view is built from a query shape (plain serde data, what a form or link carries) or a
//! spec, through the one resolve step every caller shares (`spec.resolve(catalogue::get)`,
//! then the scenario's run), into fields a template only loops over and prints. Nothing here
//! knows HTTP: `web` routes, makes one call into this module, and fills a template; the CLI
//! calls the same resolve and run (`scenario::Run` for a scenario) and prints the same text
//! and JSON twins. Every view is built in a test without a server.

/// A spec of a page that travels in its permalink (MANA's, sched's), resolved and run: the
/// struct every response of that page shows, its constructor and its text twin (`$twin` with
/// the command line and the `/$prefix/` permalink). The JSON twin stays beside the view.
macro_rules! shown_run {
    ($(#[$doc:meta])* $Shown:ident, $Scenario:ty, $Run:ty, $Spec:ty, $twin:path, $prefix:literal) => {
        $(#[$doc])*
        pub struct $Shown {
            pub(crate) scenario: $Scenario,
            pub(crate) run: $Run,
            pub(crate) permalink: String,
        }

        impl $Shown {
            pub fn new(spec: $Spec) -> Result<$Shown, ViewError> {
                let scenario = spec.resolve(catalogue::get)?;
                let run = scenario.run()?;
                let permalink = encode_link(&scenario.spec)?;
                Ok($Shown {
                    scenario,
                    run,
                    permalink,
                })
            }

            /// The run, the command line that reproduces it and the JSON twin (what the
            /// command line prints).
            pub fn into_twin(self) -> ($Run, String, serde_json::Value) {
                let (command, json) = (self.scenario.spec.command_line(), self.json());
                (self.run, command, json)
            }

            pub(crate) fn text_report(&self, origin: &str) -> String {
                $twin(
                    &self.scenario.spec.command_line(),
                    &format!(concat!("{}/", $prefix, "/{}"), origin, self.permalink),
                    &self.run,
                )
            }
        }
    };
}

pub mod blkmq;
pub mod compare;
pub mod fleet;
pub mod live;
pub mod mana;
pub mod review;
pub mod scenario;
pub mod sched;
pub mod seeds;
pub mod sweep;

use crate::catalogue;
use crate::kernel::External;
use crate::kernel_c::registry::{KernelCRegistry, Unavailable};
use crate::render::svg::HeatMetric;
use crate::scenario::permalink::{self, PermalinkError};
use crate::scenario::spec::{ScenarioSpec, TopologyRef};
use crate::scenario::ScenarioError;
use serde::{Deserialize, Serialize};

/// Why a view could not be built: the input's fault (a 4xx, with its message), something the
/// input names that this server lacks (404: a `c:NAME` build), or ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewError {
    BadInput(String),
    NotFound(String),
    Internal(String),
}

impl std::fmt::Display for ViewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ViewError::BadInput(m) | ViewError::NotFound(m) | ViewError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ViewError {}

impl From<ScenarioError> for ViewError {
    fn from(e: ScenarioError) -> Self {
        ViewError::BadInput(e.0)
    }
}

impl From<PermalinkError> for ViewError {
    fn from(e: PermalinkError) -> Self {
        ViewError::BadInput(e.to_string())
    }
}

/// Where a page finds the built C a `c:NAME` variant names: the builds this server registered
/// at start-up (`kernel_c::registry`, carried by the server's state). 404 for one it lacks,
/// 400 for one that did not build.
pub(crate) fn registered_kernel_c(
    registry: &KernelCRegistry,
) -> impl Fn(&str, Option<&str>) -> Result<External, ViewError> + '_ {
    move |name, pinned| registry.find(name, pinned).map_err(ViewError::from)
}

impl From<Unavailable> for ViewError {
    fn from(e: Unavailable) -> Self {
        match e {
            Unavailable::Missing(m) => ViewError::NotFound(m),
            Unavailable::Failed(m) => ViewError::BadInput(m),
        }
    }
}

pub(crate) fn bad(m: impl Into<String>) -> ViewError {
    ViewError::BadInput(m.into())
}

/// A payload's permalink; a payload that cannot be encoded is our bug, not the input's.
pub(crate) fn encode_link<T: Serialize>(spec: &T) -> Result<String, ViewError> {
    permalink::encode(spec).map_err(|e| ViewError::Internal(e.to_string()))
}

/// Parse a heatmap metric name from a query.
pub(crate) fn parse_metric(name: Option<&str>) -> Result<HeatMetric, ViewError> {
    match name {
        None | Some("") => Ok(HeatMetric::Irqs),
        Some(n) => HeatMetric::from_name(n).ok_or_else(|| {
            let known: Vec<&str> = HeatMetric::ALL.iter().map(|m| m.name()).collect();
            bad(format!("unknown metric {n:?} (known: {})", known.join(", ")))
        }),
    }
}

/// A node to zoom to: empty or `all` for none.
pub(crate) fn parse_node(node: Option<&str>) -> Result<Option<u32>, ViewError> {
    match node {
        None | Some("") | Some("all") => Ok(None),
        Some(n) => n
            .parse::<u32>()
            .map(Some)
            .map_err(|_| bad(format!("node {n:?} is not a number"))),
    }
}

/// Where a page's form takes its machine and its other settings from: the page's own
/// permalink `from` (the spec the form's fields change), then a `preset` or a scenario
/// permalink `s` whose machine (edited or preset) replaces the base's. Empty fields are not
/// given.
#[derive(Debug, Default, Deserialize)]
pub struct MachineQuery {
    /// This page's own permalink, the base the fields change.
    pub from: Option<String>,
    /// A scenario permalink whose machine (edited or preset) to use.
    pub s: Option<String>,
    pub preset: Option<String>,
}

impl MachineQuery {
    /// A query naming only a preset.
    pub fn preset(name: &str) -> MachineQuery {
        MachineQuery {
            preset: Some(name.to_string()),
            ..MachineQuery::default()
        }
    }

    /// The base spec the form changes (decoded from `from`; none when not given) and the
    /// machine the query names: `preset` first, then `s`'s machine, then the base's, then
    /// the preset `default`.
    pub(crate) fn base<S: serde::de::DeserializeOwned>(
        &self,
        topology_of: fn(&S) -> &TopologyRef,
        default: &str,
    ) -> Result<(Option<S>, TopologyRef), ViewError> {
        let base = match given(&self.from) {
            Some(link) => Some(permalink::decode::<S>(link)?),
            None => None,
        };
        let topology = if let Some(p) = given(&self.preset) {
            TopologyRef::Preset(p.to_string())
        } else if let Some(link) = given(&self.s) {
            permalink::decode::<ScenarioSpec>(link)?.topology
        } else {
            base.as_ref()
                .map(topology_of)
                .cloned()
                .unwrap_or_else(|| TopologyRef::Preset(default.to_string()))
        };
        Ok((base, topology))
    }
}

/// A form field's text, trimmed; `None` when the field is absent or empty.
pub(crate) fn given(field: &Option<String>) -> Option<&str> {
    field.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// A form field that is a number, named `what` in the error; `None` when not given.
pub(crate) fn given_number<T: std::str::FromStr>(field: &Option<String>, what: &str) -> Result<Option<T>, ViewError> {
    given(field)
        .map(|t| t.parse().map_err(|_| bad(format!("{what} {t:?} is not a number"))))
        .transpose()
}

/// The preset menu: every preset with whether it is `t`'s, and whether `t` is an edited
/// machine (then the menu leads with "edited machine").
pub(crate) fn preset_choices(t: &TopologyRef) -> (Vec<(&'static str, bool)>, bool) {
    let current = match t {
        TopologyRef::Preset(p) => Some(p.as_str()),
        TopologyRef::Inline(_) => None,
    };
    (
        catalogue::names().map(|n| (n, Some(n) == current)).collect(),
        current.is_none(),
    )
}

/// Numbers as a form shows them: `0,1,1,1`.
pub(crate) fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// Percent-encode a query value (unreserved characters and `,` kept).
pub(crate) fn encode_component(v: &str) -> String {
    v.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~,".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `text` as HTML in which a cpulist never breaks inside a range: the text escaped, each
/// `a-b` range of a cpulist kept on one line (`<span class="nw">`), and a line allowed to
/// break after a cpulist's commas (`<wbr>`). A browser otherwise breaks "34-47" after its
/// hyphen, which reads like two lists.
pub(crate) fn html_cpulists(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        crate::render::svg::push_escaped(&mut out, &rest[..start]);
        let tail = &rest[start..];
        let len = tail
            .find(|c: char| !(c.is_ascii_digit() || c == ',' || c == '-'))
            .unwrap_or(tail.len());
        // A token ends on a digit: a trailing comma or hyphen is the sentence's.
        let len = tail[..len].trim_end_matches([',', '-']).len();
        let token = &tail[..len];
        let follows_word = out.chars().last().is_some_and(|c| c.is_alphanumeric() || c == '.');
        if !follows_word && (token.contains('-') || token.contains(',')) {
            for (i, piece) in token.split(',').enumerate() {
                if i > 0 {
                    out.push_str(",<wbr>");
                }
                if piece.contains('-') {
                    out.push_str("<span class=\"nw\">");
                    out.push_str(piece);
                    out.push_str("</span>");
                } else {
                    out.push_str(piece);
                }
            }
        } else {
            out.push_str(token);
        }
        rest = &tail[len..];
    }
    crate::render::svg::push_escaped(&mut out, rest);
    out
}

#[cfg(test)]
mod tests {
    use super::html_cpulists;

    #[test]
    fn cpulists_break_only_after_commas() {
        assert_eq!(
            html_cpulists("28 CPUs (34-47,82-95) serve all 6 <devices>"),
            "28 CPUs (<span class=\"nw\">34-47</span>,<wbr><span class=\"nw\">82-95</span>) serve all 6 &lt;devices&gt;"
        );
        assert_eq!(
            html_cpulists("heap-v6.11, 0-3."),
            "heap-v6.11, <span class=\"nw\">0-3</span>."
        );
        assert_eq!(
            html_cpulists("n0-1 a1,2"),
            "n0-1 a1,2",
            "a number inside a word is not a list"
        );
    }
}
