//! The live driver: the I/O-free cores on network interfaces, in real time, run to
//! completion. One thread, pinned to a core, owns a set of ports' sockets and the cores
//! behind them (the switch, or endpoints): it waits on every socket and the cores' next
//! deadline at once, hands each frame to its core at the kernel's receive time, runs the
//! cores' timers and transmissions in time order, and sends what they release in batches
//! ([`ports`]). No frame crosses a thread. Waits sleep by default (the machine is shared),
//! or spin with `--busy-poll`. SIGINT and SIGTERM stop everything cleanly.

pub mod departures;
mod error;
pub mod hosts;
pub mod lockstep;
pub mod metrics;
pub mod peers;
pub mod port_lock;
pub mod ports;
pub mod rank;
pub mod switch;
pub mod traffic;

pub use error::{PeersError, PortError, RuntimeError};

use crate::time::Nanos;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Nanoseconds since the run began, as the cores want them: the wall clock, less the lag
/// of a dilated clock ([`lockstep`]) when the thread emulates a fabric with others. Each
/// thread has its own; it never reads less than it has read before.
#[derive(Debug, Clone)]
pub struct Clock {
    start: Instant,
    dilation: Option<Arc<lockstep::Dilation>>,
    /// The latest reading, ns.
    last: std::cell::Cell<u64>,
}

impl Clock {
    /// A clock that reads 0 now.
    pub fn start() -> Clock {
        Clock::from_origin(Instant::now())
    }

    /// A clock that reads 0 at `origin`.
    pub fn from_origin(origin: Instant) -> Clock {
        Clock {
            start: origin,
            dilation: None,
            last: std::cell::Cell::new(0),
        }
    }

    /// The same clock, dilated by `dilation`'s lag.
    pub fn dilated(mut self, dilation: Arc<lockstep::Dilation>) -> Clock {
        self.dilation = Some(dilation);
        self
    }

    /// Nanoseconds elapsed since the origin, less the lag (monotonic).
    pub fn now(&self) -> Nanos {
        let t = self.peek().0.max(self.last.get());
        self.last.set(t);
        Nanos(t)
    }

    /// What [`Clock::now`] would read if nothing had been read before: a thread that
    /// asks whether it has passed its lockstep bound must not have moved its clock there
    /// by asking.
    pub fn peek(&self) -> Nanos {
        let wall = self.wall();
        match &self.dilation {
            Some(d) => Nanos(wall.0.saturating_sub(d.lag().0)),
            None => wall,
        }
    }

    /// Nanoseconds elapsed since the origin on the wall clock, undilated.
    pub fn wall(&self) -> Nanos {
        Nanos(self.start.elapsed().as_nanos() as u64)
    }

    /// The clock's time at wall-clock time `wall` (since the origin): less the lag then.
    pub fn at_wall(&self, wall: Nanos) -> Nanos {
        self.dilation.as_ref().map_or(wall, |d| d.emulated(wall))
    }

    /// The instant of core time `t`; a time too far ahead for the platform's clock (a
    /// core's "never") is a year from the start.
    pub fn instant(&self, t: Nanos) -> Instant {
        let year = Duration::from_secs(365 * 24 * 3600);
        let lag = self.dilation.as_ref().map_or(0, |d| d.lag().0);
        self.start
            .checked_add(Duration::from_nanos(t.0.saturating_add(lag)).min(year))
            .unwrap_or(self.start)
    }
}

/// A flag that SIGINT and SIGTERM raise.
pub fn stop_on_signals() -> io::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    Ok(stop)
}

/// True once `stop` is raised.
pub fn stopped(stop: &AtomicBool) -> bool {
    stop.load(Ordering::Relaxed)
}

/// CPU cores to pin threads to: thread `k` on the `k`-th listed, in turn.
#[derive(Debug, Clone, Default)]
pub struct CoreList(pub Vec<usize>);

