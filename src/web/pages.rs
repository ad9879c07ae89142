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

/// A page: its template, the view `render::view` built (`v`) and the page title, which is the
/// view's own.
macro_rules! pages {
    ($($Page:ident($View:ident) = $path:tt,)*) => {
        $(
            #[derive(Template)]
            #[template(path = $path)]
            pub(crate) struct $Page {
                pub(crate) title: String,
                pub(crate) v: $View,
            }

            impl From<$View> for $Page {
                fn from(v: $View) -> Self {
                    $Page {
                        title: v.title.clone(),
                        v,
                    }
                }
            }
        )*
    };
}

pages! {
    ScenarioPage(ScenarioView) = "scenario/page.html",
    ComparePage(CompareView) = "compare/page.html",
    ManaPage(ManaView) = "mana/page.html",
    SchedPage(SchedView) = "sched/page.html",
    BlkMqPage(BlkMqView) = "blkmq/page.html",
    SweepPage(SweepView) = "sweep/page.html",
    SeedsPage(SeedsView) = "seeds/page.html",
    FleetPage(FleetView) = "fleet/fleet.html",
}

/// The result block alone: what `POST /fragment` answers and the editor swaps in.
#[derive(Template)]
#[template(path = "scenario/result.html")]
pub(crate) struct ResultFragment {
    pub(crate) r: ResultView,
}
