//! The `rocelab` command line.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use rocelab::inspect::{self, InspectError, Output};
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
    Replay(NotYet),
    /// Run the software switch live between network interfaces.
    Switch(NotYet),
    /// Run a RoCEv2 endpoint (RC traffic, ring all-reduce, DCQCN) on an interface.
    Endpoint(NotYet),
    /// Run a scenario (incast, ring) in deterministic virtual time.
    Sim(NotYet),
    /// Build namespaces and veths, run a ring all-reduce through the switch, report.
    Lab(NotYet),
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
        Command::Replay(_) => not_yet("replay"),
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
        "'rocelab {command}' is not implemented yet; 'rocelab inspect' works today (see README.md)"
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
