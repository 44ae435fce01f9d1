//! Conformance: the procedures of SONiC's qos_sai tests (sonic-mgmt `tests/qos`) run in
//! virtual time against a switch configuration, each as one check with the value the
//! configuration and docs/qos.md's rules give (`expect`) beside what the switch did.
//!
//! The procedures, on a bench of fresh switches whose ports are like the configuration's:
//! - PFC XOFF at exactly the computed frame (egress stopped: one frame less sends no
//!   pause), XON at the computed departure once the egress opens;
//! - the PG headroom: frames until the first ingress drop with a peer that ignores the
//!   pause, and with a peer that obeys it as late as IEEE 802.3 annex 31B allows;
//! - PG shared and headroom watermarks and the queue watermark after the fill;
//! - the drop point of every lossy queue;
//! - DSCP (or PCP) → traffic class → queue for every code point;
//! - DWRR shares of the queues that carry traffic;
//! - PFC watchdog detection and restoration inside their windows.

pub mod bench;
pub mod expect;

use crate::config::{CLASSES, PortConfig, Schedule, SwitchConfig, Trust};
use crate::link::{frame_time, wire_bits};
use crate::time::Nanos;
use bench::{Bench, Marking, pfc, roce, roce_len_at_most, with_ports};
use serde::Serialize;

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Measured as expected.
    Pass,
    /// Not as expected.
    Fail,
    /// Not applicable to this configuration (the note says why).
    Skip,
}

/// One check: what the configuration says should happen and what did.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Stable identifier, e.g. `pfc_xoff.pg3`.
    pub id: String,
    /// What is checked, in words.
    pub title: String,
    /// The expected value, from the configuration.
    pub expected: String,
    /// What the switch did.
    pub measured: String,
    /// Pass, fail or skip.
    pub status: Status,
    /// How the expected value follows from the configuration.
    pub basis: String,
}

/// Every check, in order.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// `rocelab.conformance/1`.
    pub schema: &'static str,
    /// What the configuration was called (file or preset).
    pub config: String,
    /// Length of the test frames of the buffer procedures, bytes without FCS.
    pub frame_bytes: usize,
    /// The checks.
    pub checks: Vec<Check>,
    /// How many passed.
    pub passed: usize,
    /// How many failed.
    pub failed: usize,
    /// How many did not apply.
    pub skipped: usize,
}

impl Report {
    /// The ids of the checks that failed, in order.
    pub fn failing_ids(&self) -> Vec<&str> {
        self.checks
            .iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| c.id.as_str())
            .collect()
    }
}

/// Why a buffer procedure was skipped.
const BEYOND: &str =
    "the XOFF point lies beyond the shared pool, or beyond the bench's 1 000 000 frames";

/// The RoCE test frame of the buffer procedures: 1082 bytes (a 1 KiB payload), or the
/// largest a smaller MTU allows.
const FRAME_BYTES: usize = 1082;

fn check(
    id: impl Into<String>,
    title: impl Into<String>,
    expected: impl std::fmt::Display,
    measured: impl std::fmt::Display,
    pass: bool,
    basis: impl Into<String>,
) -> Check {
    Check {
        id: id.into(),
        title: title.into(),
        expected: expected.to_string(),
        measured: measured.to_string(),
        status: if pass { Status::Pass } else { Status::Fail },
        basis: basis.into(),
    }
}

fn skip(id: impl Into<String>, title: impl Into<String>, why: impl Into<String>) -> Check {
    Check {
        id: id.into(),
        title: title.into(),
        expected: "-".into(),
        measured: "-".into(),
        status: Status::Skip,
        basis: why.into(),
    }
}

/// Runs every procedure against `cfg` (called `name` in the report).
pub fn run(cfg: &SwitchConfig, name: &str) -> Report {
    let kinds = port_kinds(cfg);
    let first = &kinds[0];
    let len = roce_len_at_most(FRAME_BYTES.min(first.mtu as usize + 14));
    let mut checks = Vec::new();
    for pg in cfg.lossless.iter().map(usize::from) {
        let Some(&marking) = Marking::for_class(cfg, pg as u8).first() else {
            checks.push(skip(
                format!("pfc_xoff.pg{pg}"),
                format!("PFC XOFF, priority {pg}"),
                format!("no {} selects lossless class {pg}", code_name(cfg)),
            ));
            continue;
        };
        checks.extend(lossless_fill(cfg, pg, marking, first, len, true));
        checks.push(xon(cfg, pg, marking, first, len));
        for kind in &kinds[1..] {
            let len = roce_len_at_most(FRAME_BYTES.min(kind.mtu as usize + 14));
            checks.extend(lossless_fill(cfg, pg, marking, kind, len, false));
        }
        for kind in &kinds {
            checks.push(in_flight(cfg, pg, marking, kind));
        }
    }
    checks.extend(lossy_drop_points(cfg, first, len));
    checks.push(classification(cfg, first));
    checks.extend(dwrr_shares(cfg, first, len));
    checks.extend(watchdog(cfg, first, len));
    let count = |s| checks.iter().filter(|c| c.status == s).count();
    Report {
        schema: "rocelab.conformance/1",
        config: name.to_owned(),
        frame_bytes: len,
        passed: count(Status::Pass),
        failed: count(Status::Fail),
        skipped: count(Status::Skip),
        checks,
    }
}

