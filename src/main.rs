//! The `rocelab` command line.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use rocelab::config::SwitchConfig;
use rocelab::inspect::{self, InspectError, Output};
use rocelab::replay::{self, Inputs, ReplayOptions, SplitBy};
use std::fs::File;
use std::io::{self, BufReader, BufWriter};
use std::path::PathBuf;
use std::process::ExitCode;

/// A lossless-Ethernet lab for RoCEv2: a software switch with PFC and ECN, a RoCE endpoint
/// with DCQCN, pcap replay and a virtual-time simulator.
#[derive(Parser)]
#[command(name = "rocelab", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode a pcap or pcapng capture: RoCE headers, ICRC check, CNPs, PFC and PAUSE,
    /// with a per-QP and per-priority summary.
    Inspect {
        /// The capture file (pcap or pcapng, Ethernet).
        file: PathBuf,
        /// Print one JSON object per frame per line, then one summary object.
        #[arg(long)]
        json: bool,
    },
    /// Replay captures through the switch core in capture time and write what it sends.
    Replay(ReplayArgs),
    /// Print a built-in switch configuration, or check a configuration file.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Run the software switch live between network interfaces.
    Switch(NotYet),
    /// Run a RoCEv2 endpoint (RC traffic, ring all-reduce, DCQCN) on an interface.
    Endpoint(NotYet),
    /// Run a scenario (incast, ring) in deterministic virtual time.
    Sim(NotYet),
    /// Build namespaces and veths, run a ring all-reduce through the switch, report.
    Lab(NotYet),
}

#[derive(Subcommand)]
enum ConfigAction {
    /// Print a preset as a TOML file to start from: default, nexus-ai or sonic.
    Show {
        /// The preset.
        #[arg(default_value = "default")]
        preset: String,
    },
    /// Check a configuration file and print what it resolves to.
    Check {
        /// The TOML file.
        file: PathBuf,
    },
}

/// `rocelab replay`.
#[derive(clap::Args)]
struct ReplayArgs {
    /// A capture played by the link peer of port PORT (repeatable). A port not in the
    /// configuration takes its port defaults.
    #[arg(long = "in", value_name = "PORT=FILE")]
    inputs: Vec<String>,
    /// Split the captures given after the options into ports by source MAC (one port per
    /// unicast address) or by VLAN id.
    #[arg(long, value_name = "mac|vlan")]
    split_by: Option<String>,
    /// Captures to split (with --split-by).
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Switch configuration file (TOML).
    #[arg(long, conflicts_with = "preset")]
    config: Option<PathBuf>,
    /// Built-in configuration: default, nexus-ai or sonic.
    #[arg(long)]
    preset: Option<String>,
    /// Play time this many times faster (0.5 = twice as slow).
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Start every input at the same time as the earliest one.
    #[arg(long)]
    align_start: bool,
    /// The link peers ignore PFC and PAUSE, as a broken NIC would.
    #[arg(long)]
    peer_ignores_pause: bool,
    /// The pcapng to write: one interface per port.
    #[arg(long)]
    out: PathBuf,
    /// Also write the counters and the summary as JSON.
    #[arg(long)]
    report: Option<PathBuf>,
}

/// Arguments of a subcommand that is not built yet; accepted so that the command says so
/// rather than failing on its options.
#[derive(clap::Args)]
struct NotYet {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    args: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect { file, json } => run_inspect(file, json),
        Command::Replay(args) => run_replay(args),
        Command::Config { action } => run_config(action),
        Command::Switch(_) => not_yet("switch"),
        Command::Endpoint(_) => not_yet("endpoint"),
        Command::Sim(_) => not_yet("sim"),
        Command::Lab(_) => not_yet("lab"),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rocelab: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn not_yet(command: &str) -> Result<()> {
    anyhow::bail!(
        "'rocelab {command}' is not implemented yet; 'rocelab inspect', 'replay' and 'config' work today (see README.md)"
    )
}

fn run_inspect(path: PathBuf, json: bool) -> Result<()> {
    if path.is_dir() {
        anyhow::bail!(
            "{} is a directory; give a pcap or pcapng file",
            path.display()
        );
    }
    let file =
        File::open(&path).with_context(|| format!("cannot open capture {}", path.display()))?;
    let stdout = io::stdout().lock();
    let mut out = BufWriter::new(stdout);
    let format = if json { Output::Json } else { Output::Table };
    match inspect::run(BufReader::with_capacity(1 << 16, file), &mut out, format) {
        Ok(_) => Ok(()),
        // A closed pipe (`rocelab inspect f | head`) is not an error.
        Err(InspectError::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(InspectError::Capture { error, frames_read }) => {
            let printed = if frames_read > 0 {
                format!("; the {frames_read} frame(s) before that offset were printed above")
            } else {
                String::new()
            };
            Err(anyhow::anyhow!("{}: {error}{printed}", path.display()))
        }
        Err(e) => Err(e.into()),
    }
}

fn load_config(file: Option<&PathBuf>, preset: Option<&str>) -> Result<SwitchConfig> {
    match file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read configuration {}", path.display()))?;
            SwitchConfig::from_toml(&text)
                .with_context(|| format!("configuration {}", path.display()))
        }
        None => Ok(SwitchConfig::preset(preset.unwrap_or("default"))?),
    }
}

