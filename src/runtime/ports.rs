//! The ports of one run-to-completion thread and the loop that drives its cores. The
//! thread owns the ports' receive sockets and one or more cores (the switch, or
//! endpoints): it waits on every socket at once, takes what arrived with the kernel's
//! receive times, hands each frame to its core at that time, runs the cores' timers and
//! transmissions at their own times, in time order, and sends what they release in
//! batches. No frame crosses a thread on the way.
//!
//! A port's transmit side is a [`TxLane`]: its socket and the frames the kernel has not
//! taken yet, behind a lock of its own. One thread's ports hold every lane they send on,
//! so that a switch split over several threads ([`Ports::split`]) sends each frame from
//! the thread that forwarded it, on any port, with no hand-off: the thread appends to the
//! lane while it holds the switch (in the order the switch released the frames) and
//! offers the lane to the kernel after letting the switch go.

use super::departures::Departures;
use super::{Clock, PortError};
use crate::io::{self, Backend, FrameRx, FrameTx, KernelStats, Pool, RxFrame};
use crate::link;
use crate::time::Nanos;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Frames read from a port at a time.
const RX_BATCH: usize = 256;
/// At most this many batches per port and round (more than a ring holds).
const MAX_BATCHES: usize = 64;
/// A pass over the ports that took longer than this is followed by another, at most
/// [`MAX_PASSES`] in a round (see [`Ports::receive`]).
const QUICK_PASS: Nanos = Nanos(50_000);
/// Passes over the ports in a round at most (see [`QUICK_PASS`]).
const MAX_PASSES: usize = 4;
/// Frames due on their emulated wire this soon are taken at once, at their time (their
/// core runs that far ahead of the clock): a cable of a few hundred ns is not worth a
/// round of its own.
const LOOKAHEAD: Nanos = Nanos(2_000);
/// How far an emulated wire may fall behind the frames handed to it: a sender that
/// outruns the emulated link (a blaster into a slower port) for longer is taken as its
/// frames come rather than growing an unseen queue on the wire.
const WIRE_SLACK: Nanos = Nanos(1_000_000);
/// Frames a busy port holds for the kernel before the oldest are given up.
const TX_BACKLOG: usize = 16_384;
/// Frame buffers each set of ports (each part of a split) keeps, allocated up front.
const POOL_BUFFERS: usize = 2048;

/// Most frames offered to the kernel at a time (what one `sendmmsg` takes).
const TX_BATCH: usize = 1024;
/// How soon a thread with frames the kernel did not take yet offers them again.
const TX_RETRY: Duration = Duration::from_micros(20);
/// A thread that had work spins this long for more before it sleeps: the next frame of a
/// busy port is taken at once rather than after a wake-up (tens of µs on a VM).
const SPIN_AFTER_WORK: Duration = Duration::from_micros(50);
/// A deadline this close is waited for spinning: a sleep would overshoot it.
const SPIN_BEFORE_DEADLINE: Duration = Duration::from_micros(30);
/// The share of each [`BUDGET_WINDOW`] a thread may spend on its CPU, working or spinning,
/// before it sleeps rather than spins when it has nothing to do. A real-time thread that
/// stays runnable for more than the kernel's real-time budget (`kernel.sched_rt_runtime_us`
/// of `kernel.sched_rt_period_us`: 95 % of each second by default) is stopped for the rest
/// of that second, a stall of up to 50 ms; at normal priority, a spinning thread takes
/// the core from the machine's other work, the lab's other thread included.
const CPU_SHARE: f64 = 0.75;
/// The window over which [`CPU_SHARE`] is kept.
const BUDGET_WINDOW: Duration = Duration::from_millis(10);

/// A frame received, at its time on the run's clock.
#[derive(Debug)]
pub struct Arrival {
    /// The port it came in on.
    pub port: usize,
    /// When it arrived on the run's clock: the kernel's receive time (plus the emulated
    /// wire's time on a veth, which can put it after now), never before the port's
    /// previous frame.
    pub at: Nanos,
    /// The frame, in a buffer of the ports' pool.
    pub frame: Vec<u8>,
}

/// Carries `frame`, handed over at `at`, over the emulated link into a port whose frames
/// arrive instantly (a veth): the sender's transmitter at the link's rate (the same exact
/// accounting as the switch's shapers and the endpoints' NICs), then the cable. It starts
/// once the wire is free, but never more than [`WIRE_SLACK`] behind `at`. A frame that
/// would land before `floor` (its receiver's core had run past that before the frame was
/// read) starts late enough to land then, as if its cable had been that much longer: the
/// frames behind it keep their spacing on the wire rather than all entering at once.
fn carry(wire: &mut link::Wire, at: Nanos, frame: &[u8], floor: Nanos) -> link::Trip {
    if wire.free_at() > at + WIRE_SLACK {
        // A sender that outran the link: the backlog is dropped, not the frames.
        wire.drop_backlog();
    }
    wire.carry_landing_no_sooner(at, frame, floor)
}

/// The receive side of a port, owned by one thread.
struct RxPort {
    /// The port's number among all ports (the cores' numbering).
    port: usize,
    name: String,
    rx: Box<dyn FrameRx>,
    wire: Option<link::Wire>,
    /// The latest receive time handed out: a port's frames never pass each other.
    last_at: Nanos,
    /// When the frames coming in left their sender, where this process drives both ends.
    departures: Option<Arc<Departures>>,
    /// The time its core has run to: no frame lands on the emulated wire before it.
    floor: Nanos,
}

/// The transmit side of a port: its socket and its backlog, shared by every thread that
/// sends on the port.
pub struct TxLane {
    name: String,
    queue: Mutex<TxQueue>,
    /// A port whose interface goes down or away is marked down and the run goes on
    /// without it (a switch's other ports keep forwarding); otherwise its error stops the
    /// run. Set by [`Ports::keep_going_when_a_port_is_down`].
    keep_going: AtomicBool,
    /// Marked down (see [`TxLane::went_down`]).
    down: AtomicBool,
}

struct TxQueue {
    /// The socket; `None` while a thread sends on it, outside the lock, so that a thread
    /// appending frames (holding the switch) never waits for a system call. The sender
    /// takes what was appended meanwhile before it puts the socket back: one sender at a
    /// time, frames in order.
    tx: Option<Box<dyn FrameTx>>,
    /// Frames released by a core that the kernel has not taken yet, in the order they were
    /// released (a busy device, or frames appended while another thread sends).
    pending: VecDeque<Vec<u8>>,
    /// Frames given up from a full backlog.
    overflow: u64,
    /// Frames dropped because the port was down.
    dropped_down: u64,
    /// While the port is down, frames queued to it are dropped until then, when a batch
    /// is offered to the kernel again: one that goes marks the port up.
    retry_at: Option<Instant>,
    /// Where each queued frame's departure time goes, for the link's other end.
    departures: Option<Arc<Departures>>,
}

/// How long a port that went down drops its frames before it offers the kernel some
/// again.
const DOWN_RETRY: Duration = Duration::from_secs(1);

impl TxLane {
    fn new(name: &str, tx: Box<dyn FrameTx>) -> Arc<TxLane> {
        Arc::new(TxLane {
            name: name.to_owned(),
            queue: Mutex::new(TxQueue {
                tx: Some(tx),
                pending: VecDeque::new(),
                overflow: 0,
                dropped_down: 0,
                retry_at: None,
                departures: None,
            }),
            keep_going: AtomicBool::new(false),
            down: AtomicBool::new(false),
        })
    }

    /// Port `self` failed with `cause` while doing `action`: true when the run goes on
    /// without it (its interface went down or away, and the run keeps going then), and it
    /// is marked down, said once on standard error.
    fn went_down(&self, action: &str, cause: &std::io::Error) -> bool {
        if !self.keep_going.load(Ordering::Relaxed) || !io::port_gone(cause) {
            return false;
        }
        let mut q = self.lock();
        q.retry_at = Some(Instant::now() + DOWN_RETRY);
        q.dropped_down += q.pending.len() as u64;
        q.pending.clear();
        drop(q);
        if !self.down.swap(true, Ordering::Relaxed) {
            eprintln!(
                "rocelab: port {} is down ({action}: {cause}): frames to it are dropped and \
                 counted as tx_refused, the other ports go on",
                self.name
            );
        }
        true
    }

