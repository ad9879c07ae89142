//! Scenario spec.
