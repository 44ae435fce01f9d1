//! `rocelab switch`: the switch core live between network interfaces, on one pinned
//! thread that owns every port (see [`super::ports`]).

use super::metrics;
use super::ports::{Core, Driver, Ports, ThreadStats};
use super::{Clock, CoreList, stopped};
use super::{PortError, RuntimeError};
use crate::config::{CLASSES, SwitchConfig};
use crate::io::{Backend, KernelStats};
use crate::switch::Switch;
use crate::time::Nanos;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How to run.
#[derive(Debug, Clone)]
pub struct SwitchOptions {
    /// The configuration; its ports, in order, are the interfaces' ports.
    pub config: SwitchConfig,
    /// The interface of each port.
    pub ifaces: Vec<String>,
    /// `mmap` (a TPACKET_V2 ring and `sendmmsg` batches) or `pnet`.
    pub backend: Backend,
    /// Cores to pin to (empty: no pinning).
    pub cores: CoreList,
    /// Spin instead of sleeping.
    pub busy_poll: bool,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Print a summary line this often.
    pub interval: Option<Duration>,
    /// Serve Prometheus text here (loopback only).
    pub metrics: Option<SocketAddr>,
}

/// How the run ended.
#[derive(Debug)]
pub struct SwitchOutcome {
    /// The switch, with its counters.
    pub switch: Switch,
    /// Each port's kernel receive statistics.
    pub kernel: Vec<KernelStats>,
    /// How long it ran.
    pub elapsed: Duration,
    /// A port's fatal error, if that is what stopped it.
    pub error: Option<PortError>,
    /// How its thread fared.
    pub thread: ThreadStats,
}

/// Largest frame the ports must carry: the configured MTU plus the Ethernet header and a
/// VLAN tag.
fn frame_mtu(cfg: &SwitchConfig) -> usize {
    cfg.ports.iter().map(|p| p.mtu).max().unwrap_or(9216) as usize + 18
}

/// Runs the switch until `stop` is raised, the duration passes, or a port fails. Summary
/// lines go to `out`.
pub fn run(
    opts: &SwitchOptions,
    stop: &Arc<AtomicBool>,
    out: &mut dyn Write,
) -> Result<SwitchOutcome, RuntimeError> {
    run_sampled(opts, stop, out, None)
}

/// Something to call with the switch every `every` (the lab's time series).
pub struct Sampler<'a, T: ?Sized> {
    /// Wall-clock time from one call to the next, at least (a late call delays the next).
    pub every: Duration,
    /// What to call, with the time since the run began.
    pub call: &'a mut (dyn FnMut(Duration, &T) + Send),
}

/// As [`run`], calling `sampler` with the switch as it runs.
pub fn run_sampled(
    opts: &SwitchOptions,
    stop: &Arc<AtomicBool>,
    out: &mut dyn Write,
    mut sampler: Option<Sampler<'_, Switch>>,
) -> Result<SwitchOutcome, RuntimeError> {
    let mut ports = Ports::open_all(opts.backend, &opts.ifaces, frame_mtu(&opts.config))?;
    for (k, p) in opts.config.ports.iter().enumerate().take(ports.len()) {
        ports.emulate_link(k, p.bits_per_sec, p.cable);
    }
    let snapshot = opts
        .metrics
        .map(|addr| metrics::serve(addr, Arc::clone(stop)))
        .transpose()?;
    // One thread runs the switch and all its ports, to completion.
    opts.cores.pin(0);
    super::precise_timers();
    let owner = vec![0; ports.len()];
    let mut driver = Driver::new(
        vec![Switch::new(&opts.config)],
        ports,
        owner,
        Clock::start(),
    );
    let started = Instant::now();
    let start_unix_secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let end = opts.duration.map(|d| started + d);
    let mut next_line = opts.interval.map(|i| started + i);
    let mut next_snapshot = started;
    let mut next_sample = started;
    let mut last_totals = Totals::of(&driver.cores[0]);
    let mut last_line = started;
    let mut error = None;

    loop {
        if stopped(stop) || end.is_some_and(|e| Instant::now() >= e) {
            break;
        }
        // Sleep until a frame comes, the switch's next deadline, or a housekeeping time.
        let mut wake = Instant::now() + Duration::from_millis(50);
        for t in [
            end,
            next_line,
            snapshot.as_ref().map(|_| next_snapshot),
            sampler.as_ref().map(|_| next_sample),
        ]
        .into_iter()
        .flatten()
        {
            wake = wake.min(t);
        }
        let now = match driver.round(wake, opts.busy_poll) {
            Ok(now) => now,
            Err(e) => {
                error = Some(e);
                break;
            }
        };
        let switch = &driver.cores[0];
        let now_i = Instant::now();
        if let (Some(interval), Some(t)) = (opts.interval, next_line)
            && now_i >= t
        {
            let totals = Totals::of(switch);
            let _ = writeln!(
                out,
                "{}",
                summary_line(
                    switch,
                    &last_totals,
                    &totals,
                    now_i - started,
                    now_i - last_line
                )
            );
            let _ = out.flush();
            last_totals = totals;
            last_line = now_i;
            next_line = Some(t + interval);
        }
        if let Some(s) = sampler.as_mut()
            && now_i >= next_sample
        {
            (s.call)(now_i - started, switch);
            next_sample = now_i + s.every;
        }
        if let Some(snap) = &snapshot
            && now_i >= next_snapshot
        {
            snap.set(metrics::render(switch, now, start_unix_secs));
            next_snapshot = now_i + Duration::from_millis(250);
        }
    }
    let elapsed = started.elapsed();
    let (mut cores, mut ports, thread) = driver.into_parts();
    let kernel = ports.kernel_stats();
    ports.close();
    let switch = cores.pop().expect("the driver holds the switch");
    Ok(SwitchOutcome {
        switch,
        kernel,
        elapsed,
        error,
        thread,
    })
}

