//! Helpers shared by integration tests.
#![allow(dead_code)]

pub mod browser;
pub mod cli;
pub mod fs;
pub mod http;
pub mod machines;
pub mod module_graph;
pub mod process;
