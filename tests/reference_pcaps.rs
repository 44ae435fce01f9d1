//! (a) Every frame of the reference captures in `pcaps/` decodes to exactly the field
//! values scapy wrote beside it (scripts/gen_pcaps.py), and the summary of
//! `roce_streams.pcap` matches the one the generator computed.

mod common;

use rocelab::inspect::{self, FrameRecord, Output};
use serde_json::{Map, Value};
use std::fs;
use std::path::PathBuf;

/// Keys the generator writes where they apply. rocelab must produce each of these exactly
/// when the generator does: a RoCE key on a non-RoCE frame is as wrong as a missing one.
const COMPARED_KEYS: &[&str] = &[
    "index",
    "ts_ns",
    "len",
    "eth_src",
    "eth_dst",
    "ethertype",
    "vlan_pcp",
    "vlan_id",
    "vlan_dei",
    "ip_version",
    "ip_src",
    "ip_dst",
    "dscp",
    "ecn",
    "udp_sport",
    "udp_dport",
    "bth_opcode",
    "dest_qp",
    "psn",
    "ack_req",
    "becn",
    "fecn",
    "solicited",
    "pad_count",
    "pkey",
    "icrc_ok",
    "payload_len",
    "reth_va",
    "reth_rkey",
    "reth_dma_len",
    "aeth_syndrome",
    "aeth_msn",
    "deth_qkey",
    "deth_src_qp",
    "imm_data",
    "pfc_enable",
    "pfc_quanta",
    "pause_quanta",
];

fn reference_files() -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for entry in fs::read_dir(common::repo("pcaps")).unwrap() {
        let json = entry.unwrap().path();
        if json.extension().is_some_and(|e| e == "json") {
            let pcap = json.with_extension("pcap");
            let capture = if pcap.exists() {
                pcap
            } else {
                json.with_extension("pcapng")
            };
            assert!(
                capture.exists(),
                "{} has no capture beside it",
                json.display()
            );
            out.push((capture, json));
        }
    }
    out.sort();
    assert!(
        out.len() >= 8,
        "expected the generator's 8 captures, found {out:?}"
    );
    out
}

fn expected(json: &PathBuf) -> Map<String, Value> {
    let text = fs::read_to_string(json).unwrap();
    match serde_json::from_str(&text).unwrap() {
        Value::Object(m) => m,
        other => panic!("{}: not an object: {other}", json.display()),
    }
}

#[test]
fn every_reference_frame_matches_scapy_field_by_field() {
    let mut frames_checked = 0;
    let mut mismatches = Vec::new();
    for (capture, json) in reference_files() {
        let want = expected(&json);
        let want_frames = want["frames"].as_array().unwrap();
        let got_frames = common::read_frames(&capture);
        assert_eq!(
            got_frames.len(),
            want_frames.len(),
            "{}: frame count",
            capture.display()
        );
        for (i, ((ts, frame), want)) in got_frames.iter().zip(want_frames).enumerate() {
            let (record, _) =
                FrameRecord::decode(i as u64 + 1, Some(*ts), frame.len() as u32, frame);
            let got = serde_json::to_value(&record).unwrap();
            let (got, want) = (got.as_object().unwrap(), want.as_object().unwrap());
            for key in COMPARED_KEYS {
                // A field that does not apply is null in rocelab's record (a fixed key
                // set) and absent in the generator's.
                let got_value = got.get(*key).filter(|v| !v.is_null());
                if got_value != want.get(*key) {
                    mismatches.push(format!(
                        "{} frame {}: {key}: rocelab {:?}, scapy {:?}",
                        capture.file_name().unwrap().to_string_lossy(),
                        i + 1,
                        got.get(*key),
                        want.get(*key)
                    ));
                }
            }
            for key in want.keys() {
                assert!(
                    COMPARED_KEYS.contains(&key.as_str()),
                    "the generator writes {key}, which this test does not compare"
                );
            }
            frames_checked += 1;
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    assert!(
        frames_checked >= 150,
        "only {frames_checked} frames checked"
    );
}

#[test]
fn the_deliberately_bad_icrc_is_caught() {
    // The generator flips one bit of one stored ICRC (and only one): rocelab must say so.
    let want = expected(&common::repo("pcaps/roce_rc_ipv4.json"));
    let frames = common::read_frames(&common::repo("pcaps/roce_rc_ipv4.pcap"));
    let mut bad = 0;
    for (i, want) in want["frames"].as_array().unwrap().iter().enumerate() {
        let (ts, frame) = &frames[i];
        let (record, _) = FrameRecord::decode(i as u64 + 1, Some(*ts), frame.len() as u32, frame);
        if want["icrc_ok"] == Value::Bool(false) {
            assert_eq!(record.icrc_ok, Some(false), "frame {}", i + 1);
            bad += 1;
        }
    }
    assert_eq!(bad, 1);
}

#[test]
fn stream_summary_matches_the_generator() {
    let capture = common::repo("pcaps/roce_streams.pcap");
    let want = expected(&common::repo("pcaps/roce_streams.json"));
    let want = want["summary"].as_object().unwrap();
    let mut out = Vec::new();
    inspect::run(fs::File::open(&capture).unwrap(), &mut out, Output::Json).unwrap();
    let text = String::from_utf8(out).unwrap();
    let last = text.lines().last().unwrap();
    let got: Value = serde_json::from_str(last).unwrap();
    let got = got["summary"].as_object().unwrap();
    for (key, want_value) in want {
        match key.as_str() {
            "qps" => {
                let got_qps = got["qps"].as_array().unwrap();
                let want_qps = want_value.as_array().unwrap();
                assert_eq!(got_qps.len(), want_qps.len(), "number of QPs");
                for (g, w) in got_qps.iter().zip(want_qps) {
                    for (k, v) in w.as_object().unwrap() {
                        assert_eq!(&g[k], v, "QP {w}: {k}");
                    }
                }
            }
            _ => assert_eq!(&got[key], want_value, "summary {key}"),
        }
    }
}