    /// A port marked down received or sent a frame again.
    fn came_up(&self) {
        if self.down.swap(false, Ordering::Relaxed) {
            self.lock().retry_at = None;
            eprintln!("rocelab: port {} is up again", self.name);
        }
    }

    /// The lane, locked. A thread that panicked while sending left nothing half-done that
    /// matters here (frames are whole or not yet offered): the lock is taken over.
    fn lock(&self) -> MutexGuard<'_, TxQueue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Maps the kernel's receive times (CLOCK_REALTIME) onto the run's clock.
#[derive(Debug, Clone, Copy)]
struct StampClock {
    /// Realtime minus the run's wall-clock time (undilated), ns.
    offset: i128,
    next_sync: Instant,
}

impl StampClock {
    fn new(clock: &Clock) -> StampClock {
        let mut s = StampClock {
            offset: 0,
            next_sync: Instant::now(),
        };
        s.sync(clock);
        s
    }

    /// Reads both clocks close together (best of three), again every 100 ms so that a
    /// slewed wall clock does not drift.
    fn sync(&mut self, clock: &Clock) {
        let mut best = (u64::MAX, 0i128);
        for _ in 0..3 {
            let a = clock.wall().0;
            let real = realtime_ns();
            let b = clock.wall().0;
            if b - a < best.0 {
                best = (b - a, real as i128 - i128::from(a + (b - a) / 2));
            }
        }
        self.offset = best.1;
        self.next_sync = Instant::now() + Duration::from_millis(100);
    }

    fn run_time(&self, stamp: u64) -> Nanos {
        let t = stamp as i128 - self.offset;
        Nanos(t.clamp(0, i128::from(u64::MAX)) as u64)
    }
}

fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The ports of one thread: the receive sides it owns, the transmit lanes of every port
/// it may send on, its frame buffers.
pub struct Ports {
    rx: Vec<RxPort>,
    /// Every port's lane, by port number.
    tx: Vec<Arc<TxLane>>,
    pollfds: Vec<libc::pollfd>,
    pool: Pool,
    buffer: usize,
    received: Vec<RxFrame>,
    stamps: Option<StampClock>,
    /// Lanes this thread appended to and has not seen empty since (each once).
    unsent: Vec<usize>,
    /// Frames being offered to the kernel, taken from a lane (kept between sends).
    batch: Vec<Vec<u8>>,
    /// Spare buffers the parts of a split share, so that a thread that receives more
    /// frames than it sends does not allocate while one that sends more frees.
    spares: Option<Arc<Mutex<Vec<Vec<u8>>>>>,
    /// When, on the run's clock, the frames queued now leave (the time the driver runs its
    /// core at): recorded for links that carry departures.
    release_at: Nanos,
    /// Frames held on their emulated wire past their time, and the longest hold, ns.
    behind: (u64, u64),
    /// The earliest departure recorded since [`Ports::take_first_release`].
    first_release: Option<Nanos>,
}

/// One interface's sockets, open and waiting to become a port of a set
/// ([`Ports::from_opened`]): a driver can open them early, on a thread of its own.
pub struct Opened {
    iface: String,
    rx: Box<dyn FrameRx>,
    tx: Box<dyn FrameTx>,
}

impl Opened {
    /// Opens interface `iface` (in the calling thread's network namespace, where its
    /// sockets then stay) for frames up to `mtu` bytes.
    pub fn open(backend: Backend, iface: &str, mtu: usize) -> std::io::Result<Opened> {
        let (rx, tx) = io::open(backend, iface, mtu)?;
        Ok(Opened {
            iface: iface.to_owned(),
            rx,
            tx,
        })
    }

    /// What the thread that opened an interface gave back.
    pub fn join(
        opener: std::thread::ScopedJoinHandle<'_, std::io::Result<Opened>>,
    ) -> std::io::Result<Opened> {
        opener
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("opening a port panicked")))
    }
}

impl Ports {
    /// No ports yet; frame buffers of `buffer` bytes.
    pub fn new(buffer: usize) -> Ports {
        Ports::with_pool(buffer, Pool::new(POOL_BUFFERS, buffer))
    }

    fn with_pool(buffer: usize, pool: Pool) -> Ports {
        Ports {
            rx: Vec::new(),
            tx: Vec::new(),
            pollfds: Vec::new(),
            pool,
            buffer,
            received: Vec::with_capacity(RX_BATCH),
            stamps: None,
            unsent: Vec::new(),
            batch: Vec::new(),
            spares: None,
            release_at: Nanos::ZERO,
            behind: (0, 0),
            first_release: None,
        }
    }

    /// Evens the pool out against the other parts' (see [`Pool::balance`]): a lock taken
    /// only when the pool is nearly empty or nearly full.
    fn balance(&mut self) {
        if let Some(spares) = &self.spares
            && self.pool.unbalanced()
        {
            let mut spares = spares.lock().unwrap_or_else(|e| e.into_inner());
            self.pool.balance(&mut spares);
        }
    }

    /// Opens interface `iface` (in the calling thread's network namespace, where its
    /// socket then stays) for frames up to `mtu` bytes; returns its port number.
    pub fn open(&mut self, backend: Backend, iface: &str, mtu: usize) -> std::io::Result<usize> {
        let (rx, tx) = io::open(backend, iface, mtu)?;
        Ok(self.add(iface, rx, tx))
    }

    fn add(&mut self, iface: &str, rx: Box<dyn FrameRx>, tx: Box<dyn FrameTx>) -> usize {
        let port = self.tx.len();
        self.pollfds.push(io::readable(rx.fd()));
        self.rx.push(RxPort {
            port,
            name: iface.to_owned(),
            rx,
            wire: None,
            last_at: Nanos::ZERO,
            departures: None,
            floor: Nanos::ZERO,
        });
        self.tx.push(TxLane::new(iface, tx));
        port
    }

    /// From now on a port whose interface goes down or away (its socket fails with
    /// ENETDOWN, ENXIO or ENODEV) is marked down, said once on standard error, and the run
    /// goes on without it: frames to it are dropped and counted as `tx_refused`, and it is
    /// offered some again each second; a frame it receives or sends marks it up again.
    /// Otherwise such an error stops the run.
    pub fn keep_going_when_a_port_is_down(&self) {
        for lane in &self.tx {
            lane.keep_going.store(true, Ordering::Relaxed);
        }
    }

    /// The receive side of port `port`, if this thread owns it.
    fn rx_port(&mut self, port: usize) -> Option<&mut RxPort> {
        self.rx.iter_mut().find(|p| p.port == port)
    }

    /// Splits the ports over `threads` threads: thread `owner[p]` receives on port `p`;
    /// every thread may send on every port. Each part has buffers of its own.
    pub fn split(self, owner: &[usize], threads: usize) -> Vec<Ports> {
        assert_eq!(owner.len(), self.tx.len(), "one owner per port");
        let spares = (threads > 1).then(|| Arc::new(Mutex::new(Vec::new())));
        let Ports {
            rx,
            tx,
            pool,
            buffer,
            ..
        } = self;
        // The first part keeps the buffers already mapped (tens of MB); the others map
        // their own.
        let mut mapped = Some(pool);
        let mut parts: Vec<Ports> = (0..threads)
            .map(|_| {
                let pool = mapped
                    .take()
                    .unwrap_or_else(|| Pool::new(POOL_BUFFERS, buffer));
                let mut p = Ports::with_pool(buffer, pool);
                p.tx = tx.clone();
                p.spares = spares.clone();
                p
            })
            .collect();
        for rx in rx {
            let part = &mut parts[owner[rx.port]];
            part.pollfds.push(io::readable(rx.rx.fd()));
            part.rx.push(rx);
        }
        parts
    }