/// One port of each distinct (rate, cable, MTU) among the configuration's ports, the port
/// defaults when it lists none.
fn port_kinds(cfg: &SwitchConfig) -> Vec<PortConfig> {
    let mut kinds: Vec<PortConfig> = Vec::new();
    for p in cfg
        .ports
        .iter()
        .chain(cfg.ports.is_empty().then_some(&cfg.port_defaults))
    {
        if !kinds
            .iter()
            .any(|k| (k.bits_per_sec, k.cable, k.mtu) == (p.bits_per_sec, p.cable, p.mtu))
        {
            kinds.push(p.clone());
        }
    }
    kinds
}

fn code_name(cfg: &SwitchConfig) -> &'static str {
    match cfg.trust {
        Trust::Dscp => "DSCP",
        Trust::Pcp => "PCP",
    }
}

/// A bench of `n` ports like `port`.
fn bench(cfg: &SwitchConfig, port: &PortConfig, n: usize) -> (SwitchConfig, Bench) {
    let cfg = with_ports(cfg, port, n);
    let b = Bench::new(&cfg);
    (cfg, b)
}

fn xoff_sent(b: &Bench, port: usize, pg: usize) -> bool {
    b.pfc_sent(port)
        .any(|(_, p)| p.priorities().contains(pg as u8) && p.quanta[pg] > 0)
}

/// sonic-mgmt's PFC XOFF and headroom procedures on lossless PG `pg`: the egress stopped,
/// frames one by one from port 0 until the first ingress drop. With `all`, also the
/// watermark checks; otherwise only the headroom of this port kind.
fn lossless_fill(
    cfg: &SwitchConfig,
    pg: usize,
    marking: Marking,
    port: &PortConfig,
    len: usize,
    all: bool,
) -> Vec<Check> {
    let l = len as u64;
    let queue = usize::from(cfg.tc_to_queue[pg]);
    let Some(fill) = expect::fill(cfg, pg, l) else {
        return vec![skip(
            format!("pfc_xoff.pg{pg}"),
            format!("PFC XOFF, priority {pg}"),
            BEYOND,
        )];
    };
    let (bcfg, mut b) = bench(cfg, port, 2);
    let headroom = bcfg.headroom_bytes(pg, &bcfg.ports[0]);
    let fit = fill.frames_that_fit(headroom, l);
    if fit > expect::MAX_FILL_FRAMES {
        return vec![skip(
            format!("headroom.pg{pg}.{}", port.name),
            format!("PG {pg} headroom"),
            BEYOND,
        )];
    }
    b.sw.set_tx_enabled(1, false);
    let (mut trigger, mut accepted) = (None, 0u64);
    for n in 1..=fit + 16 {
        b.rx(0, &roce(0, 1, marking, len, n as u32));
        // A trigger frame that does not fit the headroom still sends XOFF.
        if trigger.is_none() && xoff_sent(&b, 0, pg) {
            trigger = Some(n);
        }
        if b.sw.counters(0).classes[pg].dropped_ingress_overflow > 0 {
            break;
        }
        accepted = n;
    }
    let c = &b.sw.counters(0).classes[pg];
    let (shared_wm, headroom_wm) = (c.pg_shared_watermark_bytes, c.pg_headroom_watermark_bytes);
    let queue_wm = b.sw.counters(1).classes[queue].queue_watermark_bytes;
    let frame = |n: Option<u64>| n.map_or("no PFC".to_owned(), |n| format!("frame {n}"));
    let threshold = match cfg.pgs[pg].xoff {
        crate::config::XoffRule::Static { xoff_bytes, .. } => {
            format!("static XOFF threshold {xoff_bytes} B")
        }
        crate::config::XoffRule::Dynamic { alpha, .. } => format!(
            "dynamic threshold {alpha} x free pool of {} B",
            cfg.shared_bytes
        ),
    };
    let mut out = Vec::new();
    if all {
        out.push(check(
            format!("pfc_xoff.pg{pg}"),
            format!("PFC XOFF, priority {pg} ({marking}, egress stopped)"),
            frame(Some(fill.trigger_frames)),
            frame(trigger),
            trigger == Some(fill.trigger_frames),
            format!(
                "{len} B frames: reserve {} B, then shared to the {threshold}: {} B shared at the trigger",
                fill.reserve_bytes, fill.shared_bytes
            ),
        ));
    }
    out.push(check(
        format!("headroom.pg{pg}.{}", port.name),
        format!(
            "PG {pg} headroom on {} ({} Gb/s, {} m): frames held until ingress drop",
            port.name,
            port.bits_per_sec as f64 / 1e9,
            port.cable.0 / crate::config::CABLE_NS_PER_M
        ),
        format!("{fit} frames"),
        format!("{accepted} frames"),
        accepted == fit,
        format!(
            "XOFF at frame {}, then {headroom} B of headroom ({} B of it taken by the trigger frame)",
            fill.trigger_frames, fill.headroom_bytes
        ),
    ));
    if all {
        // When even the trigger frame's spill does not fit, the frame is dropped (after
        // its XOFF): nothing reaches the headroom, and the shared part stays as it was.
        let (expected_shared, expected_headroom) = match fit.checked_sub(fill.trigger_frames) {
            Some(more) => (fill.shared_bytes, more * l + fill.headroom_bytes),
            None => (fill.shared_before_bytes, 0),
        };
        out.push(check(
            format!("watermark.pg{pg}.shared"),
            format!("PG {pg} shared watermark"),
            format!("{expected_shared} B"),
            format!("{shared_wm} B"),
            shared_wm == expected_shared,
            "the shared bytes at the XOFF point; later frames go to headroom",
        ));
        out.push(check(
            format!("watermark.pg{pg}.headroom"),
            format!("PG {pg} headroom watermark"),
            format!("{expected_headroom} B"),
            format!("{headroom_wm} B"),
            headroom_wm == expected_headroom,
            format!("{fit} frames held, less the reserve and the shared part"),
        ));
        out.push(check(
            format!("watermark.queue{queue}"),
            format!("queue {queue} watermark"),
            format!("{} B", fit * l),
            format!("{queue_wm} B"),
            queue_wm == fit * l,
            format!("{fit} frames of {len} B queued behind the stopped egress"),
        ));
    }
    out
}

