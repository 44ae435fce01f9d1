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
    /// Run the software switch live between network interfaces (as root).
    Switch(SwitchArgs),
    /// Run one RoCEv2 endpoint (RC, DCQCN, PFC) live on an interface: a rank of a ring
    /// all-reduce sweep, a bulk sender, or a receiver (as root).
    Endpoint(EndpointArgs),
    /// Run a scenario (incast, staggered flows, ring all-reduce) in deterministic virtual
    /// time: the switch and endpoint cores joined by simulated links.
    Sim(SimArgs),
    /// Traffic tools for benchmarks and tests: a fast RoCE sender (ignores PFC) and a
    /// frame counter.
    Traffic {
        #[command(subcommand)]
        action: TrafficAction,
    },
    /// The whole lossless fabric in network namespaces, in one command (as root): builds
    /// it, runs ring all-reduce (and incast) through the switch, reports, removes it all.
    Lab(LabArgs),
}

#[derive(Subcommand)]
enum TrafficAction {
    /// Send RoCEv2 RC WRITE frames as fast as the socket allows (or at --pps).
    Send {
        /// Interface to send on.
        #[arg(long)]
        iface: String,
        /// Destination MAC address.
        #[arg(long)]
        dst_mac: String,
        /// Source MAC address (default: the interface's).
        #[arg(long)]
        src_mac: Option<String>,
        /// Destination IPv4 address.
        #[arg(long, default_value = "198.18.0.2")]
        dst_ip: std::net::Ipv4Addr,
        /// Source IPv4 address.
        #[arg(long, default_value = "198.18.0.1")]
        src_ip: std::net::Ipv4Addr,
        /// Frame length in bytes without FCS (62 or more; size - 58 a multiple of 4).
        #[arg(long, default_value_t = 62)]
        size: usize,
        /// DSCP of the frames.
        #[arg(long, default_value_t = 26)]
        dscp: u8,
        /// Seconds to send.
        #[arg(long, default_value_t = 5.0)]
        duration: f64,
        /// Frames per second (default: as fast as possible).
        #[arg(long)]
        pps: Option<f64>,
        /// Stop after this many frames.
        #[arg(long)]
        count: Option<u64>,
    },
    /// Count frames arriving on an interface; prints one JSON line.
    Count {
        /// Interface to listen on.
        #[arg(long)]
        iface: String,
        /// Seconds to count.
        #[arg(long, default_value_t = 5.0)]
        duration: f64,
        /// Socket backend.
        #[arg(long = "io", default_value = "mmap")]
        backend: rocelab::io::Backend,
    },
}

#[derive(clap::Args)]
struct LabArgs {
    /// ring, incast (every other host into r0) or ring+incast (two more hosts push into
    /// rank 0's port while the ring runs).
    #[arg(long, default_value = "ring")]
    scenario: rocelab::lab::run::Workload,
    /// Hosts in the ring (for incast: the receiver and its senders).
    #[arg(long, default_value_t = 4)]
    ranks: usize,
    /// Emulated link rate in Gb/s, every port and NIC.
    #[arg(long, default_value_t = 1.0)]
    rate: f64,
    /// Switch configuration file (TOML) instead of the preset.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Built-in switch configuration.
    #[arg(long, default_value = "nexus-ai")]
    preset: String,
    /// Endpoint configuration (TOML: mtu, dscp, dcqcn, ...; default: path MTU 4096 and
    /// DCQCN's Rai, Rhai and Rmin scaled from the paper's 40 Gb/s to --rate).
    #[arg(long)]
    endpoint_config: Option<PathBuf>,
    /// Smallest all-reduce size (nccl-tests -b).
    #[arg(short = 'b', long, default_value = "8K")]
    min_bytes: String,
    /// Largest all-reduce size (nccl-tests -e).
    #[arg(short = 'e', long, default_value = "16M")]
    max_bytes: String,
    /// Size factor (nccl-tests -f).
    #[arg(short = 'f', long, default_value_t = 2)]
    factor: u64,
    /// incast: bytes each sender sends.
    #[arg(long, default_value = "16M")]
    incast_bytes: String,
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
    /// Write report.json, series.csv, queues.svg, rates.svg and pauses.svg here.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// Socket backend.
    #[arg(long = "io", default_value = "pnet")]
    backend: rocelab::io::Backend,
    /// Seed of the all-reduce data.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 300.0)]
    limit: f64,
}

