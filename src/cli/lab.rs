//! `rocelab lab`: the whole fabric in network namespaces, in one command.

use super::{Counters, Preset, SizeSweepArgs, SwitchConfigArgs, load_endpoint_config, seconds};
use anyhow::{Context, Result};
use rocelab::config::emulation;
use rocelab::config::endpoint::EndpointConfig;
use rocelab::io::Backend;
use rocelab::lab::run::{self as lab, LabOptions, Workload};
use rocelab::report::nccl;
use rocelab::report::{bundle, lab as report};
use rocelab::runtime::CoreList;
use std::path::PathBuf;

/// The lab's own scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Builtin {
    /// The ring alone, then the ring with an incast into rank 0 on a buffer scaled to
    /// the emulated rate, so that PFC and ECN both act; each ends with what happened.
    Story,
    /// A ring all-reduce sweep over every host.
    Ring,
    /// Every host but r0 sends a bulk flow to r0.
    Incast,
    /// The ring, with two more hosts pushing into rank 0's port meanwhile.
    #[value(name = "ring-incast", alias = "ring+incast")]
    RingIncast,
}

/// The whole lossless fabric in network namespaces, in one command (as root): builds it,
/// runs ring all-reduce (and incast) through the switch, reports, removes it all.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// story (the default: ring, then ring-incast on a buffer scaled to --rate so that
    /// PFC and ECN act), ring, incast (every other host into r0), ring-incast (two more
    /// hosts push into rank 0's port while the ring runs; also spelt ring+incast), or a
    /// scenario file as `rocelab sim` reads it (one switch, a star of up to 66 hosts,
    /// `[[flow]]`s and an `[allreduce]` run back to back): the file then decides the topology, rates,
    /// switch, endpoints and work, and the twin runs that same file.
    #[arg(long, default_value = "story", value_name = "NAME|FILE")]
    scenario: String,
    /// Hosts in the ring (for incast: the receiver and its senders).
    #[arg(long, default_value_t = 4)]
    ranks: usize,
    /// Emulated link rate in Gb/s, every port and NIC.
    #[arg(long, default_value_t = 1.0)]
    rate: f64,
    /// The switch configuration (default: the nexus-ai preset).
    #[command(flatten)]
    switch: SwitchConfigArgs,
    /// Endpoint configuration (TOML: mtu, dscp, dcqcn, ...; default: path MTU 4096 and
    /// DCQCN's Rai, Rhai and Rmin scaled from the paper's 40 Gb/s to --rate).
    #[arg(long)]
    endpoint_config: Option<PathBuf>,
    /// The all-reduce sizes: -b, -e, -f as nccl-tests takes them.
    #[command(flatten)]
    size_sweep: SizeSweepArgs,
    /// incast: bytes each sender sends.
    #[arg(long, default_value = "16M", value_parser = rocelab::bytes::parse)]
    incast_bytes: u64,
    /// Turn PFC off: the lossless class becomes lossy.
    #[arg(long)]
    no_pfc: bool,
    /// Turn ECN marking off on the switch.
    #[arg(long)]
    no_ecn: bool,
    /// Turn DCQCN off on the endpoints (they send at line rate whatever comes back).
    #[arg(long)]
    no_dcqcn: bool,
    /// Headroom of each lossless priority group, in ms at the link rate: on veth a pause
    /// reaches the sender through several threads, far slower than over a cable.
    #[arg(long, default_value_t = 8.0)]
    headroom_ms: f64,
    /// Write report.json, series.csv, queues.svg, rates.svg, pauses.svg and pgs.svg here
    /// (as `sim --out`; `--report` is the older name); the story writes a folder per part
    /// (DIR/ring, DIR/ring-incast). A failed or interrupted part writes nothing, and no
    /// later part runs.
    #[arg(long = "out", visible_alias = "report", value_name = "DIR")]
    report: Option<PathBuf>,
    /// Socket backend: mmap (a receive ring and batched sends) or pnet (pnet's channel,
    /// a system call per frame sent).
    #[arg(long = "io", value_enum, default_value_t = Backend::Mmap)]
    backend: Backend,
    /// CPU cores for the two threads, e.g. 0,1: the switch's on the first, the hosts' on
    /// the second (default: the first two this process may use).
    #[arg(long)]
    cores: Option<CoreList>,
    /// Seed of every random draw, as in `sim`: the all-reduce data, the switch's RED/ECN
    /// draws (instead of the configuration's `seed`) and the simulated twin's.
    #[arg(long)]
    seed: Option<u64>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 300.0)]
    limit: f64,
    /// Do not run the simulated twin (the same fabric and workload in virtual time) after
    /// the live run.
    #[arg(long)]
    no_twin: bool,
    /// Run the switch's and the hosts' threads at normal priority. By default they take
    /// real-time priority (SCHED_FIFO 10), so that other work on the machine cannot
    /// preempt them: a preempted thread holds the frames that arrive meanwhile, a queue
    /// the emulated fabric does not have.
    #[arg(long)]
    no_realtime: bool,
    /// How far (µs of emulated time) the pacing clock of the switch's thread and the
    /// hosts' may run ahead of the slower one (default 200). Within it, each core runs an
    /// event only once no frame from the other thread can land before it, and frames
    /// carry their departure times over the veths, so the live run is its simulated twin;
    /// a thread that falls behind (descheduled, stalled) holds the other back: emulated
    /// time dilates, running slower than the wall clock. 0: no lockstep (each thread on
    /// its own wall clock; late frames are taken late).
    #[arg(long, value_name = "US")]
    lookahead_us: Option<f64>,
    /// How to print the switch counters: table (a row per port and class), wide (every
    /// counter), sonic (`show pfc counters`, `show queue counters`, `show queue wredcounters`,
    /// `show pfcwd stats`) or nxos (`show
    /// interface priority-flow-control`, `show queuing interface`).
    #[arg(long, value_enum, default_value_t = Counters::Table)]
    counters: Counters,
}

