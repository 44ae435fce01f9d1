//! (b) Third-party captures, in the folder that `ROCELAB_SHARED_PCAPS` names (`.ci/run`
//! sets it to the developers' `../shared/pcaps` when that is there; without it every test
//! here says it was skipped and passes): every frame parses, every RoCE ICRC verifies, and
//! opcodes, dest QPs, PSNs, DSCP and ECN are what the folder's SOURCES.md says they are
//! (the expected values below are taken from that document, not from rocelab).

mod common;

use rocelab::inspect::{self, FrameRecord, Output};
use rocelab::wire::{self, Ecn, RocePacket, icrc};
use std::path::Path;

fn records(path: &Path) -> Vec<FrameRecord> {
    common::read_frames(path)
        .iter()
        .enumerate()
        .map(|(i, (ts, f))| FrameRecord::decode(i as u64 + 1, Some(*ts), f.len() as u32, f).0)
        .collect()
}

#[test]
fn every_frame_parses_and_every_roce_icrc_verifies() {
    let Some(dir) = common::shared_pcaps("every_frame_parses_and_every_roce_icrc_verifies") else {
        return;
    };
    let mut files = 0;
    let mut roce = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "pcap") {
            continue;
        }
        files += 1;
        for (i, (_, frame)) in common::read_frames(&path).iter().enumerate() {
            let meta = wire::parse(frame)
                .unwrap_or_else(|e| panic!("{} frame {}: {e}", path.display(), i + 1));
            if meta.is_roce() {
                roce += 1;
                assert_eq!(
                    icrc::verify(frame, &meta),
                    Some(true),
                    "{} frame {}: ICRC",
                    path.display(),
                    i + 1
                );
                RocePacket::parse(frame, &meta)
                    .unwrap_or_else(|e| panic!("{} frame {}: {e}", path.display(), i + 1));
            }
        }
    }
    assert_eq!(files, 7, "SOURCES.md lists seven captures");
    // 12 + 12 + 1 RoCE frames in the three RoCE captures.
    assert_eq!(roce, 25);
}

#[test]
fn soft_roce_capture_a_matches_sources_md() {
    let Some(dir) = common::shared_pcaps("soft_roce_capture_a_matches_sources_md") else {
        return;
    };
    let r = records(&dir.join("roce_rxe_rc_write_read_cm_a.pcap"));
    assert_eq!(r.len(), 12);
    let opcodes: Vec<_> = r.iter().map(|f| f.bth_opcode.unwrap()).collect();
    assert_eq!(
        opcodes,
        [
            0x64, 0x64, 0x64, 0x0a, 0x11, 0x0c, 0x0d, 0x0e, 0x0e, 0x0f, 0x64, 0x64
        ]
    );
    for f in &r {
        assert_eq!((f.dscp, f.ecn, f.icrc_ok), (Some(0), Some(0), Some(true)));
        assert_eq!(f.ip_version, Some(4));
    }
    for f in [&r[0], &r[1], &r[2], &r[10], &r[11]] {
        assert_eq!(f.dest_qp, Some(1));
        assert_eq!(f.deth_qkey, Some(0x8001_0000));
    }
    let write = &r[3];
    assert_eq!(write.dest_qp, Some(0x11));
    assert_eq!(write.psn, Some(9_209_053));
    assert_eq!(write.ack_req, Some(true));
    assert_eq!(write.reth_va, Some(0x0000_aaab_09dd_5000));
    assert_eq!(write.reth_rkey, Some(0x2d5));
    assert_eq!(write.reth_dma_len, Some(18));
    assert_eq!(write.pad_count, Some(2));
    assert_eq!(write.payload_len, Some(18));
    let ack = &r[4];
    assert_eq!(
        (ack.len, ack.aeth_syndrome, ack.aeth_msn),
        (62, Some(0x1f), Some(1))
    );
    assert_eq!(r[5].reth_dma_len, Some(4096));
    let lens: Vec<_> = r[6..10].iter().map(|f| f.len).collect();
    assert_eq!(lens, [1086, 1082, 1082, 1086]);
    assert!(r[6].aeth_syndrome.is_some() && r[9].aeth_syndrome.is_some());
    assert!(r[7].aeth_syndrome.is_none() && r[8].aeth_syndrome.is_none());
    // A lossless exchange: no PSN gap, no resend, no CE anywhere.
    let mut out = Vec::new();
    let s = inspect::run(
        std::fs::File::open(dir.join("roce_rxe_rc_write_read_cm_a.pcap")).unwrap(),
        &mut out,
        Output::Json,
    )
    .unwrap();
    assert!(
        s.qps
            .iter()
            .all(|q| q.psn_gaps == 0 && q.retransmissions == 0 && q.ce_marked == 0)
    );
    assert_eq!((s.roce_frames, s.icrc_failures), (12, 0));
}

#[test]
fn soft_roce_capture_b_matches_sources_md() {
    let Some(dir) = common::shared_pcaps("soft_roce_capture_b_matches_sources_md") else {
        return;
    };
    let r = records(&dir.join("roce_rxe_rc_write_read_cm_b.pcap"));
    assert_eq!(r.len(), 16);
    let roce: Vec<_> = r.iter().filter(|f| f.bth_opcode.is_some()).collect();
    assert_eq!(roce.len(), 12);
    assert!(
        r[11..15].iter().all(|f| f.ethertype == Some(0x0806)),
        "frames 12-15 are ARP"
    );
    let rc_qps: std::collections::BTreeSet<_> = roce
        .iter()
        .filter(|f| f.bth_opcode != Some(0x64))
        .map(|f| f.dest_qp.unwrap())
        .collect();
    assert_eq!(rc_qps.into_iter().collect::<Vec<_>>(), [0x11, 0x17]);
    let first_rc_psn = roce
        .iter()
        .find(|f| f.bth_opcode != Some(0x64))
        .unwrap()
        .psn;
    assert_eq!(first_rc_psn, Some(12_726_936));
    assert!(
        roce.iter()
            .filter(|f| f.reth_rkey.is_some())
            .all(|f| f.reth_rkey == Some(0x220))
    );
    assert!(
        roce.iter()
            .all(|f| f.dscp == Some(0) && f.ecn == Some(0) && f.icrc_ok == Some(true))
    );
}

