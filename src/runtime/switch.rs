//! `rocelab switch`: the switch core live between network interfaces, on pinned
//! run-to-completion threads (see [`super::ports`]).
//!
//! One thread per core listed: thread `k` receives on ports `k`, `k + n`, `k + 2n`, ...
//! Every thread forwards what it receives through the one switch core (one shared buffer,
//! one MMU, one set of PFC states, as in a shared-memory switch) and sends each frame the
//! switch releases itself, on whichever port it leaves by: no frame is handed to another
//! thread. The threads take the switch in turn, a frame or a timer at a time; a frame
//! whose kernel time is before what another thread last handed the switch enters at the
//! switch's time (counted in [`Behind`]). With one core, one thread does everything.

use super::metrics;
use super::ports::{Core, Driver, Ports, ThreadStats};
use super::{Clock, CoreList, stopped};
use super::{PortError, RuntimeError};
use crate::config::{CLASSES, SwitchConfig};
use crate::io::{Backend, KernelStats};
use crate::switch::Switch;
use crate::time::Nanos;
use crate::wire::MacAddr;
use std::io::Write;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
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
    /// Cores to run on: a thread pinned to each (empty: one thread, not pinned).
    pub cores: CoreList,
    /// Spin instead of sleeping.
    pub busy_poll: bool,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Print a summary line this often. Its deepest queue is the deepest since the line
    /// before, read as a time-series recorder reads it
    /// ([`SwitchProbe::queue_peak_bytes`](crate::series::SwitchProbe::queue_peak_bytes)),
    /// which starts the next interval: a sampler that records queue peaks and this line do
    /// not go together (the lab has no line).
    pub interval: Option<Duration>,
    /// Serve Prometheus text on this listener ([`metrics::bind`]: loopback only).
    pub metrics: Option<Arc<TcpListener>>,
    /// MAC addresses known from the start, each behind its port (static FDB entries, as
    /// [`Switch::add_route`] makes them): a frame to one goes out of its port alone, never
    /// flooded while the address is still to be learned. Empty: everything is learned.
    pub static_macs: Vec<(MacAddr, usize)>,
    /// A port whose interface goes down or away is marked down and the others go on, as
    /// on a switch (see [`Ports::keep_going_when_a_port_is_down`]); otherwise the run
    /// stops with its error.
    pub keep_going_when_a_port_is_down: bool,
    /// Real-time priority for every switch thread ([`super::realtime`]); `None`: normal.
    pub realtime: Option<u8>,
    /// Run in lockstep with the threads of the rest of the fabric (the lab's hosts), on
    /// their shared dilated clock; one switch thread only.
    pub lockstep: Option<super::lockstep::Member>,
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
    /// How each thread fared, in thread order.
    pub threads: Vec<ThreadStats>,
    /// The ports each thread received on, in thread order.
    pub thread_ports: Vec<Vec<usize>>,
    /// Frames that entered after another thread's later frame.
    pub behind: Behind,
}

/// Frames one thread handed the switch after another thread had handed it a frame with a
/// later time: they enter at the switch's time (time never goes back in the core), a
/// little after their kernel time. With one thread there are none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Behind {
    /// How many.
    pub frames: u64,
    /// The longest any waited past its kernel time, ns.
    pub max_ns: u64,
}

impl Behind {
    fn add(&mut self, other: Behind) {
        self.frames += other.frames;
        self.max_ns = self.max_ns.max(other.max_ns);
    }
}

/// Thread `k` of `n` receives on ports `k`, `k + n`, ...: the owner of each of `ports`.
pub fn port_threads(ports: usize, threads: usize) -> Vec<usize> {
    (0..ports).map(|p| p % threads.max(1)).collect()
}

/// The ports each of `threads` threads receives on, as [`port_threads`] deals them.
pub fn threads_ports(ports: usize, threads: usize) -> Vec<Vec<usize>> {
    let owner = port_threads(ports, threads);
    (0..threads.max(1))
        .map(|t| (0..ports).filter(|&p| owner[p] == t).collect())
        .collect()
}

