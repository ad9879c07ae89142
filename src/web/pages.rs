//! The page templates: one askama struct per template, each holding the view `render::view`
//! built (`v`) and the page title. Templates only loop and print; everything computed is a
//! field of the view. Only SVG from `render::svg*` is marked safe in templates.

use crate::kernel_c::registry::KernelCRegistry;
use crate::render::view::blkmq::BlkMqView;
use crate::render::view::compare::CompareView;
use crate::render::view::fleet::FleetView;
use crate::render::view::mana::ManaView;
use crate::render::view::scenario::{ResultView, ScenarioView};
use crate::render::view::sched::SchedView;
use crate::render::view::seeds::SeedsView;
use crate::render::view::sweep::SweepView;
use askama::Template;

/// The run-time value the layout (`base.html`) reads: present when this server runs built C,
/// so that the navigation links `/kernel-c` (and only then).
const NAV_KERNEL_C: &str = "kernel_c";

/// A page filled with what its layout reads at run time: whether this server has built C to
/// offer (`serve --kernel-c`), which the navigation then links.
pub(crate) fn render_page<T: Template>(page: &T, kernel_c: &KernelCRegistry) -> askama::Result<String> {
    let has_builds = kernel_c.registered().next().is_some();
    let values: (&str, &dyn std::any::Any) = (NAV_KERNEL_C, &has_builds);
    page.render_with_values(&values)
}

/// Template filters: `cpus` writes a sentence so that its cpulists break only between ranges
/// (`render::view::html_cpulists`; it escapes the text itself).
mod filters {
    use askama::filters::Safe;
    use askama::{Result, Values};

    #[askama::filter_fn]
    pub(crate) fn cpus<T: std::fmt::Display>(s: T, _: &dyn Values) -> Result<Safe<String>> {
        Ok(Safe(crate::render::view::html_cpulists(&s.to_string())))
    }
}

#[derive(Template)]
#[template(path = "scenario/page.html")]
pub(crate) struct ScenarioPage {
    pub(crate) title: String,
    pub(crate) v: ScenarioView,
}

impl From<ScenarioView> for ScenarioPage {
    fn from(v: ScenarioView) -> Self {
        ScenarioPage {
            title: v.title.clone(),
            v,
        }
    }
}

/// The result block alone: what `POST /fragment` answers and the editor swaps in.
#[derive(Template)]
#[template(path = "scenario/result.html")]
pub(crate) struct ResultFragment {
    pub(crate) r: ResultView,
}

#[derive(Template)]
#[template(path = "compare/page.html")]
pub(crate) struct ComparePage {
    pub(crate) title: String,
    pub(crate) v: CompareView,
}

impl From<CompareView> for ComparePage {
    fn from(v: CompareView) -> Self {
        ComparePage {
            title: v.title.clone(),
            v,
        }
    }
}

#[derive(Template)]
#[template(path = "mana/page.html")]
pub(crate) struct ManaPage {
    pub(crate) title: String,
    pub(crate) v: ManaView,
}

impl From<ManaView> for ManaPage {
    fn from(v: ManaView) -> Self {
        ManaPage {
            title: v.title.clone(),
            v,
        }
    }
}

#[derive(Template)]
#[template(path = "sched/page.html")]
pub(crate) struct SchedPage {
    pub(crate) title: String,
    pub(crate) v: SchedView,
}

impl From<SchedView> for SchedPage {
    fn from(v: SchedView) -> Self {
        SchedPage {
            title: v.title.clone(),
            v,
        }
    }
}

#[derive(Template)]
#[template(path = "blkmq/page.html")]
pub(crate) struct BlkMqPage {
    pub(crate) title: String,
    pub(crate) v: BlkMqView,
}

impl From<BlkMqView> for BlkMqPage {
    fn from(v: BlkMqView) -> Self {
        BlkMqPage {
            title: v.title.clone(),
            v,
        }
    }
}

#[derive(Template)]
#[template(path = "sweep/page.html")]
pub(crate) struct SweepPage {
    pub(crate) title: String,
    pub(crate) v: SweepView,
}

impl From<SweepView> for SweepPage {
    fn from(v: SweepView) -> Self {
        SweepPage {
            title: v.title.clone(),
            v,
        }
    }
}

#[derive(Template)]
#[template(path = "seeds/page.html")]
pub(crate) struct SeedsPage {
    pub(crate) title: String,
    pub(crate) v: SeedsView,
}

impl From<SeedsView> for SeedsPage {
    fn from(v: SeedsView) -> Self {
        SeedsPage {
            title: v.title.clone(),
            v,
        }
    }
}

#[derive(Template)]
#[template(path = "fleet/fleet.html")]
pub(crate) struct FleetPage {
    pub(crate) title: String,
    pub(crate) v: FleetView,
}

impl From<FleetView> for FleetPage {
    fn from(v: FleetView) -> Self {
        FleetPage {
            title: v.title.clone(),
            v,
        }
    }
}
