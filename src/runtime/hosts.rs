//! Hosts live: endpoint cores, each with its application, on the ports of one
//! run-to-completion thread (one rank for `rocelab endpoint`, every host of `rocelab lab`).

use super::ports::{Core, Driver, Ports, ThreadStats};
use super::{Clock, CoreList, stopped};
use super::{PortError, RuntimeError};
use crate::config::endpoint::EndpointConfig;
use crate::endpoint::Endpoint;
use crate::endpoint::app::App;
use crate::endpoint::host::Host;
use crate::io::{Backend, KernelStats};
use crate::time::Nanos;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How to run.
#[derive(Debug, Clone)]
pub struct EndpointOptions {
    /// The endpoint configuration (its link rate paces the NIC).
    pub cfg: EndpointConfig,
    /// The interface the endpoint sends and receives on, as a NIC port would.
    pub iface: String,
    /// `pnet` (portable) or `mmap` (a receive ring and batched sends).
    pub backend: Backend,
    /// Cores to pin to (the thread takes the first).
    pub cores: CoreList,
    /// How the thread runs.
    pub run: RunOptions,
}

/// How a thread of endpoints runs.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Spin instead of sleeping.
    pub busy_poll: bool,
    /// Give up after this long.
    pub limit: Option<Duration>,
    /// After an application is done, keep answering (ACKs for retransmissions) this long.
    pub linger: Duration,
    /// The instant the endpoints' clock reads 0 (default: when the run starts).
    pub origin: Option<Instant>,
    /// One-way propagation delay of each endpoint's link (its cable). On a veth, frames
    /// arrive when their last bit would have: serialisation at the endpoint's link rate
    /// plus this.
    pub propagation: Nanos,
    /// Run in lockstep with the threads of the rest of the fabric (the lab's switch), on
    /// their shared dilated clock; its origin replaces `origin`.
    pub lockstep: Option<super::lockstep::Member>,
}

/// How the run ended, for one endpoint.
pub struct EndpointOutcome {
    /// The endpoint with its counters and memory.
    pub endpoint: Endpoint,
    /// The application, with its results (an all-reduce's times, say).
    pub app: App,
    /// When the application finished, if it did.
    pub done_at: Option<Nanos>,
    /// The endpoint's clock when the run ended.
    pub end: Nanos,
    /// Kernel receive statistics.
    pub kernel: KernelStats,
    /// A port's fatal error, if that is what stopped it.
    pub error: Option<PortError>,
    /// How the thread it ran on fared (the same for every endpoint of the thread).
    pub thread: ThreadStats,
}

/// Runs `ep` with `app` on its interface until the application is done (and the linger
/// time passed), the limit, `stop`, or a port error. The application's clock starts at 0
/// now. `sampler`, if given, sees the endpoint every so often as it runs.
pub fn run(
    opts: &EndpointOptions,
    ep: Endpoint,
    app: App,
    stop: &Arc<AtomicBool>,
    sampler: Option<EndpointSampler<'_>>,
) -> Result<EndpointOutcome, RuntimeError> {
    let _claim = claim_roce_port();
    let mut ports = Ports::new(opts.cfg.mtu as usize + 128);
    ports.open(opts.backend, &opts.iface, opts.cfg.mtu as usize + 128)?;
    opts.cores.pin(0);
    let mut out = run_hosts(&opts.run, vec![(ep, app)], ports, stop, sampler)?;
    Ok(out.pop().expect("one endpoint in, one out"))
}

/// An endpoint and its application, as a sampler sees them.
pub struct Live<'a> {
    /// Which endpoint: its port on the thread.
    pub host: usize,
    /// The endpoint, its counters and QPs as of `now`.
    pub endpoint: &'a Endpoint,
    /// The application it runs (a sampler may set its start: see `App::set_start`).
    pub app: &'a mut App,
    /// The endpoints' clock.
    pub now: Nanos,
}

/// Something to call with every endpoint every `every`.
pub struct EndpointSampler<'a> {
    /// Wall-clock time from one round of calls to the next, at least.
    pub every: Duration,
    /// What to call, with the time since the run began.
    pub call: &'a mut (dyn FnMut(Duration, &mut Live<'_>) + Send),
}

/// One host on a run-to-completion thread: its port is its index.
struct OnPort {
    host: Host,
    port: usize,
    done_at: Option<Nanos>,
}

impl Core for OnPort {
    fn deadline(&self) -> Option<Nanos> {
        self.host.poll_timeout()
    }

    /// Timers, the application's reactions, then every frame the link and the pacers let
    /// go at `t`: the host's one pump, as the simulator runs it.
    fn run_at(&mut self, t: Nanos, ports: &mut Ports) -> usize {
        self.host.handle_timeout(t);
        self.host.poll(t);
        let mut sent = 0;
        loop {
            let mut buf = ports.buffer();
            let Some(elided) = self.host.poll_transmit_into(t, &mut buf) else {
                ports.recycle(buf);
                return sent;
            };
            // A live endpoint elides nothing (only a simulator turns it on); were one to,
            // the wire would get the whole frame.
            if crate::wire::elide::restore(&mut buf, elided).is_err() {
                ports.recycle(buf);
                continue;
            }
            ports.send(self.port, buf);
            sent += 1;
        }
    }