/// How many threads a switch of `ports` ports runs on `cores`: one per core, no more than
/// one per port, at least one.
pub fn thread_count(cores: &CoreList, ports: usize) -> usize {
    cores.0.len().min(ports).max(1)
}

/// The switch the threads share, and which of them keeps its deadlines.
struct Shared {
    switch: Switch,
    /// The thread that last handed the switch a frame or ran it: it waits for the
    /// switch's next deadline, whatever port that is for, and the others do not, so that
    /// a deadline wakes one thread rather than all of them. Whoever changes the switch
    /// becomes the keeper and then computes its wait, so every deadline is kept.
    keeper: usize,
    /// Each port's socket statistics as its receiving thread last read them (for the
    /// metrics page; read every [`SNAPSHOT_EVERY`] while it is served).
    kernel: Vec<KernelStats>,
}

/// How often the metrics page is rendered, and the threads publish their ports' socket
/// statistics for it.
const SNAPSHOT_EVERY: Duration = Duration::from_millis(250);

impl Shared {
    /// Takes the statistics of `own`, the ports a thread receives on, from `stats` (that
    /// thread's [`Ports::kernel_stats`]). The transmit side's are kept per port whoever
    /// sends, and any thread may read them, but a reading can be older than one published
    /// already, or miss a socket another thread holds while it sends: the count never goes
    /// back (Prometheus would take it for a restart).
    fn publish(&mut self, own: &[usize], stats: &[KernelStats]) {
        for (p, s) in stats.iter().enumerate() {
            if let Some(k) = self.kernel.get_mut(p) {
                let refused = k.tx_refused.max(s.tx_refused);
                if own.contains(&p) {
                    *k = *s;
                }
                k.tx_refused = refused;
            }
        }
    }
}

/// One thread's hold on the shared switch: the core its [`Driver`] runs.
struct SwitchThread {
    shared: Arc<Mutex<Shared>>,
    /// This thread's number.
    me: usize,
    behind: Behind,
}

