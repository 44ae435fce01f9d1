//! The switch core fed from a capture, on a virtual clock, with no socket and no thread:
//! what `rocelab replay` does, in the shape of a driver you would write yourself.
//!
//! Each MAC address in the capture gets a 25 Gb/s switch port of its own (in the order
//! the capture names them). Each frame enters on its source's port at its capture time,
//! counted from the first frame; between frames the loop runs the switch's timers when
//! they fall due and takes every frame it sends. At the end it prints, per port and
//! priority, what the switch forwarded, marked CE and paused, and per port what left it
//! on the wire. DSCP 26 is priority 3, lossless: a priority group sends XOFF at a quarter
//! of the free shared buffer (400 KB) and has 64 KiB of headroom, and RED-ECN marks every
//! frame that meets 20 KB of queue. A capture is a recording: its senders do not hear the
//! pauses, and what they send past the headroom is dropped (`rocelab replay` puts link
//! peers behind its ports that hold their frames while paused).
//!
//! Without a capture it writes one first, in a temporary file: an incast, hosts 1 and 2
//! each sending 200 RoCEv2 WRITEs of 1 KiB back to back at 25 Gb/s to host 3.
//!
//! ```text
//! cargo run --release --example replay_core [CAPTURE]
//! ```

use anyhow::Context as _;
use rocelab::capture::{CaptureReader, PcapWriter};
use rocelab::config::SwitchConfig;
use rocelab::switch::Switch;
use rocelab::time::Nanos;
use rocelab::wire::bth::{BthRepr, Opcode};
use rocelab::wire::{Ecn, ExtHeaders, IpRepr, Ipv4Repr, MacAddr, RoceRepr};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// The ports' line rate, as `SWITCH` gives it.
const GBPS: u64 = 25;
const INCAST_FRAMES: u64 = 200;
/// The switch, but for its ports: one per MAC address, added by `replay`.
const SWITCH: &str = r#"
[port_defaults]
speed_gbps = 25
[classify]
dscp_to_tc = [[26, 3]]
[pfc]
lossless = [3]
[buffer]
shared_bytes = 400000
pg_alpha = 0.25
[pg.3]
headroom_bytes = 65536
[queue.3]
ecn = { kmin_bytes = 20000, kmax_bytes = 20000, pmax = 1.0 }
"#;
/// After the last frame, the timers (PFC refresh, XON) run this much longer at most.
const TAIL: Nanos = Nanos::from_millis(10);

/// What left one port on the wire.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Wire {
    frames: u64,
    ce_marked: u64,
    pfc_frames: u64,
    /// When the last frame's first bit left.
    last: Nanos,
}

fn main() -> anyhow::Result<()> {
    let (path, _keep) = match std::env::args_os().nth(1) {
        Some(p) => (PathBuf::from(p), None),
        None => {
            let tmp = tempfile::NamedTempFile::new()?;
            write_incast(tmp.as_file(), INCAST_FRAMES)?;
            (tmp.path().to_owned(), Some(tmp))
        }
    };
    let (switch, wire, end) = replay(&path)?;
    println!(
        "{}: {} ports, {} of virtual time",
        path.display(),
        wire.len(),
        end.human()
    );
    for (port, w) in wire.iter().enumerate() {
        let c = switch.counters(port);
        for (prio, k) in c.classes.iter().enumerate() {
            if k.rx_frames + k.tx_frames + k.rx_pause_frames + k.tx_pause_frames == 0 {
                continue;
            }
            println!(
                "  port {} priority {prio}: {} in, {} forwarded, {} CE-marked, {} dropped; \
                 PFC {} in, {} out ({} XON); paused {}, XOFF held {}",
                c.name,
                k.rx_frames,
                k.tx_frames,
                k.ecn_marked,
                k.dropped(),
                k.rx_pause_frames,
                k.tx_pause_frames,
                k.tx_xon_frames,
                switch.paused_time(port, prio, end).human(),
                switch.xoff_time(port, prio, end).human(),
            );
        }
        println!(
            "  port {} on the wire: {} frames, {} with CE, {} PFC, the last at {}",
            c.name,
            w.frames,
            w.ce_marked,
            w.pfc_frames,
            w.last.human()
        );
    }
    Ok(())
}

