//! `rocelab switch`: the software switch live between network interfaces.

use super::{
    Counters, JsonReport, LiveArgs, Preset, SwitchConfigArgs, checked_cores, key_value, seconds,
};
use anyhow::Result;
use rocelab::config::Trust;
use rocelab::io::Backend;
use rocelab::runtime::CoreList;
use rocelab::runtime::{
    self,
    switch::{SwitchOptions, SwitchOutcome},
};
use rocelab::wire::MacAddr;
use std::path::PathBuf;

/// Run the software switch live between network interfaces (as root).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(flatten)]
    switch: SwitchConfigArgs,
    /// A switch port on an interface (repeatable, in port order). A port the configuration
    /// does not name takes its port defaults; a configuration's [[ports]] entry that no
    /// --port names (case-sensitive) is refused.
    #[arg(long = "port", value_name = "NAME=IFNAME", required = true)]
    ports: Vec<String>,
    /// A static MAC address entry: frames to MAC go out of port NAME from the first frame,
    /// never flooded and never aged or moved by learning (NX-OS `mac address-table static`,
    /// SONiC's `config mac add`). MAC as 02:00:5e:00:53:01 or 0200.5e00.5301; repeatable.
    #[arg(long = "static-mac", value_name = "MAC=NAME")]
    static_macs: Vec<String>,
    #[command(flatten)]
    live: LiveArgs,
    /// Real-time priority (SCHED_FIFO 10) for the switch's threads even with --busy-poll,
    /// where a thread then keeps its core to itself (and the kernel's real-time throttling
    /// stops it for up to 50 ms of every second). Without --busy-poll it is the default.
    #[arg(long, conflicts_with = "no_realtime")]
    realtime: bool,
    /// Run the switch's threads at normal priority. By default they take real-time
    /// priority where the process may, so that other work on the machine cannot preempt
    /// them: a preempted thread holds the frames that arrive meanwhile, a queue the
    /// emulated link does not have (a 0.4 Gb/s stream through a loaded machine showed a
    /// 38 MB queue and lost 40 % at normal priority).
    #[arg(long)]
    no_realtime: bool,
    /// CPU cores to run on, e.g. 0,1 or 0-3: a thread pinned to each, run to completion.
    /// Thread k receives on ports k, k + n, k + 2n, ... of the n threads and forwards
    /// through the one shared switch core, sending on any port itself. At most one thread
    /// per port. Default: one thread for everything, not pinned.
    #[arg(long)]
    cores: Option<CoreList>,
    /// Stop after this many seconds (default: run until Ctrl-C or SIGTERM).
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// Print a summary line this often, in seconds: 0.01 or more, or 0 for none.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    interval: f64,
    /// Write the final counters (and kernel drop counts) as JSON (`-`: standard output,
    /// the text then going to standard error).
    #[arg(long = "json", alias = "stats-json", value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR:PORT/metrics: a loopback address or a name
    /// for one (localhost:9100); port 0 takes a free port, printed at the start.
    #[arg(long, value_name = "ADDR:PORT", value_parser = runtime::metrics::parse_addr)]
    metrics: Option<std::net::SocketAddr>,
    /// How to print the switch counters: table (a row per port and class), wide (every
    /// counter), sonic (`show pfc counters`, `show queue counters`, `show queue wredcounters`,
    /// `show pfcwd stats`) or nxos (`show
    /// interface priority-flow-control`, `show queuing interface`).
    #[arg(long, value_enum, default_value_t = Counters::Table)]
    counters: Counters,
}

/// The shortest `--interval` between summary lines: one each 0.1 µs once printed 200,000
/// lines a second.
const MIN_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);

/// The `--static-mac MAC=NAME` entries as (address, port index), `names` being the ports
/// in order. A group address, the zero address, an unknown port or an address given twice
/// is refused.
fn static_macs(specs: &[String], names: &[&str]) -> Result<Vec<(MacAddr, usize)>> {
    let mut out: Vec<(MacAddr, usize)> = Vec::with_capacity(specs.len());
    for spec in specs {
        let (mac, name) = key_value("--static-mac", spec, "MAC=NAME", "02:00:5e:00:53:01=p1")?;
        let mac: MacAddr = mac
            .parse()
            .map_err(|e| anyhow::anyhow!("--static-mac {spec}: {e}"))?;
        if mac.is_multicast() {
            anyhow::bail!(
                "--static-mac {spec}: {mac} is a group (multicast or broadcast) address; a static entry takes a unicast one"
            );
        }
        if mac == MacAddr::default() {
            anyhow::bail!("--static-mac {spec}: 00:00:00:00:00:00 is no station's address");
        }
        let Some(port) = names.iter().position(|n| *n == name) else {
            anyhow::bail!(
                "--static-mac {spec}: no port {name}; the ports are {}",
                names.join(", ")
            );
        };
        if let Some(&(_, first)) = out.iter().find(|(m, _)| *m == mac) {
            anyhow::bail!(
                "--static-mac {spec}: {mac} already has an entry, on port {}",
                names[first]
            );
        }
        out.push((mac, port));
    }
    Ok(out)
}

