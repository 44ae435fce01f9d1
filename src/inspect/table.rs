//! The human-readable output of `rocelab inspect`: one line per frame, then the summary.

use super::record::FrameRecord;
use super::summary::Summary;
use crate::time::Nanos;
use crate::wire::ethernet::ethertype;
use std::fmt::Write as _;
use std::io::{self, Write};

/// Prints the column header.
pub(super) fn write_header(out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "{:>6}  {:>12}  {:>5}  {:<42}  {:>4}  {:<7}  {:<34}  {:>8}  {:>8}  {:<5}  {:<4}  detail",
        "#",
        "time",
        "len",
        "source -> destination",
        "DSCP",
        "ECN",
        "type",
        "dest QP",
        "PSN",
        "flags",
        "ICRC"
    )
}

/// Prints one frame; `first_ts` is the first timed frame's time (times are relative, as in
/// tshark). A frame without a time (a pcapng Simple Packet Block) shows none.
pub(super) fn write_frame(
    out: &mut impl Write,
    r: &FrameRecord,
    first_ts: Option<Nanos>,
) -> io::Result<()> {
    // A frame stamped before the first (captures are not always in time order) gets a
    // negative time, as tshark shows it, not 0.
    let time = match (r.ts_ns, first_ts) {
        (Some(ts), Some(first)) if ts >= first.0 => Nanos(ts - first.0).to_string(),
        (Some(ts), Some(first)) => format!("-{}", Nanos(first.0 - ts)),
        _ => String::new(),
    };
    let endpoints = match (&r.ip_src, &r.ip_dst) {
        (Some(src), Some(dst)) => match (r.udp_sport, r.udp_dport) {
            (Some(sp), Some(dp)) => format!("{} -> {}", join_port(src, sp), join_port(dst, dp)),
            _ => format!("{src} -> {dst}"),
        },
        _ => format!(
            "{} -> {}",
            r.eth_src.as_deref().unwrap_or("?"),
            r.eth_dst.as_deref().unwrap_or("?")
        ),
    };
    let dscp = r.dscp.map(|d| d.to_string()).unwrap_or_default();
    let ecn = r
        .ecn
        .map(|e| crate::wire::Ecn::from_bits(e).to_string())
        .unwrap_or_default();
    let kind = kind_of(r);
    let qp = r.dest_qp.map(|q| format!("{q:#08x}")).unwrap_or_default();
    let psn = r.psn.map(|p| p.to_string()).unwrap_or_default();
    let mut flags = String::new();
    for (set, c) in [
        (r.ack_req, 'A'),
        (r.solicited, 'S'),
        (r.fecn, 'F'),
        (r.becn, 'B'),
    ] {
        if set == Some(true) {
            flags.push(c);
        }
    }
    let icrc = match r.icrc_ok {
        Some(true) => "ok",
        Some(false) => "BAD",
        None if r.icrc_unchecked() && r.cut() => "cut",
        None if r.icrc_unchecked() => "-",
        None => "",
    };
    writeln!(
        out,
        "{:>6}  {:>12}  {:>5}  {:<42}  {:>4}  {:<7}  {:<34}  {:>8}  {:>8}  {:<5}  {:<4}  {}",
        r.index,
        time,
        r.len,
        endpoints,
        dscp,
        ecn,
        kind,
        qp,
        psn,
        flags,
        icrc,
        detail_of(r)
    )
}

fn join_port(addr: &str, port: u16) -> String {
    if addr.contains(':') {
        format!("[{addr}]:{port}")
    } else {
        format!("{addr}:{port}")
    }
}

fn kind_of(r: &FrameRecord) -> String {
    if let Some(op) = r.bth_opcode {
        let name = crate::wire::bth::Opcode(op).name();
        return if name == "reserved" || name == "vendor-specific" {
            format!("{name} {op:#04x}")
        } else {
            name.to_owned()
        };
    }
    if r.pfc_enable.is_some() {
        return "PFC".into();
    }
    if r.pause_quanta.is_some() {
        return "PAUSE".into();
    }
    if let Some(op) = r.mac_control_opcode {
        return format!("MAC Control {op:#06x}");
    }
    if r.bth_cut() {
        return "RoCEv2, BTH not captured".into();
    }
    match (r.ip_proto, r.ethertype) {
        (Some(17), _) => "UDP".into(),
        (Some(6), _) => "TCP".into(),
        (Some(1), _) => "ICMP".into(),
        (Some(58), _) => "ICMPv6".into(),
        (Some(p), _) => format!("IP proto {p}"),
        // An IP header the capture cut short.
        (None, Some(ethertype::IPV4)) => "IPv4".into(),
        (None, Some(ethertype::IPV6)) => "IPv6".into(),
        (None, Some(ethertype::ARP)) => "ARP".into(),
        (None, Some(t)) => format!("EtherType {t:#06x}"),
        (None, None) => "?".into(),
    }
}