/// Feeds every frame of the capture at `path` into a switch with a port per MAC address;
/// returns the switch, what left each port, and the virtual time at the end.
fn replay(path: &Path) -> anyhow::Result<(Switch, Vec<Wire>, Nanos)> {
    let macs = macs_in(path)?;
    let ports: String = (0..macs.len())
        .map(|i| format!("[[ports]]\nname = \"p{i}\"\n"))
        .collect();
    let cfg = SwitchConfig::from_toml(&format!("{SWITCH}{ports}"))?;
    let mut switch = Switch::new(&cfg);
    for (port, mac) in macs.iter().enumerate() {
        switch.add_route(*mac, &[port]);
    }
    let mut wire = vec![Wire::default(); macs.len()];
    let mut drain = |switch: &mut Switch, now: Nanos| {
        while let Some(tx) = switch.poll_transmit(now) {
            let w = &mut wire[tx.port];
            w.frames += 1;
            w.last = tx.time;
            match rocelab::wire::parse(tx.frame) {
                Ok(meta) if meta.is_mac_control() => w.pfc_frames += 1,
                Ok(meta) if meta.is_ip() && meta.ecn() == Ecn::Ce => w.ce_marked += 1,
                _ => {}
            }
        }
    };
    // Runs the timers due by `until`, each at its own time, as the core's contract asks;
    // returns the time of the last.
    let mut run_until = |switch: &mut Switch, mut now: Nanos, until: Nanos| {
        while let Some(due) = switch.poll_timeout().filter(|&due| due <= until) {
            now = due.max(now);
            switch.handle_timeout(now);
            drain(switch, now);
        }
        now
    };
    let mut reader = CaptureReader::open(path).with_context(|| path.display().to_string())?;
    let (mut now, mut first) = (Nanos::ZERO, None);
    while let Some(p) = reader.next_packet()? {
        let ts =
            p.ts.ok_or_else(|| anyhow::anyhow!("frame {} has no timestamp", p.number))?;
        // A capture's clock may step back; the core's never does.
        let at = ts.saturating_sub(*first.get_or_insert(ts)).max(now);
        run_until(&mut switch, now, at);
        now = at;
        if let Some(port) = source(p.data).and_then(|src| macs.iter().position(|&m| m == src)) {
            switch.handle_frame(now, port, p.data);
        }
        run_until(&mut switch, now, now);
    }
    let now = run_until(&mut switch, now, now + TAIL);
    Ok((switch, wire, now))
}

/// The frame's source MAC, if it is long enough to have one.
fn source(frame: &[u8]) -> Option<MacAddr> {
    Some(MacAddr(frame.get(6..12)?.try_into().ok()?))
}

/// The unicast MAC addresses of the capture, destinations and sources, in first-seen order.
fn macs_in(path: &Path) -> anyhow::Result<Vec<MacAddr>> {
    let mut macs = Vec::new();
    let mut reader = CaptureReader::open(path).with_context(|| path.display().to_string())?;
    while let Some(p) = reader
        .next_packet()
        .with_context(|| path.display().to_string())?
    {
        for mac in [p.data.get(..6), p.data.get(6..12)].into_iter().flatten() {
            let mac = MacAddr(mac.try_into()?);
            // The group bit: broadcast and multicast (PFC's 01:80:c2:00:00:01) get no port.
            if mac.0[0] & 1 == 0 && !macs.contains(&mac) {
                macs.push(mac);
            }
        }
    }
    anyhow::ensure!(!macs.is_empty(), "{}: no unicast frame", path.display());
    Ok(macs)
}

