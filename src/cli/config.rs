//! `rocelab config`: the presets, and checking a configuration file.

use super::{Preset, load_switch_config};
use anyhow::Result;
use std::path::PathBuf;

/// List or print the built-in switch configurations, or check a configuration file.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand, Debug)]
enum Action {
    /// List the presets, a line each.
    List,
    /// Print a preset as a TOML file to start from.
    Show {
        /// Which built-in configuration to print.
        #[arg(value_enum, default_value_t = Preset::Default)]
        preset: Preset,
    },
    /// Check a configuration file and print what it resolves to.
    Check {
        /// Switch configuration file (TOML) to check.
        file: PathBuf,
    },
}

/// Runs `rocelab config`.
pub fn run(args: Args) -> Result<()> {
    match args.action {
        Action::List => {
            use clap::ValueEnum as _;
            for p in Preset::value_variants() {
                let help = p
                    .to_possible_value()
                    .and_then(|v| v.get_help().map(ToString::to_string))
                    .unwrap_or_default();
                sayln!("{:<10} {help}", p.name());
            }
            Ok(())
        }
        Action::Show { preset } => {
            let text = rocelab::config::preset_text(preset.name())
                .ok_or_else(|| anyhow::anyhow!("no preset named '{}'", preset.name()))?;
            say!("{text}");
            Ok(())
        }
        Action::Check { file } => {
            let cfg = load_switch_config(&file)?;
            sayln!("{}: valid", file.display());
            sayln!("lossless priorities: {}", cfg.lossless);
            for pg in cfg.lossless.iter() {
                for port in cfg.ports.iter().chain([&cfg.port_defaults]) {
                    let how = match cfg.pgs[usize::from(pg)].headroom_bytes {
                        Some(_) => "as configured".to_owned(),
                        None => {
                            format!("buffer.headroom_model = \"{}\"", cfg.headroom_model.name())
                        }
                    };
                    sayln!(
                        "  PG {pg} on {} ({} Gb/s, {} ns cable, MTU {}): headroom {} B ({how}; the IEEE formula gives {} B, mlx5e's {} B)",
                        port.name,
                        port.bits_per_sec as f64 / 1e9,
                        port.cable.0,
                        port.mtu,
                        cfg.headroom_bytes(usize::from(pg), port),
                        rocelab::config::headroom::min_headroom_bytes(port),
                        rocelab::config::headroom::mlx5_headroom_bytes(port)
                    );
                }
            }
            Ok(())
        }
    }
}
