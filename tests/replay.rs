//! `rocelab replay`: the RoCE captures of ../shared/pcaps come out of a default switch
//! byte-identical (nothing congests them); a 2:1 incast comes out with PFC frames and CE
//! marks, each with a comment saying why; bad inputs are named.

mod common;

use common::net::{host, roce, wire_bits};
use rocelab::capture::{CaptureReader, PcapWriter};
use rocelab::config::SwitchConfig;
use rocelab::replay::{self, Inputs, SplitBy};
use rocelab::time::Nanos;
use rocelab::wire::{self, Ecn};
use std::path::Path;

/// A frame of a replay's output: time, bytes, comment, interface.
type Frame = (Option<Nanos>, Vec<u8>, Option<String>, u32);

fn frames(path: &Path) -> Vec<Frame> {
    let mut r = CaptureReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet().unwrap() {
        out.push((
            p.ts,
            p.data.to_vec(),
            p.comment.map(str::to_owned),
            p.interface,
        ));
    }
    out
}

#[test]
fn shared_roce_captures_come_out_byte_identical() {
    let Some(dir) = common::shared_pcaps("shared_roce_captures_come_out_byte_identical") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "roce_rxe_rc_write_read_cm_a.pcap",
        "roce_rxe_rc_write_read_cm_b.pcap",
        "roce_cnp_connectx4lx_1pkt.pcap",
    ] {
        let input = dir.join(name);
        let out = tmp.path().join(format!("{name}.pcapng"));
        let opts = common::replay_options(
            Inputs::Split(SplitBy::Mac, vec![input.clone()]),
            out.clone(),
        );
        let (summary, _) = replay::run(&opts).unwrap();
        let inp: Vec<Vec<u8>> = common::read_frames(&input)
            .into_iter()
            .map(|(_, f)| f)
            .collect();
        let outp = frames(&out);
        assert_eq!(summary.frames_in, inp.len() as u64, "{name}");
        assert_eq!(
            summary.pfc_frames_out + summary.frames_marked,
            0,
            "{name}: nothing to change"
        );
        // Every frame comes out once, unchanged, and each sender's frames in order.
        let mut a: Vec<&Vec<u8>> = inp.iter().collect();
        let mut b: Vec<&Vec<u8>> = outp.iter().map(|f| &f.1).collect();
        for src in a
            .iter()
            .map(|f| f[6..12].to_vec())
            .collect::<std::collections::BTreeSet<_>>()
        {
            let sent: Vec<_> = a.iter().filter(|f| f[6..12] == src[..]).collect();
            let got: Vec<_> = b.iter().filter(|f| f[6..12] == src[..]).collect();
            assert_eq!(sent, got, "{name}: frames from {src:02x?}");
        }
        a.sort();
        b.sort();
        assert_eq!(a, b, "{name}");
        assert!(outp.iter().all(|f| f.2.is_none()), "{name}: no comments");
        // One interface per port, named after the MAC it stands for.
        let reader = {
            let mut r = CaptureReader::open(&out).unwrap();
            while r.next_packet().unwrap().is_some() {}
            r
        };
        let names: Vec<String> = reader
            .interfaces()
            .iter()
            .map(|i| i.name.clone().unwrap())
            .collect();
        assert_eq!(names, summary.ports);
        assert!(names.iter().all(|n| n.parse::<wire::MacAddr>().is_ok()));
    }
}