/// sonic-mgmt's XON procedure: fill to exactly the XOFF frame, open the egress, and see
/// which departure sends XON (time 0).
fn xon(cfg: &SwitchConfig, pg: usize, marking: Marking, port: &PortConfig, len: usize) -> Check {
    let l = len as u64;
    let id = format!("pfc_xon.pg{pg}");
    let title = format!("PFC XON, priority {pg}: departure that resumes");
    let Some(fill) = expect::fill(cfg, pg, l) else {
        return skip(id, title, BEYOND);
    };
    let expected = fill.xon_departure(cfg, pg, l, cfg.headroom_bytes(pg, port));
    let (_, mut b) = bench(cfg, port, 2);
    b.sw.set_tx_enabled(1, false);
    for n in 1..=fill.trigger_frames {
        b.rx(0, &roce(0, 1, marking, len, n as u32));
    }
    b.sw.set_tx_enabled(1, true);
    let drain = frame_time(len, b.rate(1)).0.max(1) * (fill.trigger_frames + 2);
    b.run_until(b.now + Nanos(drain + 1_000_000));
    let xon_at = b
        .pfc_sent(0)
        .find(|(_, p)| p.priorities().contains(pg as u8) && p.quanta[pg] == 0)
        .map(|(t, _)| t);
    let measured = xon_at.map(|t| b.data_sent(1).filter(|s| s.time <= t).count() as u64);
    check(
        id,
        title,
        format!("departure {expected}"),
        measured.map_or("no XON".to_owned(), |k| format!("departure {k}")),
        measured == Some(expected),
        format!(
            "filled to the XOFF frame ({}); departures empty headroom, then shared, to the XON threshold",
            fill.trigger_frames
        ),
    )
}

/// The headroom against a peer that obeys XOFF as late as the standards allow, in the
/// worst alignment of the delay model the headroom formula counts (docs/qos.md,
/// Headroom: IEEE 802.1Qbb annex N, IEEE 802.3 annex 31B.3.7). The peer sends MTU-sized
/// frames back to back, and the one that reaches the XOFF point is cut to end at it (the
/// switch decides once a frame is in, and what a longer one put above the threshold
/// would sit in headroom before the decision). Another port keeps the paused port's
/// transmitter busy with lossy MTU-sized frames, one starting 1 ns before the XOFF, so the
/// pause waits behind a whole frame. The pause crosses the cable, the peer takes its
/// response time, and its stream is aligned (one or two shorter frames, planned once the
/// pause is on the wire) so that its last frame starts 1 ns before the response ends: it
/// finishes that frame, a whole MTU more. The frames then fill the window, and what they
/// use falls short of the formula only by what the formula counts as buffer but is not:
/// the 24 bytes of FCS, preamble and gap of every frame in flight, less the 14-byte
/// Ethernet header of the two MTU frames it counts as MTU bytes; plus under 1 ns and a
/// 4-byte payload step per planned frame. At 100 Gb/s, 5 m, MTU 9216: 44 254 B of 44 345.
fn in_flight(cfg: &SwitchConfig, pg: usize, marking: Marking, port: &PortConfig) -> Check {
    let id = format!("headroom_in_flight.pg{pg}.{}", port.name);
    let title = format!(
        "PG {pg} on {}: no drop with a peer that stops as late as allowed",
        port.name
    );
    let big = roce_len_at_most(port.mtu as usize + 14);
    let lossy = (0..CLASSES as u8)
        .filter(|&tc| !cfg.lossless.contains(tc))
        .find_map(|tc| Marking::for_class(cfg, tc).first().copied());
    let headroom = cfg.headroom_bytes(pg, port);
    let Some(fill) = expect::fill(cfg, pg, big as u64) else {
        return skip(id, title, BEYOND);
    };
    let (trigger, spill) = fill.exact_trigger(cfg, pg, big as u64);
    let (drops, used) = late_peer(cfg, pg, marking, lossy, port, big, &fill);
    check(
        id,
        title,
        "0 drops".to_owned(),
        format!("{drops} drops, {used} of {headroom} B headroom used"),
        drops == 0,
        format!(
            "{big} B frames; frame {} ({trigger} B) reaches the XOFF point{}; the pause waits behind {}; the peer answers in {} quanta over {} ns of cable and its last frame starts as the response ends",
            fill.trigger_frames,
            if spill > 0 {
                format!(" ({spill} B of it in headroom)")
            } else {
                String::new()
            },
            if lossy.is_some() {
                "a whole frame"
            } else {
                "nothing (no lossy class keeps the port busy)"
            },
            crate::config::peer_response_quanta(port.bits_per_sec),
            port.cable.0
        ),
    )
}

