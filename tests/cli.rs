//! The `rocelab` command line: inspect on good, truncated and foreign files, JSON lines,
//! and the subcommands that are not built yet.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn rocelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(args)
        .output()
        .expect("run rocelab")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_every_subcommand() {
    let out = rocelab(&["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    // The subcommand list: lines under "Commands:" that start with two spaces and a name.
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for cmd in ["inspect", "replay", "switch", "endpoint", "sim", "lab"] {
        assert!(listed.contains(&cmd), "--help lacks {cmd}:\n{help}");
        let sub = rocelab(&[cmd, "--help"]);
        assert!(sub.status.success(), "{cmd} --help failed");
    }
}

#[test]
fn inspect_prints_a_line_per_frame_and_a_summary() {
    let pcap = common::repo("pcaps/roce_streams.pcap");
    let out = rocelab(&["inspect", pcap.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let frame_lines = stdout
        .lines()
        .filter(|l| {
            let mut words = l.split_whitespace();
            let index = words.next().is_some_and(|w| w.parse::<u32>().is_ok());
            let time = words.next().is_some_and(|w| w.contains('.'));
            index && time
        })
        .count();
    assert_eq!(frame_lines, 29);
    assert!(stdout.contains("CNP"));
    assert!(stdout.contains("Per QP"));
    assert!(stdout.contains("PFC per priority"));
}

#[test]
fn inspect_json_is_one_object_per_line_then_the_summary() {
    let pcap = common::repo("pcaps/roce_mixed.pcapng");
    let out = rocelab(&["inspect", "--json", pcap.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 8 + 1);
    for (i, l) in lines[..8].iter().enumerate() {
        assert_eq!(l["index"], i + 1);
    }
    assert_eq!(lines[8]["summary"]["frames"], 8);
}

/// Byte offsets of the records of a classic pcap, from its record headers (read here, not
/// by rocelab): 24-byte file header, then 16-byte record headers with the captured length
/// at offset 8 (little-endian in the generator's files).
fn record_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut offsets = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        offsets.push(at);
        let caplen = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + caplen;
    }
    offsets
}

#[test]
fn truncated_capture_prints_what_it_read_then_names_file_and_offset() {
    let original = std::fs::read(common::repo("pcaps/roce_rc_ipv4.pcap")).unwrap();
    let offsets = record_offsets(&original);
    let dir = tempfile::tempdir().unwrap();
    let cut_file = dir.path().join("cut.pcap");
    // Cut in the middle of the 6th record.
    let cut = offsets[5] + 30;
    std::fs::write(&cut_file, &original[..cut]).unwrap();
    for json in [false, true] {
        let mut args = vec!["inspect"];
        if json {
            args.push("--json");
        }
        args.push(cut_file.to_str().unwrap());
        let out = rocelab(&args);
        assert!(!out.status.success());
        let stderr = text(&out.stderr);
        assert!(stderr.contains("cut.pcap"), "{stderr}");
        assert!(
            stderr.contains(&format!("byte offset {}", offsets[5])),
            "{stderr}"
        );
        assert!(stderr.contains("ends inside"), "{stderr}");
        let stdout = text(&out.stdout);
        if json {
            let lines: Vec<&str> = stdout.lines().collect();
            assert_eq!(lines.len(), 5 + 1, "5 frames and the summary:\n{stdout}");
            assert!(lines[5].contains("\"summary\""));
        } else {
            assert!(
                stdout.contains("Summary of the frames read: 5 frames"),
                "{stdout}"
            );
        }
    }
}

#[test]
fn corrupt_record_length_is_named() {
    let mut bytes = std::fs::read(common::repo("pcaps/mac_control.pcap")).unwrap();
    let offsets = record_offsets(&bytes);
    let at = offsets[2];
    bytes[at + 8..at + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupt.pcap");
    std::fs::write(&path, &bytes).unwrap();
    let out = rocelab(&["inspect", path.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("byte offset {at}")) && stderr.contains("corrupt"),
        "{stderr}"
    );
}

#[test]
fn not_a_capture_and_missing_file_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "hello, this is not a capture").unwrap();
    let out = rocelab(&["inspect", path.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("notes.txt") && stderr.contains("not a pcap or pcapng file"),
        "{stderr}"
    );
    assert!(stderr.contains("byte offset 0"), "{stderr}");

    let missing = Path::new("/nonexistent/capture.pcap");
    let out = rocelab(&["inspect", missing.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("/nonexistent/capture.pcap"));
}

#[test]
fn live_commands_check_their_arguments_before_touching_the_network() {
    let cases: [(&[&str], &str); 16] = [
        (&["switch", "--port", "p0"], "expected NAME=IFNAME"),
        (&["switch", "--port", "p0=lo"], "loopback interface"),
        // `traffic send` on lo was accepted while `switch` refused it as a port.
        (
            &[
                "traffic",
                "send",
                "--iface",
                "lo",
                "--dst-mac",
                "02:00:00:00:00:02",
            ],
            "--iface lo: lo is a loopback interface",
        ),
        // A line each 0.1 µs was accepted (200,000 lines a second); 0 is none.
        (
            &["switch", "--port", "p0=a", "--interval", "0.0000001"],
            "--interval 0.0000001: give at least 0.01 s",
        ),
        (
            &["switch", "--port", "p0=a", "--interval", "0.009"],
            "give at least 0.01 s",
        ),
        (
            &["switch", "--port", "p0=a", "--cores", "0,0"],
            "listed twice",
        ),
        (&["lab", "--cores", "0,1,1"], "listed twice"),
        (
            &[
                "switch",
                "--port",
                "p0=a",
                "--static-mac",
                "ff:ff:ff:ff:ff:ff=p0",
            ],
            "group (multicast or broadcast) address",
        ),
        (
            &[
                "switch",
                "--port",
                "p0=a",
                "--static-mac",
                "02:00:00:00:00:01=p9",
            ],
            "no port p9; the ports are p0",
        ),
        (
            &[
                "switch",
                "--port",
                "p0=a",
                "--port",
                "p1=b",
                "--static-mac",
                "02:00:00:00:00:01=p0",
                "--static-mac",
                "0200.0000.0001=p1",
            ],
            "02:00:00:00:00:01 already has an entry, on port p0",
        ),
        (
            &[
                "switch",
                "--port",
                "p0=a",
                "--static-mac",
                "02:00:00:00:00=p0",
            ],
            "not a MAC address",
        ),
        // A negative number is the option's value, refused with its range.
        (&["lab", "--rate", "-1"], "give 0.001 to 100 Gb/s"),
        (
            &["switch", "--port", "p0=a", "--port", "p0=b"],
            "given twice",
        ),
        (
            &["switch", "--port", "p0=a", "--io", "xdp"],
            "possible values: pnet, mmap",
        ),
        (
            &["switch", "--port", "p0=a", "--cores", "0-x"],
            "core numbers",
        ),
        (
            &[
                "switch",
                "--port",
                "p0=a",
                "--metrics",
                "0.0.0.0:9100",
                "--duration",
                "0.1",
            ],
            "loopback",
        ),
    ];
    for (args, expect) in cases {
        let out = rocelab(args);
        assert!(!out.status.success(), "{args:?} exited 0");
        let err = text(&out.stderr);
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}

/// `rocelab endpoint` refuses a bad peers file, lo, flags of another mode and --limit 0,
/// all before it touches the network.
#[test]
fn an_endpoint_checks_its_peers_file_and_flags_before_touching_the_network() {
    let dir = tempfile::tempdir().unwrap();
    let peers = dir.path().join("peers.toml");
    std::fs::write(&peers, "[[peer]]\nrank = 0\nmac = \"02:00:00:00:00:01\"\nip = \"198.18.0.1\"\nqpn = 256\n[[peer]]\nrank = 2\nmac = \"zz\"\nip = \"198.18.0.2\"\nqpn = 512\n").unwrap();
    let out = rocelab(&[
        "endpoint",
        "--iface",
        "lo",
        "--peers",
        peers.to_str().unwrap(),
        "--rank",
        "0",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("peer[1].mac"),
        "{}",
        text(&out.stderr)
    );
    // An endpoint on lo (whose MAC, all zeros, a peers file can give) ran, sending its
    // frames back to itself; `traffic send` and `switch` refused lo.
    std::fs::write(&peers, "[[peer]]\nrank = 0\nmac = \"02:00:00:00:00:01\"\nip = \"198.18.0.1\"\nqpn = 256\n[[peer]]\nrank = 1\nmac = \"02:00:00:00:00:02\"\nip = \"198.18.0.2\"\nqpn = 512\n").unwrap();
    let out = rocelab(&[
        "endpoint",
        "--iface",
        "lo",
        "--peers",
        peers.to_str().unwrap(),
        "--rank",
        "0",
        "--limit",
        "1",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--iface lo: lo is a loopback interface"),
        "{}",
        text(&out.stderr)
    );
    // Send-only flags in another mode were taken and ignored; --limit 0 ended the run at
    // once. Both are refused before the interface is looked at.
    for (extra, expect) in [
        (
            &["--mode", "receive", "--to", "1", "--bytes", "1M"][..],
            "--to and --bytes are for --mode send; this is --mode receive",
        ),
        (
            &["--bytes", "1M"][..],
            "--bytes is for --mode send; this is --mode allreduce",
        ),
        (
            &["--limit", "0"][..],
            "--limit 0: the run would end before it starts",
        ),
    ] {
        let mut args = vec![
            "endpoint",
            "--iface",
            "lo",
            "--peers",
            peers.to_str().unwrap(),
            "--rank",
            "0",
        ];
        args.extend_from_slice(extra);
        let out = rocelab(&args);
        assert!(!out.status.success(), "{extra:?}");
        assert!(
            text(&out.stderr).contains(expect),
            "{extra:?}: {}",
            text(&out.stderr)
        );
    }
}

/// `lab` without iproute2 told root to run it with sudo. Root is told what is missing;
/// anyone else to be root first.
#[test]
fn lab_without_iproute2_says_what_is_missing_and_suggests_sudo_only_to_others() {
    let out = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .arg("lab")
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert!(err.contains("`ip` (iproute2) is not installed"), "{err}");
        assert!(!err.contains("sudo"), "{err}");
    } else {
        assert!(err.contains("run `sudo rocelab lab`"), "{err}");
    }
}

/// `--start-at` far ahead said "is 18446744073.71 s from now": the wait, in ns, saturated.
#[test]
fn an_endpoint_start_far_ahead_is_refused_with_the_real_wait() {
    let dir = tempfile::tempdir().unwrap();
    let peers = dir.path().join("peers.toml");
    // lo's MAC is all zeros: rank 0 on lo passes the MAC check, no root needed.
    std::fs::write(&peers, "[[peer]]\nrank = 0\nmac = \"02:00:00:00:00:01\"\nip = \"198.18.0.1\"\nqpn = 256\n[[peer]]\nrank = 1\nmac = \"02:00:00:00:00:02\"\nip = \"198.18.0.2\"\nqpn = 512\n").unwrap();
    let at_ms = 99_999_999_999_999u64;
    let out = rocelab(&[
        "endpoint",
        "--iface",
        "lo",
        "--peers",
        peers.to_str().unwrap(),
        "--rank",
        "0",
        "--start-at",
        &at_ms.to_string(),
    ]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Julian years of 365.25 days.
    let years = (at_ms / 1000 - now_s) / 31_557_600;
    let said: u64 = err
        .split("from now")
        .next()
        .and_then(|head| head.strip_suffix(" years "))
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no wait in years: {err}"));
    assert!(
        said.abs_diff(years) <= 1,
        "{said} years, not {years}: {err}"
    );
    assert!(err.contains("past --limit (60 s)"), "{err}");
}

#[test]
fn one_vocabulary_config_list_positional_scenarios_and_lab_names() {
    // `config list` names every preset `config show` takes.
    let out = rocelab(&["config", "list"]);
    assert!(out.status.success());
    let names: Vec<String> = text(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    assert_eq!(names, ["default", "nexus-ai", "sonic", "endpoint"]);
    for n in &names {
        assert!(rocelab(&["config", "show", n]).status.success(), "{n}");
    }
    // A scenario by position or by --scenario, not both.
    let by_position = rocelab(&["sim", "no-such-scenario"]);
    assert!(!by_position.status.success());
    assert!(
        text(&by_position.stderr).contains("no-such-scenario"),
        "{}",
        text(&by_position.stderr)
    );
    let both = rocelab(&["sim", "ring", "--scenario", "incast"]);
    assert!(!both.status.success());
    assert!(
        text(&both.stderr).contains("cannot be used with"),
        "{}",
        text(&both.stderr)
    );
    // The lab takes the simulator's scenario name (and the old spelling), and `--out`.
    let help = text(&rocelab(&["lab", "--help"]).stdout);
    assert!(
        help.contains("ring-incast") && help.contains("--out <DIR>"),
        "{help}"
    );
    let sim_list = text(&rocelab(&["sim", "--list"]).stdout);
    assert!(sim_list.contains("ring-incast"), "{sim_list}");
}

/// Issue 13: inspect counted a flooded copy in a replay's output as a retransmission. Its
/// PSN streams are per pcapng interface now: the copies on two ports are two streams.
/// Also: the ECN of every IP frame, and `--filter`.
#[test]
fn inspect_keeps_interfaces_apart_counts_ecn_and_filters() {
    use common::net::roce;
    use rocelab::time::Nanos;
    use rocelab::wire::Ecn;
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("flood.pcap");
    // Host 0 to host 2 before the switch knows host 2: flooded to hosts 1 and 2.
    let frames = [
        roce(0, 2, 26, Ecn::Ect0, 1082, 1),
        roce(1, 0, 26, Ecn::Ce, 1082, 7),
        roce(2, 0, 26, Ecn::Ect0, 1082, 9),
        roce(0, 2, 26, Ecn::Ect0, 1082, 2),
    ];
    common::write_pcap(
        &cap,
        frames
            .into_iter()
            .enumerate()
            .map(|(i, f)| (Nanos(10_000 * i as u64), f)),
    );
    let out = dir.path().join("out.pcapng");
    let o = rocelab(&[
        "replay",
        "--split-by",
        "mac",
        cap.to_str().unwrap(),
        "--pcap",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = rocelab(&["inspect", "--json", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let last: serde_json::Value =
        serde_json::from_str(text(&o.stdout).lines().last().unwrap()).unwrap();
    let s = &last["summary"];
    assert!(s["interfaces"].as_array().unwrap().len() >= 3, "{s}");
    for q in s["qps"].as_array().unwrap() {
        assert_eq!(q["retransmissions"], 0, "{q}");
    }
    // The flooded first frame is on two interfaces.
    let copies = s["qps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["dest_qp"] == 0x102)
        .count();
    assert!(copies >= 2, "{s}");
    assert_eq!(s["ecn"]["ce_frames"], 1);
    // --filter: only the CE frame; only QP 0x102 on one port.
    let o = rocelab(&[
        "inspect",
        "--json",
        "--filter",
        "ecn=ce",
        out.to_str().unwrap(),
    ]);
    assert_eq!(text(&o.stdout).lines().count(), 2, "{}", text(&o.stdout));
    let o = rocelab(&[
        "inspect",
        "--filter",
        "qp=0x102,opcode=RC_RDMA_WRITE_MIDDLE",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let o = rocelab(&["inspect", "--filter", "qp=nope", out.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("--filter term 'qp=nope'"),
        "{}",
        text(&o.stderr)
    );
}

/// `pcaps/roce_streams.pcap` with every record cut to `snaplen` bytes, as `editcap -s`.
fn cut_capture(snaplen: usize, out: &Path) {
    let mut r =
        rocelab::capture::CaptureReader::open(&common::repo("pcaps/roce_streams.pcap")).unwrap();
    let mut f = Vec::new();
    f.extend(0xa1b2_3c4du32.to_le_bytes()); // nanosecond pcap
    f.extend(2u16.to_le_bytes());
    f.extend(4u16.to_le_bytes());
    for word in [0u32, 0, snaplen as u32, 1] {
        f.extend(word.to_le_bytes());
    }
    while let Some(p) = r.next_packet().unwrap() {
        let ts = p.ts.unwrap().0;
        let kept = &p.data[..p.data.len().min(snaplen)];
        for word in [
            (ts / 1_000_000_000) as u32,
            (ts % 1_000_000_000) as u32,
            kept.len() as u32,
            p.orig_len,
        ] {
            f.extend(word.to_le_bytes());
        }
        f.extend(kept);
    }
    std::fs::write(out, f).unwrap();
}

/// QA: frames cut by the snap length were not flagged. At -s 50 RoCE frames showed as
/// plain "UDP" and the summary said "0 RoCE" without a word of truncation; at -s 64 the
/// ICRC column was blank and the summary said "0 ICRC failures"; at 10 bytes a frame
/// showed as "? -> ? EtherType 0x0000". Cut frames are marked, and the summary counts
/// them, the ICRCs not checked and the frames whose BTH was cut off. Expected counts come
/// from the generator's own description of the capture (scapy), not from rocelab.
#[test]
fn frames_cut_by_the_snap_length_are_marked_and_counted() {
    let want: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::repo("pcaps/roce_streams.json")).unwrap(),
    )
    .unwrap();
    let frames = want["frames"].as_array().unwrap();
    let len = |f: &serde_json::Value| f["len"].as_u64().unwrap();
    let roce = |f: &&serde_json::Value| !f["bth_opcode"].is_null();
    let dir = tempfile::tempdir().unwrap();
    let summary_of = |snaplen: usize| {
        let path = dir.path().join(format!("s{snaplen}.pcap"));
        cut_capture(snaplen, &path);
        let table = rocelab(&["inspect", path.to_str().unwrap()]);
        assert!(table.status.success(), "{}", text(&table.stderr));
        let json = rocelab(&["inspect", "--json", path.to_str().unwrap()]);
        let last = text(&json.stdout).lines().last().unwrap().to_owned();
        let v: serde_json::Value = serde_json::from_str(&last).unwrap();
        (text(&table.stdout), v["summary"].clone())
    };

    // 50 bytes: Ethernet, IPv4 and UDP (42 bytes), the BTH cut off.
    let (table, s) = summary_of(50);
    let cut = frames.iter().filter(|f| len(f) > 50).count() as u64;
    let roce_count = frames.iter().filter(roce).count() as u64;
    assert_eq!(
        (s["frames_cut"].as_u64(), s["bth_cut"].as_u64()),
        (Some(cut), Some(roce_count))
    );
    assert_eq!(s["roce_frames"], 0);
    let first = table.lines().nth(1).unwrap();
    assert!(
        first.contains("RoCEv2, BTH not captured") && first.contains("CUT: 50 of 1098 B captured"),
        "{first}"
    );
    assert!(
        table.contains(&format!("{cut} frame(s) cut short by the capture"))
            && table.contains(&format!("{roce_count} to UDP 4791 with the BTH cut off")),
        "{table}"
    );

    // 64 bytes: the BTH is there, the ICRC of every RoCE frame longer than 64 bytes is not.
    let (table, s) = summary_of(64);
    let unchecked = frames.iter().filter(roce).filter(|f| len(f) > 64).count() as u64;
    assert!(unchecked > 0);
    assert_eq!(s["roce_frames"].as_u64(), Some(roce_count));
    assert_eq!(s["icrc_unchecked"].as_u64(), Some(unchecked));
    assert!(
        table.contains(&format!("0 ICRC failures ({unchecked} not checked)")),
        "{table}"
    );
    let first = table.lines().nth(1).unwrap();
    assert!(first.contains(" cut "), "the ICRC column says cut: {first}");

    // 10 bytes: not even the Ethernet header; no EtherType is made up.
    let (table, s) = summary_of(10);
    assert_eq!(s["frames_cut"].as_u64(), Some(frames.len() as u64));
    assert!(!table.contains("EtherType 0x0000"), "{table}");
    assert!(table.contains("CUT: 10 of 1098 B captured"), "{table}");
}

/// QA: `inspect --filter port=eth9` on a capture with no such interface printed
/// "0 frames" and exited 0: a typo looked like an empty capture. A port the capture does
/// not have is refused, with those it has, and nothing is printed.
#[test]
fn a_filter_port_the_capture_does_not_have_is_refused() {
    use common::net::roce;
    use rocelab::time::Nanos;
    use rocelab::wire::Ecn;
    let dir = tempfile::tempdir().unwrap();
    let ng = dir.path().join("two.pcapng");
    let mut w = rocelab::capture::PcapNgWriter::new(Vec::new(), "test").unwrap();
    for name in ["eth0", "eth1"] {
        w.add_interface(name).unwrap();
    }
    for i in 0..2 {
        let f = roce(i, 1 - i, 26, Ecn::Ect0, 1082, 1);
        w.write_packet(i as u32, Nanos(1_000 * i as u64), &f, None)
            .unwrap();
    }
    std::fs::write(&ng, w.finish().unwrap()).unwrap();
    let ng = ng.to_str().unwrap();

    let o = rocelab(&["inspect", "--filter", "roce,port=eth9", ng]);
    assert!(!o.status.success());
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    let e = text(&o.stderr);
    assert!(
        e.contains("port=eth9: the capture has no interface eth9")
            && e.contains("eth0 (id 0), eth1 (id 1)"),
        "{e}"
    );
    for known in ["port=eth1", "port=1"] {
        let o = rocelab(&["inspect", "--json", "--filter", known, ng]);
        assert!(o.status.success(), "{known}: {}", text(&o.stderr));
        assert_eq!(text(&o.stdout).lines().count(), 2, "{known}: one frame");
    }
    // A pcap has one interface, 0, without a name.
    let pcap = common::repo("pcaps/roce_streams.pcap");
    let pcap = pcap.to_str().unwrap();
    assert!(
        rocelab(&["inspect", "--filter", "port=0", pcap])
            .status
            .success()
    );
    let o = rocelab(&["inspect", "--filter", "port=eth0", pcap]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("id 0 (no name)"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn config_check_takes_set_as_every_command_does() {
    // `--set` is documented as the same everywhere; `config check` refused it.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.toml");
    let preset = rocelab(&["config", "show", "default"]);
    std::fs::write(&file, &preset.stdout).unwrap();
    let path = file.to_str().unwrap();
    let set = "classify.dscp_to_tc=[[26,3],[48,0]]";
    let out = rocelab(&["config", "check", path, "--set", set]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!("{path} with {set}: valid")),
        "{stdout}"
    );
    let cnp = "warning: classify.dscp_to_tc: CNPs (DSCP 48, the NIC default) land in TC 0";
    assert!(stdout.contains(cnp), "{stdout}");
    let plain = text(&rocelab(&["config", "check", path]).stdout);
    assert!(!plain.contains(cnp), "{plain}");
    // The change is checked like the file: priority 4 has no DSCP mapped to it.
    let out = rocelab(&["config", "check", path, "--set", "pfc.lossless=[3,4]"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("with --set pfc.lossless=[3,4]: pfc.lossless: priority 4 is lossless"),
        "{stderr}"
    );
}

#[test]
fn config_check_warns_when_ecn_lies_above_the_xoff_point_or_the_shared_buffer() {
    // The default preset: 32 MiB shared, dynamic alpha 1, no PG reserve, so a lone flow
    // makes PG 3 send XOFF at alpha x free = 33554432 / (1 + 1) = 16777216 B of queue.
    // ECN on queue 3 is 150000 to 3000000 B, pmax 0.07: below it, no warning.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.toml");
    std::fs::write(&file, rocelab(&["config", "show", "default"]).stdout).unwrap();
    let path = file.to_str().unwrap();
    let check = |set: &str| {
        let out = rocelab(&["config", "check", path, "--set", set]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert!(!check("seed=2").contains("ecn"));
    // Kmax 20 MiB: marking at the XOFF point is 0.07 x (16777216 - 150000) / (20971520 -
    // 150000) = 0.0559; PFC does the rest. A warning with the numbers, not an error.
    let out = check("queue.3.ecn.kmax_bytes=20M");
    assert!(
        out.contains(
            "warning: queue.3.ecn.kmax_bytes: ECN's Kmax 20971520 B is above the 16777216 B at which PG 3 sends XOFF for a lone flow: PFC pauses the senders before marking reaches pmax 0.07; at the XOFF point ECN marks with probability 0.0559"
        ),
        "{out}"
    );
    // Kmax above the 32 MiB shared buffer as well.
    let out = check("queue.3.ecn.kmax_bytes=40M");
    assert!(
        out.contains("ECN's Kmax 41943040 B is above the 16777216 B at which PG 3 sends XOFF for a lone flow, and above the 33554432 B shared buffer"),
        "{out}"
    );
    // Kmin above the shared buffer: ECN never marks; PFC alone.
    let out = check("queue.3.ecn={ kmin_bytes = 41943040, kmax_bytes = 50331648, pmax = 0.1 }");
    assert!(
        out.contains(
            "warning: queue.3.ecn.kmin_bytes: ECN starts at 41943040 B, above the 33554432 B shared buffer: the queue never holds that much, so ECN never marks"
        ),
        "{out}"
    );
    assert!(
        !out.contains("queue.3.ecn.kmax_bytes"),
        "one warning: {out}"
    );
}

#[test]
fn unknown_keys_get_a_did_you_mean_in_files_and_in_set() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("typo.toml");
    std::fs::write(&file, "[buffer]\npg_alfa = 1\n").unwrap();
    let path = file.to_str().unwrap();
    let stderr = |args: &[&str]| {
        let out = rocelab(args);
        assert!(!out.status.success(), "{args:?}");
        text(&out.stderr)
    };
    // A key of the same table spelt nearly alike, in a file and with --set.
    let e = stderr(&["config", "check", path]);
    assert!(
        e.contains("line 2, column 1 (buffer.pg_alfa): unknown field `pg_alfa`")
            && e.contains("did you mean `buffer.pg_alpha`?"),
        "{e}"
    );
    let e = stderr(&["conformance", "--set", "buffer.shared_byte=4M"]);
    assert!(e.contains("did you mean `buffer.shared_bytes`?"), "{e}");
    // The same name in another table: the scenario's topology, the switch's buffer.
    let e = stderr(&["sim", "--set", "link_gbps=0"]);
    assert!(e.contains("did you mean `topology.link_gbps`"), "{e}");
    let e = stderr(&["sim", "--set", "switch.shared_bytes=4M"]);
    assert!(
        e.contains("did you mean `switch.buffer.shared_bytes`?"),
        "{e}"
    );
    // Nothing alike: no guess.
    let e = stderr(&["conformance", "--set", "zzzzzz=1"]);
    assert!(!e.contains("did you mean"), "{e}");
}