/// Two senders at line rate into one receiver (hosts 1 and 2 to host 3), lossless class.
fn write_incast(path: &Path, frames_each: u32) {
    let mut w = PcapWriter::new(std::fs::File::create(path).unwrap()).unwrap();
    let t0 = 1_700_000_000_000_000_000u64;
    w.write_packet(Nanos(t0), &common::net::hello(3)).unwrap();
    let frame_ns = wire_bits(1082) as f64 * 1e9 / 100e9;
    for i in 0..frames_each {
        let t = Nanos(t0 + 1_000 + (f64::from(i) * frame_ns) as u64);
        w.write_packet(t, &roce(1, 3, 26, Ecn::Ect0, 1082, i))
            .unwrap();
        w.write_packet(t, &roce(2, 3, 26, Ecn::Ect0, 1082, i))
            .unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn incast_comes_out_with_explained_pfc_and_ce_marks_and_no_loss() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("incast.pcap");
    write_incast(&input, 3000);
    let out = tmp.path().join("out.pcapng");
    let mut opts = common::replay_options(Inputs::Split(SplitBy::Mac, vec![input]), out.clone());
    // A 2 MiB shared pool so that the lossless PG reaches XOFF within the incast.
    opts.config = SwitchConfig::from_toml(
        &rocelab::config::preset_text("default")
            .unwrap()
            .replace("shared_bytes = 33554432", "shared_bytes = 2097152"),
    )
    .unwrap();
    let (summary, switch) = replay::run(&opts).unwrap();
    assert!(
        summary.pfc_frames_out > 0 && summary.frames_marked > 0,
        "{summary:?}"
    );
    let outp = frames(&out);
    let receiver = summary
        .ports
        .iter()
        .position(|p| *p == host(3).to_string())
        .unwrap() as u32;
    let delivered = outp
        .iter()
        .filter(|f| f.3 == receiver && f.1[12..14] == [0x08, 0x00])
        .count();
    assert_eq!(delivered, 6000, "lossless: every frame delivered");
    for (_, frame, comment, _) in &outp {
        let meta = wire::parse(frame).unwrap();
        if meta.is_mac_control() {
            let c = comment.as_deref().expect("every PFC frame has a comment");
            assert!(
                c.starts_with("PFC XOFF prio 3")
                    || c.starts_with("PFC XON prio 3")
                    || c.starts_with("PFC refresh prio 3"),
                "{c}"
            );
        } else if meta.ecn() == Ecn::Ce {
            let c = comment.as_deref().expect("every CE mark has a comment");
            assert!(c.starts_with("CE: queue 3 at "), "{c}");
            assert_eq!(wire::icrc::verify(frame, &meta), Some(true));
        } else {
            assert!(comment.is_none());
        }
    }
    let drops: u64 = (0..switch.port_count())
        .map(|p| switch.counters(p).classes[3].dropped())
        .sum();
    assert_eq!(drops, 0);
    assert!(switch.drops().is_empty());

    // Peers that ignore the pause overflow the headroom; the first drop of each sender's
    // PG is explained with the headroom formula's inputs, times from the first frame.
    opts.peer_ignores_pause = true;
    let (summary, switch) = replay::run(&opts).unwrap();
    let explained: Vec<String> = switch
        .drops()
        .iter()
        .map(|d| d.explain(switch.config(), Nanos(summary.start_ns)))
        .collect();
    assert_eq!(explained.len(), 2, "one per sender's PG: {explained:?}");
    for e in &explained {
        assert!(e.contains("lossless PG 3 dropped a 1082 B frame at"), "{e}");
        assert!(e.contains(" µs: XOFF was in force"), "{e}");
        assert!(
            e.contains("2 x MTU 9216 + 2 x cable 25 ns x 100 Gb/s"),
            "{e}"
        );
    }
    // The output carries each first dropped frame, on the port it came in on, with the
    // explanation as its comment.
    let dropped: Vec<_> = frames(&out)
        .into_iter()
        .filter(|f| f.2.as_deref().is_some_and(|c| c.starts_with("DROPPED: ")))
        .collect();
    assert_eq!(dropped.len(), 2);
    for (ts, frame, comment, iface) in dropped {
        let d = switch
            .drops()
            .iter()
            .find(|d| d.ingress as u32 == iface)
            .expect("a drop on that port");
        assert_eq!(ts, Some(d.at));
        assert_eq!(frame.len(), 1082);
        let why = d.explain(switch.config(), Nanos(summary.start_ns));
        assert!(
            comment.unwrap().ends_with(&why),
            "the same words as the report"
        );
    }
}

#[test]
fn bad_inputs_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.pcap");
    std::fs::write(&bad, b"definitely not a capture").unwrap();
    let out = tmp.path().join("out.pcapng");
    let e = replay::run(&common::replay_options(
        Inputs::Bound(vec![("p0".into(), bad.clone())]),
        out.clone(),
    ))
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("bad.pcap") && msg.contains("byte offset 0") && msg.contains("not a pcap"),
        "{msg}"
    );
    // Truncated in the middle of a record: named with the record's offset.
    let good = tmp.path().join("good.pcap");
    write_incast(&good, 3);
    let bytes = std::fs::read(&good).unwrap();
    let cut = tmp.path().join("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
    let e = replay::run(&common::replay_options(
        Inputs::Bound(vec![("p0".into(), cut)]),
        out,
    ))
    .unwrap_err();
    let msg = e.to_string();
    let last_record = bytes.len() - (16 + 1082);
    assert!(msg.contains(&format!("byte offset {last_record}")), "{msg}");
}

/// Issue 40: `replay --in` had no limit on ports (the 1024 cap guarded `--split-by` only):
/// 15 000 `--in` took 3 GB, then aborted. They are refused before any capture is opened,
/// with the count and the limit.
#[test]
fn too_many_bound_ports_are_refused_with_the_count_and_the_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let cap = tmp.path().join("one.pcap");
    write_incast(&cap, 1);
    let out = tmp.path().join("out.pcapng");
    let inputs: Vec<String> = (0..1025)
        .map(|i| format!("--in=p{i}={}", cap.display()))
        .collect();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .arg("replay")
        .args(&inputs)
        .args(["--pcap", out.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("--in names 1025 ports; at most 1024"), "{err}");
    assert!(!out.exists());
}