/// Nanoseconds a frame of `len` bytes takes on the wire, with its preamble and gap, at
/// `rate`: the time from its first bit to the next frame's first bit. Rounded up.
fn slot_of(len: usize, rate: u64) -> u64 {
    (u128::from(wire_bits(len)) * 1_000_000_000).div_ceil(u128::from(rate)) as u64
}

/// The longest RoCE test frame whose slot is at most `ns` at `rate`, or `None` when even
/// the shortest is longer.
fn frame_in(ns: u64, rate: u64) -> Option<usize> {
    let wire_bytes = (u128::from(ns) * u128::from(rate) / 8_000_000_000) as u64;
    let len = roce_len_at_most(wire_bytes.checked_sub(crate::link::WIRE_OVERHEAD_BYTES)? as usize);
    (slot_of(len, rate) <= ns && len >= 60).then_some(len)
}

/// The peer's frames from a start `gap` ns before its last one, `big` bytes each but for
/// one or two shorter ones first: lengths whose slots add up to `gap` as nearly as the
/// frames allow (the last frame itself not included).
fn aligned_frames(gap: u64, big: usize, rate: u64) -> Vec<usize> {
    let slot = slot_of(big, rate);
    let (whole, rest) = (gap / slot, gap % slot);
    let mut out = Vec::new();
    if rest > 0 {
        match frame_in(rest, rate) {
            Some(len) => out.push(len),
            // Shorter than the shortest frame: one big frame fewer, and the rest (over a
            // slot) in two frames.
            None if whole > 0 => {
                let rest = rest + slot;
                out.extend(frame_in(rest / 2, rate));
                out.extend(frame_in(rest - rest / 2, rate));
                out.extend(std::iter::repeat_n(big, whole as usize - 1));
                return out;
            }
            None => {}
        }
    }
    out.extend(std::iter::repeat_n(big, whole as usize));
    out
}

