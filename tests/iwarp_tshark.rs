//! iWARP frames rocelab builds are dissected by tshark, field by field: a TCP handshake
//! with MSS, SACK-permitted, timestamps and window scale; an MPA Request and Reply; FPDUs
//! carrying RDMA Writes, a Read Request and its Read Response, Sends (plain, with
//! Solicited Event, with Invalidate) and a Terminate, each with a CRC32c that tshark
//! recomputes; a pure ACK with SACK blocks and ECE; and a second connection with markers.
//! Expected values are the builders' inputs; tshark (Wireshark's TCP, iwarp_mpa and
//! iwarp_ddp_rdmap dissectors) is the independent reader.

mod common;

use rocelab::capture::PcapWriter;
use rocelab::time::Nanos;
use rocelab::wire::ddp::{DdpRepr, Placement, RdmapOpcode, ReadRequest, TerminateControl, queue};
use rocelab::wire::iwarp::{FpduRepr, IwarpRepr, TcpPayload};
use rocelab::wire::mpa::{MpaStartRepr, REVISION, StartKind};
use rocelab::wire::tcp::{SackBlocks, TcpFlags, TcpOptions, TcpRepr, Timestamps};
use rocelab::wire::{Ecn, Ipv4Repr, MacAddr};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::process::Command;

/// One side of a TCP connection: its addresses and the next sequence number it sends.
#[derive(Clone, Copy)]
struct Side {
    mac: MacAddr,
    ip: Ipv4Addr,
    port: u16,
    seq: u32,
    /// Where this side's first FPDU starts, once it has sent one with markers on.
    marker_origin: Option<u32>,
}