#[test]
fn connectx_cnp_matches_sources_md() {
    let Some(dir) = common::shared_pcaps("connectx_cnp_matches_sources_md") else {
        return;
    };
    let frames = common::read_frames(&dir.join("roce_cnp_connectx4lx_1pkt.pcap"));
    assert_eq!(frames.len(), 1);
    let frame = &frames[0].1;
    let meta = wire::parse(frame).unwrap();
    assert_eq!(meta.bth_opcode(), wire::Opcode::CNP);
    assert!(meta.becn());
    assert_eq!((meta.dest_qp(), meta.psn()), (0x118, 0));
    assert_eq!((meta.dscp(), meta.ecn()), (48, Ecn::Ect0));
    assert_eq!(icrc::stored(frame, &meta), Some(0x2a00_fd82));
    assert_eq!(icrc::verify(frame, &meta), Some(true));
    let pkt = RocePacket::parse(frame, &meta).unwrap().unwrap();
    assert_eq!(pkt.bth.pkey, 0xffff);
    assert_eq!(pkt.payload, &[0u8; 16]);
}

#[test]
fn ecn_captures_match_sources_md() {
    let Some(dir) = common::shared_pcaps("ecn_captures_match_sources_md") else {
        return;
    };
    let r = records(&dir.join("ecn_ipv4_tcp_ce_marked.pcap"));
    assert_eq!(r.len(), 479);
    let ce: Vec<_> = r.iter().filter(|f| f.ecn == Some(3)).collect();
    assert_eq!(ce.len(), 52);
    assert!(ce.iter().all(|f| f.ip_src.as_deref() == Some("1.1.12.1")));
    let first_ce: Vec<_> = ce.iter().take(6).map(|f| f.index).collect();
    assert_eq!(first_ce, [48, 53, 56, 59, 69, 74]);
    assert_eq!(r.iter().filter(|f| f.ecn == Some(2)).count(), 117);
    assert!(r.iter().all(|f| f.dscp == Some(0) && f.error.is_none()));

    let r = records(&dir.join("ecn_ipv6_ce_syn_icmp6.pcap"));
    assert_eq!(r.len(), 4);
    for f in &r[..3] {
        assert_eq!(
            (f.ip_version, f.ip_proto, f.ecn),
            (Some(6), Some(6), Some(3))
        );
    }
    assert_eq!(r[3].ip_proto, Some(58), "an ICMPv6 error quoting the SYN");
}

#[test]
fn dscp_captures_match_sources_md() {
    let Some(dir) = common::shared_pcaps("dscp_captures_match_sources_md") else {
        return;
    };
    let r = records(&dir.join("dscp3_ipv4_tcp.pcap"));
    assert_eq!(r.len(), 61);
    let fwd: Vec<_> = r
        .iter()
        .filter(|f| f.ip_src.as_deref() == Some("139.133.208.62"))
        .collect();
    assert_eq!(fwd.len(), 31);
    assert!(
        fwd.iter()
            .all(|f| f.dscp == Some(3) && f.ip_dst.as_deref() == Some("139.133.1.4"))
    );
    assert!(
        r.iter()
            .filter(|f| f.ip_src.as_deref() != Some("139.133.208.62"))
            .all(|f| f.dscp == Some(0))
    );
    assert!(r.iter().all(|f| f.ecn == Some(0)));

    let r = records(&dir.join("dscp3_ipv6_tcp.pcap"));
    assert_eq!(r.len(), 9);
    let (fwd, back): (Vec<_>, Vec<_>) = r.iter().partition(|f| f.dscp == Some(3));
    assert_eq!(fwd.len(), 5);
    assert!(back.iter().all(|f| f.dscp == Some(0)));
    // The return direction's SYN-ACK is ECT(1).
    assert_eq!(back[0].ecn, Some(1));
}

/// Issue 13: inspect summed CE marks only over RoCE QPs. Its summary counts the ECN of
/// every IP frame now; on the TCP capture with CE marks it agrees with tshark's count of
/// `ip.dsfield.ecn == 3`, codepoint by codepoint.
#[test]
fn ecn_summary_of_all_ip_traffic_matches_tshark() {
    let Some(dir) = common::shared_pcaps("ecn_summary_of_all_ip_traffic_matches_tshark") else {
        return;
    };
    if !common::have_tool(
        "ecn_summary_of_all_ip_traffic_matches_tshark",
        "tshark",
        "apt install tshark",
    ) {
        return;
    }
    let path = dir.join("ecn_ipv4_tcp_ce_marked.pcap");
    let s = inspect::run(
        std::fs::File::open(&path).unwrap(),
        &mut Vec::new(),
        Output::Json,
    )
    .unwrap();
    let count = |filter: &str| {
        let o = std::process::Command::new("tshark")
            .arg("-r")
            .arg(&path)
            .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).lines().count() as u64
    };
    assert_eq!(s.ecn.ce_frames, count("ip.dsfield.ecn == 3"));
    assert_eq!(s.ecn.ect0_frames, count("ip.dsfield.ecn == 2"));
    assert_eq!(s.ecn.not_ect_frames, count("ip.dsfield.ecn == 0"));
    assert_eq!(s.ecn.ip_frames, count("ip"));
    assert_eq!(s.ecn.ce_frames, 52);
}