#[derive(clap::Args)]
struct EndpointArgs {
    /// The interface (in this network namespace).
    #[arg(long)]
    iface: String,
    /// The peers file: `[[peer]]` entries with rank, mac, ip and qpn.
    #[arg(long)]
    peers: PathBuf,
    /// This endpoint's rank in the peers file.
    #[arg(long)]
    rank: usize,
    /// allreduce (a ring over every peer), send (a bulk flow to --to) or receive.
    #[arg(long, default_value = "allreduce")]
    mode: String,
    /// send: the receiving rank.
    #[arg(long)]
    to: Option<usize>,
    /// send: bytes to send (default: until --limit).
    #[arg(long)]
    bytes: Option<u64>,
    /// send: message size.
    #[arg(long, default_value_t = 65536)]
    message_bytes: usize,
    /// allreduce: smallest size in bytes (K and M suffixes allowed), as nccl-tests -b.
    #[arg(short = 'b', long, default_value = "8K")]
    min_bytes: String,
    /// allreduce: largest size, as nccl-tests -e.
    #[arg(short = 'e', long, default_value = "16M")]
    max_bytes: String,
    /// allreduce: size factor, as nccl-tests -f.
    #[arg(short = 'f', long, default_value_t = 2)]
    factor: u64,
    /// Seed of the all-reduce data.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Endpoint configuration (TOML: mtu, dscp, dcqcn, ...).
    #[arg(long)]
    config: Option<PathBuf>,
    /// NIC line rate in Gb/s (the pacer's ceiling), instead of the configuration's.
    #[arg(long)]
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
    /// Socket backend: pnet or mmap.
    #[arg(long = "io", default_value = "pnet")]
    backend: rocelab::io::Backend,
    /// CPU cores to pin to.
    #[arg(long)]
    cores: Option<rocelab::runtime::CoreList>,
    /// Spin instead of sleeping.
    #[arg(long)]
    busy_poll: bool,
    /// Write what happened as JSON.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
}

#[derive(clap::Args)]
struct SwitchArgs {
    /// Switch configuration file (TOML).
    #[arg(long, conflicts_with = "preset")]
    config: Option<PathBuf>,
    /// Built-in configuration: default, nexus-ai or sonic.
    #[arg(long)]
    preset: Option<String>,
    /// A switch port on an interface (repeatable, in port order). A port the configuration
    /// does not name takes its port defaults.
    #[arg(long = "port", value_name = "NAME=IFNAME", required = true)]
    ports: Vec<String>,
    /// Socket backend: pnet (portable, low latency) or mmap (TPACKET_V3 ring and
    /// sendmmsg: faster, up to 1 ms of latency at low load).
    #[arg(long = "io", default_value = "pnet")]
    backend: rocelab::io::Backend,
    /// CPU cores to pin to, e.g. 0,1 or 0-3: the switch core on the first, port threads
    /// on the rest.
    #[arg(long)]
    cores: Option<rocelab::runtime::CoreList>,
    /// Spin while waiting instead of sleeping (lower latency, a whole core busy).
    #[arg(long)]
    busy_poll: bool,
    /// Stop after this many seconds (default: run until Ctrl-C or SIGTERM).
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// Print a summary line this often, in seconds (0: none).
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    interval: f64,
    /// Write the final counters (and kernel drop counts) as JSON.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics (loopback addresses only).
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<std::net::SocketAddr>,
}