/// One run of [`in_flight`]: ingress drops of `pg` and its peak headroom use.
fn late_peer(
    cfg: &SwitchConfig,
    pg: usize,
    marking: Marking,
    lossy: Option<Marking>,
    port: &PortConfig,
    len: usize,
    fill: &expect::Fill,
) -> (u64, u64) {
    let trigger = fill.exact_trigger(cfg, pg, len as u64).0 as usize;
    let (_, mut b) = bench(cfg, port, 3);
    b.sw.set_tx_enabled(1, false);
    let rate = port.bits_per_sec;
    let slot = Nanos(slot_of(len, rate));
    let arrive = |len: usize| frame_time(len, rate).0 + port.cable.0;
    let response = Nanos(
        (u128::from(crate::config::peer_response_quanta(rate) * 512) * 1_000_000_000)
            .div_ceil(u128::from(rate)) as u64,
    );
    let start = b.now;
    let mut stop_at: Option<Nanos> = None;
    // Frames sent already looked at for the XOFF.
    let mut seen = 0;
    // The peer's next frame: when it starts, how long it is; the lengths after it.
    let (mut peer_start, mut peer_len) = (start, len);
    let mut planned: std::collections::VecDeque<usize> = Default::default();
    if fill.trigger_frames == 1 {
        peer_len = trigger;
    } else {
        planned.extend(std::iter::repeat_n(len, fill.trigger_frames as usize - 2));
        planned.push_back(trigger);
    }
    let (mut i, mut j) = (0u64, 0u64);
    // The busy stream's frames start transmitting 1 ns before the trigger frame has
    // arrived, so the XOFF waits behind a whole busy frame.
    let busy_offset = (frame_time(trigger, rate).0 + slot.0 - 1 - frame_time(len, rate).0) % slot.0;
    let headroom = cfg.headroom_bytes(pg, port);
    // Enough frames to reach XOFF and then some; the peer stops well before.
    let most = (cfg.pgs[pg].reserve_bytes + cfg.shared_bytes + headroom) / len as u64 + 64;
    loop {
        let peer_sends = stop_at.is_none_or(|s| peer_start < s) && i < most;
        let t_peer = Nanos(peer_start.0 + arrive(peer_len));
        let t_busy = Nanos(start.0 + busy_offset + j * slot.0 + arrive(len));
        if !peer_sends && stop_at.is_none_or(|s| t_busy > s + Nanos(arrive(len) * 4)) {
            break;
        }
        if peer_sends && (t_peer <= t_busy || lossy.is_none()) {
            b.run_until(t_peer);
            b.rx(0, &roce(0, 1, marking, peer_len, i as u32));
            i += 1;
            peer_start += Nanos(slot_of(peer_len, rate));
            peer_len = planned.pop_front().unwrap_or(len);
        } else if let Some(lossy) = lossy {
            b.run_until(t_busy);
            b.rx(2, &roce(2, 0, lossy, len, j as u32));
            j += 1;
        } else {
            break;
        }
        let xoff = b
            .pfc_sent_from(0, seen)
            .find(|(_, p)| p.priorities().contains(pg as u8) && p.quanta[pg] > 0);
        seen = b.sent_count();
        if stop_at.is_none()
            && let Some((t, _)) = xoff
        {
            // The response runs from the pause's reception, whole, over the cable (802.3
            // annex 31B.3.7; the formula's PFC frame term, docs/qos.md).
            let heard = t + port.cable + crate::link::frame_time(60, rate);
            let stop = heard + response;
            stop_at = Some(stop);
            // Frames that started already are on the wire; from the first that has not,
            // the stream is planned so that a frame starts 1 ns before the stop.
            let started = peer_start < b.now;
            let first = if started {
                peer_start + Nanos(slot_of(peer_len, rate))
            } else {
                peer_start
            };
            let mut plan: std::collections::VecDeque<usize> =
                match (stop.0 - 1).checked_sub(first.0) {
                    Some(gap) => aligned_frames(gap, len, rate)
                        .into_iter()
                        .chain([len])
                        .collect(),
                    None => Default::default(),
                };
            if !started && let Some(next) = plan.pop_front() {
                peer_len = next;
            }
            planned = plan;
        }
        if !peer_sends && lossy.is_none() {
            break;
        }
    }
    let c = &b.sw.counters(0).classes[pg];
    (c.dropped_ingress_overflow, c.pg_headroom_watermark_bytes)
}

/// sonic-mgmt's lossy-queue procedure: for every queue a lossy class reaches, frames from
/// one port to a stopped egress until the first drop.
fn lossy_drop_points(cfg: &SwitchConfig, port: &PortConfig, len: usize) -> Vec<Check> {
    let l = len as u64;
    let mut out = Vec::new();
    let mut seen = 0u8;
    for tc in (0..CLASSES as u8).filter(|&tc| !cfg.lossless.contains(tc)) {
        let queue = usize::from(cfg.tc_to_queue[usize::from(tc)]);
        let Some(&marking) = Marking::for_class(cfg, tc).first() else {
            continue;
        };
        if seen & (1 << queue) != 0 {
            continue;
        }
        seen |= 1 << queue;
        let id = format!("lossy_drop.queue{queue}");
        let title = format!("lossy queue {queue} (class {tc}, {marking}): frames until drop");
        let Some(expected) = expect::lossy_frames_that_fit(cfg, usize::from(tc), l) else {
            out.push(skip(
                id,
                title,
                "the drop point lies beyond the bench's 1 000 000 frames",
            ));
            continue;
        };
        let (_, mut b) = bench(cfg, port, 2);
        b.sw.set_tx_enabled(1, false);
        let mut accepted = 0;
        for n in 1..=expected + 16 {
            b.rx(0, &roce(0, 1, marking, len, n as u32));
            if b.sw.counters(1).classes[queue].dropped()
                + b.sw.counters(0).classes[usize::from(tc)].dropped_ingress_overflow
                > 0
            {
                break;
            }
            accepted = n;
        }
        let limit = match cfg.queue_limit {
            crate::config::QueueLimit::Static(bytes) => format!("static limit {bytes} B"),
            crate::config::QueueLimit::Dynamic(alpha) => {
                format!("{alpha} x free pool of {} B", cfg.shared_bytes)
            }
        };
        out.push(check(
            id,
            title,
            format!("{expected} frames"),
            format!("{accepted} frames"),
            accepted == expected,
            format!(
                "queue reserve {} B + {limit}; ECT frames, so WRED marks and does not drop",
                cfg.queue_reserve_bytes
            ),
        ));
    }
    out
}