fn run_config(action: ConfigAction) -> Result<()> {
    match action {
        ConfigAction::Show { preset } => {
            let text = rocelab::config::preset_text(&preset).with_context(|| {
                format!(
                    "no preset named '{preset}'; the presets are {}",
                    rocelab::config::PRESETS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
            print!("{text}");
            Ok(())
        }
        ConfigAction::Check { file } => {
            let cfg = load_config(Some(&file), None)?;
            println!("{}: valid", file.display());
            println!("lossless priorities: {}", cfg.lossless);
            for pg in cfg.lossless.iter() {
                for port in cfg.ports.iter().chain([&cfg.port_defaults]) {
                    println!(
                        "  PG {pg} on {} ({} Gb/s, {} ns cable, MTU {}): headroom {} B",
                        port.name,
                        port.bits_per_sec as f64 / 1e9,
                        port.cable.0,
                        port.mtu,
                        cfg.headroom_bytes(usize::from(pg), port)
                    );
                }
            }
            Ok(())
        }
    }
}

fn run_replay(args: ReplayArgs) -> Result<()> {
    let config = load_config(args.config.as_ref(), args.preset.as_deref())?;
    let inputs = match (&args.split_by, args.inputs.is_empty()) {
        (Some(_), false) => {
            anyhow::bail!("give either --in PORT=FILE or --split-by with captures, not both")
        }
        (Some(key), true) => {
            let by = match key.as_str() {
                "mac" => SplitBy::Mac,
                "vlan" => SplitBy::Vlan,
                other => anyhow::bail!("--split-by {other}: split by 'mac' or 'vlan'"),
            };
            Inputs::Split(by, args.files.clone())
        }
        (None, _) => {
            if !args.files.is_empty() {
                anyhow::bail!(
                    "captures given without a port: use --in PORT=FILE, or --split-by mac|vlan FILE..."
                );
            }
            let mut bound = Vec::new();
            for spec in &args.inputs {
                let (port, file) = spec
                    .split_once('=')
                    .filter(|(p, f)| !p.is_empty() && !f.is_empty())
                    .with_context(|| {
                        format!("--in {spec}: expected PORT=FILE, e.g. --in p1=host1.pcap")
                    })?;
                bound.push((port.to_owned(), PathBuf::from(file)));
            }
            Inputs::Bound(bound)
        }
    };
    let opts = ReplayOptions {
        config,
        inputs,
        speed: args.speed,
        align_start: args.align_start,
        peer_ignores_pause: args.peer_ignores_pause,
        out: args.out.clone(),
    };
    let (summary, switch) = replay::run(&opts)?;
    println!(
        "replayed {} frames through {} ports in {} of virtual time; {} frames out ({} PFC, {} CE-marked) to {}",
        summary.frames_in,
        summary.ports.len(),
        rocelab::time::Nanos(summary.duration_ns),
        summary.frames_out,
        summary.pfc_frames_out,
        summary.frames_marked,
        args.out.display()
    );
    print!("{}", rocelab::report::counter_table(&switch));
    if let Some(path) = &args.report {
        let report = serde_json::json!({
            "summary": summary,
            "ports": rocelab::report::ports(&switch),
        });
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write report {}", path.display()))?;
    }
    Ok(())
}