#[derive(clap::Args)]
struct SimArgs {
    /// A scenario file (TOML), or a built-in scenario: incast, incast-8, staggered, ring,
    /// ring-incast, leaf-spine (`--list` describes them).
    #[arg(long, default_value = "incast")]
    scenario: String,
    /// Seed of every random draw, instead of the scenario's.
    #[arg(long)]
    seed: Option<u64>,
    /// Write series.csv, queues.svg, rates.svg, pauses.svg and report.json here.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// List the built-in scenarios.
    #[arg(long)]
    list: bool,
    /// Print a built-in scenario as a TOML file to start from.
    #[arg(long, value_name = "NAME")]
    show: Option<String>,
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect { file, json } => run_inspect(file, json),
        Command::Replay(args) => run_replay(args),
        Command::Config { action } => run_config(action),
        Command::Switch(args) => run_switch(args),
        Command::Endpoint(args) => run_endpoint(args),
        Command::Sim(args) => run_sim(args),
        Command::Traffic { action } => run_traffic(action),
        Command::Lab(args) => run_lab(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rocelab: {e:#}");
            ExitCode::FAILURE
        }
    }
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

fn run_sim(args: SimArgs) -> Result<()> {
    use rocelab::report::{plot, sim as report};
    use rocelab::sim::scenario::{SCENARIOS, Scenario, names, scenario_text};
    if args.list {
        for (name, text) in SCENARIOS {
            let s = Scenario::from_toml(name, text, None)?;
            println!("{name:<12} {}", s.description);
        }
        return Ok(());
    }
    if let Some(name) = &args.show {
        let text = scenario_text(name).with_context(|| {
            format!("no built-in scenario named '{name}'; they are {}", names())
        })?;
        print!("{text}");
        return Ok(());
    }
    let mut scenario = Scenario::load(&args.scenario)?;
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create output directory {}", dir.display()))?;
    }
    print!("{}", report::header(&scenario));
    let wall = std::time::Instant::now();
    let outcome = rocelab::sim::run::run(&scenario)?;
    let elapsed = wall.elapsed().as_secs_f64();
    let end = outcome.net.engine.now();
    println!();
    if let Some(plan) = &scenario.allreduce {
        print!(
            "{}",
            report::allreduce_table(&outcome.allreduce, plan.ranks.len())
        );
        println!(
            "\nthe {} B all-reduce in detail ({} of virtual time):",
            plan.series_bytes,
            end.human()
        );
    } else {
        println!("ran {} of virtual time", end.human());
    }
    print!(
        "{}",
        report::qp_table(&outcome.qps, outcome.measured_from, end)
    );
    print!("{}", report::switch_tables(&outcome));
    // Wall-clock figures vary from run to run: stderr, so stdout repeats exactly.
    eprintln!(
        "simulated {} frames in {elapsed:.2} s of wall time ({:.2} M frames/s)",
        outcome.frames,
        outcome.frames as f64 / elapsed.max(1e-9) / 1e6
    );
    if let Some(dir) = &args.out {
        let write = |name: &str, text: &[u8]| -> Result<()> {
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
        };
        let mut csv = Vec::new();
        outcome.series.write_csv(&mut csv)?;
        write("series.csv", &csv)?;
        let title = &scenario.name;
        write(
            "queues.svg",
            plot::queues_svg(&outcome.series, title)?.as_bytes(),
        )?;
        write(
            "rates.svg",
            plot::rates_svg(&outcome.series, title)?.as_bytes(),
        )?;
        write(
            "pauses.svg",
            plot::pauses_svg(&outcome.series, title)?.as_bytes(),
        )?;
        let json = serde_json::to_string_pretty(&report::json(&scenario, &outcome))?;
        write("report.json", (json + "\n").as_bytes())?;
        println!(
            "\nwrote series.csv, queues.svg, rates.svg, pauses.svg and report.json to {}",
            dir.display()
        );
    }
    Ok(())
}

fn seconds(flag: &str, v: f64) -> Result<std::time::Duration> {
    if (0.0..1e9).contains(&v) {
        Ok(std::time::Duration::from_secs_f64(v))
    } else {
        anyhow::bail!("{flag} {v}: give a number of seconds, 0 or more")
    }
}

