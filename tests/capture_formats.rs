//! The capture reader against files written by another implementation: editcap (Wireshark)
//! converts a reference capture to pcapng (nanosecond if_tsresol) and to microsecond pcap,
//! and rocelab must read the same frames with the same (or truncated) timestamps.

mod common;

use std::process::Command;

#[test]
fn reads_what_editcap_writes() {
    if !common::have_tool(
        "reads_what_editcap_writes",
        "editcap",
        "apt-get install tshark",
    ) {
        return;
    }
    let source = common::repo("pcaps/roce_streams.pcap");
    let original = common::read_frames(&source);
    let dir = tempfile::tempdir().unwrap();
    for (format, name, ts_unit_ns) in [("pcapng", "s.pcapng", 1), ("pcap", "s_us.pcap", 1_000)] {
        let out = dir.path().join(name);
        let status = Command::new("editcap")
            .args(["-F", format])
            .arg(&source)
            .arg(&out)
            .status()
            .expect("run editcap");
        assert!(status.success(), "editcap -F {format}");
        let converted = common::read_frames(&out);
        assert_eq!(converted.len(), original.len(), "{format}");
        for (i, ((ts_a, a), (ts_b, b))) in original.iter().zip(&converted).enumerate() {
            assert_eq!(a, b, "{format} frame {}", i + 1);
            assert_eq!(
                ts_a.0 / ts_unit_ns * ts_unit_ns,
                ts_b.0,
                "{format} frame {} time",
                i + 1
            );
        }
    }
}
