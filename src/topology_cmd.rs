//! `irqscope topology …`: list the catalogue, show a machine.

use clap::Subcommand;
use irqscope::catalogue;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum TopologyCommand {
    /// List the preset machines.
    List,
    /// Show a preset or a topology file as a tree folded with cpulists.
    Show {
        /// Preset name or file path.
        topology: String,
    },
}

pub fn run(cmd: TopologyCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TopologyCommand::List => {
            for (name, loaded) in catalogue::all() {
                match loaded {
                    Ok(t) => println!("{name:<32} {}", t.name()),
                    Err(e) => println!("{name:<32} INVALID: {e}"),
                }
            }
        }
        TopologyCommand::Show { topology } => {
            let t = crate::load_topology(&topology)?;
            print!("{}", irqscope::render::text::topology_tree(&t));
        }
    }
    Ok(ExitCode::SUCCESS)
}