/// A core list that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreListError {
    /// A part that is not a core number or range.
    #[error("'{0}': give core numbers like 0,1 or 0-3")]
    Syntax(String),
    /// An empty list (only commas or blanks).
    #[error("no cores given")]
    Empty,
    /// A core listed twice: each thread gets a core of its own.
    #[error("core {0} is listed twice; give each thread a core of its own")]
    Twice(usize),
    /// A core this machine does not have (or this process may not use).
    #[error("core {core} does not exist or is not allowed here; this machine offers {offered:?}")]
    Missing {
        /// The core number asked for.
        core: usize,
        /// The cores that exist.
        offered: Vec<usize>,
    },
}

impl std::str::FromStr for CoreList {
    type Err = CoreListError;
    /// "0,1", "0-3", "2".
    fn from_str(s: &str) -> Result<CoreList, CoreListError> {
        let mut cores = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || CoreListError::Syntax(part.to_owned());
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b): (usize, usize) =
                        (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                    if a > b || b - a >= 4096 {
                        return Err(bad());
                    }
                    cores.extend(a..=b);
                }
                None => cores.push(part.parse().map_err(|_| bad())?),
            }
        }
        if cores.is_empty() {
            return Err(CoreListError::Empty);
        }
        Ok(CoreList(cores))
    }
}

impl CoreList {
    /// Checks that every core exists on this machine, each listed once.
    pub fn check(&self) -> Result<(), CoreListError> {
        if let Some(&core) = self
            .0
            .iter()
            .enumerate()
            .find_map(|(k, c)| self.0[..k].contains(c).then_some(c))
        {
            return Err(CoreListError::Twice(core));
        }
        let ids = core_affinity::get_core_ids().unwrap_or_default();
        match self.0.iter().find(|c| !ids.iter().any(|id| id.id == **c)) {
            Some(&core) => Err(CoreListError::Missing {
                core,
                offered: ids.iter().map(|i| i.id).collect(),
            }),
            None => Ok(()),
        }
    }

    /// The first `n` cores this process may use (fewer if it has fewer).
    pub fn first(n: usize) -> CoreList {
        let mut ids: Vec<usize> = core_affinity::get_core_ids()
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.id)
            .collect();
        ids.sort_unstable();
        ids.truncate(n);
        CoreList(ids)
    }

    /// Pins the calling thread, the `k`-th of its kind, to the `k`-th core listed (in turn
    /// when there are fewer). Does nothing for an empty list.
    pub fn pin(&self, k: usize) {
        if let Some(&core) = self.0.get(k % self.0.len().max(1)) {
            core_affinity::set_for_current(core_affinity::CoreId { id: core });
        }
    }
}

/// The real-time priority rocelab's pinned threads take when asked (SCHED_FIFO 10): above
/// every ordinary task, below the kernel's own real-time threads (interrupt threads run at
/// 50). The kernel's real-time throttling still leaves other tasks 5 % of each second.
pub const REALTIME_PRIORITY: u8 = 10;

/// Gives the calling thread SCHED_FIFO at `priority`, so that no ordinary task on its
/// core preempts it: on a machine shared with other work a preempted switch thread holds
/// every frame that arrives meanwhile, and those frames are a queue. `None` leaves it as
/// it is.
pub fn realtime(priority: Option<u8>) -> io::Result<()> {
    let Some(priority) = priority else {
        return Ok(());
    };
    let param = libc::sched_param {
        sched_priority: i32::from(priority),
    };
    // SAFETY: sched_setscheduler(2) reads `param`, which lives across the call; pid 0 is
    // the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether this process may take real-time priority (root without CAP_SYS_NICE, or a
/// control group with no real-time budget, may not): tried on a short-lived thread.
pub fn realtime_allowed() -> io::Result<()> {
    std::thread::spawn(|| realtime(Some(REALTIME_PRIORITY)))
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the probe thread panicked")))
}

/// Asks the kernel to wake the calling thread on time (timer slack 1 ns instead of 50 µs).
pub fn precise_timers() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer and affects this thread only.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Waits until `deadline`: sleeping for most of it, spinning at the end when `busy`.
pub fn wait_until(deadline: Instant, busy: bool) {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        if busy {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(deadline - now);
        }
    }
}
