//! (c) Frames rocelab builds are dissected by tshark, and their ICRCs recomputed by scapy:
//! a CNP, PFC frames for several priority sets, PAUSE frames, and RDMA WRITEs that
//! rocelab CE-marked. Expected values are the inputs given to the builders (the standard
//! fixes where each lands on the wire); tshark and scapy are the independent readers.

mod common;

use rocelab::capture::PcapWriter;
use rocelab::time::Nanos;
use rocelab::wire::bth::{BthRepr, Opcode};
use rocelab::wire::cnp::CnpRepr;
use rocelab::wire::pfc::{MacControl, PfcRepr, PrioritySet};
use rocelab::wire::xth::{ExtHeaders, Reth};
use rocelab::wire::{CeMark, Ecn, IpRepr, Ipv4Repr, Ipv6Repr, MacAddr, RoceRepr, VlanTag};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::process::Command;

const H1: MacAddr = MacAddr([0x02, 0, 0xc6, 0x12, 0, 1]);
const H2: MacAddr = MacAddr([0x02, 0, 0xc6, 0x12, 0, 2]);

fn v4(dscp: u8, ecn: Ecn) -> IpRepr {
    IpRepr::V4(Ipv4Repr {
        src: Ipv4Addr::new(198, 18, 0, 1),
        dst: Ipv4Addr::new(198, 18, 0, 2),
        dscp,
        ecn,
        ident: 0x4242,
        dont_frag: true,
        ttl: 64,
    })
}

fn v6(dscp: u8, ecn: Ecn) -> IpRepr {
    IpRepr::V6(Ipv6Repr {
        src: "2001:db8::1".parse::<Ipv6Addr>().unwrap(),
        dst: "2001:db8::2".parse::<Ipv6Addr>().unwrap(),
        dscp,
        ecn,
        flow_label: 0x12345,
        hop_limit: 64,
    })
}

fn write_only<'a>(ip: IpRepr, dest_qp: u32, psn: u32, payload: &'a [u8]) -> RoceRepr<'a> {
    RoceRepr {
        eth_dst: H2,
        eth_src: H1,
        vlan: None,
        ip,
        udp_src_port: 0xc123,
        bth: BthRepr {
            opcode: Opcode::RC_WRITE_ONLY,
            pkey: 0xffff,
            dest_qp,
            ack_req: true,
            psn,
            ..BthRepr::default()
        },
        ext: ExtHeaders {
            reth: Some(Reth {
                va: 0x7f00_0000_1000,
                rkey: 0x1234,
                dma_len: payload.len() as u32,
            }),
            ..ExtHeaders::default()
        },
        payload,
    }
}

/// What a frame should look like to tshark; `None` = field absent.
#[derive(Debug, Default, Clone, PartialEq)]
struct Expect {
    enbv: Option<u64>,
    cbfc: Option<[u64; 8]>,
    pause_time: Option<u64>,
    opcode: Option<u64>,
    destqp: Option<u64>,
    psn: Option<u64>,
    ecn: Option<u64>,
    ip_checksum_good: Option<bool>,
}

