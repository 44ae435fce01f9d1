//! The pcapng reader on files crafted here block by block (timestamp resolutions in powers
//! of 10 and 2, a timestamp offset, simple and obsolete packet blocks, a big-endian
//! section, a second section, an interface of another link type), judged against tshark's
//! reading of the same files.

mod common;

use rocelab::capture::CaptureReader;
use std::process::Command;

/// Builds pcapng blocks in one byte order.
struct Ng {
    big_endian: bool,
    out: Vec<u8>,
}

impl Ng {
    fn u16(&self, v: u16) -> [u8; 2] {
        if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn u32(&self, v: u32) -> [u8; 4] {
        if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn block(&mut self, block_type: u32, body: &[u8]) {
        let mut body = body.to_vec();
        body.resize(body.len().div_ceil(4) * 4, 0);
        let total = body.len() as u32 + 12;
        let (t, l) = (self.u32(block_type), self.u32(total));
        self.out.extend_from_slice(&t);
        self.out.extend_from_slice(&l);
        self.out.extend_from_slice(&body);
        self.out.extend_from_slice(&l);
    }

    fn option(&self, code: u16, value: &[u8]) -> Vec<u8> {
        let mut o = Vec::new();
        o.extend_from_slice(&self.u16(code));
        o.extend_from_slice(&self.u16(value.len() as u16));
        o.extend_from_slice(value);
        o.resize(o.len().div_ceil(4) * 4, 0);
        o
    }

    fn section(&mut self) {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u32(0x1a2b_3c4d));
        body.extend_from_slice(&self.u16(1));
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&[0xff; 8]);
        self.block(0x0a0d_0d0a, &body);
    }

    fn interface(
        &mut self,
        link_type: u16,
        snaplen: u32,
        tsresol: Option<u8>,
        tsoffset: Option<i64>,
    ) {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u16(link_type));
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&self.u32(snaplen));
        if let Some(r) = tsresol {
            body.extend(self.option(9, &[r]));
        }
        if let Some(off) = tsoffset {
            let bytes = if self.big_endian {
                off.to_be_bytes()
            } else {
                off.to_le_bytes()
            };
            body.extend(self.option(14, &bytes));
        }
        body.extend_from_slice(&[0; 4]);
        self.block(1, &body);
    }

    fn enhanced(&mut self, interface: u32, ts: u64, frame: &[u8], orig_len: u32) {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u32(interface));
        body.extend_from_slice(&self.u32((ts >> 32) as u32));
        body.extend_from_slice(&self.u32(ts as u32));
        body.extend_from_slice(&self.u32(frame.len() as u32));
        body.extend_from_slice(&self.u32(orig_len));
        body.extend_from_slice(frame);
        self.block(6, &body);
    }

    fn obsolete(&mut self, interface: u16, ts: u64, frame: &[u8]) {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u16(interface));
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&self.u32((ts >> 32) as u32));
        body.extend_from_slice(&self.u32(ts as u32));
        body.extend_from_slice(&self.u32(frame.len() as u32));
        body.extend_from_slice(&self.u32(frame.len() as u32));
        body.extend_from_slice(frame);
        self.block(2, &body);
    }

    fn simple(&mut self, frame: &[u8]) {
        let mut body = Vec::new();
        body.extend_from_slice(&self.u32(frame.len() as u32));
        body.extend_from_slice(frame);
        self.block(3, &body);
    }
}

fn frame(tag: u8, len: usize) -> Vec<u8> {
    let mut f = vec![tag; len];
    f[12] = 0x08;
    f[13] = 0x06; // ARP, so tshark has nothing to complain about
    f
}

/// A frame as read: its number, ns since the epoch (none for a simple packet block), wire
/// length and captured length.
type View = (u64, Option<u64>, u32, u32);

/// Every frame as tshark reads it.
fn tshark_view(path: &std::path::Path) -> Vec<View> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args([
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "frame.time_epoch",
            "-e",
            "frame.len",
            "-e",
            "frame.cap_len",
        ])
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            let number = cols[0].parse().unwrap();
            let cols = &cols[1..];
            // A Simple Packet Block has no timestamp: tshark shows none.
            let ns = (!cols[0].is_empty()).then(|| {
                let (secs, frac) = cols[0].split_once('.').unwrap_or((cols[0], "0"));
                let frac = format!("{frac:0<9}");
                secs.parse::<u64>().unwrap() * 1_000_000_000 + frac[..9].parse::<u64>().unwrap()
            });
            (
                number,
                ns,
                cols[1].parse().unwrap(),
                cols[2].parse().unwrap(),
            )
        })
        .collect()
}

