//! `rocelab replay`: captures through the switch core in capture time.

use super::{Counters, JsonReport, Preset, SwitchConfigArgs, key_value};
use anyhow::Result;
use rocelab::replay::{self, Inputs, ReplayOptions, SplitBy};
use std::path::PathBuf;

/// Replay captures through the switch core in capture time and write what it sends.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// A capture played by the link peer of port PORT (repeatable). A port not in the
    /// configuration takes its port defaults.
    #[arg(long = "in", value_name = "PORT=FILE")]
    inputs: Vec<String>,
    /// Split the captures given after the options into ports by source MAC (one port per
    /// unicast address) or by VLAN id.
    #[arg(long, value_enum)]
    split_by: Option<SplitBy>,
    /// Captures to split (with --split-by).
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    switch: SwitchConfigArgs,
    /// Play time this many times faster (0.5 = twice as slow).
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Start every input at the same time as the earliest one.
    #[arg(long)]
    align_start: bool,
    /// The link peers ignore PFC and PAUSE, as a broken NIC would.
    #[arg(long)]
    peer_ignores_pause: bool,
    /// The pcapng to write: one interface per port (without it, only the counters); `-`:
    /// standard output (`--pcap - | rocelab inspect -`), the text then going to standard
    /// error.
    #[arg(long = "pcap", alias = "out", value_name = "FILE")]
    out: Option<PathBuf>,
    /// Also write the counters and the summary as JSON (`-`: standard output, the text
    /// then going to standard error).
    #[arg(long = "json", alias = "report", value_name = "FILE")]
    report: Option<PathBuf>,
    /// How to print the switch counters: table (a row per port and class), wide (every
    /// counter), sonic (`show pfc counters`, `show queue counters`, `show queue wredcounters`,
    /// `show pfcwd stats`) or nxos (`show
    /// interface priority-flow-control`, `show queuing interface`).
    #[arg(long, value_enum, default_value_t = Counters::Table)]
    counters: Counters,
}

/// Runs `rocelab replay`.
pub(crate) fn run(args: Args) -> Result<()> {
    let config = args.switch.load(Preset::Default)?;
    let inputs = match (args.split_by, args.inputs.is_empty()) {
        (Some(_), false) => {
            anyhow::bail!("give either --in PORT=FILE or --split-by with captures, not both")
        }
        (Some(by), true) => Inputs::Split(by, args.files.clone()),
        (None, _) => {
            if !args.files.is_empty() {
                anyhow::bail!(
                    "captures given without a port: use --in PORT=FILE, or --split-by mac|vlan FILE..."
                );
            }
            let mut bound = Vec::new();
            for spec in &args.inputs {
                let (port, file) = key_value("--in", spec, "PORT=FILE", "p1=host1.pcap")?;
                bound.push((port.to_owned(), PathBuf::from(file)));
            }
            Inputs::Bound(bound)
        }
    };
    let inputs_read: Vec<PathBuf> = match &inputs {
        Inputs::Bound(bound) => bound.iter().map(|(_, p)| p.clone()).collect(),
        Inputs::Split(_, paths) => paths.clone(),
    };
    if let (Some(pcap), Some(json)) = (&args.out, &args.report)
        && rocelab::output::same_destination(pcap, json)
    {
        if rocelab::output::is_stdout(pcap) {
            anyhow::bail!(
                "--pcap {} and --json {} both name standard output: give one of them a file",
                pcap.display(),
                json.display()
            );
        }
        anyhow::bail!(
            "--pcap and --json both name {}: give each output a file of its own",
            pcap.display()
        );
    }
    if args.out.as_deref().is_some_and(rocelab::output::is_stdout) {
        super::text_to_stderr();
    }
    let report = JsonReport::create(args.report.as_deref(), &inputs_read)?;
    let opts = ReplayOptions {
        config,
        inputs,
        speed: args.speed,
        align_start: args.align_start,
        peer_ignores_pause: args.peer_ignores_pause,
        out: args.out.clone(),
    };
    let (summary, switch) = replay::run(&opts)?;
    sayln!(
        "replayed {} frames through {} ports in {} of virtual time; {} frames out ({} PFC, {} CE-marked){}",
        summary.frames_in,
        summary.ports.len(),
        rocelab::time::Nanos(summary.duration_ns).human(),
        summary.frames_out,
        summary.pfc_frames_out,
        summary.frames_marked,
        args.out.as_deref().map_or_else(String::new, |p| format!(
            " to {}",
            rocelab::output::display_name(p)
        ))
    );
    if summary.frames_cut > 0 {
        sayln!(
            "{} frames were cut short by the capture (snaplen): replayed at their original length, zero-padded (their ICRC no longer verifies)",
            summary.frames_cut
        );
    }
    if summary.frames_untimed > 0 {
        sayln!(
            "{} frames had no timestamp (pcapng simple packet blocks): each entered at the time of the frame before it in its capture (those before its first timed frame at that frame's time)",
            summary.frames_untimed
        );
    }
    if summary.frames_skipped > 0 {
        sayln!(
            "{} frames too short to carry a source MAC (12 bytes) were skipped",
            summary.frames_skipped
        );
    }
    for w in switch.warnings() {
        noteln!("rocelab: warning: {}", w.message);
    }
    let drops: Vec<serde_json::Value> = switch
        .drops()
        .iter()
        .map(|d| {
            let why = d.explain(switch.config(), rocelab::time::Nanos(summary.start_ns));
            sayln!("drop: {why}");
            serde_json::json!({
                "port": switch.config().ports[d.port].name,
                "class": d.class,
                "queue": d.queue,
                "cause": d.cause,
                "at_ns": d.at.0,
                "at": rocelab::time::epoch_seconds_string(d.at.0),
                "explanation": why,
            })
        })
        .collect();
    say!(
        "{}",
        rocelab::report::counters::render(&switch, args.counters.style())
    );
    report.write(&rocelab::report::document(
        "replay",
        serde_json::json!({
            "summary": summary,
            "start": rocelab::time::epoch_seconds_string(summary.start_ns),
            "ports": rocelab::report::ports(&switch),
            "warnings": switch.warnings(),
            "drops": drops,
            "config": rocelab::report::configs(Some(switch.config()), None),
        }),
    ))?;
    Ok(())
}