fn run_switch(args: SwitchArgs) -> Result<()> {
    use rocelab::runtime::{self, switch::SwitchOptions};
    if let Some(addr) = args.metrics
        && !addr.ip().is_loopback()
    {
        anyhow::bail!(
            "--metrics {addr}: the metrics endpoint binds to loopback only (127.0.0.1 or ::1)"
        );
    }
    let mut config = load_config(args.config.as_ref(), args.preset.as_deref())?;
    let mut names = Vec::new();
    let mut ifaces = Vec::new();
    for spec in &args.ports {
        let (name, iface) = spec
            .split_once('=')
            .filter(|(n, i)| !n.is_empty() && !i.is_empty())
            .with_context(|| {
                format!("--port {spec}: expected NAME=IFNAME, e.g. --port p1=veth1")
            })?;
        if names.contains(&name) {
            anyhow::bail!("--port {spec}: port {name} is given twice");
        }
        if ifaces.iter().any(|i: &String| i == iface) {
            anyhow::bail!("--port {spec}: interface {iface} is already a port");
        }
        names.push(name);
        ifaces.push(iface.to_owned());
    }
    config.ports = names.iter().map(|n| config.port_or_default(n)).collect();
    let cores = args.cores.unwrap_or_default();
    cores.check().map_err(|e| anyhow::anyhow!("--cores: {e}"))?;
    let opts = SwitchOptions {
        config,
        ifaces,
        backend: args.backend,
        cores,
        busy_poll: args.busy_poll,
        duration: args
            .duration
            .map(|d| seconds("--duration", d))
            .transpose()?,
        interval: Some(seconds("--interval", args.interval)?).filter(|d| !d.is_zero()),
        metrics: args.metrics,
    };
    let stop = runtime::stop_on_signals()?;
    eprintln!(
        "rocelab switch: {} ports ({}), {:?} backend; Ctrl-C stops",
        opts.ifaces.len(),
        names
            .iter()
            .zip(&opts.ifaces)
            .map(|(n, i)| format!("{n}={i}"))
            .collect::<Vec<_>>()
            .join(", "),
        opts.backend
    );
    let mut stdout = io::stdout();
    let outcome = runtime::switch::run(&opts, &stop, &mut stdout)?;
    println!(
        "\nran {:.1} s; kernel receive drops: {}",
        outcome.elapsed.as_secs_f64(),
        names
            .iter()
            .zip(&outcome.kernel)
            .map(|(n, k)| format!("{n} {}", k.drops))
            .collect::<Vec<_>>()
            .join(", ")
    );
    print!("{}", rocelab::report::counter_table(&outcome.switch));
    if let Some(path) = &args.stats_json {
        let kernel: Vec<serde_json::Value> = names
            .iter()
            .zip(&opts.ifaces)
            .zip(&outcome.kernel)
            .map(|((n, i), k)| serde_json::json!({"port": n, "interface": i, "packets": k.packets, "drops": k.drops}))
            .collect();
        let report = serde_json::json!({
            "elapsed_s": outcome.elapsed.as_secs_f64(),
            "ports": rocelab::report::ports(&outcome.switch),
            "kernel": kernel,
        });
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    match outcome.error {
        Some(e) => Err(anyhow::anyhow!("stopped: {e}")),
        None => Ok(()),
    }
}

fn parse_mac(flag: &str, s: &str) -> Result<rocelab::wire::MacAddr> {
    rocelab::runtime::endpoint::parse_mac(s)
        .with_context(|| format!("{flag} {s}: give a MAC address like 02:00:c6:12:00:01"))
}

fn interface_mac(iface: &str) -> Result<rocelab::wire::MacAddr> {
    let path = format!("/sys/class/net/{iface}/address");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("no interface named '{iface}' in this network namespace"))?;
    parse_mac("--src-mac", text.trim())
}