/// What tshark should read in one frame: (field, value) pairs; an empty value means
/// the field must be absent.
type Expect = Vec<(&'static str, String)>;

/// A connection and the frames built on it, with what tshark should read in each.
struct Conn {
    sides: [Side; 2],
    markers: bool,
    frames: Vec<Vec<u8>>,
    expect: Vec<Expect>,
}

impl Conn {
    fn new(client_port: u16, isn: [u32; 2], markers: bool) -> Conn {
        let side = |n: u8, port, seq| Side {
            mac: MacAddr([2, 0, 0xc6, 0x12, 0, n]),
            ip: Ipv4Addr::new(198, 18, 0, n),
            port,
            seq,
            marker_origin: None,
        };
        Conn {
            sides: [side(1, client_port, isn[0]), side(2, 40000, isn[1])],
            markers,
            frames: Vec::new(),
            expect: Vec::new(),
        }
    }

    /// Builds a segment from side `from` and records the TCP and IP fields tshark must
    /// read; returns the index of the frame's expectations, for the caller to add more.
    fn send(
        &mut self,
        from: usize,
        flags: TcpFlags,
        options: TcpOptions,
        payload: TcpPayload<'_>,
    ) -> usize {
        let (me, peer) = (self.sides[from], self.sides[1 - from]);
        let ecn = if payload.is_empty() {
            Ecn::NotEct
        } else {
            Ecn::Ect0
        };
        let tcp = TcpRepr {
            src_port: me.port,
            dst_port: peer.port,
            seq: me.seq,
            ack: if flags.contains(TcpFlags::ACK) {
                peer.seq
            } else {
                0
            },
            flags,
            window: 0x7fff,
            urgent: 0,
            options,
        };
        let repr = IwarpRepr {
            eth_dst: peer.mac,
            eth_src: me.mac,
            vlan: None,
            ip: Ipv4Repr {
                src: me.ip,
                dst: peer.ip,
                dscp: 26,
                ecn,
                ident: self.frames.len() as u16,
                dont_frag: true,
                ttl: 64,
            },
            tcp,
            payload,
        };
        let mut buf = vec![0u8; repr.frame_len()];
        let n = repr.emit(&mut buf).unwrap();
        buf.truncate(n);
        self.frames.push(buf);
        let syn_fin = u32::from(flags.intersects(TcpFlags::SYN | TcpFlags::FIN));
        self.sides[from].seq = me.seq.wrapping_add(payload.len() as u32 + syn_fin);
        let mut kinds = Vec::new();
        if options.mss.is_some() {
            kinds.push("2");
        }
        match (options.sack_permitted, options.timestamps.is_some()) {
            (true, true) => kinds.extend(["4", "8"]),
            (false, true) => kinds.extend(["1", "1", "8"]),
            (true, false) => kinds.extend(["1", "1", "4"]),
            (false, false) => {}
        }
        if options.window_scale.is_some() {
            kinds.extend(["1", "3"]);
        }
        if !options.sack.is_empty() {
            kinds.extend(["1", "1", "5"]);
        }
        let mut e = vec![
            ("tcp.srcport", me.port.to_string()),
            ("tcp.dstport", peer.port.to_string()),
            ("tcp.seq_raw", me.seq.to_string()),
            ("tcp.ack_raw", tcp.ack.to_string()),
            ("tcp.flags", u64::from(flags.bits()).to_string()),
            ("tcp.window_size_value", "32767".into()),
            ("tcp.checksum.status", "1".into()),
            ("tcp.option_kind", kinds.join(",")),
            ("ip.checksum.status", "1".into()),
            ("ip.dsfield.dscp", "26".into()),
            ("ip.dsfield.ecn", (ecn as u8).to_string()),
        ];
        let mut put = |k, v: Option<String>| e.push((k, v.unwrap_or_default()));
        put("tcp.options.mss_val", options.mss.map(|v| v.to_string()));
        put(
            "tcp.options.wscale.shift",
            options.window_scale.map(|v| v.to_string()),
        );
        put(
            "tcp.options.timestamp.tsval",
            options.timestamps.map(|t| t.value.to_string()),
        );
        put(
            "tcp.options.timestamp.tsecr",
            options.timestamps.map(|t| t.echo.to_string()),
        );
        let sack = |f: fn(&(u32, u32)) -> u32| {
            (!options.sack.is_empty()).then(|| {
                let edges: Vec<String> = options
                    .sack
                    .as_slice()
                    .iter()
                    .map(|b| f(b).to_string())
                    .collect();
                edges.join(",")
            })
        };
        put("tcp.options.sack_le", sack(|b| b.0));
        put("tcp.options.sack_re", sack(|b| b.1));
        self.expect.push(e);
        self.expect.len() - 1
    }

    fn handshake(&mut self) {
        let ts = |value, echo| Some(Timestamps { value, echo });
        let syn = TcpOptions {
            mss: Some(8960),
            window_scale: Some(9),
            sack_permitted: true,
            timestamps: ts(100, 0),
            ..TcpOptions::default()
        };
        self.send(0, TcpFlags::SYN, syn, TcpPayload::Empty);
        let syn_ack = TcpOptions {
            timestamps: ts(500, 100),
            window_scale: Some(7),
            ..syn
        };
        self.send(1, TcpFlags::SYN | TcpFlags::ACK, syn_ack, TcpPayload::Empty);
        self.send(0, TcpFlags::ACK, data_options(), TcpPayload::Empty);
    }

    /// The MPA Request from the client and the Reply from the server.
    fn mpa_start(&mut self, private_data: &[u8]) {
        for (from, kind) in [(0, StartKind::Request), (1, StartKind::Reply)] {
            let start = MpaStartRepr {
                kind,
                markers: self.markers,
                crc: true,
                reject: false,
                revision: REVISION,
                private_data,
            };
            let at = self.send(
                from,
                TcpFlags::ACK | TcpFlags::PSH,
                data_options(),
                TcpPayload::Start(start),
            );
            let (key, item) = match kind {
                StartKind::Request => ("iwarp_mpa.key.req", "MPA ID Req Frame"),
                StartKind::Reply => ("iwarp_mpa.key.rep", "MPA ID Rep Frame"),
            };
            let hex: String = item.bytes().map(|b| format!("{b:02x}")).collect();
            let pd: String = private_data.iter().map(|b| format!("{b:02x}")).collect();
            self.expect[at].extend([
                (key, hex),
                ("iwarp_mpa.marker_flag", bool_field(self.markers)),
                ("iwarp_mpa.crc_flag", "1".into()),
                ("iwarp_mpa.rej_flag", "0".into()),
                ("iwarp_mpa.rev", "1".into()),
                ("iwarp_mpa.pdlength", private_data.len().to_string()),
                ("iwarp_mpa.privatedata", pd),
            ]);
        }
    }

    /// An FPDU from side `from`; records the MPA, DDP and RDMAP fields.
    fn fpdu(&mut self, from: usize, ddp: DdpRepr, rr: Option<ReadRequest>, payload: &[u8]) {
        let seq = self.sides[from].seq;
        let marker_offset = self.markers.then(|| {
            let origin = *self.sides[from].marker_origin.get_or_insert(seq);
            u64::from(seq.wrapping_sub(origin))
        });
        let fpdu = FpduRepr {
            ddp,
            read_request: rr,
            payload,
            crc: true,
            marker_offset,
        };
        let at = self.send(
            from,
            TcpFlags::ACK | TcpFlags::PSH,
            data_options(),
            TcpPayload::Fpdu(fpdu),
        );
        // Each marker's FPDUPTR: its distance from the FPDU's first byte.
        let len = fpdu.len();
        let pointers: Vec<String> = (0..len)
            .filter(|&at| marker_offset.is_some_and(|o| (o + at as u64).is_multiple_of(512)))
            .map(|at| at.to_string())
            .collect();
        let rr_len = if rr.is_some() { 28 } else { 0 };
        let ulpdu_len = ddp.header_len() + rr_len + payload.len();
        let e = &mut self.expect[at];
        e.extend([
            ("iwarp_mpa.ulpdulength", ulpdu_len.to_string()),
            ("iwarp_ddp.tagged_flag", bool_field(ddp.opcode.is_tagged())),
            ("iwarp_ddp.last_flag", bool_field(ddp.last)),
            ("iwarp_ddp.dv", "1".into()),
            ("iwarp_rdma.version", "1".into()),
            ("iwarp_rdma.opcode", ddp.opcode.0.to_string()),
            ("iwarp_mpa.marker_fpduptr", pointers.join(",")),
        ]);
        match ddp.placement {
            Placement::Tagged { stag, to } => e.extend([
                ("iwarp_ddp.stag", stag.to_string()),
                ("iwarp_ddp.tagged_offset", to.to_string()),
            ]),
            Placement::Untagged {
                qn,
                msn,
                mo,
                inval_stag,
            } => {
                e.extend([
                    ("iwarp_ddp.qn", qn.to_string()),
                    ("iwarp_ddp.msn", msn.to_string()),
                    ("iwarp_ddp.mo", mo.to_string()),
                ]);
                if matches!(ddp.opcode.0, 4 | 6) {
                    e.push(("iwarp_rdma.inval_stag", inval_stag.to_string()));
                }
            }
        }
        if let Some(rr) = rr {
            e.extend([
                ("iwarp_rdma.sinkstag", rr.sink_stag.to_string()),
                ("iwarp_rdma.sinkto", rr.sink_to.to_string()),
                ("iwarp_rdma.rdmardsz", rr.size.to_string()),
                ("iwarp_rdma.srcstag", rr.source_stag.to_string()),
                ("iwarp_rdma.srcto", rr.source_to.to_string()),
            ]);
        }
    }
}

fn data_options() -> TcpOptions {
    TcpOptions {
        timestamps: Some(Timestamps {
            value: 1000,
            echo: 500,
        }),
        ..TcpOptions::default()
    }
}

fn bool_field(b: bool) -> String {
    u8::from(b).to_string()
}

fn tagged(opcode: RdmapOpcode, last: bool, stag: u32, to: u64) -> DdpRepr {
    DdpRepr {
        last,
        ddp_version: 1,
        rdmap_version: 1,
        opcode,
        placement: Placement::Tagged { stag, to },
    }
}

fn untagged(opcode: RdmapOpcode, qn: u32, msn: u32, mo: u32, inval_stag: u32) -> DdpRepr {
    DdpRepr {
        last: true,
        ddp_version: 1,
        rdmap_version: 1,
        opcode,
        placement: Placement::Untagged {
            qn,
            msn,
            mo,
            inval_stag,
        },
    }
}

/// A connection without markers carrying every RDMAP message, and one with markers
/// carrying Writes that cross several 512-byte marker positions.
fn build() -> (Vec<Vec<u8>>, Vec<Expect>, usize) {
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 13 + 7) as u8).collect();
    let mut c = Conn::new(50000, [0x1000_0000, 0xfedc_b000], false);
    c.handshake();
    c.mpa_start(b"rocelab");
    let w = RdmapOpcode::WRITE;
    c.fpdu(
        0,
        tagged(w, false, 0x1234, 0x7f00_0000_0000),
        None,
        &data[..2048],
    );
    c.fpdu(
        0,
        tagged(w, true, 0x1234, 0x7f00_0000_0800),
        None,
        &data[2048..4093],
    );
    let rr = ReadRequest {
        sink_stag: 0x55,
        sink_to: 0x1_0000,
        size: 1000,
        source_stag: 0x66,
        source_to: 0x2_0000,
    };
    c.fpdu(
        0,
        untagged(RdmapOpcode::READ_REQUEST, queue::READ_REQUEST, 1, 0, 0),
        Some(rr),
        &[],
    );
    c.fpdu(
        1,
        tagged(RdmapOpcode::READ_RESPONSE, true, 0x55, 0x1_0000),
        None,
        &data[..1000],
    );
    c.fpdu(
        0,
        untagged(RdmapOpcode::SEND, queue::SEND, 1, 0, 0),
        None,
        &data[..301],
    );
    c.fpdu(
        0,
        untagged(RdmapOpcode::SEND_SE, queue::SEND, 2, 0, 0),
        None,
        &data[..64],
    );
    c.fpdu(
        1,
        untagged(RdmapOpcode::SEND_INVALIDATE, queue::SEND, 1, 0, 0x0bad_cafe),
        None,
        &data[..17],
    );
    let mut term = [0u8; 4];
    TerminateControl {
        layer: 0,
        error_type: 1,
        error_code: 2,
        ..TerminateControl::default()
    }
    .emit(&mut term)
    .unwrap();
    c.fpdu(
        1,
        untagged(RdmapOpcode::TERMINATE, queue::TERMINATE, 1, 0, 0),
        None,
        &term,
    );
    let (seq, fpdus_a) = (c.sides[1].seq, 8);
    let sack = SackBlocks::new(&[(seq + 3000, seq + 4000), (seq + 1000, seq + 2000)]).unwrap();
    let ack = TcpOptions {
        sack,
        ..data_options()
    };
    c.send(0, TcpFlags::ACK | TcpFlags::ECE, ack, TcpPayload::Empty);
    c.send(
        1,
        TcpFlags::ACK | TcpFlags::CWR,
        data_options(),
        TcpPayload::Empty,
    );

    let mut m = Conn::new(50001, [0x2000_0000, 0x3000_0000], true);
    m.handshake();
    m.mpa_start(&[]);
    for (i, chunk) in data.chunks(1300).enumerate() {
        let last = i == data.len().div_ceil(1300) - 1;
        m.fpdu(0, tagged(w, last, 0x99, 1300 * i as u64), None, chunk);
    }
    let fpdus = fpdus_a + data.len().div_ceil(1300);
    let mut frames = c.frames;
    frames.extend(m.frames);
    let mut expect = c.expect;
    expect.extend(m.expect);
    (frames, expect, fpdus)
}