/// Every frame as rocelab reads it, and how many it skipped.
/// `rocelab inspect --json` of `path`: its lines, each a JSON object.
fn inspect_json(path: &std::path::Path) -> Vec<serde_json::Value> {
    let mut json = Vec::new();
    rocelab::inspect::run(
        std::fs::File::open(path).unwrap(),
        &mut json,
        rocelab::inspect::Output::Json,
    )
    .unwrap();
    String::from_utf8(json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn rocelab_view(path: &std::path::Path) -> (Vec<View>, u64) {
    let mut r = CaptureReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet().unwrap() {
        out.push((p.number, p.ts.map(|t| t.0), p.orig_len, p.data.len() as u32));
    }
    (out, r.skipped_non_ethernet())
}

#[test]
fn pcapng_variants_read_as_tshark_reads_them() {
    if !common::have_tool(
        "pcapng_variants_read_as_tshark_reads_them",
        "tshark",
        "apt-get install tshark",
    ) {
        return;
    }
    let mut le = Ng {
        big_endian: false,
        out: Vec::new(),
    };
    le.section();
    le.interface(1, 0, None, None); // 0: microseconds (default)
    le.interface(1, 0, Some(9), None); // 1: nanoseconds
    le.interface(1, 0, Some(0x80 | 20), None); // 2: 2^-20 s
    le.interface(1, 0, Some(3), Some(1_600_000_000)); // 3: milliseconds, offset
    le.interface(1, 96, None, None); // 4: snap length 96 (for SPBs, interface 0 counts)
    le.enhanced(0, 1_700_000_000_123_456, &frame(1, 60), 60);
    le.enhanced(1, 1_700_000_000_123_456_789, &frame(2, 64), 64);
    le.enhanced(2, (1_700_000_000u64 << 20) + 777_777, &frame(3, 70), 70);
    le.enhanced(3, 123_456, &frame(4, 80), 80);
    le.enhanced(4, 1_700_000_001_000_000, &frame(5, 96), 1500); // cut by the snap length
    le.obsolete(1, 1_700_000_002_000_000_001, &frame(6, 61));
    le.simple(&frame(7, 62)); // no timestamp
    // A second, big-endian section with its own interfaces.
    let mut be = Ng {
        big_endian: true,
        out: Vec::new(),
    };
    be.section();
    be.interface(113, 0, None, None); // Linux cooked: skipped, the rest still read
    be.interface(1, 0, Some(9), None);
    be.enhanced(0, 5, &[0u8; 20], 20);
    be.enhanced(1, 1_700_000_003_000_000_003, &frame(8, 63), 63);
    let mut bytes = le.out;
    bytes.extend(be.out);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("variants.pcapng");
    std::fs::write(&path, &bytes).unwrap();
    let (ours, skipped) = rocelab_view(&path);
    assert_eq!(skipped, 1);
    let theirs: Vec<_> = tshark_view(&path);
    // tshark lists the cooked frame too; rocelab skips it (and says so).
    let theirs: Vec<_> = theirs
        .into_iter()
        .filter(|&(_, _, len, _)| len != 20)
        .collect();
    assert_eq!(ours.len(), 8);
    // Frame 7 is a Simple Packet Block: no timestamp, in either reading (rocelab gave it
    // 0 s, which inspect showed 1.7e9 s before the first frame).
    assert_eq!(ours[6].1, None);
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(
            a,
            b,
            "frame {}: rocelab (number, ns, len, caplen) vs tshark",
            i + 1
        );
    }
}

/// A frame of a non-Ethernet interface is skipped but keeps its number: rocelab numbered
/// the frames after it one short of tshark's frame.number (1..4 where tshark said 1, 3, 4,
/// 5), in the reader and in every `#` and JSON `index` of inspect.
#[test]
fn frames_after_a_skipped_interface_keep_tsharks_numbers() {
    let mut ng = Ng {
        big_endian: false,
        out: Vec::new(),
    };
    ng.section();
    ng.interface(1, 0, None, None); // 0: Ethernet
    ng.interface(101, 0, None, None); // 1: raw IP
    ng.enhanced(0, 1_700_000_000_000_000, &frame(1, 60), 60);
    let mut raw_ip = vec![0u8; 28];
    raw_ip[0] = 0x45;
    raw_ip[3] = 28;
    ng.enhanced(1, 1_700_000_000_000_010, &raw_ip, 28);
    for i in 0..3 {
        ng.enhanced(0, 1_700_000_000_000_020 + i, &frame(2 + i as u8, 60), 60);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.pcapng");
    std::fs::write(&path, &ng.out).unwrap();

    let (ours, skipped) = rocelab_view(&path);
    assert_eq!(skipped, 1);
    let numbers: Vec<u64> = ours.iter().map(|f| f.0).collect();
    assert_eq!(numbers, [1, 3, 4, 5]);
    let indices: Vec<u64> = inspect_json(&path)
        .iter()
        .filter_map(|v| v["index"].as_u64())
        .collect();
    assert_eq!(indices, [1, 3, 4, 5]);
    if common::have_tool(
        "frames_after_a_skipped_interface_keep_tsharks_numbers",
        "tshark",
        "apt-get install tshark",
    ) {
        let theirs: Vec<u64> = tshark_view(&path)
            .into_iter()
            .filter(|&(_, _, len, _)| len == 60)
            .map(|f| f.0)
            .collect();
        assert_eq!(numbers, theirs);
    }
}

/// A Simple Packet Block has no timestamp. rocelab read it as time 0: inspect showed it
/// at -1700000000.123456789 s, and as the last frame it set last_ts_ns to 0 and the span
/// to "over 0.000000000 s" (the capture spans 0.88 s); a replay started at 1970. It now
/// has no time: inspect shows none and leaves it out of the span, and a replay enters it
/// with the frame before it in its capture (or the first timed one after it).
#[test]
fn a_simple_packet_block_has_no_time() {
    let t0: u64 = 1_700_000_000_123_456; // µs
    let mut ng = Ng {
        big_endian: false,
        out: Vec::new(),
    };
    ng.section();
    ng.interface(1, 0, None, None);
    ng.simple(&frame(1, 60));
    ng.enhanced(0, t0, &frame(2, 60), 60);
    ng.simple(&frame(3, 60));
    ng.enhanced(0, t0 + 880_000, &frame(4, 60), 60);
    ng.simple(&frame(5, 60));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spb.pcapng");
    std::fs::write(&path, &ng.out).unwrap();

    let mut table = Vec::new();
    let s = rocelab::inspect::run(
        std::fs::File::open(&path).unwrap(),
        &mut table,
        rocelab::inspect::Output::Table,
    )
    .unwrap();
    assert_eq!(s.frames, 5);
    assert_eq!(s.first_ts_ns, Some(t0 * 1_000));
    assert_eq!(s.last_ts_ns, Some((t0 + 880_000) * 1_000));
    let table = String::from_utf8(table).unwrap();
    let times: Vec<&str> = table
        .lines()
        .skip(1)
        .take(5)
        .map(|l| l[8..20].trim())
        .collect();
    assert_eq!(times, ["", "0.000000000", "", "0.880000000", ""], "{table}");
    assert!(table.contains("over 0.880000000 s"), "{table}");

    let lines = inspect_json(&path);
    assert!(lines[0]["ts"].is_null() && lines[0]["ts_ns"].is_null());
    assert_eq!(lines[1]["ts"], "1700000000.123456000");

    // Replayed, the first SPB enters with the first EPB, not in 1970.
    let opts = common::replay_options(
        rocelab::replay::Inputs::Bound(vec![("p1".into(), path.clone())]),
        dir.path().join("out.pcapng"),
    );
    let (summary, _) = rocelab::replay::run(&opts).unwrap();
    assert_eq!(summary.frames_in, 5);
    assert_eq!(summary.frames_untimed, 3);
    assert_eq!(summary.start_ns, t0 * 1_000);
}