/// Runs `rocelab lab`.
pub(crate) fn run(args: Args) -> Result<()> {
    use rocelab::lab::netns::Unavailable;
    match rocelab::lab::netns::can_make_namespaces() {
        Ok(()) => {}
        Err(e @ Unavailable::NotRoot) => {
            return Err(anyhow::Error::new(e).context("run `sudo rocelab lab` (or as root)"));
        }
        // Root already: sudo would not help.
        Err(e @ Unavailable::NoIproute) => return Err(anyhow::Error::new(e).context("rocelab lab")),
    }
    let limit = seconds("--limit", args.limit)?;
    let phases = match <Builtin as clap::ValueEnum>::from_str(&args.scenario, false) {
        Ok(builtin) => builtin_phases(&args, builtin, limit)?,
        Err(_) => vec![(scenario_file(&args)?, String::new())],
    };
    let cores = match args.cores.clone() {
        Some(c) => {
            c.check().context("--cores")?;
            if c.0.len() > 2 {
                anyhow::bail!(
                    "--cores: the lab runs two threads (the switch's, the hosts'); give one core or two"
                );
            }
            c
        }
        None => CoreList::first(2),
    };
    let realtime = super::realtime_or_warn(!args.no_realtime, "--no-realtime");
    let parts = phases.len();
    if let Some(dir) = &args.report {
        rocelab::output::check_folder(dir)?;
        if parts > 1 && dir.is_dir() {
            for (scenario, _) in &phases {
                rocelab::output::check_folder(&dir.join(part_name(scenario)))?;
            }
        }
    }
    let stop = rocelab::runtime::stop_on_signals()?;
    for (k, (scenario, note)) in phases.into_iter().enumerate() {
        // A part that ended in a stop has failed already; one that came after the last
        // part finished starts no other.
        if rocelab::runtime::stopped(&stop) {
            anyhow::bail!(
                "stopped (Ctrl-C or SIGTERM) before part {} of {parts}; it did not run",
                k + 1
            );
        }
        if parts > 1 {
            if k > 0 {
                sayln!();
            }
            sayln!(
                "=== part {}/{parts}: {}{note} ===",
                k + 1,
                part_name(&scenario)
            );
        }
        let dir = args.report.as_ref().map(|d| {
            if parts > 1 {
                d.join(part_name(&scenario))
            } else {
                d.clone()
            }
        });
        let opts = LabOptions {
            scenario,
            backend: args.backend,
            cores: cores.clone(),
            limit,
            sample_every: std::time::Duration::from_millis(1),
            realtime,
            lookahead: lookahead(&args)?,
        };
        // The story's folder is made with its first part's outputs: an interrupted run
        // leaves none.
        let story = args.report.as_deref().filter(|_| parts > 1);
        run_part(&args, &opts, &stop, dir.as_deref(), story)?;
    }
    Ok(())
}