fn build() -> (Vec<Vec<u8>>, Vec<Expect>) {
    let mut frames = Vec::new();
    let mut expect = Vec::new();
    let mut buf = [0u8; 2048];

    // CNPs: IPv4, and IPv6 on a tagged link.
    for (ip, vlan, qp) in [
        (v4(48, Ecn::Ect0), None, 0x00ab_cdef),
        (
            v6(48, Ecn::NotEct),
            Some(VlanTag {
                pcp: 6,
                dei: false,
                vid: 10,
            }),
            0x0000_0118,
        ),
    ] {
        let cnp = CnpRepr {
            eth_dst: H1,
            eth_src: H2,
            vlan,
            ip,
            udp_src_port: 0xc001,
            pkey: 0xffff,
            dest_qp: qp,
        };
        let n = cnp.to_roce().emit(&mut buf).unwrap();
        frames.push(buf[..n].to_vec());
        expect.push(Expect {
            opcode: Some(0x81),
            destqp: Some(u64::from(qp)),
            psn: Some(0),
            ecn: Some(ip.ecn() as u64),
            ip_checksum_good: matches!(ip, IpRepr::V4(_)).then_some(true),
            ..Expect::default()
        });
    }

    // PFC: several priority sets and times, XON, and eight distinct times.
    let mut distinct = PfcRepr {
        enable_vector: 0xff,
        quanta: [0; 8],
    };
    for (p, q) in distinct.quanta.iter_mut().enumerate() {
        *q = 0x1111 * (p as u16 + 1) / 2 + 1;
    }
    for pfc in [
        PfcRepr::new(PrioritySet::single(3), 0xffff),
        PfcRepr::new(PrioritySet(0b0001_1000), 0x1234),
        PfcRepr::new(PrioritySet::single(3), 0),
        PfcRepr::new(PrioritySet(0x81), 1),
        distinct,
    ] {
        let n = MacControl::Pfc(pfc).emit(&mut buf, H2).unwrap();
        frames.push(buf[..n].to_vec());
        expect.push(Expect {
            enbv: Some(u64::from(pfc.enable_vector)),
            cbfc: Some(pfc.quanta.map(u64::from)),
            ..Expect::default()
        });
    }

    // 802.3x PAUSE.
    for quanta in [0xffff, 0, 512] {
        let n = MacControl::Pause { quanta }.emit(&mut buf, H2).unwrap();
        frames.push(buf[..n].to_vec());
        expect.push(Expect {
            pause_time: Some(u64::from(quanta)),
            ..Expect::default()
        });
    }

    // RDMA WRITEs that rocelab CE-marks (IPv4 ECT(0), IPv6 ECT(1)), and one Not-ECT frame
    // that must be left alone.
    let payload: Vec<u8> = (0..1001u32).map(|i| (i * 7) as u8).collect();
    for (ip, qp, psn, want) in [
        (v4(26, Ecn::Ect0), 0x12, 0x00ff_fffe, CeMark::Marked),
        (v6(26, Ecn::Ect1), 0x34, 7, CeMark::Marked),
        (v4(26, Ecn::NotEct), 0x56, 8, CeMark::NotEct),
    ] {
        let n = write_only(ip, qp, psn, &payload).emit(&mut buf).unwrap();
        let frame = &mut buf[..n];
        let meta = rocelab::wire::parse(frame).unwrap();
        assert_eq!(rocelab::wire::mark_ce(frame, &meta), want);
        frames.push(frame.to_vec());
        expect.push(Expect {
            opcode: Some(0x0a),
            destqp: Some(u64::from(qp)),
            psn: Some(u64::from(psn)),
            ecn: Some(if want == CeMark::Marked { 3 } else { 0 }),
            ip_checksum_good: matches!(ip, IpRepr::V4(_)).then_some(true),
            ..Expect::default()
        });
    }
    (frames, expect)
}

fn write_pcap(dir: &std::path::Path, frames: &[Vec<u8>]) -> std::path::PathBuf {
    let path = dir.join("built.pcap");
    let mut w = PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(Nanos::from_micros(i as u64), f).unwrap();
    }
    w.finish().unwrap();
    path
}

#[test]
fn tshark_dissects_what_rocelab_builds() {
    if !common::have_tool(
        "tshark_dissects_what_rocelab_builds",
        "tshark",
        "apt-get install tshark",
    ) {
        return;
    }
    let (frames, expect) = build();
    let dir = tempfile::tempdir().unwrap();
    let pcap = write_pcap(dir.path(), &frames);
    let mut fields = vec!["frame.number", "macc.cbfc.enbv"];
    let cbfc: Vec<String> = (0..8)
        .map(|p| format!("macc.cbfc.pause_time.c{p}"))
        .collect();
    fields.extend(cbfc.iter().map(String::as_str));
    fields.extend([
        "macc.pause_time",
        "infiniband.bth.opcode",
        "infiniband.bth.destqp",
        "infiniband.bth.psn",
        "ip.dsfield.ecn",
        "ipv6.tclass.ecn",
        "ip.checksum.status",
        "_ws.malformed",
    ]);
    let mut cmd = Command::new("tshark");
    cmd.args(["-o", "ip.check_checksum:TRUE", "-n", "-r"])
        .arg(&pcap)
        .args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"]);
    for f in &fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), frames.len(), "tshark saw {text}");
    for (i, (line, want)) in lines.iter().zip(&expect).enumerate() {
        let cols: BTreeMap<&str, &str> = fields
            .iter()
            .copied()
            .zip(line.split('\t'))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let num = |k: &str| cols.get(k).map(|v| common::tshark_number(v));
        assert_eq!(
            cols.get("_ws.malformed"),
            None,
            "frame {}: tshark says malformed",
            i + 1
        );
        let cbfc_got: Option<[u64; 8]> = num("macc.cbfc.enbv")
            .map(|_| std::array::from_fn(|p| num(&format!("macc.cbfc.pause_time.c{p}")).unwrap()));
        let ecn = num("ip.dsfield.ecn").or(num("ipv6.tclass.ecn"));
        let got = Expect {
            enbv: num("macc.cbfc.enbv"),
            cbfc: cbfc_got,
            pause_time: num("macc.pause_time"),
            opcode: num("infiniband.bth.opcode"),
            destqp: num("infiniband.bth.destqp"),
            psn: num("infiniband.bth.psn"),
            ecn,
            // 1 = good, 0 = bad, 2 = unverified
            ip_checksum_good: num("ip.checksum.status").map(|s| s == 1),
        };
        assert_eq!(&got, want, "frame {}: tshark read {line:?}", i + 1);
    }
}