fn run_traffic(action: TrafficAction) -> Result<()> {
    use rocelab::runtime::{self, traffic};
    let stop = runtime::stop_on_signals()?;
    match action {
        TrafficAction::Send {
            iface,
            dst_mac,
            src_mac,
            dst_ip,
            src_ip,
            size,
            dscp,
            duration,
            pps,
            count,
        } => {
            if dscp > 63 {
                anyhow::bail!("--dscp {dscp}: DSCPs are 0-63");
            }
            if pps.is_some_and(|p| !(p.is_finite() && p > 0.0)) {
                anyhow::bail!("--pps: give a positive rate");
            }
            let spec = traffic::SendSpec {
                dst_mac: parse_mac("--dst-mac", &dst_mac)?,
                src_mac: match src_mac {
                    Some(m) => parse_mac("--src-mac", &m)?,
                    None => interface_mac(&iface)?,
                },
                iface,
                dst_ip,
                src_ip,
                size,
                dscp,
                duration: seconds("--duration", duration)?,
                pps,
                count,
            };
            let (sent, secs) = traffic::send(&spec, &stop)?;
            println!(
                "{}",
                serde_json::json!({"sent": sent, "seconds": secs, "pps": sent as f64 / secs.max(1e-9)})
            );
            Ok(())
        }
        TrafficAction::Count {
            iface,
            duration,
            backend,
        } => {
            let c = traffic::count(&iface, backend, seconds("--duration", duration)?, &stop)?;
            println!("{}", serde_json::to_string(&c)?);
            Ok(())
        }
    }
}

fn parse_size(flag: &str, s: &str) -> Result<u64> {
    let (digits, scale) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|v| v.checked_mul(scale))
        .filter(|v| *v >= 4 && v % 4 == 0 && *v <= 1 << 30)
        .with_context(|| {
            format!("{flag} {s}: give a size in bytes, a multiple of 4 up to 1G (8K, 16M)")
        })
}