    /// Puts parts made by [`Ports::split`] back together.
    pub fn join(parts: Vec<Ports>) -> Ports {
        let mut parts = parts.into_iter();
        let Some(mut all) = parts.next() else {
            return Ports::new(0);
        };
        for part in parts {
            all.rx.extend(part.rx);
        }
        all.rx.sort_by_key(|p| p.port);
        all.pollfds = all.rx.iter().map(|p| io::readable(p.rx.fd())).collect();
        all
    }

    /// Port `port` stands for a link of `bits_per_sec` with a one-way `propagation` delay.
    /// Where frames arrive the moment their sender hands them over (a veth), each is then
    /// taken when its last bit would have arrived over that link: its serialisation time
    /// and the cable after the kernel had it, and never before the frame ahead of it, as
    /// a store-and-forward switch or a NIC sees it. On a real NIC the wire did that
    /// already, and this does nothing.
    pub fn emulate_link(&mut self, port: usize, bits_per_sec: u64, propagation: Nanos) {
        let Some(p) = self.rx_port(port) else { return };
        if p.rx.instant_link() {
            p.wire = Some(link::Wire::new(
                link::Transmitter::new(bits_per_sec),
                propagation,
            ));
        }
    }

    /// Port `port` is one end of a link whose other end this process drives too (a veth of
    /// the lab): each frame queued on it is recorded in `outgoing` with its departure time,
    /// and each frame received on it is taken at the departure its sender recorded in
    /// `incoming` (then the emulated wire, if any), not at the kernel's receive time (see
    /// [`super::departures`]). Both clocks must be the same emulated clock.
    pub fn carry_departures(
        &mut self,
        port: usize,
        outgoing: Arc<Departures>,
        incoming: Arc<Departures>,
    ) {
        self.tx[port].lock().departures = Some(outgoing);
        if let Some(p) = self.rx_port(port) {
            p.departures = Some(incoming);
        }
    }

    /// Port `port`'s core has run to `t`: what it receives from now on lands on its
    /// emulated wire no earlier (see [`Ports::emulate_link`]).
    pub fn hold_arrivals_from(&mut self, port: usize, t: Nanos) {
        if let Some(p) = self.rx_port(port) {
            p.floor = t;
        }
    }

    /// Frames whose emulated wire held them past their time because their core had run
    /// past it, and the longest any was held, ns; since the last call.
    pub fn take_behind(&mut self) -> (u64, u64) {
        std::mem::take(&mut self.behind)
    }

    /// The earliest departure recorded on a link that carries departures since the last
    /// call.
    pub fn take_first_release(&mut self) -> Option<Nanos> {
        self.first_release.take()
    }

    /// The earliest departure of a frame sent to this thread's ports that it has not read
    /// yet (on links that carry departures).
    pub fn earliest_unread(&self) -> Option<Nanos> {
        self.rx
            .iter()
            .filter_map(|p| p.departures.as_ref()?.earliest())
            .min()
    }

    /// The earliest departure of a frame this thread sent that its receiver has not read
    /// yet (on links that carry departures).
    pub fn earliest_unreceived(&self) -> Option<Nanos> {
        self.tx
            .iter()
            .filter_map(|lane| lane.lock().departures.as_ref()?.earliest())
            .min()
    }

    /// The least time a frame takes over any emulated link into this thread's ports, the
    /// shortest frame on the fastest link: no frame sent at `t` lands before `t` plus it.
    pub fn shortest_transit(&self) -> Option<Nanos> {
        self.rx
            .iter()
            .filter_map(|p| p.wire.as_ref())
            .map(|w| link::frame_time(0, w.bits_per_sec()) + w.propagation())
            .min()
    }

    /// The frames queued from now on leave at `t` on the run's clock.
    pub fn release_at(&mut self, t: Nanos) {
        self.release_at = t;
    }

    /// Opens every interface in turn, ports 0, 1, ...
    pub fn open_all(backend: Backend, ifaces: &[String], mtu: usize) -> std::io::Result<Ports> {
        Ports::open_all_with(backend, ifaces, mtu, &|_| Ok(()))
    }

    /// Opens every interface, ports 0, 1, ..., all at once: each on a short-lived thread
    /// of its own that first calls `prepare(k)` (the lab enters the host's namespace
    /// there). Setting up a packet socket's ring waits for an RCU grace period in the
    /// kernel (about 8 ms here, whatever the ring's size); side by side, the waits overlap.
    pub fn open_all_with(
        backend: Backend,
        ifaces: &[String],
        mtu: usize,
        prepare: &(dyn Fn(usize) -> std::io::Result<()> + Sync),
    ) -> std::io::Result<Ports> {
        let opened: Vec<std::io::Result<Opened>> = std::thread::scope(|scope| {
            let openers: Vec<_> = ifaces
                .iter()
                .enumerate()
                .map(|(k, iface)| {
                    scope.spawn(move || {
                        prepare(k)?;
                        Opened::open(backend, iface, mtu)
                    })
                })
                .collect();
            openers.into_iter().map(Opened::join).collect()
        });
        Ok(Ports::from_opened(
            mtu,
            opened.into_iter().collect::<std::io::Result<_>>()?,
        ))
    }

    /// Ports 0, 1, ... from interfaces opened beforehand, in that order, for frames up
    /// to `mtu` bytes.
    pub fn from_opened(mtu: usize, opened: Vec<Opened>) -> Ports {
        let mut ports = Ports::for_frames(mtu);
        for o in opened {
            ports.adopt(o);
        }
        ports
    }

    /// No ports yet, for frames up to `mtu` bytes: its buffers allocated and mapped now
    /// (tens of MB, so a driver may make the set on a thread of its own while it opens
    /// the interfaces).
    pub fn for_frames(mtu: usize) -> Ports {
        Ports::new(mtu + 64)
    }

    /// Makes an interface opened beforehand the next port; returns its number.
    pub fn adopt(&mut self, opened: Opened) -> usize {
        self.add(&opened.iface, opened.rx, opened.tx)
    }

    /// Closes every port, all at once (closing a packet socket also waits for an RCU
    /// grace period). A lane another part still holds closes with that part.
    pub fn close(self) {
        std::thread::scope(|scope| {
            for p in self.rx {
                scope.spawn(move || drop(p));
            }
            for lane in self.tx {
                scope.spawn(move || drop(lane));
            }
        });
    }

    /// How many ports (every port this thread may send on).
    pub fn len(&self) -> usize {
        self.tx.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tx.is_empty()
    }

    /// An empty frame buffer.
    pub fn buffer(&mut self) -> Vec<u8> {
        self.pool.get()
    }

