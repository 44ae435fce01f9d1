//! `rocelab traffic`: a fast RoCEv2 frame blaster and a frame counter, for benchmarks and
//! tests. The sender builds valid RC WRITE frames (ICRC included) once and sends them in
//! `sendmmsg` batches with PACKET_QDISC_BYPASS (the mmap backend's send side); it ignores
//! PFC, as a plain traffic generator does. The counter counts RoCE frames arriving.

use super::{RuntimeError, stopped};
use crate::io::{self, Backend, Pool};
use crate::wire::bth::{BthRepr, Opcode};
use crate::wire::xth::ExtHeaders;
use crate::wire::{self, Ecn, IpRepr, Ipv4Repr, MacAddr, RoceRepr};
use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// What to send.
#[derive(Debug, Clone)]
#[allow(missing_docs)] // interface and addresses: the names say it
pub struct SendSpec {
    pub iface: String,
    pub dst_mac: MacAddr,
    pub src_mac: MacAddr,
    pub dst_ip: Ipv4Addr,
    pub src_ip: Ipv4Addr,
    /// Frame length in bytes (FCS excluded), at least 62.
    pub size: usize,
    /// DSCP (26: the lossless class by default).
    pub dscp: u8,
    /// Stop after this long.
    pub duration: Duration,
    /// At most this many frames per second (None: as fast as possible).
    pub pps: Option<f64>,
    /// Stop after this many frames.
    pub count: Option<u64>,
}

/// RC WRITE Middle frames of `spec.size` bytes with consecutive PSNs.
fn frames(spec: &SendSpec, n: usize) -> Result<Vec<Vec<u8>>, RuntimeError> {
    // 58 bytes of headers and ICRC around the payload (Ethernet, IPv4, UDP, BTH, ICRC).
    let payload_len = spec
        .size
        .checked_sub(58)
        .filter(|p| p % 4 == 0)
        .ok_or(RuntimeError::FrameSize(spec.size))?;
    let payload = vec![0x5a; payload_len];
    (0..n)
        .map(|i| {
            let repr = RoceRepr {
                eth_dst: spec.dst_mac,
                eth_src: spec.src_mac,
                vlan: None,
                ip: IpRepr::V4(Ipv4Repr {
                    src: spec.src_ip,
                    dst: spec.dst_ip,
                    dscp: spec.dscp,
                    ecn: Ecn::Ect0,
                    ident: i as u16,
                    dont_frag: true,
                    ttl: 64,
                }),
                udp_src_port: 0xc000,
                bth: BthRepr {
                    opcode: Opcode::RC_WRITE_MIDDLE,
                    pkey: 0xffff,
                    dest_qp: 0x11,
                    psn: i as u32,
                    ..BthRepr::default()
                },
                ext: ExtHeaders::default(),
                payload: &payload,
            };
            let mut buf = vec![0u8; repr.frame_len()];
            repr.emit(&mut buf)?;
            Ok(buf)
        })
        .collect()
}

/// Frames a paced sender sends back to back at most after it ran late.
pub const PACED_BURST: u64 = 4;

/// The rates `--pps` may ask for, frames per second.
pub const PPS_RANGE: std::ops::RangeInclusive<f64> = 0.001..=1e9;