/// Runs `rocelab switch`.
pub(crate) fn run(args: Args) -> Result<()> {
    let (opts, names, stats) = options(&args)?;
    let banner = banner(&opts, &names)?;
    let stop = runtime::stop_on_signals()?;
    noteln!("{banner}");
    let outcome = runtime::switch::run(&opts, &stop, &mut super::TextOut)?;
    print_outcome(&outcome, &names, args.counters);
    if stats.wanted() {
        let kernel = kernel_json(&names, &opts.ifaces, &outcome.kernel);
        stats.write(&rocelab::report::document(
            "switch",
            serde_json::json!({
                "elapsed_s": outcome.elapsed.as_secs_f64(),
                "ports": rocelab::report::ports(&outcome.switch),
                "kernel": kernel,
                "threads": threads_json(&outcome, &names),
                "behind": outcome.behind,
                "warnings": outcome.switch.warnings(),
                "config": rocelab::report::configs(Some(outcome.switch.config()), None),
            }),
        ))?;
    }
    match outcome.error {
        Some(e) => Err(anyhow::Error::new(e).context("stopped")),
        None => Ok(()),
    }
}

/// The run's options from the flags, checked, with the ports' names and where the JSON
/// goes.
fn options(args: &Args) -> Result<(SwitchOptions, Vec<&str>, JsonReport)> {
    let interval = seconds("--interval", args.interval)?;
    if !interval.is_zero() && interval < MIN_INTERVAL {
        anyhow::bail!(
            "--interval {}: give at least {} s (a line every 10 ms is 100 a second), or 0 for no lines",
            args.interval,
            MIN_INTERVAL.as_secs_f64()
        );
    }
    let mut config = args.switch.load(Preset::Default)?;
    let inputs: Vec<&std::path::Path> = args.switch.config.iter().map(|p| p.as_path()).collect();
    let stats = JsonReport::create(args.stats_json.as_deref(), &inputs)?;
    let mut names = Vec::new();
    let mut ifaces = Vec::new();
    for spec in &args.ports {
        let (name, iface) = key_value("--port", spec, "NAME=IFNAME", "p1=veth1")?;
        if names.contains(&name) {
            anyhow::bail!("--port {spec}: port {name} is given twice");
        }
        if ifaces.iter().any(|i: &String| i == iface) {
            anyhow::bail!("--port {spec}: interface {iface} is already a port");
        }
        super::not_loopback(&format!("--port {spec}"), iface)?;
        names.push(name);
        ifaces.push(iface.to_owned());
    }
    let configured: Vec<&str> = config.ports.iter().map(|p| p.name.as_str()).collect();
    if let Some(why) = unmatched_ports(&configured, &names) {
        anyhow::bail!("{why}");
    }
    let static_macs = static_macs(&args.static_macs, &names)?;
    config.ports = names.iter().map(|n| config.port_or_default(n)).collect();
    let interface_mtus: Vec<Option<u32>> = ifaces.iter().map(|i| interface_mtu(i)).collect();
    let port_mtus: Vec<u32> = config.ports.iter().map(|p| p.mtu).collect();
    if let Some(w) = mtu_warning(&names, &ifaces, &port_mtus, &interface_mtus) {
        noteln!("rocelab: warning: {w}");
    }
    if config.trust == Trust::Pcp && args.live.backend == Backend::Pnet {
        anyhow::bail!(
            "trust = \"pcp\" needs the 802.1Q tags, which the pnet backend does not see: use --io mmap"
        );
    }
    let opts = SwitchOptions {
        lockstep: None,
        config,
        ifaces,
        backend: args.live.backend,
        cores: checked_cores(args.cores.as_ref())?,
        busy_poll: args.live.busy_poll,
        duration: args
            .duration
            .map(|d| seconds("--duration", d))
            .transpose()?,
        interval: Some(interval).filter(|d| !d.is_zero()),
        // Bound now: an address in use stops the run before any port is opened.
        metrics: args
            .metrics
            .map(runtime::metrics::bind)
            .transpose()?
            .map(std::sync::Arc::new),
        static_macs,
        keep_going_when_a_port_is_down: true,
        // A spinning thread at real-time priority runs into the kernel's real-time
        // throttling; a sleeping one stays well under it (the driver caps its spinning).
        realtime: super::realtime_or_warn(
            args.realtime || !(args.no_realtime || args.live.busy_poll),
            "--no-realtime",
        ),
    };
    Ok((opts, names, stats))
}