/// How far back the switch's thread replays a stall (see [`Core::catch_up`]).
const SWITCH_CATCH_UP: Nanos = Nanos(50_000_000);

impl Core for Switch {
    fn deadline(&self) -> Option<Nanos> {
        self.poll_timeout()
    }

    fn run_at(&mut self, t: Nanos, ports: &mut Ports) -> usize {
        if self.poll_timeout().is_some_and(|d| d <= t) {
            self.handle_timeout(t);
        }
        let mut sent = 0;
        while let Some((port, buf)) = self.poll_transmit_owned(t) {
            ports.send(port, buf);
            sent += 1;
        }
        sent
    }

    fn arrive(&mut self, t: Nanos, port: usize, frame: Vec<u8>, _: &mut Ports) {
        self.handle_owned_frame(t, port, frame);
    }

    /// Up to 50 ms: after a stall of its thread, every frame is taken at the time it came.
    fn catch_up(&self) -> Nanos {
        SWITCH_CATCH_UP
    }
}

/// Counter sums over every port and class.
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    rx_frames: u64,
    rx_bytes: u64,
    tx_frames: u64,
    tx_bytes: u64,
    pfc_tx: u64,
    pfc_rx: u64,
    marked: u64,
    dropped: u64,
}

impl Totals {
    fn of(sw: &Switch) -> Totals {
        let mut t = Totals::default();
        for p in 0..sw.port_count() {
            for c in &sw.counters(p).classes {
                t.rx_frames += c.rx_frames;
                t.rx_bytes += c.rx_bytes;
                t.tx_frames += c.tx_frames;
                t.tx_bytes += c.tx_bytes;
                t.pfc_tx += c.tx_pause_frames;
                t.pfc_rx += c.rx_pause_frames;
                t.marked += c.ecn_marked;
                t.dropped += c.dropped();
            }
        }
        t
    }
}

fn rate(frames: u64, bytes: u64, secs: f64) -> String {
    format!(
        "{:.1} kpps {:.1} Mb/s",
        frames as f64 / secs / 1e3,
        bytes as f64 * 8.0 / secs / 1e6
    )
}

/// One line: rates since the last line, the deepest queue now, PFC, marks and drops.
fn summary_line(sw: &Switch, last: &Totals, now: &Totals, at: Duration, span: Duration) -> String {
    let secs = span.as_secs_f64().max(1e-9);
    let mut deepest = (0u64, String::new());
    for p in 0..sw.port_count() {
        for q in 0..CLASSES {
            let b = sw.queue_bytes(p, q);
            if b > deepest.0 {
                deepest = (b, format!(" ({} q{q})", sw.config().ports[p].name));
            }
        }
    }
    format!(
        "[{:>7.1} s] rx {}  tx {}  queue max {} B{}  PFC tx {} rx {}  CE {}  drops {}",
        at.as_secs_f64(),
        rate(
            now.rx_frames - last.rx_frames,
            now.rx_bytes - last.rx_bytes,
            secs
        ),
        rate(
            now.tx_frames - last.tx_frames,
            now.tx_bytes - last.tx_bytes,
            secs
        ),
        deepest.0,
        deepest.1,
        now.pfc_tx - last.pfc_tx,
        now.pfc_rx - last.pfc_rx,
        now.marked - last.marked,
        now.dropped - last.dropped,
    )
}