fn detail_of(r: &FrameRecord) -> String {
    let mut d = String::new();
    if let Some(pcp) = r.vlan_pcp {
        let _ = write!(d, "vlan={} pcp={pcp} ", r.vlan_id.unwrap_or(0));
    }
    if let (Some(va), Some(rkey), Some(len)) = (r.reth_va, r.reth_rkey, r.reth_dma_len) {
        let _ = write!(d, "va={va:#x} rkey={rkey:#x} dmalen={len} ");
    }
    if let (Some(kind), Some(syndrome), Some(msn)) = (r.aeth_kind, r.aeth_syndrome, r.aeth_msn) {
        let _ = write!(d, "{kind} (syndrome {syndrome:#04x}) msn={msn} ");
    }
    if let (Some(qkey), Some(src)) = (r.deth_qkey, r.deth_src_qp) {
        let _ = write!(d, "qkey={qkey:#x} srcqp={src:#x} ");
    }
    if let Some(imm) = r.imm_data {
        let _ = write!(d, "imm={imm:#010x} ");
    }
    if let Some(n) = r.payload_len.filter(|&n| n > 0) {
        let _ = write!(d, "payload={n} ");
    }
    if let (Some(enable), Some(quanta)) = (r.pfc_enable, r.pfc_quanta) {
        let _ = write!(d, "enable={enable:#06x} [");
        let mut first = true;
        for (p, q) in quanta.iter().enumerate() {
            if enable & (1 << p) != 0 {
                let _ = write!(d, "{}p{p}={q}", if first { "" } else { " " });
                first = false;
            }
        }
        let _ = write!(d, "] ");
    }
    if let Some(q) = r.pause_quanta {
        let _ = write!(d, "time={q} quanta ");
    }
    if r.ip_checksum_ok == Some(false) {
        d.push_str("IP-CHECKSUM-BAD ");
    }
    if let Some(caplen) = r.caplen.filter(|_| r.cut()) {
        let _ = write!(d, "CUT: {caplen} of {} B captured ", r.len);
    }
    if let Some(e) = &r.error {
        let _ = write!(d, "MALFORMED: {e}");
    }
    d.trim_end().to_owned()
}

/// Prints the summary.
pub(super) fn write_summary(out: &mut impl Write, s: &Summary, partial: bool) -> io::Result<()> {
    write_totals(out, s, partial)?;
    let several = s.interfaces.len() > 1;
    if several {
        write_interfaces(out, s)?;
    }
    if !s.qps.is_empty() {
        write_qps(out, s, several)?;
    }
    write_pauses(out, s)
}

/// The capture's totals: frames, bytes, RoCE, ICRC, what was cut or skipped, ECN.
fn write_totals(out: &mut impl Write, s: &Summary, partial: bool) -> io::Result<()> {
    let span = match (s.first_ts_ns, s.last_ts_ns) {
        (Some(a), Some(b)) => Nanos(b).saturating_sub(Nanos(a)),
        _ => Nanos::ZERO,
    };
    writeln!(out)?;
    writeln!(
        out,
        "Summary{}: {} frames, {} bytes over {} s; {} RoCE, {} ICRC failures{}, {} malformed",
        if partial { " of the frames read" } else { "" },
        s.frames,
        s.bytes,
        span,
        s.roce_frames,
        s.icrc_failures,
        if s.icrc_unchecked > 0 {
            format!(" ({} not checked)", s.icrc_unchecked)
        } else {
            String::new()
        },
        s.malformed_frames
    )?;
    if s.frames_cut > 0 {
        let mut line = format!(
            "{} frame(s) cut short by the capture (snap length): decoded as far as their bytes \
             go (an ICRC cut off is not checked)",
            s.frames_cut
        );
        if s.bth_cut > 0 {
            let _ = write!(
                line,
                "; {} to UDP 4791 with the BTH cut off, not counted as RoCE",
                s.bth_cut
            );
        }
        writeln!(out, "{line}")?;
    }
    if s.skipped_non_ethernet > 0 {
        writeln!(
            out,
            "{} frame(s) on non-Ethernet interfaces of the capture were skipped",
            s.skipped_non_ethernet
        )?;
    }
    if let Some(mtu) = s.path_mtu {
        writeln!(
            out,
            "Path MTU {mtu} B (the largest First/Middle segment): READ PSN skips judged with it"
        )?;
    }
    if s.ecn.ip_frames > 0 {
        let e = &s.ecn;
        writeln!(
            out,
            "IP: {} frames; ECN Not-ECT {}, ECT(0) {}, ECT(1) {}, CE {}",
            e.ip_frames, e.not_ect_frames, e.ect0_frames, e.ect1_frames, e.ce_frames
        )?;
    }
    Ok(())
}

