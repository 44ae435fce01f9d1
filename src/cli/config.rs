//! `rocelab config`: the presets, and checking a configuration file.

use super::Preset;
use anyhow::{Context as _, Result};
use std::path::PathBuf;

/// List or print the built-in switch configurations, or check a configuration file.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand, Debug)]
enum Action {
    /// List the presets, a line each.
    List,
    /// Print a preset as a TOML file to start from, or `endpoint`: the endpoint's and
    /// DCQCN's defaults, with comments.
    Show {
        /// default, nexus-ai, sonic, or endpoint.
        #[arg(default_value = "default", value_parser = show_name)]
        preset: String,
    },
    /// Import a switch's own QoS configuration as rocelab TOML, a comment on every value
    /// naming where it came from; warnings go to standard error.
    Import {
        /// What the file is: a SONiC CONFIG_DB JSON document (config_db.json) or the QoS
        /// part of an NX-OS running-config.
        #[arg(value_enum)]
        format: ImportFormat,
        /// The file to read (`-`: standard input).
        file: PathBuf,
        /// Write the TOML here instead of standard output (`-`: standard output).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Check a configuration file and print what it resolves to.
    Check {
        /// Switch configuration file (TOML) to check.
        file: PathBuf,
        /// Change one key by its dotted path before checking, as every command that
        /// reads a configuration does (repeatable): `--set buffer.shared_bytes=4M`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
}

/// A name `config show` takes: a preset or `endpoint`.
fn show_name(s: &str) -> Result<String, String> {
    use clap::ValueEnum as _;
    if s == "endpoint" || Preset::from_str(s, false).is_ok() {
        Ok(s.to_owned())
    } else {
        Err("give default, nexus-ai, sonic (switch presets) or endpoint".into())
    }
}

/// The formats `config import` reads.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ImportFormat {
    /// SONiC CONFIG_DB JSON (`config_db.json`, `sonic-cfggen -d --print-data`).
    Sonic,
    /// NX-OS running-config (`show running-config ipqos` and the interfaces).
    Nxos,
}

/// Reads `file`, `-` being standard input, as configuration text.
fn read_source(file: &std::path::Path) -> Result<String> {
    if file == std::path::Path::new("-") {
        use std::io::Read as _;
        let mut text = String::new();
        std::io::stdin()
            .take(rocelab::config::MAX_CONFIG_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| anyhow::anyhow!("standard input: {e}"))?;
        anyhow::ensure!(
            text.len() as u64 <= rocelab::config::MAX_CONFIG_BYTES,
            "standard input: more than 4 MiB; configurations are a few hundred KB at most"
        );
        return Ok(text);
    }
    Ok(rocelab::config::read_text(file)?)
}

/// Runs `rocelab config`.
pub(crate) fn run(args: Args) -> Result<()> {
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
            sayln!(
                "{:<10} The endpoint's and DCQCN's defaults (`config show endpoint`)",
                "endpoint"
            );
            Ok(())
        }
        Action::Show { preset } => {
            let text = if preset == "endpoint" {
                rocelab::config::ENDPOINT_DEFAULTS
            } else {
                rocelab::config::preset_text(&preset)
                    .ok_or_else(|| anyhow::anyhow!("no preset named '{preset}'"))?
            };
            say!("{text}");
            Ok(())
        }
        Action::Import { format, file, out } => {
            let text = read_source(&file)?;
            let name = file.display().to_string();
            let imported = match format {
                ImportFormat::Sonic => rocelab::config::import::sonic::import(&text, &name),
                ImportFormat::Nxos => rocelab::config::import::nxos::import(&text, &name),
            }
            .with_context(|| format!("importing {name}"))?;
            for w in &imported.warnings {
                // Sources and messages quote the input (a port name may hold a newline).
                let one_line = rocelab::config::import::one_line;
                noteln!("warning: {}: {}", one_line(&w.source), one_line(&w.message));
            }
            match out {
                // `-` is standard output, as for every output file.
                Some(path) if !rocelab::output::is_stdout(&path) => {
                    rocelab::output::refuse_inputs(&path, &[&file])?;
                    rocelab::output::write_whole(&path, imported.toml.as_bytes())?;
                    noteln!(
                        "rocelab: wrote {} ({} warning(s)); check it with `rocelab conformance --config {}`",
                        path.display(),
                        imported.warnings.len(),
                        path.display()
                    );
                }
                _ => say!("{}", imported.toml),
            }
            Ok(())
        }
        Action::Check { file, set } => {
            let source = super::SwitchConfigArgs {
                config: Some(file),
                preset: None,
                set,
            };
            let cfg = source.load(Preset::Default)?;
            sayln!("{}: valid", source.describe(Preset::Default));
            for w in cfg.lint() {
                sayln!("warning: {}: {}", w.key, w.message);
            }
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
                        "  PG {pg} on {} ({} Gb/s, {} ns cable, MTU {}): headroom {} B ({how}; the IEEE formula gives {} B, mlx5e's {} B, SONiC's Spectrum-1 {} B)",
                        port.name,
                        port.bits_per_sec as f64 / 1e9,
                        port.cable.0,
                        port.mtu,
                        cfg.headroom_bytes(usize::from(pg), port),
                        rocelab::config::headroom::min_headroom_bytes(port),
                        rocelab::config::headroom::mlx5_headroom_bytes(port),
                        rocelab::config::headroom::sonic_mellanox_headroom_bytes(port)
                    );
                }
            }
            Ok(())
        }
    }
}