/// Every DSCP (or PCP) to the queue its class maps to: one frame each, seen leaving from
/// the expected queue's counters.
fn classification(cfg: &SwitchConfig, port: &PortConfig) -> Check {
    let (_, mut b) = bench(cfg, port, 2);
    let codes: Vec<Marking> = match cfg.trust {
        Trust::Dscp => (0..64).map(Marking::Dscp).collect(),
        Trust::Pcp => (0..8).map(Marking::Pcp).collect(),
    };
    let len = roce_len_at_most(128);
    // Where each frame went: sent from, or dropped in, a queue of port 1; or dropped at
    // port 0's ingress. Read until one of them moves, as long as a slow port takes.
    let seen = |b: &Bench| {
        let out = &b.sw.counters(1).classes;
        let sent: Vec<u64> = out.iter().map(|c| c.tx_frames).collect();
        let dropped: Vec<u64> = out.iter().map(|c| c.dropped_at_queue()).collect();
        let ingress: u64 =
            b.sw.counters(0)
                .classes
                .iter()
                .map(|c| c.dropped_ingress_overflow)
                .sum();
        (sent, dropped, ingress)
    };
    let mut wrong = Vec::new();
    let mut seen_by_drop = 0;
    for (n, &m) in codes.iter().enumerate() {
        let expected = usize::from(cfg.tc_to_queue[usize::from(m.class(cfg))]);
        let before = seen(&b);
        b.rx(0, &roce(0, 1, m, len, n as u32));
        let give_up = b.now + Nanos::from_millis(100);
        let mut after = seen(&b);
        while after == before && b.now < give_up {
            b.run_until(b.now + Nanos::from_micros(100));
            after = seen(&b);
        }
        let moved = |was: &[u64], is: &[u64]| -> Vec<usize> {
            (0..CLASSES).filter(|&q| is[q] > was[q]).collect()
        };
        let went = moved(&before.0, &after.0);
        let dropped = moved(&before.1, &after.1);
        if went == [expected] {
            continue;
        }
        if went.is_empty() && dropped == [expected] {
            // Its queue's drop counter shows it reached the right queue.
            seen_by_drop += 1;
            continue;
        }
        wrong.push(if !dropped.is_empty() {
            format!("{m} -> dropped in {dropped:?} (expected {expected})")
        } else if after.2 > before.2 {
            format!("{m} dropped at ingress: the buffer cannot take one {len}-byte frame")
        } else {
            format!("{m} -> {went:?} (expected {expected})")
        });
    }
    let n = codes.len();
    let by_drop = match seen_by_drop {
        0 => String::new(),
        k => format!(
            " ({k} seen by their queue's drop counter: it cannot hold one {len}-byte frame)"
        ),
    };
    check(
        "classification",
        format!("{} -> traffic class -> queue, all {n}", code_name(cfg)),
        format!("{n} of {n} to their queue"),
        if wrong.is_empty() {
            format!("{n} of {n}{by_drop}")
        } else {
            format!("{} of {n}{by_drop}; {}", n - wrong.len(), wrong.join(", "))
        },
        wrong.is_empty(),
        "classify.dscp_to_tc (or pcp_to_tc), then classify.tc_to_queue",
    )
}