#[test]
fn scapy_recomputes_the_same_icrcs() {
    if !common::have_scapy("scapy_recomputes_the_same_icrcs") {
        return;
    }
    let (frames, expect) = build();
    let dir = tempfile::tempdir().unwrap();
    let pcap = write_pcap(dir.path(), &frames);
    let out = Command::new("python3")
        .arg(common::repo("scripts/icrc_check.py"))
        .arg(&pcap)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "icrc_check.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let roce_frames: Vec<usize> = (0..frames.len())
        .filter(|&i| expect[i].opcode.is_some())
        .collect();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), roce_frames.len(), "scapy saw {text}");
    for (line, &i) in lines.iter().zip(&roce_frames) {
        assert_eq!(line["index"], i + 1);
        let frame = &frames[i];
        let last4: [u8; 4] = frame[frame.len() - 4..].try_into().unwrap();
        // scapy reads the trailer big-endian: the byte-swapped CRC value.
        let on_wire = format!("{:#010x}", u32::from_be_bytes(last4));
        assert_eq!(line["icrc_stored"], on_wire.as_str(), "frame {}", i + 1);
        assert_eq!(
            line["icrc_scapy"],
            line["icrc_stored"],
            "frame {}: scapy's ICRC",
            i + 1
        );
    }
}

/// QA: RoCEv2 over IPv6 behind a hop-by-hop header (`11 00 01 04 00 00 00 00`) showed as
/// "IP proto 0" in inspect and was missing from the per-QP counts, while tshark decodes
/// its BTH. rocelab walks the extension headers as tshark does; both read the builder's
/// QP and PSN, and inspect counts the frame on its QP (its ICRC not judged).
#[test]
fn ipv6_extension_headers_are_walked_as_tshark_walks_them() {
    let payload = [0x5a; 64];
    let mut buf = [0u8; 2048];
    let repr = write_only(v6(26, Ecn::Ect0), 0x00_0123, 4242, &payload);
    let n = repr.emit(&mut buf).unwrap();
    let hop_by_hop = (0u8, vec![0x00, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00]);
    let routing = (43u8, vec![0u8; 23]);
    let frames = [
        common::net::with_ipv6_extensions(&buf[..n], 14, std::slice::from_ref(&hop_by_hop)),
        common::net::with_ipv6_extensions(&buf[..n], 14, &[hop_by_hop, routing]),
    ];
    assert_eq!(frames[0][14 + 40..14 + 48], [0x11, 0, 1, 4, 0, 0, 0, 0]);

    let dir = tempfile::tempdir().unwrap();
    let pcap = write_pcap(dir.path(), &frames);
    let mut json = Vec::new();
    let summary = rocelab::inspect::run(
        std::fs::File::open(&pcap).unwrap(),
        &mut json,
        rocelab::inspect::Output::Json,
    )
    .unwrap();
    let records: Vec<serde_json::Value> = String::from_utf8(json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["type"] == "frame")
        .collect();
    for r in &records {
        assert_eq!(
            (&r["ip_proto"], &r["udp_dport"], &r["dest_qp"], &r["psn"]),
            (
                &serde_json::json!(17),
                &serde_json::json!(4791),
                &serde_json::json!(0x123),
                &serde_json::json!(4242)
            ),
            "{r}"
        );
        assert!(r["icrc_ok"].is_null(), "{r}");
    }
    assert_eq!((summary.roce_frames, summary.icrc_unchecked), (2, 2));
    assert_eq!(summary.qps.len(), 1);
    assert_eq!(summary.qps[0].frames, 2);

    if !common::have_tool(
        "ipv6_extension_headers_are_walked_as_tshark_walks_them",
        "tshark",
        "apt-get install tshark",
    ) {
        return;
    }
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(&pcap)
        .args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"])
        .args(["-e", "udp.dstport", "-e", "infiniband.bth.destqp"])
        .args(["-e", "infiniband.bth.psn", "-e", "_ws.malformed"])
        .output()
        .expect("run tshark");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        let cols: Vec<u64> = line
            .split('\t')
            .filter(|c| !c.is_empty())
            .map(common::tshark_number)
            .collect();
        assert_eq!(cols, [4791, 0x123, 4242], "tshark read {line:?}");
    }
    assert_eq!(text.lines().count(), 2);
}