    /// Gives a buffer back.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        self.pool.put(buf);
    }

    /// Queues `frame` to leave on `port` at the next [`Ports::flush`]. Frames leave a port
    /// in the order they were queued, whichever thread queued them.
    pub fn send(&mut self, port: usize, frame: Vec<u8>) {
        let mut lane = self.tx[port].lock();
        if lane
            .retry_at
            .is_some_and(|t| self.tx[port].down.load(Ordering::Relaxed) && Instant::now() < t)
        {
            lane.dropped_down += 1;
            drop(lane);
            self.pool.put(frame);
            return;
        }
        if lane.pending.len() >= TX_BACKLOG
            && let Some(old) = lane.pending.pop_front()
        {
            lane.overflow += 1;
            self.pool.put(old);
        }
        if let Some(d) = &lane.departures {
            d.record(&frame, self.release_at);
            self.first_release = Some(
                self.first_release
                    .map_or(self.release_at, |t| t.min(self.release_at)),
            );
        }
        lane.pending.push_back(frame);
        drop(lane);
        if !self.unsent.contains(&port) {
            self.unsent.push(port);
        }
    }

    /// Offers the queued frames of every port this thread queued on to the kernel (and
    /// whatever other threads queued there meanwhile, in order); what a busy device does
    /// not take now stays queued.
    pub fn flush(&mut self) -> Result<usize, PortError> {
        let mut sent = 0;
        let mut k = 0;
        while k < self.unsent.len() {
            let lane = &self.tx[self.unsent[k]];
            let (done, busy) = flush_lane(lane, &mut self.batch, &mut self.pool)?;
            sent += done;
            if busy {
                k += 1;
            } else {
                self.unsent.swap_remove(k);
            }
        }
        self.balance();
        Ok(sent)
    }

    /// Waits until a frame arrives on any port or `wake` comes: spinning when `busy`, or
    /// until `spin_until`, or (when `spin_for_deadline`) in the last moments before
    /// `wake`; sleeping otherwise. Frames the kernel did not take yet are offered again
    /// within 20 µs.
    pub fn wait(
        &mut self,
        wake: Instant,
        busy: bool,
        spin_until: Instant,
        spin_for_deadline: bool,
    ) -> Result<(), PortError> {
        // A deadline is spun for at the end; a retry of the send backlog is slept for.
        let deadline = wake;
        let mut wake = wake;
        if !self.unsent.is_empty() {
            wake = wake.min(Instant::now() + TX_RETRY);
        }
        // Rings can be looked at without a system call: a spin does that, and asks the
        // kernel only now and then (a socket error shows there).
        let peekable = self.rx.iter().all(|p| p.rx.peek().is_some());
        // A ring with a frame waiting needs no system call at all (a busy port's rounds
        // follow each other without one); a socket error shows once the frames stop.
        if peekable && self.rx.iter().any(|p| p.rx.peek() == Some(true)) {
            return Ok(());
        }
        let mut spins = 0u32;
        loop {
            let now = Instant::now();
            let spin = busy
                || now < spin_until
                || (spin_for_deadline && deadline <= now + SPIN_BEFORE_DEADLINE);
            if spin && peekable && !spins.is_multiple_of(64) {
                spins += 1;
                if self.rx.iter().any(|p| p.rx.peek() == Some(true)) {
                    return Ok(());
                }
                if now >= wake {
                    return Ok(());
                }
                std::hint::spin_loop();
                continue;
            }
            spins += 1;
            let timeout = if spin {
                Duration::ZERO
            } else if spin_for_deadline {
                // Wake a little early: the rest is spun.
                wake.saturating_duration_since(now)
                    .saturating_sub(SPIN_BEFORE_DEADLINE)
            } else {
                // Past its CPU budget: sleep the whole way (a zero timeout here was a spin
                // of system calls, and the real-time throttling stopped the thread for
                // 50 ms).
                wake.saturating_duration_since(now)
            };
            let ready = io::wait(&mut self.pollfds, timeout).map_err(|cause| PortError {
                port: "poll".to_owned(),
                action: "receive",
                cause,
            })?;
            if ready {
                return self.check_errors();
            }
            if Instant::now() >= wake {
                return Ok(());
            }
            if spin {
                std::hint::spin_loop();
            }
        }
    }

    /// A port whose socket reports an error (its interface went down or away) fails, or
    /// is marked down (see [`Ports::keep_going_when_a_port_is_down`]).
    fn check_errors(&self) -> Result<(), PortError> {
        let bad = libc::POLLERR | libc::POLLHUP | libc::POLLNVAL;
        for (p, f) in self.rx.iter().zip(&self.pollfds) {
            if f.revents & bad != 0
                && let Some(cause) = io::socket_error(f.fd)
            {
                if self.tx[p.port].went_down("receive", &cause) {
                    continue;
                }
                return Err(PortError {
                    port: p.name.clone(),
                    action: "receive",
                    cause,
                });
            }
        }
        Ok(())
    }

    /// Appends what waits on every port to `out`, each frame at the kernel's receive time
    /// on `clock` (plus its emulated link, see [`Ports::emulate_link`]); returns now, a
    /// time by which every frame that came has been read (but for the last few µs). A
    /// frame whose last bit is still on the emulated wire comes with a time after it.
    ///
    /// A frame's time is its stamp, and no later than the clock when its batch was read
    /// (a stamp cannot be later than that but for clock skew, or a frame without a stamp
    /// came in before that). Not the time the thread woke: a thread descheduled between
    /// its wake-up and the read would take every frame that came meanwhile at that one
    /// earlier instant, a burst no sender sent, which the emulated wire spaces for its
    /// slack and then lets through all at once, into a queue. Nor is now taken before the
    /// ports are read: a thread descheduled halfway through reading them would leave the
    /// frames that came meanwhile to the ports read before, for the next round, after its
    /// core had moved past their times. A pass over the ports that took long (a stall, or
    /// many frames) is followed by another.
    pub fn receive(&mut self, clock: &Clock, out: &mut Vec<Arrival>) -> Result<Nanos, PortError> {
        let stamps = self.stamps.get_or_insert_with(|| StampClock::new(clock));
        if Instant::now() >= stamps.next_sync {
            stamps.sync(clock);
        }
        let stamps = *stamps;
        self.balance();
        let mut now = clock.now();
        for _ in 0..MAX_PASSES {
            let began = now;
            self.receive_pass(clock, &stamps, out)?;
            now = clock.now();
            if now - began < QUICK_PASS {
                break;
            }
        }
        Ok(now)
    }

    /// Reads every port once (see [`Ports::receive`]).
    fn receive_pass(
        &mut self,
        clock: &Clock,
        stamps: &StampClock,
        out: &mut Vec<Arrival>,
    ) -> Result<(), PortError> {
        for p in &mut self.rx {
            let lane = &self.tx[p.port];
            // Everything waiting, not one batch: frames left behind would enter after the
            // core had moved past their time (a ring holds a few thousand at most).
            for _ in 0..MAX_BATCHES {
                self.received.clear();
                let got = match p.rx.receive(&mut self.received, RX_BATCH, &mut self.pool) {
                    Ok(got) => got,
                    Err(cause) if lane.went_down("receive", &cause) => break,
                    Err(cause) => {
                        return Err(PortError {
                            port: p.name.clone(),
                            action: "receive",
                            cause,
                        });
                    }
                };
                if got == 0 {
                    break;
                }
                lane.came_up();
                // Once per batch that brought frames: an idle port costs no clock read.
                let read = clock.now();
                for f in self.received.drain(..) {
                    // When it left its sender, where that is known; otherwise received no
                    // later than it was read, whatever the clocks say. Either way in the
                    // order the port got them.
                    let departed = p.departures.as_ref().and_then(|d| d.take(&f.data));
                    let mut at = departed.unwrap_or_else(|| {
                        f.stamp
                            .map_or(read, |s| clock.at_wall(stamps.run_time(s)).min(read))
                    });
                    at = at.max(p.last_at);
                    p.last_at = at;
                    if let Some(w) = &mut p.wire {
                        let trip = carry(w, at, &f.data, p.floor);
                        at = trip.landed;
                        if trip.held > Nanos::ZERO {
                            self.behind.0 += 1;
                            self.behind.1 = self.behind.1.max(trip.held.0);
                        }
                    }
                    out.push(Arrival {
                        port: p.port,
                        at,
                        frame: f.data,
                    });
                }
                if got < RX_BATCH {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Each port's kernel statistics (receive counts of the ports this thread receives
    /// on, and frames the kernel refused to send or a full backlog gave up), by port.
    pub fn kernel_stats(&mut self) -> Vec<KernelStats> {
        let mut stats = vec![KernelStats::default(); self.tx.len()];
        for p in &mut self.rx {
            stats[p.port] = p.rx.kernel_stats();
        }
        for (s, lane) in stats.iter_mut().zip(&self.tx) {
            let q = lane.lock();
            s.tx_refused = q.tx.as_ref().map_or(0, |tx| tx.refused()) + q.overflow + q.dropped_down;
        }
        stats
    }
}

/// Sends what waits on `lane`, unless another thread is sending on it (it takes what
/// waits before it lets the socket go). Returns how many frames went, and whether the
/// device was busy (frames left to offer again).
fn flush_lane(
    lane: &TxLane,
    batch: &mut Vec<Vec<u8>>,
    pool: &mut Pool,
) -> Result<(usize, bool), PortError> {
    let mut sent = 0;
    loop {
        let mut q = lane.lock();
        if q.pending.is_empty() {
            return Ok((sent, false));
        }
        let Some(mut tx) = q.tx.take() else {
            // Another thread is sending: it takes these too.
            return Ok((sent, false));
        };
        let take = q.pending.len().min(TX_BATCH);
        batch.extend(q.pending.drain(..take));
        drop(q);
        let result = tx.transmit(batch);
        let mut q = lane.lock();
        q.tx = Some(tx);
        if let Err(cause) = &result
            && lane.keep_going.load(Ordering::Relaxed)
            && io::port_gone(cause)
        {
            q.dropped_down += batch.len() as u64;
            drop(q);
            for buf in batch.drain(..) {
                pool.put(buf);
            }
            lane.went_down("send", cause);
            return Ok((sent, false));
        }
        let done = *result.as_ref().unwrap_or(&0);
        if done > 0 {
            drop(q);
            lane.came_up();
            q = lane.lock();
        }
        // What did not go goes back ahead of what was appended meanwhile.
        for buf in batch.drain(done..).rev() {
            q.pending.push_front(buf);
        }
        drop(q);
        for buf in batch.drain(..) {
            pool.put(buf);
        }
        sent += done;
        let busy = result.map_err(|cause| PortError {
            port: lane.name.clone(),
            action: "send",
            cause,
        })? == 0;
        if busy {
            return Ok((sent, true));
        }
    }
}

/// How a run-to-completion thread fared: whether the machine kept up with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ThreadStats {
    /// Rounds run.
    pub rounds: u64,
    /// Time spent working (receiving, running the cores, sending), ns.
    pub busy_ns: u64,
    /// Time spent waiting for frames or deadlines (sleeping or spinning), ns.
    pub waiting_ns: u64,
    /// Frames received.
    pub frames: u64,
    /// Frames taken later than their core's catch-up window allowed: they had waited in
    /// the kernel while the thread was stalled or behind, and entered at the window's
    /// start.
    pub late_frames: u64,
    /// The longest a frame waited between its arrival (the kernel's receive time) and
    /// the round that took it, ns: how long the thread was stalled at worst. Whatever its
    /// core released in that round (a pause frame, say) left that much later than its
    /// time.
    pub max_lag_ns: u64,
    /// Rounds in which the thread slept rather than spun for its next frame, to keep its
    /// time on the CPU under 75 % of every 10 ms (and so clear of the kernel's real-time
    /// throttling).
    pub budget_sleeps: u64,
    /// Frames that arrived (on the emulated clock) before their core's time: the core
    /// had run past them before the thread read them, and took them when it got them.
    pub behind_frames: u64,
    /// The longest such a frame entered after its arrival, ns.
    pub behind_max_ns: u64,
    /// In lockstep: rounds that ran at the bound, held back by a slower peer.
    pub held_rounds: u64,
    /// In lockstep: how far the emulated clock lagged the wall clock at the end, ns (the
    /// time stalls and slow rounds added to the run).
    pub dilation_ns: u64,
}

impl ThreadStats {
    /// The share of frames taken late, 0 to 1: above a few percent, the thread could not
    /// keep up and its core lost the time.
    pub fn late(&self) -> f64 {
        if self.frames == 0 {
            0.0
        } else {
            self.late_frames as f64 / self.frames as f64
        }
    }

    /// The share of the time the thread worked, 0 to 1.
    pub fn busy(&self) -> f64 {
        let all = self.busy_ns + self.waiting_ns;
        if all == 0 {
            0.0
        } else {
            self.busy_ns as f64 / all as f64
        }
    }
}

/// A core as a run-to-completion thread drives it.
pub trait Core {
    /// The next time it wants to run, if any.
    fn deadline(&self) -> Option<Nanos>;

    /// Runs what is due at `t` and queues every frame released at `t` on `ports`; returns
    /// how many frames it queued.
    fn run_at(&mut self, t: Nanos, ports: &mut Ports) -> usize;

    /// Takes `frame`, which arrived on `port` at `t`; its buffer goes back to `ports`.
    fn arrive(&mut self, t: Nanos, port: usize, frame: Vec<u8>, ports: &mut Ports);

    /// How far back a late thread may run it: what fell due longer ago runs at
    /// `now - catch_up` (and a frame that arrived longer ago enters then). A switch
    /// takes every frame at its arrival time after a stall of its thread, so that the stall
    /// does not pile frames into a queue no wire would have; an endpoint's pacer catches
    /// up only a few frames, since a longer burst would be a queue at the switch that the
    /// NIC never sent (a stalled host loses the time instead).
    fn catch_up(&self) -> Nanos;

    /// The next time it must run at exactly, if any: [`Core::deadline`] less work it wants
    /// done as soon as possible (an all-reduce's reduction), which runs between its timers
    /// rather than holding them up.
    fn timer(&self) -> Option<Nanos> {
        self.deadline()
    }

    /// A round starts at `now`: what the core releases in it leaves no earlier, whatever
    /// earlier time the frames it takes in the round carry.
    fn round_starts(&mut self, _now: Nanos) {}

    /// What the core released this round had been handed to the kernel by `done`.
    fn round_ends(&mut self, _done: Nanos) {}
}

/// Cores, the ports they own, and the latest time each has seen.
pub struct Driver<C> {
    /// The cores.
    pub cores: Vec<C>,
    /// The ports.
    pub ports: Ports,
    /// The core of each port.
    owner: Vec<usize>,
    /// The latest time each core has seen, and the earliest it may run this round.
    last: Vec<Nanos>,
    floor: Vec<Nanos>,
    /// Now less each core's catch-up window, this round.
    oldest: Vec<Nanos>,
    clock: Clock,
    arrivals: Vec<Arrival>,
    /// Frames still on their emulated wire, by arrival time.
    on_wire: Vec<Arrival>,
    /// Frames of `on_wire` that land this round (kept between rounds).
    landed: Vec<Arrival>,
    stats: ThreadStats,
    /// Spin rather than sleep until then: there was work a moment ago.
    spin_until: Instant,
    budget: CpuBudget,
    /// Its place among threads that emulate one fabric together, if it has one.
    lockstep: Option<Joined>,
    /// The last round ran at its lockstep bound: the next looks again soon.
    held: bool,
    /// In lockstep: how far the cores may run this round, on the emulated clock (see
    /// [`Driver::safe_time`]); unbounded otherwise.
    safe: Nanos,
    /// In lockstep: a core had something due that a slower peer held back: the next round
    /// looks again soon instead of at the (past) deadline.
    waiting_for_peer: bool,
    /// In lockstep: the shortest time a frame takes over any of the links.
    transit: Nanos,
}

/// A driver's membership of a lockstep, left when dropped.
#[derive(Debug)]
struct Joined(super::lockstep::Member);

impl Drop for Joined {
    fn drop(&mut self) {
        self.0.lockstep.leave(self.0.me);
    }
}

/// How much of the current [`BUDGET_WINDOW`] the thread has spent on its CPU.
#[derive(Debug, Clone, Copy)]
struct CpuBudget {
    window_start: Instant,
    cpu_at_start: Duration,
}

impl CpuBudget {
    fn new() -> CpuBudget {
        CpuBudget {
            window_start: Instant::now(),
            cpu_at_start: thread_cpu_time(),
        }
    }

    /// Whether the thread may still spin in this window: it has spent less than
    /// [`CPU_SHARE`] of a window on its CPU so far.
    fn may_spin(&mut self) -> bool {
        let now = Instant::now();
        let cpu = thread_cpu_time();
        if now.duration_since(self.window_start) >= BUDGET_WINDOW {
            self.window_start = now;
            self.cpu_at_start = cpu;
            return true;
        }
        cpu.saturating_sub(self.cpu_at_start) < BUDGET_WINDOW.mul_f64(CPU_SHARE)
    }
}

/// The CPU time the calling thread has used, running or spinning.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which lives across the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

impl<C: Core> Driver<C> {
    /// `owner[p]` is the core that owns port `p`.
    pub fn new(cores: Vec<C>, ports: Ports, owner: Vec<usize>, clock: Clock) -> Driver<C> {
        assert_eq!(owner.len(), ports.len(), "one owner per port");
        assert!(owner.iter().all(|&c| c < cores.len()), "owners are cores");
        let now = clock.now();
        Driver {
            last: vec![now; cores.len()],
            floor: vec![now; cores.len()],
            oldest: vec![now; cores.len()],
            on_wire: Vec::new(),
            landed: Vec::new(),
            stats: ThreadStats::default(),
            spin_until: Instant::now(),
            budget: CpuBudget::new(),
            lockstep: None,
            held: false,
            safe: Nanos(u64::MAX),
            waiting_for_peer: false,
            transit: Nanos::ZERO,
            cores,
            ports,
            owner,
            clock,
            arrivals: Vec::with_capacity(RX_BATCH),
        }
    }

    /// Runs in lockstep with the other members of `member`'s lockstep, on their shared
    /// dilated clock (see [`super::lockstep`]), from now on; it leaves when taken apart.
    pub fn join(&mut self, member: super::lockstep::Member) {
        self.clock = member.clock();
        let now = self.clock.now();
        for t in self
            .last
            .iter_mut()
            .chain(&mut self.floor)
            .chain(&mut self.oldest)
        {
            *t = (*t).max(now);
        }
        member.lockstep.join(member.me, now);
        self.transit = self.ports.shortest_transit().unwrap_or(Nanos::ZERO);
        self.lockstep = Some(Joined(member));
    }

    /// The cores, the ports and how the thread fared, taken apart.
    pub fn into_parts(self) -> (Vec<C>, Ports, ThreadStats) {
        let mut stats = self.stats;
        if let Some(j) = &self.lockstep {
            stats.dilation_ns = j.0.lockstep.dilation().lag().0;
        }
        (self.cores, self.ports, stats)
    }

    /// The run's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Runs core `c` at `t` now (a start, say), and sends what it releases.
    pub fn run_core_at(&mut self, c: usize, t: Nanos) -> Result<(), PortError> {
        let t = t.max(self.last[c]);
        self.ports.release_at(t);
        self.cores[c].run_at(t, &mut self.ports);
        self.last[c] = t;
        self.ports.flush().map(|_| ())
    }

    /// One round: waits for a frame, the earliest core deadline or `wake`; then hands every
    /// frame that came to its core at its receive time, runs the cores' timers and
    /// transmissions up to now in time order, and sends what they released. Returns now.
    pub fn round(&mut self, wake: Instant, busy: bool) -> Result<Nanos, PortError> {
        let mut wake = wake;
        // Held back by a peer, its deadlines are past: it looks again soon instead.
        if !self.waiting_for_peer {
            for d in self.cores.iter().filter_map(Core::deadline) {
                wake = wake.min(self.clock.instant(d));
            }
            if let Some(first) = self.on_wire.iter().map(|a| a.at).min() {
                wake = wake.min(self.clock.instant(first));
            }
        }
        if self.lockstep.is_some() {
            // Its peers must see it move on while it idles, and it must see them.
            let poll = if self.held || self.waiting_for_peer {
                super::lockstep::HOLD_POLL
            } else {
                super::lockstep::REFRESH
            };
            wake = wake.min(Instant::now() + poll);
        }
        let waited = Instant::now();
        // Past its share of the CPU, the thread sleeps until the next frame or deadline.
        let mut spin_until = self.spin_until;
        let may_spin = busy || self.budget.may_spin();
        if !may_spin {
            if waited < spin_until {
                self.stats.budget_sleeps += 1;
            }
            spin_until = waited;
        }
        self.ports.wait(wake, busy, spin_until, may_spin)?;
        let woke = Instant::now();
        self.arrivals.clear();
        // In lockstep, the clock goes no further than a lookahead past the slowest peer:
        // past it, the lag grows so that it reads the bound (the peer's stall dilates the
        // emulated time instead of breaking it).
        if let Some(Joined(m)) = &self.lockstep {
            let wall = self.clock.wall();
            self.held = match m.lockstep.bound(m.me) {
                Some(bound) if self.clock.peek() > bound => {
                    m.lockstep
                        .dilation()
                        .raise(wall, Nanos(wall.0.saturating_sub(bound.0)));
                    self.stats.held_rounds += 1;
                    true
                }
                _ => false,
            };
        }
        // Read only in lockstep: what this thread publishes when the round is done.
        let before = self.lockstep.is_some().then(|| self.clock.now());
        if let Some(Joined(m)) = &self.lockstep {
            // Before it reads a frame: a peer that finds one of its frames read finds this.
            let cores_at = self.last.iter().copied().min().unwrap_or(Nanos::ZERO);
            m.lockstep.running(m.me, cores_at);
        }
        // Now is after the read: frames that came while the thread was held up between
        // its wake-up and the read are at their own times, before it; and a core catches
        // up from now, not from the wake-up, whenever the thread was held up.
        if self.lockstep.is_some() {
            // A frame that still lands in its core's past (one nobody recorded a departure
            // for) is held on its wire with those behind it, not bunched with them.
            for (port, &c) in self.owner.iter().enumerate() {
                self.ports.hold_arrivals_from(port, self.last[c]);
            }
        }
        let now = self.ports.receive(&self.clock, &mut self.arrivals)?;
        let (held, longest) = self.ports.take_behind();
        self.stats.behind_frames += held;
        self.stats.behind_max_ns = self.stats.behind_max_ns.max(longest);
        // How far back each core may go this round.
        for (c, core) in self.cores.iter_mut().enumerate() {
            core.round_starts(now);
            // In lockstep a stall holds the peers back, and frames carry their departures:
            // a core catches up whatever it missed, at its own times.
            self.oldest[c] = match self.lockstep {
                Some(_) => Nanos::ZERO,
                None => Nanos(now.0.saturating_sub(core.catch_up().0)),
            };
            self.floor[c] = self.last[c].max(self.oldest[c]);
        }
        // Frames that were on their emulated wire and have landed by now come first, then
        // what the ports received, of which what is still on its wire waits. Every step
        // keeps the order, and so does the stable sort below: a port's frames never pass
        // each other.
        self.safe = self.safe_time();
        let horizon = (now + LOOKAHEAD).min(self.safe);
        self.landed
            .extend(self.on_wire.extract_if(.., |a| a.at <= horizon));
        let landed = self.landed.len();
        self.arrivals.splice(0..0, self.landed.drain(..));
        let worked = !self.arrivals.is_empty();
        self.on_wire
            .extend(self.arrivals.extract_if(landed.., |a| a.at > horizon));
        // In time order per core (ports of one core interleave by time).
        let owner = &self.owner;
        self.arrivals.sort_by_key(|a| (owner[a.port], a.at));
        let mut arrivals = std::mem::take(&mut self.arrivals);
        for a in arrivals.drain(..) {
            if a.at > self.safe {
                // What it sent this round may be answered before this frame lands.
                self.on_wire.push(a);
                continue;
            }
            let c = self.owner[a.port];
            self.stats.frames += 1;
            self.stats.max_lag_ns = self.stats.max_lag_ns.max(now.0.saturating_sub(a.at.0));
            if a.at < self.oldest[c] {
                self.stats.late_frames += 1;
            }
            let t = a.at.max(self.floor[c]).max(self.last[c]);
            if a.at < t {
                self.stats.behind_frames += 1;
                self.stats.behind_max_ns = self.stats.behind_max_ns.max((t - a.at).0);
            }
            self.advance(c, t);
            self.ports.release_at(t);
            self.cores[c].arrive(t, a.port, a.frame, &mut self.ports);
            self.cores[c].run_at(t, &mut self.ports);
            self.sent_at_most_answered();
        }
        self.arrivals = arrivals;
        for c in 0..self.cores.len() {
            self.settle(c, now);
        }
        let sent = self.ports.flush()?;
        if let (Some(Joined(m)), Some(before)) = (&self.lockstep, before) {
            // Everything that came before `before` has been read, and run as far as it was
            // safe to: the clock runs at most a lookahead past that.
            m.lockstep.publish(m.me, before.min(self.safe));
            let next = self
                .cores
                .iter()
                .filter_map(Core::deadline)
                .chain(self.on_wire.iter().map(|a| a.at))
                .min();
            self.waiting_for_peer = next.is_some_and(|d| d <= now && d > self.safe);
            if self.waiting_for_peer {
                self.stats.held_rounds += 1;
            }
            m.lockstep.waiting(m.me, next.unwrap_or(Nanos(u64::MAX)));
        }
        let flushed = self.clock.now();
        for core in &mut self.cores {
            core.round_ends(flushed);
        }
        let done = Instant::now();
        if worked || sent > 0 {
            self.spin_until = done + SPIN_AFTER_WORK;
        }
        self.stats.rounds += 1;
        self.stats.waiting_ns += (woke - waited).as_nanos() as u64;
        self.stats.busy_ns += (done - woke).as_nanos() as u64;
        Ok(now)
    }

    /// Runs core `c`'s timers and transmissions that fell due before `to`, each at its own
    /// time (none before its floor), then what is due at `to`.
    fn advance(&mut self, c: usize, to: Nanos) {
        let to = to.max(self.last[c]);
        self.run_timers(c, to);
        self.ports.release_at(to);
        self.cores[c].run_at(to, &mut self.ports);
        self.last[c] = to;
    }

    /// Runs core `c`'s timers and transmissions that fell due before `to`, each at its own
    /// time (none before its floor).
    fn run_timers(&mut self, c: usize, to: Nanos) {
        // Bounded: every round sends a frame or moves time forward.
        for _ in 0..1_000_000 {
            let Some(d) = self.cores[c].timer().filter(|&d| d < to && d <= self.safe) else {
                break;
            };
            let t = d.max(self.floor[c]).max(self.last[c]);
            self.ports.release_at(t);
            let sent = self.cores[c].run_at(t, &mut self.ports);
            self.last[c] = t;
            self.sent_at_most_answered();
            // Nothing went and nothing moved past t: the rest waits for `to`.
            if sent == 0 && self.cores[c].timer().is_some_and(|d| d <= t) {
                break;
            }
        }
    }

    /// At the end of a round: runs what fell due by `now` at its own time, and leaves core
    /// `c` at the last time it had something to do. A core of a lockstep that moved to now
    /// with nothing to do would find the frames a slower peer sent it before now already in
    /// its past (their departures are on the shared emulated clock): it would take them
    /// late, all at once.
    fn settle(&mut self, c: usize, now: Nanos) {
        if self.lockstep.is_none() {
            return self.advance(c, now);
        }
        let to = now.min(self.safe);
        self.run_timers(c, to);
        if let Some(d) = self.cores[c].deadline().filter(|&d| d <= to) {
            let t = d.max(self.floor[c]).max(self.last[c]);
            self.ports.release_at(t);
            self.cores[c].run_at(t, &mut self.ports);
            self.last[c] = t;
            self.sent_at_most_answered();
        }
    }

    /// How far this thread's cores may run on the emulated clock without a frame from a
    /// peer landing in their past (the safe time of a conservative parallel simulation):
    /// the earliest a frame not read yet, or one a peer has yet to send, can land. A peer
    /// that runs a round may send from its cores' time on; one that waits, from its next
    /// own event or from when what this thread sent it lands, whichever is first. Every
    /// frame takes at least [`Driver::transit`] over its link. Unbounded outside a
    /// lockstep.
    fn safe_time(&self) -> Nanos {
        let Some(Joined(m)) = &self.lockstep else {
            return Nanos(u64::MAX);
        };
        let own_next = self
            .cores
            .iter()
            .filter_map(Core::deadline)
            .chain(self.arrivals.iter().map(|a| a.at))
            .chain(self.on_wire.iter().map(|a| a.at))
            .min();
        // Read before the peers' promises: a peer that has read a frame this thread sent
        // had said it runs before it read it.
        let unreceived = self.ports.earliest_unreceived();
        let answer = match (unreceived, own_next) {
            (Some(a), Some(b)) => a.min(b).saturating_add(self.transit),
            (a, b) => a
                .or(b)
                .map_or(Nanos(u64::MAX), |t| t.saturating_add(self.transit)),
        };
        let peers = m.lockstep.earliest_release(m.me, answer);
        let unread = self.ports.earliest_unread();
        match (peers, unread) {
            (Some(a), Some(b)) => a.min(b).saturating_add(self.transit),
            (a, b) => a
                .or(b)
                .map_or(Nanos(u64::MAX), |t| t.saturating_add(self.transit)),
        }
    }

    /// A frame sent at `r` to a waiting peer may be answered at `r` plus two transits: no
    /// core of this thread runs past that this round.
    fn sent_at_most_answered(&mut self) {
        if let Some(r) = self.ports.take_first_release()
            && self.lockstep.is_some()
        {
            self.safe = self.safe.min(r.saturating_add(self.transit + self.transit));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(bits_per_sec: u64, propagation: Nanos) -> link::Wire {
        link::Wire::new(link::Transmitter::new(bits_per_sec), propagation)
    }

    /// The lab's emulated wire's arrival for a 4138-byte frame (a 4096-byte RoCE
    /// payload) handed over at `at`, and how long its floor held it.
    fn carry_4k(w: &mut link::Wire, at: Nanos, floor: Nanos) -> (Nanos, Nanos) {
        let trip = carry(w, at, &[0; 4138], floor);
        (trip.landed, trip.held)
    }

    #[test]
    fn frames_handed_over_together_arrive_a_wire_time_apart() {
        // 1 Gb/s, 4138-byte frames (a 4096-byte RoCE payload): on the wire each takes
        // (4138 + 4 FCS + 8 preamble) × 8 = 33,200 ns to its last bit, and the next can
        // start 12 bytes of gap later: (4138 + 24) × 8 = 33,296 ns apart (IEEE 802.3).
        let mut w = wire(1_000_000_000, Nanos(500));
        for k in 0..4u64 {
            assert_eq!(
                carry_4k(&mut w, Nanos(1_000), Nanos::ZERO).0,
                Nanos(1_000 + k * 33_296 + 33_200 + 500)
            );
        }
        // A frame handed over after the wire went idle starts at once.
        assert_eq!(
            carry_4k(&mut w, Nanos(1_000_000), Nanos::ZERO).0,
            Nanos(1_000_000 + 33_200 + 500)
        );
    }

    #[test]
    fn frames_that_land_behind_their_core_keep_their_spacing() {
        // The core ran to 100 µs before reading three frames handed over at 0: the first
        // lands at 100 µs, as over a longer cable, and the others a wire time after it
        // each, not all at 100 µs.
        let mut w = wire(1_000_000_000, Nanos(500));
        let floor = Nanos(100_000);
        let (first, late) = carry_4k(&mut w, Nanos(0), floor);
        assert_eq!(first, floor);
        assert_eq!(late, Nanos(100_000 - 33_200 - 500));
        for k in 1..3u64 {
            let (at, _) = carry_4k(&mut w, Nanos(0), floor);
            assert_eq!(at, floor + Nanos(k * 33_296));
        }
    }

    #[test]
    fn a_sender_that_outruns_the_link_is_taken_as_it_comes_past_the_slack() {
        let mut w = wire(1_000_000_000, Nanos::ZERO);
        let mut last = Nanos::ZERO;
        // 100 frames at one instant: 3.3 ms of wire, more than the 1 ms slack.
        for _ in 0..100 {
            let (at, _) = carry_4k(&mut w, Nanos(0), Nanos::ZERO);
            assert!(at >= last, "frames never pass each other");
            last = at;
        }
        assert!(last <= WIRE_SLACK + Nanos(2 * 33_296), "{last:?}");
    }
}

#[cfg(test)]
mod stall_tests {
    use super::*;
    use crate::io::{KernelStats, RxFrame};
    use std::collections::VecDeque;
    use std::os::fd::RawFd;

    /// Frames waiting on a fake port: their kernel stamps (CLOCK_REALTIME, ns).
    type Waiting = Arc<Mutex<VecDeque<u64>>>;

    /// A port whose frames are what `waiting` holds. One with `stall` set stalls the
    /// thread that first reads it for 25 ms, as a descheduled thread would, while 10
    /// frames, 2 ms apart, reach the port whose queue `stall` holds.
    struct FakeRx {
        waiting: Waiting,
        stall: Option<Waiting>,
    }

    impl FrameRx for FakeRx {
        fn fd(&self) -> RawFd {
            -1 // poll ignores it
        }

        fn receive(
            &mut self,
            out: &mut Vec<RxFrame>,
            max: usize,
            pool: &mut Pool,
        ) -> std::io::Result<usize> {
            if let Some(meanwhile) = self.stall.take() {
                let began = realtime_ns();
                std::thread::sleep(Duration::from_millis(25));
                let mut q = meanwhile.lock().unwrap();
                q.extend((0..10).map(|k| began + 2_000_000 * (k + 1)));
            }
            let mut q = self.waiting.lock().unwrap();
            let mut got = 0;
            while got < max
                && let Some(stamp) = q.pop_front()
            {
                let mut data = pool.get();
                data.resize(1000, 0);
                out.push(RxFrame {
                    data,
                    stamp: Some(stamp),
                });
                got += 1;
            }
            Ok(got)
        }

        fn kernel_stats(&mut self) -> KernelStats {
            KernelStats::default()
        }

        fn instant_link(&self) -> bool {
            false
        }
    }

    struct NoTx;

    impl FrameTx for NoTx {
        fn transmit(&mut self, frames: &[Vec<u8>]) -> std::io::Result<usize> {
            Ok(frames.len())
        }

        fn refused(&self) -> u64 {
            0
        }
    }

    /// A thread held up halfway through reading its ports (port 0 read, then 25 ms on
    /// port 1) once left what port 0 got meanwhile for the next round, which then took it
    /// all at the round's time: ten frames sent 2 ms apart entered together, a queue no
    /// sender made. They are read in the same round, each at its own time, before the
    /// now the read returns.
    #[test]
    fn frames_that_come_while_the_reading_thread_stalls_keep_their_times() {
        let clock = Clock::start();
        let mut ports = Ports::new(2048);
        let port0: Waiting = Arc::default();
        let port1: Waiting = Arc::default();
        let rx0 = FakeRx {
            waiting: Arc::clone(&port0),
            stall: None,
        };
        let rx1 = FakeRx {
            waiting: port1,
            stall: Some(Arc::clone(&port0)),
        };
        ports.add("p0", Box::new(rx0), Box::new(NoTx));
        ports.add("p1", Box::new(rx1), Box::new(NoTx));
        let before = clock.now();
        let mut out = Vec::new();
        let now = ports.receive(&clock, &mut out).unwrap();
        assert_eq!(out.len(), 10, "every frame port 0 got during the stall");
        assert!(
            out.iter()
                .all(|a| a.port == 0 && a.at > before && a.at <= now)
        );
        for pair in out.windows(2) {
            let gap = pair[1].at - pair[0].at;
            // 2 ms apart, give or take the stamp clock's sync (a few µs).
            assert!(gap.0.abs_diff(2_000_000) < 100_000, "{gap:?}");
        }
        assert!(now - before >= Nanos(25_000_000));
    }

    /// A core with nothing to do: it only takes the driver's rounds.
    struct Idle;

    impl Core for Idle {
        fn deadline(&self) -> Option<Nanos> {
            None
        }
        fn run_at(&mut self, _: Nanos, _: &mut Ports) -> usize {
            0
        }
        fn arrive(&mut self, _: Nanos, _: usize, frame: Vec<u8>, ports: &mut Ports) {
            ports.recycle(frame);
        }
        fn catch_up(&self) -> Nanos {
            Nanos::ZERO
        }
    }

    /// In lockstep a thread whose peer has stopped publishing (descheduled) runs its
    /// clock no further than the peer's time plus the lookahead, and the lag grows by the
    /// rest: the stall dilates emulated time. Once the peer moves on, so may the thread;
    /// once the peer has left, nothing holds it.
    #[test]
    fn a_thread_in_lockstep_waits_for_a_stalled_peer_and_time_dilates() {
        use super::super::lockstep::{Lockstep, Member};
        let mut ports = Ports::new(2048);
        let waiting: Waiting = Arc::default();
        ports.add(
            "p0",
            Box::new(FakeRx {
                waiting,
                stall: None,
            }),
            Box::new(NoTx),
        );
        let origin = Instant::now();
        let lookahead = Nanos(100_000);
        let lockstep = Lockstep::new(2, lookahead);
        let mut driver = Driver::new(vec![Idle], ports, vec![0], Clock::from_origin(origin));
        driver.join(Member {
            lockstep: Arc::clone(&lockstep),
            me: 0,
            origin,
        });
        // The clock read at least this when the thread joined (more than nothing on a
        // loaded machine, which may hold the thread up between the origin and the join),
        // and it never reads less than it has read.
        let joined = Nanos(origin.elapsed().as_nanos() as u64);
        // The peer joined at 0 and then stalled.
        lockstep.join(1, Nanos::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        // The clock read the bound when the round began; the round's own time runs on
        // from there: the bound and no more than the round took (timed here, so that a
        // loaded machine's slow round does not fail the test).
        let timed_round = |driver: &mut Driver<Idle>| {
            let start = Instant::now();
            let now = driver.round(start, false).unwrap();
            (
                now,
                Nanos(start.elapsed().as_nanos() as u64) + Nanos(100_000),
            )
        };
        let (now, took) = timed_round(&mut driver);
        assert!(
            now <= lookahead.max(joined) + took,
            "{now:?} after a round of {took:?}, joined by {joined:?}"
        );
        let lag = lockstep.dilation().lag();
        assert!(lag >= Nanos(4_800_000), "{lag:?}");
        // The peer has run to 3 ms: the thread may run to 3.1 ms, and no further.
        lockstep.publish(1, Nanos(3_000_000));
        std::thread::sleep(Duration::from_millis(5));
        let (held, took) = timed_round(&mut driver);
        assert!(
            held <= Nanos(3_100_000).max(joined) + took && held > Nanos(2_000_000),
            "{held:?} after a round of {took:?}, joined by {joined:?}"
        );
        // The peer has gone: the clock runs on, the lag that was stays. It never reads
        // less than it has read: a held round that a loaded machine made slow may have
        // left it past the wall less the lag.
        lockstep.leave(1);
        std::thread::sleep(Duration::from_millis(1));
        let lag = lockstep.dilation().lag();
        let now = driver.round(Instant::now(), false).unwrap();
        let wall = Nanos(origin.elapsed().as_nanos() as u64);
        assert!(
            now > Nanos(3_100_000) && now >= held && now <= (wall - lag).max(held),
            "{now:?} after {held:?}, wall {wall:?}, lag {lag:?}"
        );
        let (_, _, stats) = driver.into_parts();
        assert_eq!(stats.held_rounds, 2);
        assert_eq!(stats.dilation_ns, lockstep.dilation().lag().0);
    }
}