/// A row per interface of the capture.
fn write_interfaces(out: &mut impl Write, s: &Summary) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "Per interface:")?;
    writeln!(
        out,
        "  {:<20}  {:>8}  {:>12}  {:>8}  {:>6}  {:>6}",
        "interface", "frames", "bytes", "RoCE", "CE", "PFC"
    )?;
    for i in &s.interfaces {
        let name = i
            .name
            .clone()
            .unwrap_or_else(|| format!("#{}", i.interface_id));
        writeln!(
            out,
            "  {name:<20}  {:>8}  {:>12}  {:>8}  {:>6}  {:>6}",
            i.frames, i.bytes, i.roce_frames, i.ce_frames, i.pfc_frames
        )?;
    }
    Ok(())
}

/// A row per QP, by destination (`several`: on each interface).
fn write_qps(out: &mut impl Write, s: &Summary, several: bool) -> io::Result<()> {
    let iface_name = |id: u32| {
        s.interfaces
            .iter()
            .find(|i| i.interface_id == id)
            .and_then(|i| i.name.clone())
            .unwrap_or_else(|| format!("#{id}"))
    };
    writeln!(out)?;
    writeln!(
        out,
        "Per QP (by destination{}):",
        if several { ", on each interface" } else { "" }
    )?;
    writeln!(
        out,
        "  {:<40}  {:>8}  {:>8}  {:>10}  {:>8}  {:>7}  {:>5}  {:>5}  {:>5}",
        "destination", "dest QP", "frames", "bytes", "PSN gaps", "retrans", "CNPs", "CE", "NAKs"
    )?;
    for q in &s.qps {
        let dest = if several {
            format!("{} on {}", q.ip_dst, iface_name(q.interface_id))
        } else {
            q.ip_dst.clone()
        };
        writeln!(
            out,
            "  {:<40}  {:>8}  {:>8}  {:>10}  {:>8}  {:>7}  {:>5}  {:>5}  {:>5}",
            dest,
            format!("{:#08x}", q.dest_qp),
            q.frames,
            q.bytes,
            q.psn_gaps,
            q.retransmissions,
            q.cnps,
            q.ce_marked,
            q.naks
        )?;
    }
    Ok(())
}

/// PFC per priority and 802.3x PAUSE, where there were any.
fn write_pauses(out: &mut impl Write, s: &Summary) -> io::Result<()> {
    let paused: Vec<_> = s.priorities.iter().filter(|p| p.pfc_frames > 0).collect();
    if !paused.is_empty() {
        writeln!(out)?;
        writeln!(out, "PFC per priority:")?;
        writeln!(
            out,
            "  {:>4}  {:>10}  {:>10}  {:>14}",
            "prio", "PFC frames", "XON frames", "pause quanta"
        )?;
        for p in paused {
            writeln!(
                out,
                "  {:>4}  {:>10}  {:>10}  {:>14}",
                p.priority, p.pfc_frames, p.xon_frames, p.pause_quanta
            )?;
        }
    }
    if s.pause_frames > 0 {
        writeln!(out)?;
        writeln!(
            out,
            "802.3x PAUSE: {} frame(s), {} quanta in all",
            s.pause_frames, s.pause_quanta_total
        )?;
    }
    Ok(())
}
