//! `/sweep`, `/sweep/text`, `/sweep/csv`, `/sweep/json`, all from the same query: the query
//! resolved into a `SweepConfig` (`render::view::sweep`; a `c:NAME` variant is built C this
//! server registered), one core call (`sweep::run_until`, through `work::Work`: estimated
//! first, on a blocking thread, stopped at the deadline), and the page or twin.

use super::kernel_c::KernelCRegistry;
use super::pages::{render_page, SweepPage};
use super::work::{Estimate, Work};
use super::{text, AppError, AppState};
use crate::analysis::orders::Orders;
use crate::analysis::sweep::{self, Sweep, SweepConfig};
use crate::render;
use crate::render::view::sweep::{link, query_string, SweepQuery, SweepView};
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

/// Sample sizes tried, largest first, when every order would cost more than the budget.
const BUDGET_SAMPLES: [u32; 6] = [2_000, 1_000, 500, 200, 100, 50];

/// `config` as it may run within `budget_ms`: every order (`orders=all`) when that fits, else
/// the largest sample of [`BUDGET_SAMPLES`] that fits (seed 0), marked so the pages say so;
/// when none fits, unchanged (and refused with the numbers).
pub(crate) fn within_budget(mut config: SweepConfig, budget_ms: u64) -> SweepConfig {
    let all = Estimate::sweep(&config);
    if config.orders != Orders::All || all.cpu_ms <= budget_ms {
        return config;
    }
    for n in BUDGET_SAMPLES {
        let sampled = SweepConfig {
            orders: Orders::Sample { n, seed: 0 },
            ..config.clone()
        };
        if Estimate::sweep(&sampled).cpu_ms <= budget_ms {
            config.orders = sampled.orders;
            config.sampled_for_budget = Some(all.runs);
            return config;
        }
    }
    config
}

/// The sweep of a query, within the request's budget and deadline (`web::work`).
async fn run(q: &SweepQuery, kernel_c: &KernelCRegistry, work: Work) -> Result<Sweep, AppError> {
    let config = within_budget(q.config(kernel_c)?, work.budget_ms());
    let estimate = Estimate::sweep(&config);
    work.run(estimate, move |deadline| {
        sweep::run_until(&config, &|| deadline.expired()).map_err(|e| AppError::BadInput(e.to_string()))
    })
    .await
}

pub(crate) async fn sweep_page(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<SweepQuery>,
) -> Result<Html<String>, AppError> {
    let s = run(&q, &state.kernel_c, work).await?;
    let view = SweepView::new(&s, query_string(&q), q.base.as_deref())?;
    Ok(Html(render_page(&SweepPage::from(view), &state.kernel_c)?))
}

pub(crate) async fn sweep_text(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<SweepQuery>,
) -> Result<Response, AppError> {
    Ok(text(render::sweep::text(&run(&q, &state.kernel_c, work).await?)))
}

pub(crate) async fn sweep_csv(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<SweepQuery>,
) -> Result<Response, AppError> {
    let body = render::sweep::csv(&run(&q, &state.kernel_c, work).await?, &link);
    Ok(([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], body).into_response())
}

pub(crate) async fn sweep_json(
    work: Work,
    State(state): State<AppState>,
    Query(q): Query<SweepQuery>,
) -> Result<axum::Json<serde_json::Value>, AppError> {
    Ok(axum::Json(render::sweep::json(
        &run(&q, &state.kernel_c, work).await?,
        &link,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every order when it fits the budget; else the largest sample that fits, marked with
    /// the runs every order would take; unchanged when even the smallest sample does not fit.
    #[test]
    fn all_over_the_budget_becomes_the_largest_sample_that_fits() {
        let config = SweepConfig {
            orders: Orders::All,
            ..crate::web::work::small_sweep("1x2 1x3 1x4 1x5 1x6 1x7")
        };
        let all = Estimate::sweep(&config);
        let fits = within_budget(config.clone(), all.cpu_ms);
        assert_eq!((fits.orders, fits.sampled_for_budget), (Orders::All, None));
        let half = within_budget(config.clone(), all.cpu_ms / 2);
        let Orders::Sample { n, seed: 0 } = half.orders else {
            panic!("{:?}", half.orders)
        };
        assert_eq!(half.sampled_for_budget, Some(all.runs));
        assert!(Estimate::sweep(&half).cpu_ms <= all.cpu_ms / 2);
        // The largest that fits: the next larger one would not.
        if let Some(&larger) = BUDGET_SAMPLES.iter().rev().find(|&&m| m > n) {
            let over = SweepConfig {
                orders: Orders::Sample { n: larger, seed: 0 },
                ..config.clone()
            };
            assert!(Estimate::sweep(&over).cpu_ms > all.cpu_ms / 2);
        }
        let none = within_budget(config, 0);
        assert_eq!((none.orders, none.sampled_for_budget), (Orders::All, None));
    }
}