/// The line that starts the run: ports, backend, threads, and what else is on.
fn banner(opts: &SwitchOptions, names: &[&str]) -> Result<String> {
    let serving = match &opts.metrics {
        Some(listener) => format!("; metrics at http://{}/metrics", listener.local_addr()?),
        None => String::new(),
    };
    let priority = if opts.realtime.is_some() {
        ", real-time priority"
    } else {
        ""
    };
    let statics = match opts.static_macs.len() {
        0 => String::new(),
        1 => ", 1 static MAC".to_owned(),
        n => format!(", {n} static MACs"),
    };
    let threads = runtime::switch::thread_count(&opts.cores, opts.ifaces.len());
    let ports_of = runtime::switch::threads_ports(opts.ifaces.len(), threads);
    let backend = match opts.backend {
        Backend::Mmap => "mmap",
        Backend::Pnet => "pnet",
    };
    Ok(format!(
        "rocelab switch: {} port{} ({}), {backend} backend, {}{priority}{statics}{serving}; Ctrl-C stops",
        opts.ifaces.len(),
        if opts.ifaces.len() == 1 { "" } else { "s" },
        names
            .iter()
            .zip(&opts.ifaces)
            .map(|(n, i)| format!("{n}={i}"))
            .collect::<Vec<_>>()
            .join(", "),
        thread_plan(&opts.cores, names, &ports_of),
    ))
}

