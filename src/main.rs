//! The `rocelab` command line: parses the arguments and hands each subcommand to its
//! module in `cli/`.

mod cli;

use clap::{Parser, Subcommand};
use std::io::Write as _;
use std::process::ExitCode;

/// A lossless-Ethernet lab for RoCEv2: a software switch with PFC and ECN, a RoCE endpoint
/// with DCQCN, pcap replay and a virtual-time simulator.
#[derive(Parser)]
#[command(
    name = "rocelab",
    version,
    about,
    long_about = None,
    after_help = "Flags that mean the same wherever they appear (`in:` the commands that take them):\n  \
        --config FILE | --preset NAME     the switch configuration\n      \
            in: replay, switch, conformance, sim, sweep, compare, lab\n  \
        --set KEY=VALUE                   change one key by its dotted path (sim, sweep and\n                                    \
                                          compare: a key of the scenario)\n      \
            in: replay, switch, conformance, sim, sweep, tune, compare, lab, config check\n  \
        --json FILE                       a machine report; `-` for standard output\n      \
            in: replay, switch, endpoint, conformance, sweep, compare; inspect --json takes no\n      \
            FILE and prints JSON lines; sim and lab write report.json into --out DIR\n  \
        --out DIR                         a run's bundle: report.json, series.csv, plots\n      \
            in: sim, lab, sweep, tune, compare; config import --out FILE is the TOML it writes\n  \
        --rate GBPS                       a link rate\n      \
            in: lab, endpoint\n  \
        --counters table|wide|sonic|nxos  how switch counters are printed\n      \
            in: replay, switch, sim, lab\n  \
        --io mmap|pnet                    the socket backend (default mmap)\n      \
            in: switch, endpoint, lab, traffic count\n\
        Sizes take K, M and G suffixes (powers of 1024), on the command line and in TOML."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Every subcommand takes `--rate -1` as a value (refused with its range by the option's
/// own check), not as an unknown flag `-1`.
#[derive(Subcommand)]
enum Command {
    #[command(allow_negative_numbers = true)]
    Inspect(cli::inspect::Args),
    #[command(allow_negative_numbers = true)]
    Replay(cli::replay::Args),
    #[command(allow_negative_numbers = true)]
    Config(cli::config::Args),
    #[command(allow_negative_numbers = true)]
    Conformance(cli::conformance::Args),
    #[command(allow_negative_numbers = true)]
    Switch(cli::switch::Args),
    #[command(allow_negative_numbers = true)]
    Endpoint(cli::endpoint::Args),
    #[command(allow_negative_numbers = true)]
    Sim(cli::sim::Args),
    #[command(allow_negative_numbers = true)]
    Sweep(cli::sweep::Args),
    #[command(allow_negative_numbers = true)]
    Tune(cli::tune::Args),
    #[command(allow_negative_numbers = true)]
    Compare(cli::compare::Args),
    #[command(allow_negative_numbers = true)]
    Traffic(cli::traffic::Args),
    #[command(allow_negative_numbers = true)]
    Lab(cli::lab::Args),
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Inspect(args) => cli::inspect::run(args),
        Command::Replay(args) => cli::replay::run(args),
        Command::Config(args) => cli::config::run(args),
        Command::Conformance(args) => cli::conformance::run(args),
        Command::Switch(args) => cli::switch::run(args),
        Command::Endpoint(args) => cli::endpoint::run(args),
        Command::Sim(args) => cli::sim::run(args),
        Command::Sweep(args) => cli::sweep::run(args),
        Command::Tune(args) => cli::tune::run(args),
        Command::Compare(args) => cli::compare::run(args),
        Command::Traffic(args) => cli::traffic::run(args),
        Command::Lab(args) => cli::lab::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "rocelab: {e:#}");
            ExitCode::FAILURE
        }
    }
}
