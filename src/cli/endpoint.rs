//! `rocelab endpoint`: one RoCEv2 endpoint live on an interface.

use super::{
    JsonReport, LiveArgs, SizeSweepArgs, checked_cores, interface_mac, load_endpoint_config,
    seconds,
};
use anyhow::{Context, Result};
use rocelab::config::endpoint::EndpointConfig;
use rocelab::endpoint::app::Application as _;
use rocelab::endpoint::app::allreduce::AllReduceResult;
use rocelab::report::{self, nccl};
use rocelab::runtime::CoreList;
use rocelab::runtime::peers::parse_peers;
use rocelab::runtime::rank::{self, Progress, RankOptions, Work};
use rocelab::runtime::{self, hosts};
use rocelab::time::Nanos;
use std::path::PathBuf;

/// What the endpoint does.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// A rank of a ring all-reduce sweep over every peer.
    Allreduce,
    /// A bulk flow to --to.
    Send,
    /// Answer the peers' flows.
    Receive,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Allreduce => "allreduce",
            Mode::Send => "send",
            Mode::Receive => "receive",
        }
    }
}

/// Run one RoCEv2 endpoint (RC, DCQCN, PFC) live on an interface: a rank of a ring
/// all-reduce sweep, a bulk sender, or a receiver (as root).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The interface (in this network namespace).
    #[arg(long)]
    iface: String,
    /// The peers file: `[[peer]]` entries with rank, mac, ip and qpn.
    #[arg(long)]
    peers: PathBuf,
    /// This endpoint's rank in the peers file.
    #[arg(long)]
    rank: usize,
    /// What to run.
    #[arg(long, value_enum, default_value_t = Mode::Allreduce)]
    mode: Mode,
    /// send: the receiving rank.
    #[arg(long)]
    to: Option<usize>,
    /// send: bytes to send (K, M, G suffixes allowed; default: send until --limit or
    /// Ctrl-C, which is then how the run ends, not a failure).
    #[arg(long, value_parser = rocelab::bytes::parse)]
    bytes: Option<u64>,
    /// send: message size (K, M, G suffixes allowed).
    #[arg(long, default_value = "64K", value_parser = rocelab::bytes::parse)]
    message_bytes: u64,
    /// allreduce: the sizes, -b, -e, -f as nccl-tests takes them.
    #[command(flatten)]
    size_sweep: SizeSweepArgs,
    /// Seed of the all-reduce data.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Endpoint configuration (TOML: mtu, dscp, dcqcn, ...; `rocelab config show
    /// endpoint` prints the defaults), as `lab --endpoint-config`.
    #[arg(long = "endpoint-config", alias = "config", value_name = "FILE")]
    config: Option<PathBuf>,
    /// NIC line rate in Gb/s (the pacer's ceiling), instead of the configuration's.
    #[arg(long = "rate", alias = "link-gbps", value_name = "GBPS")]
    link_gbps: Option<f64>,
    /// Start at this wall-clock time (Unix milliseconds), so ranks start together.
    #[arg(long, value_name = "UNIX_MS")]
    start_at: Option<u64>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60.0)]
    limit: f64,
    /// After finishing, keep answering the peers this many seconds.
    #[arg(long, default_value_t = 0.5)]
    linger: f64,
    #[command(flatten)]
    live: LiveArgs,
    /// CPU core to pin to, e.g. 2: one thread runs the endpoint and its port, to
    /// completion, on the first core listed.
    #[arg(long)]
    cores: Option<CoreList>,
    /// Write what happened as JSON (`-`: standard output, the text then going to
    /// standard error), also when the run fails or is stopped: `done` and `error` say so.
    #[arg(long = "json", alias = "report", value_name = "FILE")]
    report: Option<PathBuf>,
}

/// How far off `wait` is, as a reader takes it in: "2.5 s", "3 h 20 min", "3171 years".
fn far(wait: std::time::Duration) -> String {
    let secs = wait.as_secs();
    const DAY: u64 = 24 * 3600;
    const YEAR: u64 = 365 * DAY + DAY / 4;
    match secs {
        0..60 => format!("{:.3} s", wait.as_secs_f64()),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        3600..DAY => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
        DAY..YEAR => format!("{} days {} h", secs / DAY, secs % DAY / 3600),
        _ => format!("{} years", secs / YEAR),
    }
}