    fn arrive(&mut self, t: Nanos, _port: usize, frame: Vec<u8>, ports: &mut Ports) {
        self.host.handle_frame(t, &frame);
        ports.recycle(frame);
    }

    fn timer(&self) -> Option<Nanos> {
        self.host.timer()
    }

    /// Four full frames at the link rate, or 100 µs if that is longer: a late wake-up
    /// (tens of µs) does not cost the link its rate, a stall costs it the stall.
    fn catch_up(&self) -> Nanos {
        let cfg = self.host.endpoint.config();
        let frame_bits = (u64::from(cfg.mtu) + 128) * 8;
        let four_frames = 4 * frame_bits * 1_000_000_000 / cfg.bits_per_sec().max(1);
        Nanos(four_frames.max(100_000))
    }
}

/// Runs endpoints on the calling thread, endpoint `k` on port `k` of `ports` (opened
/// where each belongs: a socket stays in the namespace it was opened in), until every
/// application is done and has lingered, the limit, `stop`, or a port error. Their clock
/// starts at `opts.origin` (or now); each application starts at its own start time.
pub fn run_hosts(
    opts: &RunOptions,
    hosts: Vec<(Endpoint, App)>,
    ports: Ports,
    stop: &Arc<AtomicBool>,
    mut sampler: Option<EndpointSampler<'_>>,
) -> Result<Vec<EndpointOutcome>, RuntimeError> {
    assert_eq!(hosts.len(), ports.len(), "one port per endpoint");
    let mut ports = ports;
    for (k, (ep, _)) in hosts.iter().enumerate() {
        ports.emulate_link(k, ep.config().bits_per_sec(), opts.propagation);
    }
    super::precise_timers();
    let clock = opts.origin.map_or_else(Clock::start, Clock::from_origin);
    let n = hosts.len();
    let cores = hosts
        .into_iter()
        .enumerate()
        .map(|(port, (ep, app))| OnPort {
            host: Host::new(ep, Some(app)),
            port,
            done_at: None,
        })
        .collect();
    let mut driver = Driver::new(cores, ports, (0..n).collect(), clock);
    if let Some(m) = &opts.lockstep {
        driver.join(m.clone());
    }
    let clock = driver.clock().clone();
    let started = Instant::now();
    let end = opts.limit.map(|l| started + l);
    let mut next_sample = started;
    let mut error = None;
    let begin = clock.now();
    // Stopped before it began (while the applications were prepared): nothing starts.
    for k in (0..n).filter(|_| !stopped(stop)) {
        driver.cores[k].host.start(begin);
        if let Err(e) = driver.run_core_at(k, begin) {
            error = Some(e);
        }
    }
    let linger = opts.linger.as_nanos() as u64;
    while error.is_none() {
        if stopped(stop) || end.is_some_and(|e| Instant::now() >= e) {
            break;
        }
        let now = clock.now();
        let mut finished = true;
        for h in &mut driver.cores {
            if h.host.done() {
                let at = *h.done_at.get_or_insert(now);
                finished &= now.0.saturating_sub(at.0) >= linger && h.host.endpoint.idle();
            } else {
                finished = false;
            }
        }
        if finished {
            break;
        }
        let mut wake = Instant::now() + Duration::from_millis(20);
        if let Some(e) = end {
            wake = wake.min(e);
        }
        if sampler.is_some() {
            wake = wake.min(next_sample);
        }
        let now = match driver.round(wake, opts.busy_poll) {
            Ok(now) => now,
            Err(e) => {
                error = Some(e);
                break;
            }
        };
        if let Some(s) = sampler.as_mut() {
            let now_i = Instant::now();
            if now_i >= next_sample {
                for (k, h) in driver.cores.iter_mut().enumerate() {
                    let host = &mut h.host;
                    let mut live = Live {
                        host: k,
                        endpoint: &host.endpoint,
                        app: host.app.get_or_insert(App::Receive),
                        now,
                    };
                    (s.call)(now_i - started, &mut live);
                }
                next_sample = now_i + s.every;
            }
        }
    }
    let end = clock.now();
    let (cores, mut ports, thread) = driver.into_parts();
    let kernel = ports.kernel_stats();
    ports.close();
    Ok(cores
        .into_iter()
        .zip(kernel)
        .map(|(h, kernel)| EndpointOutcome {
            endpoint: h.host.endpoint,
            app: h.host.app.unwrap_or(App::Receive),
            done_at: h.done_at,
            end,
            kernel,
            error: error.clone(),
            thread,
        })
        .collect())
}

/// Binds UDP 4791 in this namespace and never reads it, with the smallest receive buffer,
/// so that the kernel's own IP stack drops RoCE packets silently instead of answering
/// each with an ICMP port unreachable (a RoCE NIC consumes them before the host stack
/// sees them). Another endpoint in the namespace may hold it already: fine.
pub fn claim_roce_port() -> Option<std::net::UdpSocket> {
    let s = std::net::UdpSocket::bind(("0.0.0.0", 4791)).ok()?;
    let one: libc::c_int = 1;
    // SAFETY: setsockopt with an int the size given; the socket is open.
    unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&s),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    Some(s)
}
