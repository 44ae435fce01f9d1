//! A receive thread and a transmit thread per interface, joined to the core's thread by
//! crossbeam channels: received batches come in on one channel tagged with their port;
//! batches to send go out on one channel per port, and their buffers return to the pool.

use super::PortError;
use super::{CoreList, stopped};
use crate::io::{self, Backend, FrameRx, FrameTx, KernelStats, Pool};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Most frames a receive thread hands over at once.
const RX_BATCH: usize = 64;
/// Batches waiting between threads before the sender blocks.
const QUEUE_BATCHES: usize = 1024;
/// How often idle threads look at the stop flag.
const IDLE: Duration = Duration::from_millis(20);

/// A batch of frames received on a port.
pub type RxBatch = (usize, Vec<Vec<u8>>);

/// The running port threads.
pub struct PortThreads {
    /// Batches received, tagged with their port.
    pub rx: Receiver<RxBatch>,
    /// Where to put batches to send, per port.
    pub tx: Vec<Sender<Vec<Vec<u8>>>>,
    /// Frame buffers shared by every thread; give sent and consumed frames back here.
    pub pool: Pool,
    /// The first fatal I/O error of a port thread, if any (it also raises the stop flag).
    pub errors: Receiver<PortError>,
    rx_threads: Vec<JoinHandle<KernelStats>>,
    tx_threads: Vec<JoinHandle<()>>,
    done: Arc<AtomicBool>,
}

impl PortThreads {
    /// Opens every interface with `backend` for frames up to `mtu` bytes and starts its
    /// threads, pinned by `cores` (role 1 onwards). Opening errors come back here, before
    /// any thread runs.
    pub fn start(
        ifaces: &[String],
        backend: Backend,
        mtu: usize,
        cores: &CoreList,
        stop: &Arc<AtomicBool>,
    ) -> std::io::Result<PortThreads> {
        let mut opened = Vec::new();
        for name in ifaces {
            opened.push(io::open(backend, name, mtu)?);
        }
        let pool = Pool::new(4096, mtu + 64);
        let (rx_send, rx) = crossbeam_channel::bounded(QUEUE_BATCHES);
        let (err_send, errors) = crossbeam_channel::bounded(ifaces.len() * 2);
        let done = Arc::new(AtomicBool::new(false));
        let mut tx = Vec::new();
        let (mut rx_threads, mut tx_threads) = (Vec::new(), Vec::new());
        for (port, ((frx, ftx), name)) in opened.into_iter().zip(ifaces).enumerate() {
            let (send, recv) = crossbeam_channel::bounded(QUEUE_BATCHES);
            tx.push(send);
            let ctx = Ctx {
                port,
                name: name.clone(),
                pool: pool.clone(),
                stop: Arc::clone(stop),
                done: Arc::clone(&done),
                errors: err_send.clone(),
                cores: cores.clone(),
            };
            let c = ctx.clone();
            let s = rx_send.clone();
            rx_threads.push(
                std::thread::Builder::new()
                    .name(format!("rx-{name}"))
                    .spawn(move || receive_loop(c, frx, s))?,
            );
            tx_threads.push(
                std::thread::Builder::new()
                    .name(format!("tx-{name}"))
                    .spawn(move || transmit_loop(ctx, ftx, recv))?,
            );
        }
        Ok(PortThreads {
            rx,
            tx,
            pool,
            errors,
            rx_threads,
            tx_threads,
            done,
        })
    }

    /// Stops the threads once the transmit queues are drained (or dropped, after a stop
    /// signal); returns each port's kernel receive statistics and the first port error
    /// not read yet.
    pub fn finish(mut self) -> (Vec<KernelStats>, Option<PortError>) {
        drop(std::mem::take(&mut self.tx));
        for t in std::mem::take(&mut self.tx_threads) {
            let _ = t.join();
        }
        self.done.store(true, Ordering::Relaxed);
        drop(std::mem::replace(&mut self.rx, crossbeam_channel::never()));
        let stats = std::mem::take(&mut self.rx_threads)
            .into_iter()
            .map(|t| t.join().unwrap_or_default())
            .collect();
        (stats, self.errors.try_recv().ok())
    }
}

/// What a wait for the next receive batch gave.
#[derive(Debug)]
pub enum Arrival {
    /// A batch of frames from one port.
    Batch(RxBatch),
    /// Nothing came by the wake-up time.
    Timeout,
    /// The receive threads are gone.
    Closed,
}

impl PortThreads {
    /// Waits for the next receive batch until `wake`: spinning when `busy`, else blocking.
    pub fn wait(&self, wake: std::time::Instant, busy: bool) -> Arrival {
        if busy {
            loop {
                match self.rx.try_recv() {
                    Ok(b) => return Arrival::Batch(b),
                    Err(crossbeam_channel::TryRecvError::Disconnected) => return Arrival::Closed,
                    Err(_) if std::time::Instant::now() >= wake => return Arrival::Timeout,
                    Err(_) => std::hint::spin_loop(),
                }
            }
        }
        match self.rx.recv_deadline(wake) {
            Ok(b) => Arrival::Batch(b),
            Err(RecvTimeoutError::Timeout) => Arrival::Timeout,
            Err(RecvTimeoutError::Disconnected) => Arrival::Closed,
        }
    }
}

impl Drop for PortThreads {
    /// Threads of a run that ended early (an error, a panic) stop on their own.
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

#[derive(Clone)]
struct Ctx {
    port: usize,
    name: String,
    pool: Pool,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    errors: Sender<PortError>,
    cores: CoreList,
}

impl Ctx {
    fn fail(&self, action: &'static str, cause: std::io::Error) {
        let _ = self.errors.try_send(PortError {
            port: self.name.clone(),
            action,
            cause,
        });
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn receive_loop(ctx: Ctx, mut rx: Box<dyn FrameRx>, out: Sender<RxBatch>) -> KernelStats {
    ctx.cores.pin(1 + 2 * ctx.port);
    let mut batch = Vec::with_capacity(RX_BATCH);
    while !ctx.done.load(Ordering::Relaxed) && !stopped(&ctx.stop) {
        match rx.receive(&mut batch, RX_BATCH, IDLE, &ctx.pool) {
            Ok(0) => {}
            Ok(_) => {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(RX_BATCH));
                if out.send((ctx.port, full)).is_err() {
                    break;
                }
            }
            Err(e) => {
                ctx.fail("receive", e);
                break;
            }
        }
    }
    rx.kernel_stats()
}

fn transmit_loop(ctx: Ctx, mut tx: Box<dyn FrameTx>, input: Receiver<Vec<Vec<u8>>>) {
    ctx.cores.pin(2 + 2 * ctx.port);
    loop {
        match input.recv_timeout(IDLE) {
            Ok(mut batch) => {
                // After a stop signal, or once the port failed, what is queued is dropped.
                let give_up = stopped(&ctx.stop) || ctx.done.load(Ordering::Relaxed);
                if !give_up && let Err(e) = tx.transmit(&batch) {
                    ctx.fail("send", e);
                    for buf in batch.drain(..) {
                        ctx.pool.put(buf);
                    }
                    // Keep emptying the channel so the core never blocks on it.
                    while let Ok(mut b) = input.recv() {
                        for buf in b.drain(..) {
                            ctx.pool.put(buf);
                        }
                    }
                    return;
                }
                for buf in batch.drain(..) {
                    ctx.pool.put(buf);
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}