/// An incast: hosts 1 and 2 each send `frames` 1 KiB RDMA WRITEs to host 3 back to back at
/// `GBPS`, written as a pcap.
fn write_incast(file: &std::fs::File, frames: u64) -> anyhow::Result<()> {
    let mut out = PcapWriter::new(std::io::BufWriter::new(file))?;
    let (mac, ip) = (
        |i| MacAddr([2, 0, 0, 0, 0, i]),
        |i| Ipv4Addr::new(198, 18, 0, i),
    );
    let payload = [0x5a; 1024];
    for psn in 0..frames {
        for host in [1, 2] {
            let repr = RoceRepr {
                eth_dst: mac(3),
                eth_src: mac(host),
                vlan: None,
                ip: IpRepr::V4(Ipv4Repr {
                    src: ip(host),
                    dst: ip(3),
                    dscp: 26,
                    ecn: Ecn::Ect0,
                    ident: 0,
                    dont_frag: true,
                    ttl: 64,
                }),
                udp_src_port: 0xc000 + u16::from(host),
                bth: BthRepr {
                    opcode: Opcode::RC_WRITE_MIDDLE,
                    pkey: 0xffff,
                    dest_qp: 0x100 + u32::from(host),
                    psn: psn as u32,
                    ..BthRepr::default()
                },
                ext: ExtHeaders::default(),
                payload: &payload,
            };
            let mut frame = vec![0; repr.frame_len()];
            repr.emit(&mut frame)?;
            let gap = rocelab::link::frame_time(frame.len(), GBPS * 1_000_000_000);
            out.write_packet(Nanos(psn * gap.0), &frame)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The incast through the switch, against what a FIFO at line rate gives on paper: host
    /// 3's port sends all 400 frames back to back (frame k leaves at k frame times), and a
    /// frame is marked when the frames still in the switch ahead of it (arrived, last bit
    /// not yet out) hold 20,000 bytes or more. The senders' ports send PFC and no data.
    #[test]
    fn the_incast_is_forwarded_marked_and_paused_as_on_paper() {
        let file = tempfile::NamedTempFile::new().unwrap();
        write_incast(file.as_file(), INCAST_FRAMES).unwrap();
        let (switch, wire, _) = replay(file.path()).unwrap();
        // Ports in first-seen order: host 3 (the first frame's destination), then 1 and 2.
        assert_eq!(wire.len(), 3);
        let frames = 2 * INCAST_FRAMES;
        // 14 + 20 + 8 + 12 (BTH) + 1024 + 4 (ICRC) bytes; on the wire 4 (FCS) + 8 + 12 more.
        let (len, wire_bits) = (1082u64, 1106u64 * 8);
        let gap = wire_bits.div_ceil(GBPS); // the capture's spacing, rounded up
        let marked = (0..frames)
            .filter(|&j| {
                let arrives = j / 2 * gap;
                let left = arrives * GBPS / wire_bits; // frames whose last bit is out
                (j - left) * len >= 20_000
            })
            .count() as u64;
        assert_eq!(wire[0].frames, frames);
        assert_eq!(wire[0].ce_marked, marked);
        assert_eq!(
            wire[0].last,
            Nanos(((frames - 1) * wire_bits).div_ceil(GBPS))
        );
        let receiver = &switch.counters(0).classes[3];
        assert_eq!((receiver.tx_frames, receiver.ecn_marked), (frames, marked));
        for port in [1, 2] {
            let sender = &switch.counters(port).classes[3];
            assert_eq!((sender.rx_frames, sender.dropped()), (INCAST_FRAMES, 0));
            assert!(sender.tx_pause_frames > sender.tx_xon_frames, "{sender:?}");
            assert_eq!(sender.tx_xon_frames, 1, "the pause is released once");
            assert_eq!(wire[port].frames, wire[port].pfc_frames);
            assert_eq!(wire[port].pfc_frames, sender.tx_pause_frames);
        }
    }
}