impl SwitchThread {
    fn new(shared: &Arc<Mutex<Shared>>, me: usize) -> SwitchThread {
        SwitchThread {
            shared: Arc::clone(shared),
            me,
            behind: Behind::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        hold(&self.shared)
    }
}

/// The switch. A thread that panicked holding it stops the run (its join reports the
/// panic); the others carry on until then.
fn hold(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// Largest frame the ports must carry: the configured MTU plus the Ethernet header and a
/// VLAN tag.
pub fn frame_mtu(cfg: &SwitchConfig) -> usize {
    cfg.ports.iter().map(|p| p.mtu).max().unwrap_or(9216) as usize + 18
}

/// The switch core `opts` describe: its configuration, and its static MAC addresses.
pub fn core_of(opts: &SwitchOptions) -> Switch {
    let mut switch = Switch::new(&opts.config);
    for &(mac, port) in &opts.static_macs {
        switch.add_route(mac, &[port]);
    }
    switch
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
    sampler: Option<Sampler<'_, Switch>>,
) -> Result<SwitchOutcome, RuntimeError> {
    let ports = Ports::open_all(opts.backend, &opts.ifaces, frame_mtu(&opts.config))?;
    run_sampled_on(ports, opts, stop, out, sampler)
}

/// As [`run_sampled`], on `ports` opened beforehand (`opts.ifaces`, in that order, for
/// frames up to [`frame_mtu`]). Refused when another rocelab switch has one of the
/// interfaces ([`port_lock`](super::port_lock)), which this one then holds until it
/// returns.
pub fn run_sampled_on(
    mut ports: Ports,
    opts: &SwitchOptions,
    stop: &Arc<AtomicBool>,
    out: &mut dyn Write,
    sampler: Option<Sampler<'_, Switch>>,
) -> Result<SwitchOutcome, RuntimeError> {
    let _locks = super::port_lock::PortLocks::take(&opts.ifaces)?;
    if opts.keep_going_when_a_port_is_down {
        ports.keep_going_when_a_port_is_down();
    }
    for (k, p) in opts.config.ports.iter().enumerate().take(ports.len()) {
        ports.emulate_link(k, p.bits_per_sec, p.cable);
    }
    let snapshot = opts
        .metrics
        .as_ref()
        .map(|listener| metrics::serve(Arc::clone(listener), Arc::clone(stop)))
        .transpose()?;
    let threads = thread_count(&opts.cores, ports.len());
    let owner = port_threads(ports.len(), threads);
    let thread_ports = threads_ports(ports.len(), threads);
    let shared = Arc::new(Mutex::new(Shared {
        switch: core_of(opts),
        keeper: 0,
        kernel: vec![KernelStats::default(); ports.len()],
    }));
    let clock = Clock::start();
    let mut parts = ports.split(&owner, threads).into_iter();
    let mut driver = Driver::new(
        vec![SwitchThread::new(&shared, 0)],
        parts.next().expect("one part per thread"),
        vec![0; owner.len()],
        clock.clone(),
    );
    if let Some(m) = &opts.lockstep {
        debug_assert_eq!(threads, 1, "a switch in lockstep runs on one thread");
        driver.join(m.clone());
    }
    // The other threads stop with this one (also when it returns early), or stop it when
    // a port of theirs fails.
    let workers_stop = Arc::new(AtomicBool::new(false));
    let stop_workers = RaiseOnDrop(&workers_stop);
    let team = Team {
        shared: &shared,
        clock: &clock,
        ports: owner.len(),
        stop: &workers_stop,
        publish: snapshot.is_some().then_some(thread_ports.as_slice()),
    };
    let workers = team.spawn(parts, opts)?;
    let house = Housekeeping {
        opts,
        stop,
        workers_stop: &workers_stop,
        snapshot: snapshot.as_ref(),
        thread_ports: &thread_ports[0],
        sampler,
    };
    let (started, error) = house.run(&mut driver, &shared, out);
    drop(stop_workers);
    let elapsed = started.elapsed();
    let (cores, ports, thread) = driver.into_parts();
    let mut behind = cores.iter().fold(Behind::default(), |mut b, c| {
        b.add(c.behind);
        b
    });
    let mut threads = vec![thread];
    let mut parts = vec![ports];
    let mut error = error;
    let mut panicked = false;
    // Every worker is joined, whatever the others did.
    for w in workers {
        match w.join() {
            Ok(done) => {
                behind.add(done.behind);
                threads.push(done.stats);
                parts.push(done.ports);
                error = error.or(done.error);
            }
            Err(_) => panicked = true,
        }
    }
    if panicked {
        return Err(RuntimeError::ThreadPanicked("switch"));
    }
    drop(cores);
    let mut ports = Ports::join(parts);
    let kernel = ports.kernel_stats();
    ports.close();
    let switch = Arc::try_unwrap(shared)
        .map_err(|_| RuntimeError::ThreadPanicked("switch"))?
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .switch;
    Ok(SwitchOutcome {
        switch,
        kernel,
        elapsed,
        error,
        threads,
        thread_ports,
        behind,
    })
}

/// What the switch's other threads share with the first: the switch, the clock, the flag
/// that stops them, and (with a metrics page) each thread's ports.
struct Team<'a> {
    shared: &'a Arc<Mutex<Shared>>,
    clock: &'a Clock,
    ports: usize,
    stop: &'a Arc<AtomicBool>,
    publish: Option<&'a [Vec<usize>]>,
}

impl Team<'_> {
    /// Starts a thread on each of `parts` (threads 1 on), each driving its ports.
    fn spawn(
        &self,
        parts: impl Iterator<Item = Ports>,
        opts: &SwitchOptions,
    ) -> Result<Vec<std::thread::JoinHandle<WorkerDone>>, RuntimeError> {
        let workers = parts
            .enumerate()
            .map(|(k, part)| {
                let t = k + 1;
                let core = SwitchThread::new(self.shared, t);
                let driver = Driver::new(vec![core], part, vec![0; self.ports], self.clock.clone());
                let (cores, busy, realtime, stop) = (
                    opts.cores.clone(),
                    opts.busy_poll,
                    opts.realtime,
                    Arc::clone(self.stop),
                );
                // Its ports' socket statistics, for the metrics page.
                let publish = self.publish.map(|p| p[t].clone());
                std::thread::Builder::new()
                    .name(format!("switch-{t}"))
                    .spawn(move || worker(t, driver, &cores, busy, realtime, &stop, publish))
            })
            .collect::<Result<_, _>>()?;
        Ok(workers)
    }
}