fn run_endpoint(args: EndpointArgs) -> Result<()> {
    use rocelab::endpoint::allreduce::Sweep;
    use rocelab::runtime::{self, endpoint as live};
    use rocelab::sim::flows::Flow;
    let text = std::fs::read_to_string(&args.peers)
        .with_context(|| format!("cannot read peers file {}", args.peers.display()))?;
    let peers =
        live::parse_peers(&text).map_err(|e| anyhow::anyhow!("{}: {e}", args.peers.display()))?;
    let me = peers.get(args.rank).with_context(|| {
        format!(
            "--rank {}: the peers file has ranks 0 to {}",
            args.rank,
            peers.len() - 1
        )
    })?;
    let mut cfg = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            toml::from_str::<rocelab::config::endpoint::EndpointConfig>(&text)
                .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.message().trim_end()))?
        }
        None => rocelab::config::endpoint::EndpointConfig::default(),
    };
    if let Some(g) = args.link_gbps {
        cfg.link_gbps = g;
    }
    cfg.validate("endpoint")
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let actual_mac = interface_mac(&args.iface)?;
    if actual_mac != me.mac {
        anyhow::bail!(
            "{} has MAC {actual_mac}, but the peers file gives rank {} {}",
            args.iface,
            args.rank,
            me.mac
        );
    }
    let mut ep = rocelab::endpoint::Endpoint::new(&cfg, me.mac, me.ip);
    let start = match args.start_at {
        Some(ms) => {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)?
                .as_millis() as u64;
            rocelab::time::Nanos(ms.saturating_sub(now_ms) * 1_000_000)
        }
        None => rocelab::time::Nanos::ZERO,
    };
    let mut sizes = Vec::new();
    let app: Box<dyn rocelab::endpoint::allreduce::Application> = match args.mode.as_str() {
        "allreduce" => {
            let (min, max) = (
                parse_size("-b", &args.min_bytes)?,
                parse_size("-e", &args.max_bytes)?,
            );
            if max < min || args.factor < 2 {
                anyhow::bail!(
                    "-b {min} -e {max} -f {}: need b <= e and f >= 2",
                    args.factor
                );
            }
            let mut s = min;
            while s <= max {
                sizes.push(s);
                s *= args.factor;
            }
            let (to_next, _) = live::ring_qps(&mut ep, &peers, args.rank);
            Box::new(
                Sweep::new(&mut ep, args.rank, peers.len(), &sizes, args.seed, to_next)
                    .starting_at(start),
            )
        }
        "send" => {
            let to = args.to.context("--mode send needs --to RANK")?;
            if to >= peers.len() || to == args.rank {
                anyhow::bail!("--to {to}: give another rank of the peers file");
            }
            if args.message_bytes == 0 || args.message_bytes > 1 << 30 {
                anyhow::bail!("--message-bytes: give 1 byte to 1 GiB");
            }
            let qp = live::flow_send_qp(&mut ep, &peers, args.rank, to);
            Box::new(Flow::new(qp, args.bytes, args.message_bytes, start))
        }
        "receive" => {
            live::flow_receive_qps(&mut ep, &peers, args.rank);
            Flow::prepare_receiver(&mut ep, args.message_bytes);
            Box::new(Idle)
        }
        other => anyhow::bail!("--mode {other}: give allreduce, send or receive"),
    };
    let cores = args.cores.unwrap_or_default();
    cores.check().map_err(|e| anyhow::anyhow!("--cores: {e}"))?;
    let opts = live::EndpointOptions {
        cfg,
        iface: args.iface.clone(),
        backend: args.backend,
        cores,
        busy_poll: args.busy_poll,
        limit: Some(seconds("--limit", args.limit)?),
        linger: seconds("--linger", args.linger)?,
        origin: None,
    };
    let stop = runtime::stop_on_signals()?;
    let outcome = live::run(&opts, ep, app, &stop)?;
    let counters = *outcome.endpoint.counters();
    let mut rows = Vec::new();
    let mut wrong_total = 0u64;
    let n = peers.len() as f64;
    let app: &dyn std::any::Any = outcome.app.as_ref();
    if let Some(sweep) = app.downcast_ref::<Sweep>() {
        println!(
            "# rank {} of {}: ring all-reduce, float sum (this rank's view)",
            args.rank,
            peers.len()
        );
        println!(
            "# {:>10} {:>11} {:>10} {:>7} {:>7} {:>7}",
            "size", "count", "time", "algbw", "busbw", "#wrong"
        );
        println!(
            "# {:>10} {:>11} {:>10} {:>7} {:>7} {:>7}",
            "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)", ""
        );
        for (size, run) in sweep.runs() {
            let wrong = run.wrong(&outcome.endpoint) as u64;
            wrong_total += wrong;
            let time = run.elapsed().map(|(a, b)| b.0.saturating_sub(a.0));
            let algbw = time.map_or(0.0, |t| size as f64 / t.max(1) as f64);
            println!(
                "  {:>10} {:>11} {:>10} {:>7.3} {:>7.3} {:>7}",
                size,
                size / 4,
                time.map_or_else(|| "timeout".into(), |t| format!("{:.1}", t as f64 / 1e3)),
                algbw,
                algbw * 2.0 * (n - 1.0) / n,
                wrong
            );
            rows.push(
                serde_json::json!({"size": size, "count": size / 4, "time_ns": time, "algbw": algbw,
                "busbw": algbw * 2.0 * (n - 1.0) / n, "wrong": wrong}),
            );
        }
    }
    if let Some(flow) = app.downcast_ref::<Flow>() {
        println!(
            "sent {} bytes{}",
            flow.completed_bytes(),
            flow.finished()
                .map_or_else(String::new, |t| format!(" in {}", t.human()))
        );
    }
    println!(
        "endpoint: {} data packets sent ({} retransmitted, {} timeouts), {} received; CNPs sent {} received {}; CE received {}; PFC pauses received {}; kernel drops {}",
        counters.data_packets_sent,
        counters.retransmitted_packets,
        counters.timeouts,
        counters.data_packets_received,
        counters.cnps_sent,
        counters.cnps_received,
        counters.ce_received,
        counters.pauses_received + counters.link_pauses_received,
        outcome.kernel.drops
    );
    if let Some(path) = &args.report {
        let report = serde_json::json!({
            "rank": args.rank, "mode": args.mode, "done": outcome.app.done(),
            "allreduce": rows, "counters": counters, "kernel": outcome.kernel,
        });
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(e) = outcome.error {
        anyhow::bail!("stopped: {e}");
    }
    if args.mode != "receive" && !outcome.app.done() {
        anyhow::bail!("not finished before --limit or a stop signal");
    }
    if wrong_total > 0 {
        anyhow::bail!("{wrong_total} values differ from the expected sum");
    }
    Ok(())
}