/// What the run did: its time, the kernel's drops and refusals, the threads, the counters
/// and the configuration's warnings.
fn print_outcome(outcome: &SwitchOutcome, names: &[&str], counters: Counters) {
    sayln!(
        "\nran {:.1} s; kernel receive drops: {}",
        outcome.elapsed.as_secs_f64(),
        names
            .iter()
            .zip(&outcome.kernel)
            .map(|(n, k)| format!("{n} {}", k.drops))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(line) = refused_line(names, &outcome.kernel) {
        sayln!("{line}");
    }
    sayln!("{}", thread_summary(outcome, names));
    let cut: Vec<String> = names
        .iter()
        .zip(&outcome.kernel)
        .filter(|(_, k)| k.truncated > 0)
        .map(|(n, k)| format!("{n} {}", k.truncated))
        .collect();
    if !cut.is_empty() {
        sayln!(
            "frames larger than the port MTU arrived cut short and were dropped: {}",
            cut.join(", ")
        );
    }
    say!(
        "{}",
        rocelab::report::counters::render(&outcome.switch, counters.style())
    );
    // What the traffic showed of the configuration, as rocelab replay says it.
    for w in outcome.switch.warnings() {
        noteln!("rocelab: warning: {}", w.message);
    }
}

/// The configuration's `[[ports]]` that no `--port` names, said with both lists. Refused,
/// not warned of: such a port would run at the port defaults (400 Gb/s, MTU 9216) while
/// the file says otherwise, and every number measured would be off without a word; a
/// switch's CLI refuses an interface name it does not know, and names are compared
/// exactly (p2 is not P2).
fn unmatched_ports(configured: &[&str], names: &[&str]) -> Option<String> {
    let unmatched: Vec<&str> = configured
        .iter()
        .filter(|c| !names.contains(c))
        .copied()
        .collect();
    (!unmatched.is_empty()).then(|| {
        format!(
            "the configuration's [[ports]] {} match no --port (the configuration names {}; \
             --port names {}): give each configured port a --port NAME=IFNAME of the same \
             name (names are case-sensitive), or remove it from the configuration",
            unmatched.join(", "),
            configured.join(", "),
            names.join(", ")
        )
    })
}

/// The MTU of interface `iface` as this network namespace's sysfs gives it, if it can be
/// read (`ip netns exec` mounts the namespace's own).
fn interface_mtu(iface: &str) -> Option<u32> {
    std::fs::read_to_string(format!("/sys/class/net/{iface}/mtu"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The ports whose configured MTU is above their interface's, said as a warning. A
/// warning, not a refusal: the port MTU is the largest frame the switch takes, 9216 in
/// every preset, while an interface is often at 1500 and its traffic smaller; a frame too
/// large for the interface is refused by the kernel, counted as `tx_refused` and printed.
fn mtu_warning(
    names: &[&str],
    ifaces: &[String],
    port_mtus: &[u32],
    interface_mtus: &[Option<u32>],
) -> Option<String> {
    let over: Vec<String> = names
        .iter()
        .zip(ifaces)
        .zip(port_mtus.iter().zip(interface_mtus))
        .filter_map(|((n, i), (&port, &iface))| {
            let iface = iface?;
            (port > iface).then(|| format!("{n} {port} on {i} {iface}"))
        })
        .collect();
    (!over.is_empty()).then(|| {
        format!(
            "port MTU above its interface's MTU: {}. The kernel refuses to send a frame longer \
             than the interface's MTU: such a frame is counted in the table as sent and as \
             tx_refused. Fix: raise the interface's (ip link set IFNAME mtu N) or lower the \
             port's mtu in the configuration",
            over.join(", ")
        )
    })
}

/// "frames the kernel refused to send: p1 10, p2 10", when it refused any.
fn refused_line(names: &[&str], kernel: &[rocelab::io::KernelStats]) -> Option<String> {
    let refused: Vec<String> = names
        .iter()
        .zip(kernel)
        .filter(|(_, k)| k.tx_refused > 0)
        .map(|(n, k)| format!("{n} {}", k.tx_refused))
        .collect();
    (!refused.is_empty()).then(|| {
        format!(
            "frames the kernel refused to send (too large for the interface, its port down, or a port busy \
             too long), counted in the table's tx frames but never sent: {}",
            refused.join(", ")
        )
    })
}

/// The `kernel` array of `--json`: each port's socket statistics, as docs/json.md lists them.
fn kernel_json(
    names: &[&str],
    ifaces: &[String],
    kernel: &[rocelab::io::KernelStats],
) -> Vec<serde_json::Value> {
    names
        .iter()
        .zip(ifaces)
        .zip(kernel)
        .map(|((n, i), k)| {
            serde_json::json!({
                "port": n,
                "interface": i,
                "packets": k.packets,
                "drops": k.drops,
                "truncated": k.truncated,
                "tx_refused": k.tx_refused,
            })
        })
        .collect()
}

/// "one thread (not pinned)", or "2 threads: core 0 receives p0, p2; core 1 receives p1".
fn thread_plan(cores: &CoreList, names: &[&str], ports_of: &[Vec<usize>]) -> String {
    let threads = ports_of.len();
    // At most a thread per port: the cores past that are said, not silently dropped.
    let unused = match cores.0.get(threads..).unwrap_or_default() {
        [] => String::new(),
        rest => format!(
            " (core{} {} unused: at most one thread per port)",
            if rest.len() == 1 { "" } else { "s" },
            rest.iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if threads == 1 {
        return match cores.0.first() {
            Some(c) => format!("one thread on core {c}{unused}"),
            None => "one thread (not pinned)".to_owned(),
        };
    }
    let each: Vec<String> = ports_of
        .iter()
        .zip(&cores.0)
        .map(|(ports, core)| {
            let ports: Vec<&str> = ports.iter().map(|&p| names[p]).collect();
            format!("core {core} receives {}", ports.join(", "))
        })
        .collect();
    format!("{threads} threads: {}{unused}", each.join("; "))
}

/// How the threads fared: each one's busy share and the frames it took late, and the
/// frames that entered behind another thread's.
fn thread_summary(outcome: &runtime::switch::SwitchOutcome, names: &[&str]) -> String {
    let each: Vec<String> = outcome
        .threads
        .iter()
        .zip(&outcome.thread_ports)
        .map(|(t, ports)| {
            let ports: Vec<&str> = ports.iter().map(|&p| names[p]).collect();
            format!(
                "{} busy {:.0} %, {} frames, {:.1} % late, stalled up to {:.1} ms",
                ports.join("+"),
                t.busy() * 100.0,
                t.frames,
                t.late() * 100.0,
                t.max_lag_ns as f64 / 1e6
            )
        })
        .collect();
    let mut line = format!("threads: {}", each.join("; "));
    if outcome.threads.len() > 1 {
        line += &format!(
            "; {} frame{} entered behind another thread's (by up to {:.1} µs)",
            outcome.behind.frames,
            if outcome.behind.frames == 1 { "" } else { "s" },
            outcome.behind.max_ns as f64 / 1e3
        );
    }
    line
}

/// The threads for `--json`: ports, busy share, frames, late frames.
fn threads_json(outcome: &runtime::switch::SwitchOutcome, names: &[&str]) -> serde_json::Value {
    outcome
        .threads
        .iter()
        .zip(&outcome.thread_ports)
        .map(|(t, ports)| {
            serde_json::json!({
                "ports": ports.iter().map(|&p| names[p]).collect::<Vec<_>>(),
                "busy": t.busy(),
                "frames": t.frames,
                "late_frames": t.late_frames,
                "max_lag_ns": t.max_lag_ns,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocelab::io::KernelStats;

    /// f01: frames the kernel refused (4002 bytes on a 1500-MTU veth) were shown as sent,
    /// with no drop, and the JSON `kernel` object lacked the `tx_refused` docs/json.md
    /// lists.
    #[test]
    fn frames_the_kernel_refused_are_printed_and_in_the_json() {
        let names = ["p0", "p1"];
        let ifaces = vec!["s0".to_owned(), "s1".to_owned()];
        let kernel = [
            KernelStats::default(),
            KernelStats {
                tx_refused: 10,
                ..KernelStats::default()
            },
        ];
        let json = kernel_json(&names, &ifaces, &kernel);
        assert_eq!(json[0]["tx_refused"], 0);
        assert_eq!(json[1]["tx_refused"], 10);
        let line = refused_line(&names, &kernel).unwrap();
        assert!(line.ends_with(": p1 10"), "{line}");
        assert_eq!(refused_line(&names, &[KernelStats::default(); 2]), None);
    }

    /// QA: `--cores 0,1,2,3` on two ports ran two threads and said nothing of cores 2, 3.
    #[test]
    fn cores_past_one_thread_per_port_are_said_to_be_unused() {
        let names = ["p0", "p1"];
        let two = vec![vec![0], vec![1]];
        assert_eq!(
            thread_plan(&CoreList(vec![0, 1, 2, 3]), &names, &two),
            "2 threads: core 0 receives p0; core 1 receives p1 (cores 2, 3 unused: at most one thread per port)"
        );
        assert_eq!(
            thread_plan(&CoreList(vec![0, 1]), &names, &two),
            "2 threads: core 0 receives p0; core 1 receives p1"
        );
        assert_eq!(
            thread_plan(&CoreList(vec![5, 6]), &["p0"], &[vec![0]]),
            "one thread on core 5 (core 6 unused: at most one thread per port)"
        );
        assert_eq!(
            thread_plan(&CoreList(vec![]), &["p0"], &[vec![0]]),
            "one thread (not pinned)"
        );
    }

    /// f16: `[[ports]] name = "p2"` in the file with `--port P2=...` ran P2 at the
    /// defaults (400 Gb/s, MTU 9216) without a word.
    #[test]
    fn a_configured_port_no_port_flag_names_is_refused() {
        let why = unmatched_ports(&["p0", "p2"], &["p0", "P2"]).unwrap();
        assert!(
            why.starts_with("the configuration's [[ports]] p2 match no --port"),
            "{why}"
        );
        assert!(why.contains("names p0, p2; --port names p0, P2"), "{why}");
        assert_eq!(unmatched_ports(&["p1"], &["p0", "p1"]), None);
        assert_eq!(unmatched_ports(&[], &["p0"]), None);
    }

    #[test]
    fn a_port_mtu_above_its_interface_mtu_is_warned_of() {
        let names = ["p0", "p1", "p2"];
        let ifaces = vec!["s0".to_owned(), "s1".to_owned(), "s2".to_owned()];
        let w = mtu_warning(
            &names,
            &ifaces,
            &[9000, 9216, 9216],
            &[Some(9000), Some(1500), None],
        )
        .unwrap();
        assert!(w.contains(": p1 9216 on s1 1500. "), "{w}");
        assert!(!w.contains("p0") && !w.contains("p2"), "{w}");
        assert_eq!(
            mtu_warning(&names[..1], &ifaces[..1], &[1500], &[Some(9000)]),
            None
        );
    }
}