/// The first thread's duties beside its ports: the summary lines, the sampler and the
/// metrics page, each at its time.
struct Housekeeping<'a, 's> {
    opts: &'a SwitchOptions,
    stop: &'a AtomicBool,
    workers_stop: &'a AtomicBool,
    snapshot: Option<&'a metrics::Snapshot>,
    /// The first thread's ports, whose socket statistics it publishes.
    thread_ports: &'a [usize],
    sampler: Option<Sampler<'s, Switch>>,
}

impl Housekeeping<'_, '_> {
    /// Drives the first thread's ports until a stop, the duration's end or a failing port;
    /// returns when it started and the port's error.
    fn run(
        mut self,
        driver: &mut Driver<SwitchThread>,
        shared: &Mutex<Shared>,
        out: &mut dyn Write,
    ) -> (Instant, Option<PortError>) {
        let opts = self.opts;
        opts.cores.pin(0);
        // Checked by the caller (realtime_allowed): a thread that cannot runs as it is.
        let _ = super::realtime(opts.realtime);
        super::precise_timers();
        let started = Instant::now();
        let start_unix_secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let end = opts.duration.map(|d| started + d);
        let mut next_line = opts.interval.map(|i| started + i);
        let mut next_snapshot = started;
        let mut next_sample = started;
        let mut last_totals = Totals::of(&hold(shared).switch);
        let mut last_line = started;
        let mut error = None;

        loop {
            if stopped(self.stop)
                || stopped(self.workers_stop)
                || end.is_some_and(|e| Instant::now() >= e)
            {
                break;
            }
            // Sleep until a frame comes, the switch's next deadline, or a housekeeping time.
            let mut wake = Instant::now() + Duration::from_millis(50);
            for t in [
                end,
                next_line,
                self.snapshot.map(|_| next_snapshot),
                self.sampler.as_ref().map(|_| next_sample),
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
            let now_i = Instant::now();
            let due = |t: Option<Instant>| t.is_some_and(|t| now_i >= t);
            if !(due(next_line)
                || (self.sampler.is_some() && now_i >= next_sample)
                || (self.snapshot.is_some() && now_i >= next_snapshot))
            {
                continue;
            }
            let held = driver.cores[0].lock();
            let switch = &held.switch;
            // Written once the switch is let go: a slow terminal holds up no thread.
            let mut line = None;
            if let (Some(interval), Some(t)) = (opts.interval, next_line)
                && now_i >= t
            {
                let totals = Totals::of(switch);
                line = Some(summary_line(
                    switch,
                    &last_totals,
                    &totals,
                    now_i - started,
                    now_i - last_line,
                ));
                last_totals = totals;
                last_line = now_i;
                next_line = Some(t + interval);
            }
            if let Some(s) = self.sampler.as_mut()
                && now_i >= next_sample
            {
                (s.call)(now_i - started, switch);
                next_sample = now_i + s.every;
            }
            drop(held);
            if let Some(snap) = self.snapshot
                && now_i >= next_snapshot
            {
                let stats = driver.ports.kernel_stats();
                let mut held = driver.cores[0].lock();
                held.publish(self.thread_ports, &stats);
                // Another thread may have moved the switch past this thread's time.
                let now = now.max(held.switch.now());
                let page = metrics::render(&held.switch, &held.kernel, now, start_unix_secs);
                drop(held);
                snap.set(page);
                next_snapshot = now_i + SNAPSHOT_EVERY;
            }
            if let Some(line) = line {
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
        }
        (started, error)
    }
}

/// Raises its flag when dropped.
struct RaiseOnDrop<'a>(&'a AtomicBool);

impl Drop for RaiseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What a worker thread gives back.
struct WorkerDone {
    ports: Ports,
    stats: ThreadStats,
    behind: Behind,
    error: Option<PortError>,
}

/// Thread `t` (not the first) of a switch on several cores: its ports, until `stop`. A
/// failing port raises `stop`, which stops the others.
fn worker(
    t: usize,
    mut driver: Driver<SwitchThread>,
    cores: &CoreList,
    busy: bool,
    realtime: Option<u8>,
    stop: &AtomicBool,
    publish: Option<Vec<usize>>,
) -> WorkerDone {
    // A panic here stops the others too, as the end of the loop does.
    let _stop_all = RaiseOnDrop(stop);
    cores.pin(t);
    let _ = super::realtime(realtime);
    super::precise_timers();
    let mut error = None;
    let mut next_publish = Instant::now();
    while !stopped(stop) {
        let mut wake = Instant::now() + Duration::from_millis(50);
        if publish.is_some() {
            wake = wake.min(next_publish);
        }
        if let Err(e) = driver.round(wake, busy) {
            error = Some(e);
            stop.store(true, Ordering::Relaxed);
        }
        if let Some(own) = &publish
            && Instant::now() >= next_publish
        {
            let stats = driver.ports.kernel_stats();
            driver.cores[0].lock().publish(own, &stats);
            next_publish = Instant::now() + SNAPSHOT_EVERY;
        }
    }
    let (cores, ports, stats) = driver.into_parts();
    WorkerDone {
        ports,
        stats,
        behind: cores.first().map(|c| c.behind).unwrap_or_default(),
        error,
    }
}

/// How far back the switch's thread replays a stall (see [`Core::catch_up`]).
const SWITCH_CATCH_UP: Nanos = Nanos(50_000_000);

impl Core for SwitchThread {
    /// The switch's next deadline, whatever port it is for, for the keeper (see
    /// [`Shared::keeper`]); none for the other threads, which wake for their frames.
    fn deadline(&self) -> Option<Nanos> {
        let held = self.lock();
        (held.keeper == self.me)
            .then(|| held.switch.poll_timeout())
            .flatten()
    }