/// sonic-mgmt's DWRR procedure: every DWRR queue that a code point reaches kept
/// backlogged on one egress port (a frame replaces each one sent), and the bytes each
/// sends over 50 rounds compared with its weight's share, within 1 percentage point.
fn dwrr_shares(cfg: &SwitchConfig, port: &PortConfig, len: usize) -> Vec<Check> {
    let mut queues: Vec<(usize, u32, Marking)> = Vec::new();
    for q in 0..CLASSES {
        let Schedule::Dwrr(w) = cfg.queues[q].schedule else {
            continue;
        };
        let marking = (0..CLASSES as u8)
            .filter(|&tc| usize::from(cfg.tc_to_queue[usize::from(tc)]) == q)
            .find_map(|tc| Marking::for_class(cfg, tc).first().copied());
        if let Some(m) = marking {
            queues.push((q, w, m));
        }
    }
    if queues.len() < 2 {
        return vec![skip(
            "dwrr",
            "DWRR shares",
            "fewer than two DWRR queues carry traffic",
        )];
    }
    let (bcfg, mut b) = bench(cfg, port, 2);
    let total_weight: u64 = queues.iter().map(|&(_, w, _)| u64::from(w)).sum();
    let quantum = u64::from(bcfg.ports.iter().map(|p| p.mtu).max().unwrap_or(port.mtu)) + 64;
    let round = total_weight * quantum;
    let tag = |i: usize, n: u32| ((i as u32) << 20) | (n & 0xf_ffff);
    let mut seq = 0u32;
    for (i, &(_, _, m)) in queues.iter().enumerate() {
        // Four each: a queue must never be empty when its turn comes (DRR drops the
        // turn of a queue that empties), and the replacement arrives after a departure.
        for _ in 0..4 {
            seq += 1;
            b.rx(0, &roce(0, 1, m, len, tag(i, seq)));
        }
    }
    let mut sent_bytes = vec![0u64; queues.len()];
    let (warm, window) = (round, 50 * round);
    let mut total = 0u64;
    let mut seen = b.sent.len();
    while total < warm + window {
        let Some(next) = b.sw.poll_timeout() else {
            break;
        };
        b.run_until(next.max(b.now));
        let new: Vec<(usize, usize)> = b.sent[seen..]
            .iter()
            .filter(|s| s.port == 1 && s.pfc.is_none())
            .filter_map(|s| s.psn.map(|p| ((p >> 20) as usize, s.len)))
            .collect();
        seen = b.sent.len();
        for (i, bytes) in new {
            if i >= queues.len() {
                continue;
            }
            if total >= warm {
                sent_bytes[i] += bytes as u64;
            }
            total += bytes as u64;
            seq += 1;
            b.rx(0, &roce(0, 1, queues[i].2, len, tag(i, seq)));
        }
        if b.sent.len() > 1_000_000 {
            b.sent.clear();
            seen = 0;
        }
    }
    // A queue that dropped test frames was not kept backlogged (each frame is replaced
    // only when one is sent): its buffer cannot hold the four, so no share is its
    // weight's.
    let starved: Vec<String> = queues
        .iter()
        .filter_map(|&(q, _, m)| {
            let at_queue = b.sw.counters(1).classes[q].dropped_at_queue();
            let at_ingress =
                b.sw.counters(0).classes[usize::from(m.class(cfg))].dropped_ingress_overflow;
            (at_queue + at_ingress > 0)
                .then(|| format!("queue {q} dropped {} test frames", at_queue + at_ingress))
        })
        .collect();
    if !starved.is_empty() {
        return vec![skip(
            "dwrr",
            "DWRR shares",
            format!(
                "{}: its buffer cannot keep four {len}-byte frames queued, so the queues are not backlogged",
                starved.join(", ")
            ),
        )];
    }
    let measured_total: u64 = sent_bytes.iter().sum();
    queues
        .iter()
        .enumerate()
        .map(|(i, &(q, w, m))| {
            let expected = f64::from(w) / total_weight as f64;
            let measured = sent_bytes[i] as f64 / measured_total.max(1) as f64;
            check(
                format!("dwrr.queue{q}"),
                format!("DWRR share of queue {q} (weight {w}, {m})"),
                format!("{:.2} %", expected * 100.0),
                format!("{:.2} %", measured * 100.0),
                (measured - expected).abs() <= 0.01,
                format!(
                    "weight {w} of {total_weight} over the backlogged DWRR queues; within 1 point over 50 rounds"
                ),
            )
        })
        .collect()
}

/// The most pause frames the watchdog procedure sends to hold its storm: at 1600 Gb/s an
/// XOFF lasts 21 µs, and a storm held for a one-hour detection time took 170 million
/// refreshes, 5.4 GB and a minute.
const MAX_STORM_PAUSES: u64 = 100_000;

/// The pause refresh of the watchdog procedure at `bits_per_sec`: half an XOFF of 65535
/// quanta, as a switch refreshes it.
fn storm_refresh(bits_per_sec: u64) -> Nanos {
    Nanos((crate::wire::pfc::pause_duration(0xffff, bits_per_sec).0 / 2).max(1))
}

/// The port the watchdog procedure runs on: `port`, or, when holding the storm there
/// takes more than [`MAX_STORM_PAUSES`] refreshes, the same port slowed until it takes no
/// more, with the sentence that says so. The watchdog's timing does not depend on the
/// port's rate: a poll sees a queue paused, holding frames and without progress, and
/// the pause frames' arrivals; a slower port only needs fewer of them to keep the queue
/// paused.
fn storm_port(port: &PortConfig, span: Nanos) -> (PortConfig, Option<String>) {
    let pauses = |rate: u64| span.0 / storm_refresh(rate).0 + 1;
    let needed = pauses(port.bits_per_sec);
    if needed <= MAX_STORM_PAUSES {
        return (port.clone(), None);
    }
    // An XOFF lasts 65535 × 512 bits: the rate at which MAX_STORM_PAUSES - 1 refreshes
    // span the storm, then lower while rounding leaves one too many.
    let bits = 65_535u128 * 512 * 1_000_000_000 * u128::from(MAX_STORM_PAUSES - 1);
    let mut rate = u64::try_from(bits / (2 * u128::from(span.0.max(1))))
        .unwrap_or(u64::MAX)
        .clamp(1, port.bits_per_sec);
    while rate > 1 && pauses(rate) > MAX_STORM_PAUSES {
        rate -= rate / 1000 + 1;
    }
    let slow = PortConfig {
        bits_per_sec: rate,
        ..port.clone()
    };
    let why = format!(
        "; run on a bench port at {:.3} Gb/s: holding the storm at {} Gb/s takes {needed} \
         pause frames (one per {:.3} µs), more than the bench's {MAX_STORM_PAUSES}, and the \
         watchdog's timing does not depend on the port's rate",
        rate as f64 / 1e9,
        port.bits_per_sec as f64 / 1e9,
        storm_refresh(port.bits_per_sec).0 as f64 / 1e3,
    );
    (slow, Some(why))
}