/// The largest path MTU (a power of two from 256 to 4096) whose packets fit an interface
/// MTU of `iface_mtu` bytes, or 256 if none does.
fn largest_path_mtu(iface_mtu: usize) -> usize {
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|&m| rocelab::wire::roce::ipv4_packet_len_for(m) <= iface_mtu)
        .unwrap_or(256)
}

/// Runs `rocelab endpoint`.
pub(crate) fn run(args: Args) -> Result<()> {
    let report = JsonReport::create(args.report.as_deref(), &[&args.peers])?;
    let opts = options(&args)?;
    // From here on a signal ends the run with its report: building the buffers of a
    // large sweep takes seconds, and a Ctrl-C then must not kill it outright (nor leave
    // the report's staging file behind).
    let stop = runtime::stop_on_signals()?;
    // This rank's view: each size from this rank's start to its end, printed as nccl-tests
    // does, a row as each size finishes.
    let ranks = opts.peers.len();
    let this_rank = |r: AllReduceResult| AllReduceResult { ranks, ..r };
    if args.mode == Mode::Allreduce {
        say!(
            "{}",
            nccl::head(
                &format!(
                    "rank {} of {ranks}: ring all-reduce, float sum (this rank's view)",
                    args.rank
                ),
                &[]
            )
        );
    }
    let mut printed = 0;
    let mut progress = |p: Progress| match p {
        Progress::Finished(rows) => {
            for r in rows {
                say!("{}", nccl::row(&this_rank(r), &[]));
                printed += 1;
            }
        }
        Progress::Duplicates(n) => noteln!(
            "warning: {n} data packets received as duplicates of ones accepted before, discarded: retransmissions after lost ACKs, or a sender run again against this receiver (it restarts at PSN 0, which this receiver has passed, and sees its data acknowledged although it was discarded here); a receiver serves one run of each sender: restart it for the next"
        ),
    };
    let outcome = rank::run(&opts, &stop, &mut progress)?;
    let rows: Vec<AllReduceResult> = outcome.app.size_sweep().map_or_else(Vec::new, |sweep| {
        sweep
            .results(&outcome.endpoint)
            .into_iter()
            .map(|r| this_rank(AllReduceResult::over_ranks(r.size, [r])))
            .collect()
    });
    if outcome.app.size_sweep().is_some() {
        // The sizes the sampler did not see finish: the last one, and any that did not.
        for r in rows.iter().skip(printed) {
            say!(
                "{}",
                nccl::row_unfinished_as(r, &[], super::unfinished(&stop))
            );
        }
        say!(
            "{}",
            nccl::foot_unfinished_as(&rows, super::unfinished(&stop))
        );
    }
    let counters = outcome.endpoint.counters();
    // An endless send (no --bytes) ends at --limit or Ctrl-C: that is its end, not a
    // failure. Its transfer lasts to the run's end; a bounded one's to its last ACK.
    let endless = args.mode == Mode::Send && args.bytes.is_none();
    let sent = outcome.app.flow().map(|flow| {
        // Both times are on the run's clock: the transfer is the time between them, not
        // the finish (which counts the wait for --start-at too).
        let end = flow.finished().or(endless.then_some(outcome.end));
        let time = end.map(|t| t.saturating_sub(flow.start()));
        let gbps = time
            .filter(|t| t.0 > 0)
            .map(|t| flow.completed_bytes() as f64 * 8.0 / t.0 as f64);
        (flow.completed_bytes(), time, gbps)
    });
    if let Some((bytes, time, gbps)) = sent {
        sayln!(
            "sent {bytes} bytes{}{}",
            time.map_or_else(String::new, |t| format!(" in {}", t.human())),
            gbps.map_or_else(String::new, |g| format!(" ({g:.3} Gb/s)"))
        );
    }
    print_counters(&outcome);
    // The report is that of the run however it ended: a rank that failed or was stopped
    // says how far it got and why (docs/limits.md); it is the record to look at when
    // one rank of several did not finish.
    let wrong: u64 = rows.iter().filter_map(|r| r.wrong).sum();
    let failure = failure(
        &args,
        &outcome,
        sent.map(|s| s.0),
        wrong,
        runtime::stopped(&stop),
    );
    let ended = if outcome.error.is_some() {
        "error"
    } else if outcome.app.done() {
        "done"
    } else if runtime::stopped(&stop) {
        "interrupted"
    } else {
        "limit"
    };
    report.write(&rocelab::report::document(
        "endpoint",
        serde_json::json!({
            "rank": args.rank, "mode": args.mode.name(),
            "done": outcome.app.done() || (endless && failure.is_none()),
            "ended": ended,
            "error": failure,
            "sent_bytes": sent.map(|s| s.0),
            "sent_gbps": sent.and_then(|s| s.2),
            "allreduce": rows, "counters": counters, "kernel": outcome.kernel,
            "thread": outcome.thread,
            "config": rocelab::report::configs(None, Some(&opts.endpoint.cfg)),
        }),
    ))?;
    match failure {
        Some(why) => Err(anyhow::anyhow!(why)),
        None => Ok(()),
    }
}