    /// The switch's next deadline for every thread: one about to hand the switch a frame
    /// first runs what fell due before it, each at its own time, whoever keeps the
    /// deadlines.
    fn timer(&self) -> Option<Nanos> {
        self.lock().switch.poll_timeout()
    }

    fn run_at(&mut self, t: Nanos, ports: &mut Ports) -> usize {
        let mut held = self.lock();
        held.keeper = self.me;
        let sw = &mut held.switch;
        let t = t.max(sw.now());
        if sw.poll_timeout().is_some_and(|d| d <= t) {
            sw.handle_timeout(t);
        }
        let mut sent = 0;
        // Queued on their lanes while the switch is held: a port's frames leave in the
        // order the switch released them, whichever thread sends them.
        while let Some((port, buf)) = sw.poll_transmit_owned(t) {
            ports.send(port, buf);
            sent += 1;
        }
        sent
    }

    fn arrive(&mut self, t: Nanos, port: usize, frame: Vec<u8>, _: &mut Ports) {
        let mut held = hold(&self.shared);
        held.keeper = self.me;
        let sw = &mut held.switch;
        let now = sw.now();
        if t < now {
            self.behind.frames += 1;
            self.behind.max_ns = self.behind.max_ns.max((now - t).0);
        }
        sw.handle_owned_frame(t.max(now), port, frame);
    }

