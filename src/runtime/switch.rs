//! `rocelab switch`: the switch core live between network interfaces.

use super::metrics;
use super::ports::{Arrival, PortThreads};
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
    /// `pnet` (low latency) or `mmap` (throughput, up to 1 ms of receive batching).
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
    let mut switch = Switch::new(&opts.config);
    let ports = PortThreads::start(
        &opts.ifaces,
        opts.backend,
        frame_mtu(&opts.config),
        &opts.cores,
        stop,
    )?;
    let snapshot = opts
        .metrics
        .map(|addr| metrics::serve(addr, Arc::clone(stop)))
        .transpose()?;
    opts.cores.pin(0);
    super::precise_timers();
    let clock = Clock::start();
    let started = Instant::now();
    let end = opts.duration.map(|d| started + d);
    let mut next_line = opts.interval.map(|i| started + i);
    let mut next_snapshot = started;
    let mut next_sample = started;
    let mut outgoing: Vec<Vec<Vec<u8>>> = vec![Vec::new(); opts.ifaces.len()];
    let mut last_totals = Totals::of(&switch);
    let mut last_line = started;
    let mut last = Nanos::ZERO;
    let mut error = None;

    loop {
        // A port's error first: it also raises the stop flag.
        if let Ok(e) = ports.errors.try_recv() {
            error = Some(e);
            break;
        }
        if stopped(stop) || end.is_some_and(|e| Instant::now() >= e) {
            break;
        }
        // Sleep until a frame comes, the switch's next deadline, or a housekeeping time.
        let mut wake = Instant::now() + Duration::from_millis(50);
        if let Some(t) = switch.poll_timeout() {
            wake = wake.min(clock.instant(t));
        }
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
        let first = match ports.wait(wake, opts.busy_poll) {
            Arrival::Batch(b) => Some(b),
            Arrival::Timeout => None,
            Arrival::Closed => break,
        };
        // A thread wakes late: what the ports would have sent meanwhile leaves now, at the
        // times the shapers give it, so the emulated line rate holds on average.
        // The monotonic clock never reads less than `last` (the cores check it).
        let now = clock.now();
        catch_up(&mut switch, now, &mut last, &mut outgoing);
        if let Some((port, batch)) = first {
            for frame in batch {
                switch.handle_owned_frame(now, port, frame);
            }
            // Whatever else is already waiting, without blocking.
            for _ in 0..64 {
                let Ok((port, batch)) = ports.rx.try_recv() else {
                    break;
                };
                for frame in batch {
                    switch.handle_owned_frame(now, port, frame);
                }
            }
        }
        if switch.poll_timeout().is_some_and(|t| t <= now) {
            switch.handle_timeout(now);
        }
        while let Some((port, buf)) = switch.poll_transmit_owned(now) {
            outgoing[port].push(buf);
        }
        for (port, batch) in outgoing.iter_mut().enumerate() {
            if !batch.is_empty() {
                // The shaper released these frames: the emulated wire carries them, so a
                // transmit thread that is behind holds the core back (backpressure) rather
                // than losing them, which would make a lossless class lossy. It cannot
                // hold it for long: a jammed socket gives up on a batch after a bounded
                // wait, and a failed port's thread keeps draining its channel.
                if let Err(e) = ports.tx[port].send(std::mem::take(batch)) {
                    for buf in e.into_inner() {
                        ports.pool.put(buf);
                    }
                }
            }
        }
        let now_i = Instant::now();
        if let (Some(interval), Some(t)) = (opts.interval, next_line)
            && now_i >= t
        {
            let totals = Totals::of(&switch);
            let _ = writeln!(
                out,
                "{}",
                summary_line(
                    &switch,
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
            (s.call)(now_i - started, &switch);
            next_sample = now_i + s.every;
        }
        if let Some(snap) = &snapshot
            && now_i >= next_snapshot
        {
            snap.set(metrics::render(&switch, now));
            next_snapshot = now_i + Duration::from_millis(250);
        }
    }
    let elapsed = started.elapsed();
    let (kernel, late_error) = ports.finish();
    let error = error.or(late_error);
    Ok(SwitchOutcome {
        switch,
        kernel,
        elapsed,
        error,
    })
}

/// How far back a late core thread sends what the shapers allowed while it slept.
const MAX_CATCH_UP: Nanos = Nanos(2_000_000);

/// Runs the switch's timers and transmissions that fell due before `now`, each at its own
/// time, in order; `last` is the latest time the switch has seen.
fn catch_up(sw: &mut Switch, now: Nanos, last: &mut Nanos, out: &mut [Vec<Vec<u8>>]) {
    // No further back than MAX_CATCH_UP: a long stall is lost time, not a burst.
    let floor = Nanos(now.0.saturating_sub(MAX_CATCH_UP.0)).max(*last);
    // Bounded: every round sends a frame or moves time forward.
    for _ in 0..1_000_000 {
        let Some(t) = sw.poll_timeout().filter(|&t| t < now) else {
            break;
        };
        let t = t.max(floor);
        sw.handle_timeout(t);
        let mut sent = false;
        while let Some((port, buf)) = sw.poll_transmit_owned(t) {
            out[port].push(buf);
            sent = true;
        }
        // No frame went and nothing moved past t: the rest waits for `now`.
        if !sent && sw.poll_timeout().is_some_and(|d| d <= t) {
            break;
        }
        *last = t;
    }
    *last = now;
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
