//! The hot-path frame parse, and what a switch then does with a frame it accepted:
//! classify it, decode its RoCE transport and MAC Control parts, check its ICRC, mark it
//! CE. Nothing may panic, and the contracts the wire module states must hold:
//! a CE mark leaves a frame that parses to the same meta with ECN = CE, keeps a valid IPv4
//! header checksum valid and a valid ICRC valid; `icrc::fill` makes the ICRC verify.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rocelab::config::SwitchConfig;
use rocelab::inspect::FrameRecord;
use rocelab::switch::classify::Classifier;
use rocelab::time::Nanos;
use rocelab::wire::{self, CeMark, Ecn, FrameMeta, Ipv4Packet, MacControl, RocePacket, icrc};
use std::sync::OnceLock;

fn classifiers() -> &'static [Classifier] {
    static C: OnceLock<Vec<Classifier>> = OnceLock::new();
    C.get_or_init(|| {
        rocelab::config::PRESETS
            .iter()
            .map(|(name, _)| Classifier::new(&SwitchConfig::preset(name).expect("preset")))
            .collect()
    })
}

fn ipv4_checksum_ok(frame: &[u8], meta: &FrameMeta) -> Option<bool> {
    if !meta.is_ipv4() {
        return None;
    }
    let l3 = frame.get(usize::from(meta.l3_offset())..)?;
    Some(Ipv4Packet::new_checked(l3).ok()?.verify_checksum())
}

fuzz_target!(|data: &[u8]| {
    // The inspector's decode goes through every layer, with its own error paths.
    let _ = FrameRecord::decode(1, Some(Nanos(0)), data.len() as u32, data);

    let Ok(meta) = wire::parse(data) else {
        return;
    };
    // Every getter, and the classification of each preset.
    let _ = (
        meta.l3_offset(),
        meta.l4_offset(),
        meta.udp_len(),
        meta.ethertype(),
        meta.flags(),
        meta.vlan_pcp(),
        meta.dscp(),
        meta.ip_proto(),
        meta.bth_opcode(),
        meta.dest_qp(),
        meta.psn(),
        meta.ack_req(),
        meta.becn(),
        meta.fecn(),
        meta.bth_offset(),
        meta.icrc_offset(),
    );
    for c in classifiers() {
        let tc = c.traffic_class(&meta);
        assert!(tc < 8, "traffic class {tc} out of range");
        let _ = c.queue(tc);
        let _ = c.default_class();
    }
    if meta.is_roce() {
        let _ = RocePacket::parse(data, &meta);
    }
    if meta.is_mac_control() {
        let _ = MacControl::parse_frame(data, &meta);
    }
    let icrc_ok = icrc::verify(data, &meta);
    let _ = icrc::stored(data, &meta);
    let csum_ok = ipv4_checksum_ok(data, &meta);

    // CE marking, as the switch does it on a copy of the frame.
    let mut marked = data.to_vec();
    match wire::mark_ce(&mut marked, &meta) {
        CeMark::Marked => {
            let after = wire::parse(&marked).expect("a CE-marked frame must still parse");
            assert_eq!(after.ecn(), Ecn::Ce, "mark_ce did not set CE");
            assert_eq!(after.dscp(), meta.dscp(), "mark_ce changed the DSCP");
            assert_eq!(after.is_roce(), meta.is_roce());
            assert_eq!(after.l4_offset(), meta.l4_offset());
            assert_eq!(after.dest_qp(), meta.dest_qp());
            assert_eq!(after.psn(), meta.psn());
            if csum_ok == Some(true) {
                assert_eq!(
                    ipv4_checksum_ok(&marked, &after),
                    Some(true),
                    "mark_ce broke a valid IPv4 header checksum"
                );
            }
            if icrc_ok == Some(true) {
                assert_eq!(
                    icrc::verify(&marked, &after),
                    Some(true),
                    "mark_ce broke a valid ICRC"
                );
            }
        }
        CeMark::AlreadyCe | CeMark::NotEct | CeMark::NotIp => {
            assert_eq!(marked, data, "mark_ce changed a frame it did not mark");
        }
    }

    // Filling the ICRC makes it verify.
    let mut filled = data.to_vec();
    if icrc::fill(&mut filled, &meta).is_some() {
        assert_eq!(
            icrc::verify(&filled, &meta),
            Some(true),
            "icrc::fill did not verify"
        );
    }
});