    /// Up to 50 ms: after a stall of its thread, every frame is taken at the time it came.
    fn catch_up(&self) -> Nanos {
        SWITCH_CATCH_UP
    }

    /// A pause the switch sends while its thread catches up leaves late: the switch keeps
    /// what that let its peers send past a full headroom (see
    /// [`Switch::set_release_floor`]).
    fn round_starts(&mut self, now: Nanos) {
        self.lock().switch.set_release_floor(now);
    }

    /// A pause sent this round left when the round's sends returned, later than the
    /// round's start when the thread stalled in between ([`Switch::released_by`]).
    fn round_ends(&mut self, done: Nanos) {
        self.lock().switch.released_by(done);
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

/// One line: rates since the last line, the deepest any queue got since the last line
/// (each queue's peak, read and restarted here), PFC, marks and drops.
fn summary_line(sw: &Switch, last: &Totals, now: &Totals, at: Duration, span: Duration) -> String {
    use crate::series::SwitchProbe as _;
    let secs = span.as_secs_f64().max(1e-9);
    let mut deepest = (0u64, String::new());
    for p in 0..sw.port_count() {
        for q in 0..CLASSES {
            let b = sw.queue_peak_bytes(p, q);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The line's "queue max" was the depth at the instant the line was made, 0 whenever
    /// the queues had drained by then, though the README calls it the deepest queue. It is
    /// the deepest since the line before.
    #[test]
    fn the_interval_line_gives_the_deepest_queue_since_the_last_line() {
        let mut cfg = SwitchConfig::preset("default").unwrap();
        cfg.ports = vec![cfg.port_or_default("p0"), cfg.port_or_default("p1")];
        let mut sw = Switch::new(&cfg);
        // Ten 60-byte frames from p1 at once, to an address not learned: all flooded to
        // p0, the only other port, where they queue behind its shaper: 600 B at most.
        let mut frame = vec![0u8; 60];
        frame[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0xa]);
        frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0xb]);
        frame[12..14].copy_from_slice(&[0x88, 0xb5]);
        for _ in 0..10 {
            sw.handle_frame(Nanos::ZERO, 1, &frame);
        }
        let mut now = Nanos::ZERO;
        loop {
            while sw.poll_transmit_owned(now).is_some() {}
            match sw.poll_timeout() {
                Some(t) => {
                    now = t.max(now);
                    sw.handle_timeout(now);
                }
                None => break,
            }
        }
        assert_eq!(sw.queue_bytes(0, 0), 0, "drained before the line");
        let totals = Totals::of(&sw);
        let second = Duration::from_secs(1);
        let line = summary_line(&sw, &Totals::default(), &totals, second, second);
        assert!(line.contains("queue max 600 B (p0 q0)"), "{line}");
        // The next line starts from there: nothing queued since.
        let line = summary_line(&sw, &totals, &totals, 2 * second, second);
        assert!(line.contains("queue max 0 B "), "{line}");
    }

    #[test]
    fn ports_are_dealt_to_threads_in_turn() {
        assert_eq!(port_threads(5, 2), [0, 1, 0, 1, 0]);
        assert_eq!(port_threads(3, 1), [0, 0, 0]);
        assert_eq!(port_threads(2, 0), [0, 0], "no threads asked: one");
        assert_eq!(threads_ports(5, 2), [vec![0, 2, 4], vec![1, 3]]);
    }

    #[test]
    fn one_thread_per_core_and_no_more_than_one_per_port() {
        assert_eq!(thread_count(&CoreList(vec![]), 4), 1, "not pinned: one");
        assert_eq!(thread_count(&CoreList(vec![0, 1]), 4), 2);
        assert_eq!(thread_count(&CoreList(vec![0, 1, 2, 3]), 2), 2);
        assert_eq!(thread_count(&CoreList(vec![3]), 0), 1);
    }
}