/// Why the run failed, if it did: a port's error, an endless send that nothing
/// acknowledged, work unfinished, or wrong sums.
fn failure(
    args: &Args,
    outcome: &hosts::EndpointOutcome,
    sent_bytes: Option<u64>,
    wrong: u64,
    stopped: bool,
) -> Option<String> {
    let endless = args.mode == Mode::Send && args.bytes.is_none();
    if let Some(e) = &outcome.error {
        Some(format!("stopped: {e}"))
    } else if endless && sent_bytes == Some(0) {
        // Sending until the end is the work, but a receiver that acknowledged nothing
        // (absent, or discarding it all) makes it a failure.
        Some(format!(
            "nothing acknowledged by rank {} before {}",
            args.to.unwrap_or(0),
            if stopped {
                "Ctrl-C or SIGTERM"
            } else {
                "--limit"
            }
        ))
    } else if args.mode != Mode::Receive && !endless && !outcome.app.done() {
        Some(if stopped {
            "interrupted (Ctrl-C or SIGTERM) before the work finished".to_owned()
        } else {
            "not finished before --limit".to_owned()
        })
    } else if wrong > 0 {
        Some(format!("{wrong} values differ from the expected sum"))
    } else {
        None
    }
}

/// The rank's options from the flags, checked in the order a reader gives them: the
/// peers file and the values first, then the interface (as `traffic send` checks them).
fn options(args: &Args) -> Result<RankOptions> {
    let text = std::fs::read_to_string(&args.peers)
        .with_context(|| format!("cannot read peers file {}", args.peers.display()))?;
    let peers = parse_peers(&text).with_context(|| format!("{}", args.peers.display()))?;
    let me = peers.get(args.rank).with_context(|| {
        format!(
            "--rank {}: the peers file has ranks 0 to {}",
            args.rank,
            peers.len() - 1
        )
    })?;
    let mut cfg = match &args.config {
        Some(path) => load_endpoint_config(path)?,
        None => EndpointConfig::default(),
    };
    if let Some(g) = args.link_gbps {
        cfg.link_gbps = g;
    }
    cfg.validate("endpoint")?;
    let start = match args.start_at {
        Some(ms) => {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)?
                .as_millis() as u64;
            if ms < now_ms {
                // The other ranks may be running already: this one joins late.
                noteln!(
                    "warning: --start-at {ms} was {} ms ago when this endpoint was ready: starting now",
                    now_ms - ms
                );
            }
            // In ms, as given: in ns, a time more than 584 years away does not fit.
            let wait = std::time::Duration::from_millis(ms.saturating_sub(now_ms));
            if wait >= seconds("--limit", args.limit)? {
                anyhow::bail!(
                    "--start-at {ms} is {} from now, past --limit ({} s): the run would end before it starts; give a nearer time (ms since the Unix epoch) or a longer --limit",
                    far(wait),
                    args.limit
                );
            }
            // Below --limit (at most 1e9 s): it fits.
            Nanos(u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX))
        }
        None => Nanos::ZERO,
    };
    let message_bytes = usize::try_from(args.message_bytes)
        .ok()
        .filter(|&m| (1..=1 << 30).contains(&m))
        .context("--message-bytes: give 1 byte to 1 GiB")?;
    let sizes = match args.mode {
        Mode::Allreduce => args
            .size_sweep
            .sizes_within(1, args.size_sweep.memory_budget_mib)?,
        _ => Vec::new(),
    };
    if args.mode != Mode::Send {
        let given: Vec<&str> = [
            ("--to", args.to.is_some()),
            ("--bytes", args.bytes.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, set)| set.then_some(flag))
        .collect();
        if !given.is_empty() {
            anyhow::bail!(
                "{} {} for --mode send; this is --mode {}",
                given.join(" and "),
                if given.len() == 1 { "is" } else { "are" },
                args.mode.name()
            );
        }
    }
    if seconds("--limit", args.limit)?.is_zero() {
        anyhow::bail!("--limit 0: the run would end before it starts; give more than 0 seconds");
    }
    let send_to = match args.mode {
        Mode::Send => {
            let to = args.to.context("--mode send needs --to RANK")?;
            if to >= peers.len() || to == args.rank {
                anyhow::bail!("--to {to}: give another rank of the peers file");
            }
            to
        }
        _ => 0,
    };
    // The values first, then the interface (as `traffic send` checks them).
    super::not_loopback(&format!("--iface {}", args.iface), &args.iface)?;
    let actual_mac = interface_mac(&args.iface)?;
    if actual_mac != me.mac {
        anyhow::bail!(
            "{} has MAC {actual_mac}, but the peers file gives rank {} {}",
            args.iface,
            args.rank,
            me.mac
        );
    }
    // The kernel refuses a frame over the interface's MTU: every full-size packet would be
    // lost, retransmitted and lost again until --limit.
    let iface_mtu = super::interface_mtu(&args.iface)?;
    let needed = rocelab::wire::roce::ipv4_packet_len_for(cfg.mtu as usize);
    if needed > iface_mtu {
        anyhow::bail!(
            "the endpoint's path MTU {} does not fit {}'s MTU {iface_mtu}: a full RoCEv2 packet is {needed} bytes of IP (the path MTU + {} bytes of IPv4, UDP, BTH, RETH, immediate data and ICRC); lower mtu in --endpoint-config (to at most {}) or raise the interface's MTU to {needed} or more",
            cfg.mtu,
            args.iface,
            needed - cfg.mtu as usize,
            largest_path_mtu(iface_mtu)
        );
    }
    Ok(RankOptions {
        work: match args.mode {
            Mode::Allreduce => Work::AllReduce {
                sizes,
                seed: args.seed,
            },
            Mode::Send => Work::Send {
                to: send_to,
                bytes: args.bytes,
                message_bytes,
            },
            Mode::Receive => Work::Receive { message_bytes },
        },
        endpoint: hosts::EndpointOptions {
            cfg,
            iface: args.iface.clone(),
            backend: args.live.backend,
            cores: checked_cores(args.cores.as_ref())?,
            run: hosts::RunOptions {
                lockstep: None,
                busy_poll: args.live.busy_poll,
                limit: Some(seconds("--limit", args.limit)?),
                linger: seconds("--linger", args.linger)?,
                origin: None,
                propagation: rocelab::time::Nanos::ZERO,
            },
        },
        peers,
        rank: args.rank,
        start,
    })
}

/// The endpoint's counters in a line.
fn print_counters(outcome: &hosts::EndpointOutcome) {
    let counters = outcome.endpoint.counters();
    sayln!(
        "endpoint: {} sent ({} retransmitted, {}), {} received; CNPs sent {} received {}; CE received {}; PFC pauses received {}; kernel drops {}",
        report::count(counters.data_packets_sent, "data packet"),
        counters.retransmitted_packets,
        report::count(counters.timeouts, "timeout"),
        counters.data_packets_received,
        counters.cnps_sent,
        counters.cnps_received,
        counters.ce_received,
        counters.pauses_received + counters.link_pauses_received,
        outcome.kernel.drops
    );
}