/// sonic-mgmt's PFC watchdog timing: a queue holding frames while its peer sends XOFF
/// without end is detected within [stuck + detection, + poll]; after the last pause it is
/// restored within [last pause + restoration, + poll].
fn watchdog(cfg: &SwitchConfig, port: &PortConfig, len: usize) -> Vec<Check> {
    let wd = cfg.watchdog;
    if !wd.enabled {
        return vec![skip(
            "watchdog",
            "PFC watchdog",
            "watchdog.enabled is false",
        )];
    }
    let Some((pg, marking)) = cfg.lossless.iter().find_map(|p| {
        Marking::for_class(cfg, p)
            .first()
            .map(|&m| (usize::from(p), m))
    }) else {
        return vec![skip(
            "watchdog",
            "PFC watchdog",
            "no code point selects a lossless class",
        )];
    };
    let queue = usize::from(cfg.tc_to_queue[pg]);
    let (port, slowed) = storm_port(port, wd.detection + wd.poll + wd.poll);
    let slowed = slowed.unwrap_or_default();
    let (_, mut b) = bench(cfg, &port, 2);
    let refresh = storm_refresh(port.bits_per_sec).0;
    let storm_start = Nanos(b.now.0 + wd.poll.0 / 3 + 7_000);
    let storm_end = storm_start + wd.detection + wd.poll + wd.poll;
    let stuck = storm_start + Nanos::from_micros(1);
    let frame_every = (wd.detection.0 / 64).max(1_000);
    // Pauses from port 1's peer (true) and frames from port 0 (false), in time order,
    // pauses first at the same instant.
    let mut events: Vec<(Nanos, bool)> = Vec::new();
    let mut t = storm_start;
    while t <= storm_end {
        events.push((t, true));
        t += Nanos(refresh);
    }
    let last_pause = events.last().map_or(storm_start, |e| e.0);
    let mut t = stuck;
    while t < storm_end {
        events.push((t, false));
        t += Nanos(frame_every);
    }
    events.sort_by_key(|&(t, pause)| (t, !pause));
    for (psn, (t, pause)) in events.into_iter().enumerate() {
        b.run_until(t);
        if pause {
            b.rx(1, &pfc(1, pg as u8, 0xffff));
        } else {
            b.rx(0, &roce(0, 1, marking, len, psn as u32));
        }
    }
    let detect_from = stuck + wd.detection;
    // A stormed queue is restored at a poll with no pause for the restoration time, and
    // at the earliest at the poll after the one that detected the storm: when the port is
    // so slow that one pause outlasts the storm (65535 quanta at 10 Mb/s is 3.4 s), the
    // last pause is at its start and restoration alone would fall before detection.
    let restore_from = (last_pause + wd.restoration).max(detect_from + wd.poll);
    let end = restore_from + wd.poll + wd.poll;
    b.run_until(end);
    let storm =
        b.sw.storms()
            .iter()
            .find(|s| s.port == 1 && s.queue == queue)
            .copied();
    let ms = |t: Nanos| format!("{:.3} ms", t.0 as f64 / 1e6);
    let window = |from: Nanos| {
        format!(
            "{} to {}",
            ms(from.saturating_sub(storm_start)),
            ms((from + wd.poll).saturating_sub(storm_start))
        )
    };
    let in_window = |t: Nanos, from: Nanos| t >= from && t <= from + wd.poll;
    let after =
        |t: Option<Nanos>| t.map_or("never".to_owned(), |t| ms(t.saturating_sub(storm_start)));
    vec![
        check(
            format!("watchdog.detect.queue{queue}"),
            format!("PFC watchdog detects the storm on queue {queue} (after storm start)"),
            window(detect_from),
            after(storm.map(|s| s.detected)),
            storm.is_some_and(|s| in_window(s.detected, detect_from)),
            format!(
                "stuck at {} + detection {} ms, within one poll of {} ms{slowed}",
                ms(stuck.saturating_sub(storm_start)),
                wd.detection.0 / 1_000_000,
                wd.poll.0 / 1_000_000
            ),
        ),
        check(
            format!("watchdog.restore.queue{queue}"),
            format!("PFC watchdog restores queue {queue} (after storm start)"),
            window(restore_from),
            after(storm.and_then(|s| s.restored)),
            storm
                .and_then(|s| s.restored)
                .is_some_and(|t| in_window(t, restore_from)),
            if restore_from == last_pause + wd.restoration {
                format!(
                    "last pause at {} + restoration {} ms, within one poll{slowed}",
                    ms(last_pause.saturating_sub(storm_start)),
                    wd.restoration.0 / 1_000_000
                )
            } else {
                format!(
                    "the poll after detection: last pause at {} + restoration {} ms is \
                     before it{slowed}",
                    ms(last_pause.saturating_sub(storm_start)),
                    wd.restoration.0 / 1_000_000
                )
            },
        ),
    ]
}