/// The union of the fields the frames are checked on, in a stable order.
fn fields_of(expect: &[Expect]) -> Vec<&'static str> {
    let mut fields: Vec<&'static str> = expect.iter().flatten().map(|(k, _)| *k).collect();
    fields.sort_unstable();
    fields.dedup();
    fields
}

#[test]
fn tshark_dissects_the_iwarp_frames_rocelab_builds() {
    let test = "tshark_dissects_the_iwarp_frames_rocelab_builds";
    if !common::have_tool(test, "tshark", "apt-get install tshark") {
        return;
    }
    let (frames, expect, fpdus) = build();
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("iwarp.pcap");
    let mut w = PcapWriter::new(std::fs::File::create(&pcap).unwrap()).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(Nanos::from_micros(i as u64), f).unwrap();
    }
    w.finish().unwrap();

    let fields = fields_of(&expect);
    let mut cmd = Command::new("tshark");
    cmd.args([
        "-n",
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "tcp.check_checksum:TRUE",
    ])
    .args(["-o", "tcp.relative_sequence_numbers:FALSE", "-r"])
    .arg(&pcap)
    .args([
        "-T",
        "fields",
        "-E",
        "separator=/t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ]);
    for f in fields
        .iter()
        .chain(&["_ws.malformed", "_ws.expert.message"])
    {
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
        let cols: Vec<&str> = line.split('\t').collect();
        let got: BTreeMap<&str, String> = fields
            .iter()
            .copied()
            .chain(["_ws.malformed", "_ws.expert.message"])
            .zip(cols.iter().map(|v| normalise(v)))
            .collect();
        assert_eq!(
            got["_ws.malformed"],
            "",
            "frame {}: malformed: {line}",
            i + 1
        );
        let mut want_all: BTreeMap<&str, String> =
            fields.iter().map(|f| (*f, String::new())).collect();
        want_all.extend(want.iter().cloned());
        for (field, value) in &want_all {
            assert_eq!(
                &got[field],
                value,
                "frame {}: {field}; tshark read {line:?}",
                i + 1
            );
        }
    }

    // tshark recomputes each FPDU's CRC32c and says whether it is good.
    let verbose = Command::new("tshark")
        .args(["-n", "-V", "-r"])
        .arg(&pcap)
        .output()
        .expect("run tshark -V");
    let text = String::from_utf8_lossy(&verbose.stdout);
    assert_eq!(text.matches("(Good CRC32)").count(), fpdus, "{text}");
    assert_eq!(text.matches("Bad CRC32").count(), 0);
}

/// A tshark value as the expectations spell it: numbers in decimal, booleans as 0 or 1,
/// each item of a list likewise.
fn normalise(value: &str) -> String {
    value
        .split(',')
        .map(|v| match v {
            "" => String::new(),
            "True" => "1".into(),
            "False" => "0".into(),
            v if v.starts_with("0x") || v.bytes().all(|b| b.is_ascii_digit()) => {
                common::tshark_number(v).to_string()
            }
            v => v.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}