/// The receiver's application: nothing to post; the endpoint answers on its own.
struct Idle;

impl rocelab::endpoint::allreduce::Application for Idle {
    fn start(&mut self, _: rocelab::time::Nanos, _: &mut rocelab::endpoint::Endpoint) {}
    fn on_completion(
        &mut self,
        _: rocelab::time::Nanos,
        _: &mut rocelab::endpoint::Endpoint,
        _: rocelab::endpoint::Completion,
    ) {
    }
    fn done(&self) -> bool {
        false
    }
}

fn run_lab(args: LabArgs) -> Result<()> {
    use rocelab::lab::run::{self as lab, LabOptions, Workload};
    use rocelab::report::{lab as report, plot};
    rocelab::lab::netns::can_make_namespaces()
        .map_err(|e| anyhow::anyhow!("{e}; run `sudo rocelab lab` (or as root)"))?;
    if !(2..=64).contains(&args.ranks) {
        anyhow::bail!("--ranks {}: give 2 to 64", args.ranks);
    }
    if !(0.001..=100.0).contains(&args.rate) {
        anyhow::bail!(
            "--rate {}: give 0.001 to 100 Gb/s (veth and threads cannot emulate more)",
            args.rate
        );
    }
    let mut switch = match &args.config {
        Some(_) => load_config(args.config.as_ref(), None)?,
        None => SwitchConfig::preset(&args.preset)?,
    };
    let mut endpoint = match &args.endpoint_config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            toml::from_str::<rocelab::config::endpoint::EndpointConfig>(&text)
                .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.message().trim_end()))?
        }
        // RoCE fabrics for AI run a 4096-byte path MTU; it also means fewer frames for
        // the threads to move. DCQCN's rate steps (the paper's, for 40 Gb/s) scale with the
        // emulated rate, so that recovery takes as long, relative to the link, as it
        // would on hardware: at 1 Gb/s the paper's 40 Mb/s per 55 µs would refill the link
        // in about a millisecond and keep a congested queue tens of ms deep.
        None => {
            let scale = args.rate / 40.0;
            let mut cfg = rocelab::config::endpoint::EndpointConfig {
                mtu: 4096,
                ..Default::default()
            };
            cfg.dcqcn.rai_mbps *= scale;
            cfg.dcqcn.rhai_mbps *= scale;
            cfg.dcqcn.rmin_mbps *= scale;
            cfg
        }
    };
    endpoint.link_gbps = args.rate;
    if args.no_dcqcn {
        endpoint.dcqcn.enabled = false;
    }
    endpoint
        .validate("endpoint")
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if args.no_pfc {
        switch.disable_pfc();
    }
    if args.no_ecn {
        switch.disable_ecn();
    }
    if !(args.headroom_ms.is_finite() && args.headroom_ms >= 0.0) {
        anyhow::bail!("--headroom-ms {}: give 0 or more", args.headroom_ms);
    }
    let software = (args.rate * 1e9 / 8.0 * args.headroom_ms / 1e3) as u64;
    for pg in 0..rocelab::config::CLASSES {
        if switch.pgs[pg].lossless {
            let port = rocelab::config::PortConfig {
                bits_per_sec: (args.rate * 1e9) as u64,
                ..switch.port_defaults.clone()
            };
            let have = switch.headroom_bytes(pg, &port);
            switch.pgs[pg].headroom_bytes = Some(have.max(software));
        }
    }
    let (min, max) = (
        parse_size("-b", &args.min_bytes)?,
        parse_size("-e", &args.max_bytes)?,
    );
    if max < min || args.factor < 2 {
        anyhow::bail!(
            "-b {min} -e {max} -f {}: need b <= e and f >= 2",
            args.factor
        );
    }
    let mut sizes = Vec::new();
    let mut s = min;
    while s <= max {
        sizes.push(s);
        s *= args.factor;
    }
    let opts = LabOptions {
        workload: args.scenario,
        ranks: args.ranks,
        switch,
        endpoint,
        sizes,
        incast_bytes: parse_size("--incast-bytes", &args.incast_bytes)?,
        backend: args.backend,
        seed: args.seed,
        limit: seconds("--limit", args.limit)?,
        sample_every: std::time::Duration::from_millis(1),
    };
    let extra = if args.scenario == Workload::RingIncast {
        " + 2 background senders into r0"
    } else {
        ""
    };
    println!(
        "rocelab lab: {}, {} hosts{extra}, switch {} at {} Gb/s; PFC {}, ECN {}, DCQCN {} (Rai {} Mb/s)",
        args.scenario,
        args.ranks,
        args.config
            .as_ref()
            .map_or(args.preset.clone(), |p| p.display().to_string()),
        args.rate,
        if args.no_pfc { "off" } else { "on" },
        if args.no_ecn { "off" } else { "on" },
        if args.no_dcqcn { "off" } else { "on" },
        opts.endpoint.dcqcn.rai_mbps,
    );
    if let Some(dir) = &args.report {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create report directory {}", dir.display()))?;
    }
    let stop = rocelab::runtime::stop_on_signals()?;
    let mut progress = |line: &str| {
        eprint!("\r{line:<78}");
    };
    let outcome = lab::run(&opts, &stop, &mut progress);
    eprint!("\r{:<78}\r", "");
    let outcome = outcome?;
    println!(
        "namespaces {}* on 198.18.0.0/24: built, run for {:.2} s, removed\n",
        outcome.prefix,
        outcome.elapsed.as_secs_f64()
    );
    print!("{}", report::text(&opts, &outcome));
    if let Some(dir) = &args.report {
        let write = |name: &str, text: &[u8]| -> Result<()> {
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
        };
        let json = serde_json::to_string_pretty(&report::json(&opts, &outcome))?;
        write("report.json", (json + "\n").as_bytes())?;
        let mut csv = Vec::new();
        outcome.series.write_csv(&mut csv)?;
        write("series.csv", &csv)?;
        let title = format!("rocelab lab {}", args.scenario);
        write(
            "queues.svg",
            plot::queues_svg(&outcome.series, &title)?.as_bytes(),
        )?;
        write(
            "rates.svg",
            plot::rates_svg(&outcome.series, &title)?.as_bytes(),
        )?;
        write(
            "pauses.svg",
            plot::pauses_svg(&outcome.series, &title)?.as_bytes(),
        )?;
        println!(
            "\nwrote report.json, series.csv, queues.svg (queue depth per queue), rates.svg (each QP's rate), pauses.svg (PFC pause intervals per port) to {}",
            dir.display()
        );
    }
    if outcome.interrupted {
        anyhow::bail!(
            "stopped before the work finished (Ctrl-C, SIGTERM or --limit); everything was removed"
        );
    }
    let wrong: u64 = outcome.allreduce.iter().map(|r| r.wrong).sum();
    if wrong > 0 {
        anyhow::bail!("{wrong} all-reduce values differ from the expected sum");
    }
    if let Some(h) = outcome.hosts.iter().find(|h| h.error.is_some()) {
        anyhow::bail!("host {}: {}", h.name, h.error.clone().unwrap_or_default());
    }
    Ok(())
}