/// `--lookahead-us`, or the lab's default; 0: none.
fn lookahead(args: &Args) -> Result<Option<rocelab::time::Nanos>> {
    match args.lookahead_us {
        None => Ok(Some(lab::DEFAULT_LOOKAHEAD)),
        Some(0.0) => Ok(None),
        Some(us) if us.is_finite() && (1.0..=100_000.0).contains(&us) => {
            Ok(Some(rocelab::time::Nanos((us * 1e3).round() as u64)))
        }
        Some(us) => anyhow::bail!("--lookahead-us {us}: give 1 to 100000 µs, or 0 for none"),
    }
}

/// True when `--scenario` names one of the lab's own scenarios.
fn builtin(args: &Args) -> bool {
    <Builtin as clap::ValueEnum>::from_str(&args.scenario, false).is_ok()
}

/// A part's name: the lab's workload (`ring`, `ring-incast`) for its own scenarios.
fn part_name(scenario: &rocelab::sim::scenario::Scenario) -> String {
    scenario
        .name
        .strip_prefix("lab ")
        .unwrap_or(&scenario.name)
        .to_owned()
}

/// The parts of one of the lab's own scenarios, each with a note on its buffer.
fn builtin_phases(
    args: &Args,
    builtin: Builtin,
    limit: std::time::Duration,
) -> Result<Vec<(rocelab::sim::scenario::Scenario, String)>> {
    if !(2..=64).contains(&args.ranks) {
        anyhow::bail!("--ranks {}: give 2 to 64", args.ranks);
    }
    if !(0.001..=100.0).contains(&args.rate) {
        anyhow::bail!(
            "--rate {}: give 0.001 to 100 Gb/s (veth and threads cannot emulate more)",
            args.rate
        );
    }
    if !(args.headroom_ms.is_finite() && (0.0..=10_000.0).contains(&args.headroom_ms)) {
        anyhow::bail!("--headroom-ms {}: give 0 to 10000", args.headroom_ms);
    }
    if args.incast_bytes == 0 || args.incast_bytes > 1 << 30 {
        anyhow::bail!("--incast-bytes {}: give 1 byte to 1G", args.incast_bytes);
    }
    let seed = args.seed.unwrap_or(1);
    let mut switch = args.switch.load(Preset::NexusAi)?;
    switch.seed = seed;
    let mut endpoint = match &args.endpoint_config {
        Some(path) => load_endpoint_config(path)?,
        // RoCE fabrics for AI run a 4096-byte path MTU; it also means fewer frames for
        // the threads to move.
        None => {
            let mut cfg = EndpointConfig {
                mtu: 4096,
                ..Default::default()
            };
            emulation::scale_dcqcn(&mut cfg.dcqcn, args.rate);
            cfg
        }
    };
    endpoint.link_gbps = args.rate;
    if args.no_dcqcn {
        endpoint.dcqcn.enabled = false;
    }
    endpoint.validate("endpoint")?;
    if args.no_pfc {
        switch.disable_pfc();
    }
    if args.no_ecn {
        switch.disable_ecn();
    }
    emulation::software_headroom(&mut switch, (args.rate * 1e9) as u64, args.headroom_ms);
    let port_mtu = switch.port_defaults.mtu.min(9000);
    if endpoint.mtu + 128 > port_mtu {
        anyhow::bail!(
            "the endpoints' path MTU {} does not fit the switch ports' MTU {port_mtu} (with ~128 bytes of headers): lower mtu in --endpoint-config or raise port_defaults.mtu",
            endpoint.mtu
        );
    }
    let sizes = args
        .size_sweep
        .sizes_within(args.ranks, args.size_sweep.memory_budget_mib)?;
    let parts: Vec<(Workload, rocelab::config::SwitchConfig, String)> = match builtin {
        Builtin::Ring => vec![(Workload::Ring, switch, String::new())],
        Builtin::Incast => vec![(Workload::Incast, switch, String::new())],
        Builtin::RingIncast => vec![(Workload::RingIncast, switch, String::new())],
        Builtin::Story => {
            let mut small = switch.clone();
            let note = if args.switch.config.is_none() {
                let bytes = emulation::scale_buffer(&mut small, (args.rate * 1e9) as u64);
                let ecn = small
                    .queues
                    .iter()
                    .find_map(|q| q.ecn.as_ref())
                    .map_or_else(String::new, |e| {
                        format!(
                            ", ECN Kmin {} and Kmax {} with it",
                            rocelab::bytes::human(e.kmin_bytes),
                            rocelab::bytes::human(e.kmax_bytes)
                        )
                    });
                format!(
                    ", shared buffer {} (1 MiB per emulated Gb/s, about 8 ms of the link, so that PFC and ECN act){ecn}",
                    rocelab::bytes::human(bytes)
                )
            } else {
                String::new()
            };
            vec![
                (Workload::Ring, switch, String::new()),
                (Workload::RingIncast, small, note),
            ]
        }
    };
    Ok(parts
        .into_iter()
        .map(|(workload, switch, note)| {
            let work = lab::LabWork {
                workload,
                ranks: args.ranks,
                sizes: sizes.clone(),
                incast_bytes: args.incast_bytes,
            };
            let s = lab::scenario(&work, &switch, &endpoint, seed, limit);
            (s, note)
        })
        .collect())
}