/// Sends until the duration, the count or `stop`; returns (frames sent, seconds). With a
/// rate, each frame leaves at its own time (`k / pps`), not in bursts of a batch; a sender
/// that was descheduled catches up at most [`PACED_BURST`] frames, as a NIC's rate limiter
/// bounds its bucket, and loses the rest of the time: a burst of everything it missed
/// would be a queue at the switch that a paced sender never makes.
pub fn send(spec: &SendSpec, stop: &AtomicBool) -> Result<(u64, f64), RuntimeError> {
    if let Some(pps) = spec.pps
        && !PPS_RANGE.contains(&pps)
    {
        return Err(RuntimeError::Rate(pps));
    }
    let mtu = interface_mtu(&spec.iface)?;
    // The IP packet (frame less its 14-byte Ethernet header) must fit the interface.
    if spec.size.saturating_sub(14) > mtu {
        return Err(RuntimeError::TooLarge {
            size: spec.size,
            iface: spec.iface.clone(),
            mtu,
        });
    }
    let (_, mut tx) = io::open(Backend::Mmap, &spec.iface, spec.size + 64)?;
    let batch = frames(spec, 64)?;
    let started = Instant::now();
    let end = started + spec.duration;
    let mut sent = 0u64;
    // The pacing schedule: frame `base + k` is due at `origin + k / pps`.
    let (mut origin, mut base) = (started, 0u64);
    let mut refused = 0u64;
    while !stopped(stop) && Instant::now() < end && spec.count.is_none_or(|c| sent < c) {
        let mut n = spec
            .count
            .map_or(batch.len(), |c| (c - sent).min(batch.len() as u64) as usize);
        if spec.pps.is_some() {
            n = 1;
        }
        let before = tx.refused();
        let dealt = tx.transmit(&batch[..n])?;
        let lost = tx.refused() - before;
        let went = dealt as u64 - lost;
        sent += went;
        refused += lost;
        if dealt == 0 {
            // The device is busy: a moment for it to drain.
            std::thread::sleep(Duration::from_micros(20));
        }
        if went == 0 && refused >= 64 {
            // Every frame refused: the kernel will not take them (see the error).
            return Err(RuntimeError::Refused {
                iface: spec.iface.clone(),
                size: spec.size,
            });
        }
        if let Some(pps) = spec.pps {
            // Below 1e9 s for any count reachable in the run (pps >= 0.001).
            let at = |origin: Instant, k: u64| {
                Duration::try_from_secs_f64(k as f64 / pps).map_or(end, |d| origin + d)
            };
            let now = Instant::now();
            if now > at(origin, sent - base + PACED_BURST) {
                // Late by more than a few frames: the schedule starts again from now.
                (origin, base) = (now, sent);
            }
            super::wait_until(at(origin, sent - base).min(end), false);
        }
    }
    Ok((sent, started.elapsed().as_secs_f64()))
}

/// The MTU of `iface` in this network namespace, bytes.
fn interface_mtu(iface: &str) -> Result<usize, RuntimeError> {
    let path = format!("/sys/class/net/{iface}/mtu");
    let text = std::fs::read_to_string(&path).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no interface named '{iface}' in this network namespace"),
        )
    })?;
    Ok(text.trim().parse().unwrap_or(usize::MAX))
}

/// What the counter saw.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Counted {
    /// Frames that parsed as RoCEv2 (UDP destination port 4791).
    pub roce: u64,
    /// Of which CE-marked.
    pub ce: u64,
    /// Frames that are not RoCEv2 or did not parse.
    pub other: u64,
    /// Seconds from the first RoCE frame to the last: by the kernel's receive times when
    /// the backend gives them (mmap), else by when the ring was read (to 0.5 ms).
    pub span_s: f64,
}

/// Counts frames on `iface` for `duration` (or until `stop`).
pub fn count(
    iface: &str,
    backend: Backend,
    duration: Duration,
    stop: &AtomicBool,
) -> Result<Counted, RuntimeError> {
    let (mut rx, _) = io::open(backend, iface, 9216 + 64)?;
    let mut pool = Pool::new(256, 9216 + 64);
    let mut fds = [io::readable(rx.fd())];
    let end = Instant::now() + duration;
    let mut c = Counted::default();
    let (mut first, mut last) = (None, None);
    // The kernel's receive times, when every RoCE frame has one: the ring is read every
    // half millisecond, so the read times alone are half a millisecond coarse.
    let (mut first_stamp, mut last_stamp, mut stamped) = (None, None, true);
    let mut batch = Vec::with_capacity(256);
    while !stopped(stop) && Instant::now() < end {
        // A sink needs no low latency: it reads the ring every half millisecond instead
        // of being woken for each frame (which would cost the sender a wake-up per frame).
        std::thread::sleep(Duration::from_micros(500));
        if !io::wait(&mut fds, Duration::ZERO)? {
            continue;
        }
        while rx.receive(&mut batch, 256, &mut pool)? > 0 {
            let now = Instant::now();
            for f in batch.drain(..) {
                let (f, stamp) = (f.data, f.stamp);
                match wire::parse(&f) {
                    Ok(m) if m.is_roce() => {
                        c.roce += 1;
                        if m.ecn() == Ecn::Ce {
                            c.ce += 1;
                        }
                        first.get_or_insert(now);
                        last = Some(now);
                        match stamp {
                            Some(t) => {
                                first_stamp.get_or_insert(t);
                                last_stamp = Some(t);
                            }
                            None => stamped = false,
                        }
                    }
                    _ => c.other += 1,
                }
                pool.put(f);
            }
        }
    }
    if let (true, Some(a), Some(b)) = (stamped, first_stamp, last_stamp) {
        c.span_s = b.saturating_sub(a) as f64 / 1e9;
    } else if let (Some(a), Some(b)) = (first, last) {
        c.span_s = (b - a).as_secs_f64();
    }
    Ok(c)
}
