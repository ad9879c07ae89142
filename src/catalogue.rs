//! Preset machines.