/// A scenario file (or one of `sim`'s built-in scenarios) for the lab: refused, naming
/// what cannot run live, when the lab cannot build it.
fn scenario_file(args: &Args) -> Result<rocelab::sim::scenario::Scenario> {
    let mut scenario = rocelab::sim::scenario::Scenario::load_edited(&args.scenario, |table| {
        if let Some(seed) = args.seed {
            table.insert(
                "seed".into(),
                toml::Value::Integer(i64::try_from(seed).unwrap_or(i64::MAX)),
            );
        }
        Ok(())
    })
    .with_context(|| {
        format!(
            "--scenario {}: not one of story, ring, incast, ring-incast, nor a scenario rocelab sim can read",
            args.scenario
        )
    })?;
    lab::live_check(&scenario)
        .map_err(|why| anyhow::anyhow!("--scenario {}: {why}", args.scenario))?;
    // The lab's parts are named by their workload; a file's by its own name.
    scenario.name = scenario.name.trim_start_matches("lab ").to_owned();
    Ok(scenario)
}

/// Runs one part of the lab: builds the fabric, runs `opts`' workload, prints its report
/// and its twin, writes its folder to `dir` (in `story`, made first, when the lab runs in
/// parts), and removes everything.
fn run_part(
    args: &Args,
    opts: &LabOptions,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    dir: Option<&std::path::Path>,
    story: Option<&std::path::Path>,
) -> Result<()> {
    let s = &opts.scenario;
    let hosts = s.topology.hosts();
    let extra = match s.flows.len() {
        0 => String::new(),
        _ if opts.rank_hosts().is_empty() => format!(", {} flows", s.flows.len()),
        n => format!(" ({} ranks, {n} background senders)", opts.ranks()),
    };
    let switch = if builtin(args) {
        args.switch.describe(Preset::NexusAi)
    } else {
        s.switch_source.clone()
    };
    let on = |b: bool| if b { "on" } else { "off" };
    let ep = opts.endpoint();
    sayln!(
        "rocelab lab: {}, {hosts} hosts{extra}, switch {switch} at {} Gb/s; PFC {}, ECN {}, DCQCN {} (Rai {} Mb/s)",
        part_name(s),
        ep.link_gbps,
        on(!s.switch.lossless.is_empty()),
        on(s.switch.queues.iter().any(|q| q.ecn.is_some())),
        on(ep.dcqcn.enabled),
        ep.dcqcn.rai_mbps,
    );
    let ring = opts.workload() != Workload::Incast;
    if ring {
        // nccl-tests' head now, each size's row as every rank finishes it.
        sayln!();
        say!("{}", nccl::head(&report::allreduce_title(opts), &[]));
    }
    let mut progress = LabProgress::new(std::sync::Arc::clone(stop));
    let outcome = lab::run(opts, stop, &mut progress);
    progress.clear();
    let outcome = outcome?;
    if ring {
        say!(
            "{}",
            nccl::foot_unfinished_as(&outcome.allreduce, super::unfinished(stop))
        );
    }
    // Where the figures are: whether this machine produced them faithfully.
    say!(
        "{}",
        report::verdict_lines(&report::verdict(opts, &outcome))
    );
    sayln!();
    let last_open = outcome.hosts.iter().filter_map(|h| h.socket_open_ns).max();
    sayln!(
        "namespaces {}* on 198.18.0.0/24: built, run for {:.2} s, removed; the hosts started \
         {:.1} ms after the namespaces were up (the last socket open at {})\n",
        outcome.prefix,
        outcome.elapsed.as_secs_f64(),
        outcome.start_ns as f64 / 1e6,
        last_open.map_or_else(|| "-".to_owned(), |t| format!("{:.1} ms", t as f64 / 1e6))
    );
    if let Some(late) = outcome
        .hosts
        .iter()
        .find(|h| h.socket_open_ns.is_some_and(|t| t > outcome.start_ns))
    {
        noteln!(
            "rocelab lab: host {} opened its socket after the start: its peers' first frames to it were lost and retransmitted",
            late.name
        );
    }
    say!("{}", report::text(opts, &outcome, args.counters.style()));
    let nothing_written = || {
        dir.map_or_else(String::new, |d| {
            format!(", and nothing was written to {}", d.display())
        })
    };
    let twin = if args.no_twin || outcome.interrupted {
        None
    } else {
        let wall = std::time::Instant::now();
        let c = match rocelab::lab::twin::compare(opts, &outcome, stop) {
            Err(rocelab::sim::run::RunError::Stopped) => anyhow::bail!(
                "stopped (Ctrl-C or SIGTERM) while the simulated twin ran; everything was removed{}",
                nothing_written()
            ),
            c => c.context("the simulated twin")?,
        };
        say!("{}", report::twin_table(&c));
        noteln!(
            "the twin simulated {} frames in {:.2} s of wall time",
            c.twin_frames,
            wall.elapsed().as_secs_f64()
        );
        Some(c)
    };
    // A failed or interrupted run writes no outputs (docs/limits.md). A host's port error
    // stops the hosts before their work is done: it is the cause to report, not the stop.
    if let Some(h) = outcome.hosts.iter().find(|h| h.error.is_some()) {
        anyhow::bail!(
            "host {}: {}",
            h.name,
            h.error
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
        );
    }
    if outcome.interrupted {
        anyhow::bail!(
            "stopped before the work finished (Ctrl-C, SIGTERM or --limit); everything was removed{}",
            nothing_written()
        );
    }
    // A stop after the work finished, before the outputs: a stopped part writes nothing.
    if rocelab::runtime::stopped(stop) {
        anyhow::bail!(
            "stopped (Ctrl-C or SIGTERM) after the work finished; everything was removed{}",
            nothing_written()
        );
    }
    if let Some(dir) = dir {
        if let Some(story) = story {
            rocelab::output::make_folder(story)?;
        }
        let title = format!("rocelab lab {}, the whole run", opts.workload());
        let mut json = report::json(opts, &outcome);
        json["twin"] = serde_json::to_value(&twin)?;
        let marks = rocelab::report::plot::ecn_thresholds(opts.switch());
        bundle::write(
            dir,
            &json,
            &outcome.series,
            &title,
            &marks,
            &[],
            rocelab::time::Nanos::ZERO,
        )
        .with_context(|| format!("writing the report to {}", dir.display()))?;
        sayln!(
            "\nwrote report.json, series.csv, queues.svg (queue depth per queue), rates.svg (each QP's rate), pauses.svg (PFC pause intervals per port), pgs.svg (ingress PG use against the XOFF point) to {}",
            dir.display()
        );
    }
    let wrong: u64 = outcome.allreduce.iter().filter_map(|r| r.wrong).sum();
    if wrong > 0 {
        anyhow::bail!("{wrong} all-reduce values differ from the expected sum");
    }
    Ok(())
}

/// The lab's progress: on a terminal, a line on standard error of how far the work is;
/// and the all-reduce rows on standard output as every rank finishes each size, as
/// nccl-tests prints them.
struct LabProgress {
    terminal: bool,
    shown: bool,
    /// Ctrl-C or SIGTERM: a size it cut short says `interrupted` (the limit: `timeout`).
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl LabProgress {
    fn new(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> LabProgress {
        use std::io::IsTerminal as _;
        LabProgress {
            // Only on a terminal: a log file gets no carriage returns.
            terminal: std::io::stderr().is_terminal(),
            shown: false,
            stop,
        }
    }

    /// Erases the progress line, if one is shown.
    fn clear(&mut self) {
        if self.shown {
            note!("\r\x1b[K");
            self.shown = false;
        }
    }
}

impl lab::Progress for LabProgress {
    fn line(&mut self, line: &str) {
        if self.terminal {
            note!("\r\x1b[K{line}");
            self.shown = true;
        }
    }

    fn size_done(&mut self, result: &rocelab::endpoint::app::allreduce::AllReduceResult) {
        self.clear();
        say!(
            "{}",
            nccl::row_unfinished_as(result, &[], super::unfinished(&self.stop))
        );
    }
}
