//! The switch and the endpoint live, on veth pairs between network namespaces (root only;
//! skipped with a reason otherwise, a failure under CI=true). Every namespace and veth is
//! removed afterwards, also when a test fails. Tests run one at a time: they share two
//! cores and time matters to them.

mod common;

use rocelab::lab::netns::{self, Netns};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rocelab")
}

/// True when the test can run; otherwise it was skipped (or fails under CI).
fn live(test: &str) -> bool {
    match netns::can_make_namespaces() {
        Ok(()) => true,
        Err(why) => {
            common::skip(test, &why.to_string());
            false
        }
    }
}

fn mac(i: usize) -> String {
    format!("02:00:c6:12:00:{i:02x}")
}

fn ip(i: usize) -> String {
    format!("198.18.0.{}", i + 1)
}

/// `hosts` namespaces `{tag}n{i}`, each with a veth `{tag}h{i}` (MAC `mac(i)`, address
/// `ip(i)`/24) whose root end is `{tag}s{i}`.
struct Lab {
    net: Netns,
    namespaces: Vec<String>,
    tag: String,
    dir: tempfile::TempDir,
}

impl Lab {
    fn new(tag: &str, hosts: usize) -> Lab {
        Lab::with_mtu(tag, hosts, 9000)
    }

    /// A lab whose veths have an MTU of `mtu` bytes.
    fn with_mtu(tag: &str, hosts: usize, mtu: u32) -> Lab {
        let mut net = Netns::new().unwrap();
        let mut namespaces = Vec::new();
        for i in 0..hosts {
            let ns = net.namespace(&format!("{tag}n{i}")).unwrap();
            net.veth(
                &format!("{tag}s{i}"),
                &ns,
                &format!("{tag}h{i}"),
                Some(&mac(i)),
                Some(&format!("{}/24", ip(i))),
                mtu,
            )
            .unwrap();
            namespaces.push(ns);
        }
        Lab {
            net,
            namespaces,
            tag: tag.to_owned(),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn root_if(&self, i: usize) -> String {
        self.net.name(&format!("{}s{i}", self.tag))
    }

    fn host_if(&self, i: usize) -> String {
        self.net.name(&format!("{}h{i}", self.tag))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A switch on every root end, `extra` arguments after the port list.
    fn switch(&self, config: &Path, extra: &[&str]) -> Child {
        let mut c = Command::new(bin());
        c.args([
            "switch",
            "--config",
            config.to_str().unwrap(),
            "--interval",
            "0",
        ]);
        for i in 0..self.namespaces.len() {
            c.arg("--port").arg(format!("p{i}={}", self.root_if(i)));
        }
        c.args(extra);
        let child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(400));
        child
    }

    /// `program args...` inside namespace `i`.
    fn exec(&self, i: usize, program: &str, args: &[&str]) -> Command {
        let mut c = self.net.exec(&self.namespaces[i], program);
        c.args(args);
        c
    }

    fn peers(&self) -> PathBuf {
        let mut text = String::new();
        for i in 0..self.namespaces.len() {
            text += &format!(
                "[[peer]]\nrank = {i}\nmac = \"{}\"\nip = \"{}\"\nqpn = {}\n",
                mac(i),
                ip(i),
                0x100 * (i + 1)
            );
        }
        // Each endpoint call writes the file while earlier ranks may be reading it: write
        // a new file and rename it into place, so a reader never sees it half written.
        let path = self.path("peers.toml");
        let tmp = self.path("peers.toml.new");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        path
    }

    /// `rocelab endpoint` as rank `i` with `args`.
    fn endpoint(&self, i: usize, args: &[&str]) -> Child {
        let peers = self.peers();
        let iface = self.host_if(i);
        let rank = i.to_string();
        let mut all = vec![
            "endpoint",
            "--iface",
            &iface,
            "--peers",
            peers.to_str().unwrap(),
            "--rank",
            &rank,
        ];
        all.extend_from_slice(args);
        self.exec(i, bin(), &all)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// The switch configuration `preset` with every port at `gbps` and `edit` applied.
fn switch_config(lab: &Lab, gbps: f64, edit: &[(&str, &str)]) -> PathBuf {
    let out = Command::new(bin())
        .args(["config", "show", "default"])
        .output()
        .unwrap();
    let mut text = String::from_utf8(out.stdout).unwrap();
    text = text.replace("speed_gbps = 100", &format!("speed_gbps = {gbps}"));
    for (from, to) in edit {
        assert!(text.contains(from), "{from} not in the preset");
        text = text.replace(from, to);
    }
    let path = lab.path("switch.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn stop(mut child: Child) -> Output {
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn unix_ms_in(ms: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    (now + ms).to_string()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Sums a class counter over the switch's ports in a --json report.
fn class_sum(report: &serde_json::Value, class: u64, field: &str) -> u64 {
    report["ports"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["classes"].as_array().unwrap())
        .filter(|c| c["class"] == class)
        .map(|c| c[field].as_u64().unwrap())
        .sum()
}

#[test]
fn ping_and_a_tcp_transfer_cross_the_switch() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("ping_and_a_tcp_transfer_cross_the_switch") {
        return;
    }
    let lab = Lab::new("pt", 2);
    let config = switch_config(&lab, 10.0, &[]);
    let metrics = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    // On the pnet backend (the other live tests run the default, mmap).
    let sw = lab.switch(
        &config,
        &[
            "--metrics",
            &metrics.to_string(),
            "--cores",
            "0,1",
            "--io",
            "pnet",
        ],
    );
    let ping = lab
        .exec(0, "ping", &["-c", "3", "-i", "0.2", "-W", "2", &ip(1)])
        .output()
        .unwrap();
    assert!(
        ping.status.success(),
        "ping: {}{}",
        text(&ping.stdout),
        text(&ping.stderr)
    );

    // 2 MB over TCP, counted by the receiver (python3: no extra tool needed).
    let server = lab
        .exec(1, "python3", &["-c", "import socket\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', 5001)); s.listen(1)\nc,_=s.accept(); n=0\nwhile True:\n  b=c.recv(65536)\n  if not b: break\n  n+=len(b)\nprint(n)"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let client = lab
        .exec(0, "python3", &["-c", &format!("import socket\ns=socket.create_connection(('{}', 5001), timeout=10); s.sendall(b'x'*2000000); s.close()", ip(1))])
        .output()
        .unwrap();
    assert!(client.status.success(), "client: {}", text(&client.stderr));
    let got = server.wait_with_output().unwrap();
    assert_eq!(text(&got.stdout).trim(), "2000000");
    // The Prometheus endpoint serves the counters.
    std::thread::sleep(Duration::from_millis(400));
    let mut conn = std::net::TcpStream::connect(metrics).unwrap();
    use std::io::{Read, Write};
    conn.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut body = String::new();
    conn.read_to_string(&mut body).unwrap();
    assert!(body.starts_with("HTTP/1.0 200 OK"), "{body}");
    let rx: u64 = body
        .lines()
        .filter(|l| l.starts_with("rocelab_received_bytes_total{port=\"p0\""))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(rx > 2_000_000, "the TCP transfer's bytes are counted: {rx}");
    let out = stop(sw);
    let table = text(&out.stdout);
    assert!(
        table.lines().any(|l| l.starts_with("p0 ")) && table.lines().any(|l| l.starts_with("p1 ")),
        "{table}"
    );
}

/// The switch on two threads (`--cores 0,1`: p0 and p2 received on one, p1 on the
/// other), so that every rank's frames cross from one thread's port to the other's and
/// back: the all-reduce is right, nothing arrives out of order, and both threads forwarded.
#[test]
fn three_ranks_allreduce_through_the_live_switch() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("three_ranks_allreduce_through_the_live_switch") {
        return;
    }
    let lab = Lab::new("ar", 3);
    let config = switch_config(&lab, 1.0, &[]);
    let stats = lab.path("stats.json");
    let sw = lab.switch(
        &config,
        &["--cores", "0,1", "--json", stats.to_str().unwrap()],
    );
    let start = unix_ms_in(800);
    let reports: Vec<PathBuf> = (0..3).map(|i| lab.path(&format!("rank{i}.json"))).collect();
    let ranks: Vec<Child> = (0..3)
        .map(|i| {
            let args = vec![
                "--rate",
                "1",
                "-b",
                "8K",
                "-e",
                "256K",
                "-f",
                "4",
                "--start-at",
                &start,
                "--limit",
                "30",
                "--json",
                reports[i].to_str().unwrap(),
            ];
            lab.endpoint(i, &args)
        })
        .collect();
    for (i, r) in ranks.into_iter().enumerate() {
        let out = r.wait_with_output().unwrap();
        let stdout = text(&out.stdout);
        assert!(
            out.status.success(),
            "rank {i}: {stdout}{}",
            text(&out.stderr)
        );
        let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("  ")).collect();
        assert_eq!(rows.len(), 3, "8K, 32K and 128K: {stdout}");
        for row in rows {
            assert_eq!(
                row.split_whitespace().last(),
                Some("0"),
                "rank {i} #wrong: {row}"
            );
        }
    }
    let out = stop(sw);
    // The rows as JSON, with keys docs/json.md lists.
    let report = json(&reports[0]);
    assert_eq!(report["allreduce"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        common::undocumented_keys("endpoint", &report),
        Vec::<String>::new()
    );
    // Each port's frames left in the order the switch released them, whichever thread
    // sent them: go-back-N would have discarded any that passed another.
    for (i, path) in reports.iter().enumerate() {
        let c = &json(path)["counters"];
        for key in [
            "out_of_order_received",
            "retransmitted_packets",
            "naks_sent",
        ] {
            assert_eq!(c[key], 0, "rank {i} {key}: {c}");
        }
    }
    let stats = json(&stats);
    let threads = stats["threads"].as_array().expect("threads");
    assert_eq!(threads.len(), 2, "{stats}");
    assert_eq!(threads[0]["ports"], serde_json::json!(["p0", "p2"]));
    assert_eq!(threads[1]["ports"], serde_json::json!(["p1"]));
    for t in threads {
        assert!(
            t["frames"].as_u64() > Some(100),
            "each thread forwarded: {t}"
        );
    }
    assert_eq!(
        common::undocumented_keys("switch", &stats),
        Vec::<String>::new()
    );
    let text = text(&out.stdout);
    assert!(text.contains("threads: p0+p2 busy"), "{text}");
}

/// Starts tshark in namespace `i` on its veth, writing to `file`, for `secs` seconds.
fn capture(lab: &Lab, i: usize, file: &Path, secs: u32) -> Child {
    let iface = lab.host_if(i);
    lab.exec(
        i,
        "tshark",
        &[
            "-q",
            "-i",
            &iface,
            "-a",
            &format!("duration:{secs}"),
            "-w",
            file.to_str().unwrap(),
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap()
}

/// How many frames of `file` match the display filter.
fn tshark_count(file: &Path, filter: &str) -> usize {
    let out = Command::new("tshark")
        .args([
            "-r",
            file.to_str().unwrap(),
            "-Y",
            filter,
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .unwrap();
    text(&out.stdout).lines().filter(|l| !l.is_empty()).count()
}

/// A small shared buffer (XOFF near 15 KB per priority group) and RED-ECN from 10 KB, on
/// 1 Gb/s ports: two senders into one port reach both. (With XOFF at 58 KB, DCQCN's
/// first cut sometimes came before the queue reached it, and no PFC fired.) The headroom covers 8 ms at
/// 1 Gb/s: on veth, the "cable" a pause crosses includes four threads waking up on a
/// shared 2-core machine (about 1.3 ms measured with a release build, more with the test
/// build), far longer than the 5 m of copper the computed minimum assumes.
fn pressure_config(lab: &Lab) -> PathBuf {
    switch_config(
        lab,
        1.0,
        &[
            ("shared_bytes = 33554432", "shared_bytes = 524288"),
            ("pg_alpha = 1.0", "pg_alpha = 0.03"),
            (
                "xon_offset_bytes = 2496",
                "xon_offset_bytes = 2496\nheadroom_bytes = 1048576",
            ),
            (
                "ecn = { kmin_bytes = 150000, kmax_bytes = 3000000, pmax = 0.07 }",
                "ecn = { kmin_bytes = 10000, kmax_bytes = 100000, pmax = 0.2 }",
            ),
        ],
    )
}

/// Sets port `name` of the switch configuration at `config` to `gbps`.
fn slow_port(config: &Path, name: &str, gbps: f64) {
    let mut toml = std::fs::read_to_string(config).unwrap();
    toml.push_str(&format!(
        "\n[[ports]]\nname = \"{name}\"\nspeed_gbps = {gbps}\n"
    ));
    std::fs::write(config, toml).unwrap();
}

#[test]
fn an_incast_of_two_endpoints_shows_pfc_and_ce_and_loses_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let test = "an_incast_of_two_endpoints_shows_pfc_and_ce_and_loses_nothing";
    if !live(test) || !common::have_tool(test, "tshark", "apt-get install tshark") {
        return;
    }
    let lab = Lab::new("ic", 3);
    let config = pressure_config(&lab);
    // The receiver's port at half the senders' rate: congested (CE, then PFC) even when a
    // loaded machine slows both senders well below their 1 Gb/s. At 1 Gb/s out, two
    // senders starved to 385 Mb/s each (the three tshark captures take the CPUs) did not
    // fill it, and no PFC fired (3 runs of 8 today).
    slow_port(&config, "p2", 0.5);
    let stats = lab.path("stats.json");
    let sw = lab.switch(&config, &["--json", stats.to_str().unwrap()]);
    let pcaps: Vec<PathBuf> = (0..3).map(|i| lab.path(&format!("h{i}.pcapng"))).collect();
    let captures: Vec<Child> = (0..3).map(|i| capture(&lab, i, &pcaps[i], 12)).collect();
    // Two seconds for tshark to come up, and on a loaded machine (the whole suite beside
    // it) as long as it takes to write its file's header, which it does once it captures:
    // two seconds alone were once not enough, and the switch reported PFC frames sent that
    // the senders' captures did not hold.
    std::thread::sleep(Duration::from_millis(2000));
    let live = Instant::now() + Duration::from_secs(30);
    while !pcaps
        .iter()
        .all(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 0))
    {
        assert!(
            Instant::now() < live,
            "tshark did not start capturing in 32 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let report2 = lab.path("r2.json");
    let receiver = lab.endpoint(
        2,
        &[
            "--mode",
            "receive",
            "--rate",
            "1",
            "--limit",
            "20",
            "--report",
            report2.to_str().unwrap(),
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    // Both senders start at this time. A sender whose process comes up later (a loaded
    // machine running the rest of the suite) starts late, and two 32 ms transfers more than
    // 32 ms apart make no incast (no PFC, no CE): the time leaves them a wide margin.
    let start = unix_ms_in(2_000);
    let bytes = "4000000";
    let senders: Vec<Child> = (0..2)
        .map(|i| {
            lab.endpoint(
                i,
                &[
                    "--mode",
                    "send",
                    "--to",
                    "2",
                    "--bytes",
                    bytes,
                    "--rate",
                    "1",
                    "--start-at",
                    &start,
                    "--limit",
                    "15",
                ],
            )
        })
        .collect();
    let outs: Vec<_> = senders
        .into_iter()
        .map(|s| s.wait_with_output().unwrap())
        .collect();
    // Everything is gathered before anything is judged, so that a failure shows what
    // the receiver and the switch counted too.
    let r = stop(receiver);
    stop(sw);
    let receiver_counters = json(&report2)["counters"].clone();
    let senders_stderr: String = outs.iter().map(|o| text(&o.stderr)).collect();
    let warnings: Vec<&str> = senders_stderr
        .lines()
        .filter(|l| l.starts_with("warning"))
        .collect();
    let senders_stdout: String = outs.iter().map(|o| text(&o.stdout)).collect();
    let context = format!(
        "senders' warnings: {warnings:?}\nsenders: {senders_stdout}\nreceiver: {receiver_counters}\nswitch: {}",
        std::fs::read_to_string(&stats).unwrap_or_default()
    );
    // The switch's own losses must be zero (checked below). The kernel can still drop
    // frames when a starved thread leaves its socket ring full (the test build on a
    // loaded 2-CPU machine, three tshark captures beside it): those are counted, and
    // then go-back-N must have resent exactly what was lost, once each, in order.
    let kernel_drops: u64 = json(&stats)["kernel"]
        .as_array()
        .map_or(0, |k| k.iter().filter_map(|p| p["drops"].as_u64()).sum());
    let (sent_once, resent_all) = tally_senders(&outs, bytes, kernel_drops);
    if kernel_drops == 0 && resent_all > 0 {
        // Nothing was lost, yet a retransmission timer fired: a starved thread held an ACK
        // back past the timeout. Then every packet resent had arrived already (a duplicate
        // at the receiver), and none arrived out of order (a loss would show so).
        let (dup, ooo) = (
            receiver_counters["duplicates_received"].as_u64(),
            receiver_counters["out_of_order_received"].as_u64(),
        );
        assert_eq!(
            (dup, ooo),
            (Some(resent_all), Some(0)),
            "lossless, so every resend is a duplicate: {context}"
        );
        eprintln!(
            "note: {resent_all} packets resent after a timeout with nothing lost: the receiver's thread ran up to {} ms late",
            json(&report2)["thread"]["max_lag_ns"].as_u64().unwrap_or(0) / 1_000_000
        );
    }
    assert!(r.status.success(), "receiver: {}", text(&r.stderr));
    let got = receiver_counters["data_packets_received"].as_u64().unwrap();
    assert_eq!(got, sent_once, "every data packet arrived once: {context}");
    for c in captures {
        let _ = stop(c);
    }
    let report = json(&stats);
    assert_switch_held_the_incast(&report, &report2, &context);
    assert_tshark_saw_the_incast(&pcaps);
}

/// Checks each sender's output (success, all bytes sent, in milliseconds) and returns the
/// packets they sent once and those they resent, in all.
fn tally_senders(outs: &[Output], bytes: &str, kernel_drops: u64) -> (u64, u64) {
    let mut sent_once = 0;
    let mut resent_all = 0;
    for (i, out) in outs.iter().enumerate() {
        let stdout = text(&out.stdout);
        assert!(
            out.status.success(),
            "sender {i}: {stdout}{}",
            text(&out.stderr)
        );
        assert!(stdout.contains(&format!("sent {bytes} bytes")), "{stdout}");
        // The transfer's time, not the time since the process started (which counts the
        // wait for --start-at, 2 s): 4 MB each through a 0.5 Gb/s port takes 64-128 ms,
        // longer if resends stretch it, never seconds.
        let took = stdout
            .split(&format!("sent {bytes} bytes in "))
            .nth(1)
            .and_then(|s| s.lines().next())
            .and_then(|s| s.split(" (").next())
            .unwrap_or_else(|| panic!("no transfer time in {stdout}"));
        assert!(took.ends_with(" ms"), "sender {i} took {took}");
        let number = |after: &str| {
            stdout
                .split(after)
                .nth(1)
                .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("'{after}' in {stdout}"))
        };
        let (packets, resent) = (number("endpoint: "), number(" sent ("));
        if kernel_drops > 0 {
            eprintln!(
                "note: the kernel dropped {kernel_drops} frames at the switch's sockets (a starved thread); sender {i} resent {resent}"
            );
        }
        sent_once += packets - resent;
        resent_all += resent;
    }
    (sent_once, resent_all)
}

/// Checks the switch's report of the incast: its keys documented, PFC and CE, no drop.
fn assert_switch_held_the_incast(report: &serde_json::Value, report2: &Path, context: &str) {
    let late = class_sum(report, 3, "late_pause_frames");
    if late > 0 {
        eprintln!(
            "note: the switch's thread ran up to {} ms late; it held {late} frames sent before its pause left",
            report["threads"][0]["max_lag_ns"].as_u64().unwrap_or(0) / 1_000_000
        );
    }
    // The switch's and an endpoint's reports name only keys docs/json.md lists.
    let undocumented: Vec<String> = [("switch", report), ("endpoint", &json(report2))]
        .into_iter()
        .flat_map(|(what, v)| common::undocumented_keys(what, v))
        .collect();
    assert_eq!(undocumented, Vec::<String>::new(), "not in docs/json.md");
    assert!(
        class_sum(report, 3, "tx_pause_frames") > 0,
        "PFC fired: {context}"
    );
    assert!(
        class_sum(report, 3, "ce_marked") > 0,
        "CE marked: {context}"
    );
    assert_eq!(
        class_sum(report, 3, "dropped_ingress_overflow"),
        0,
        "{context}"
    );
    assert_eq!(class_sum(report, 3, "dropped_tail"), 0, "{context}");
}

/// Checks what tshark saw in the namespaces of the incast.
fn assert_tshark_saw_the_incast(pcaps: &[PathBuf]) {
    // What tshark saw in the namespaces: PFC frames and CNPs at the senders, CE-marked
    // data at the receiver.
    let pfc: usize = (0..2)
        .map(|i| tshark_count(&pcaps[i], "macc.cbfc.enbv == 0x0008"))
        .sum();
    let cnps: usize = (0..2)
        .map(|i| tshark_count(&pcaps[i], "infiniband.bth.opcode == 129"))
        .sum();
    let ce = tshark_count(&pcaps[2], "udp.dstport == 4791 && ip.dsfield.ecn == 3");
    assert!(pfc > 0, "tshark saw no PFC frame in the sender namespaces");
    assert!(cnps > 0, "tshark saw no CNP in the sender namespaces");
    assert!(ce > 0, "tshark saw no CE-marked frame at the receiver");
    // The hosts' own IP stacks stay out of RoCE (no ICMP port unreachable per packet).
    for p in pcaps {
        assert_eq!(tshark_count(p, "icmp"), 0, "{}", p.display());
    }
}

/// Two raw senders that ignore pause, 100,000 frames/s each into a 0.25 Gb/s port (about
/// 29,000 frames/s out): the buffer and then the headroom fill, and the switch drops.
/// The port ran at 1 Gb/s (115,000 frames/s) until a clean-clone CI run on a loaded
/// machine starved both senders to 61,000 frames/s together: nothing overflowed.
/// Paced rather than as fast as they can: two unpaced senders took both CPUs, the switch's
/// thread fell a second behind, and every frame then counted as one sent before its late
/// pause left (kept, `late_pause_frames`), not as one a sender sent despite it.
#[test]
fn senders_that_ignore_pause_overflow_the_headroom() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("senders_that_ignore_pause_overflow_the_headroom") {
        return;
    }
    let lab = Lab::new("ig", 3);
    let config = pressure_config(&lab);
    slow_port(&config, "p2", 0.25);
    let stats = lab.path("stats.json");
    let sw = lab.switch(&config, &["--json", stats.to_str().unwrap()]);
    let blasters: Vec<Child> = (0..2)
        .map(|i| {
            let iface = lab.host_if(i);
            lab.exec(
                i,
                bin(),
                &[
                    "traffic",
                    "send",
                    "--iface",
                    &iface,
                    "--dst-mac",
                    &mac(2),
                    "--size",
                    "1082",
                    "--pps",
                    "100000",
                    "--duration",
                    "1.5",
                ],
            )
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    for b in blasters {
        assert!(b.wait_with_output().unwrap().status.success());
    }
    stop(sw);
    let report = json(&stats);
    assert!(
        class_sum(&report, 3, "tx_pause_frames") > 0,
        "the switch asked them to pause"
    );
    assert!(
        class_sum(&report, 3, "dropped_ingress_overflow") > 0,
        "ignoring pause, they overflow the headroom: {report}"
    );
}

#[test]
fn a_killed_switch_leaves_everything_removable() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("a_killed_switch_leaves_everything_removable") {
        return;
    }
    let mut lab = Lab::new("kl", 2);
    let config = switch_config(&lab, 1.0, &[]);
    let mut sw = lab.switch(&config, &["--io", "mmap"]);
    let iface = lab.host_if(0);
    let blaster = lab
        .exec(
            0,
            bin(),
            &[
                "traffic",
                "send",
                "--iface",
                &iface,
                "--dst-mac",
                &mac(1),
                "--duration",
                "2",
            ],
        )
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    sw.kill().unwrap(); // SIGKILL mid-run: no chance to clean anything up
    sw.wait().unwrap();
    blaster.wait_with_output().unwrap();
    lab.net.remove();
    assert_eq!(
        netns::leftovers_of(std::process::id()),
        Vec::<String>::new()
    );
}

/// Two `rocelab switch` processes on the same interfaces ran silently, and every frame was
/// delivered twice. The second is refused, told the first one's pid.
#[test]
fn a_second_switch_on_the_same_interfaces_is_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("a_second_switch_on_the_same_interfaces_is_refused") {
        return;
    }
    let lab = Lab::new("dw", 2);
    let config = switch_config(&lab, 1.0, &[]);
    let first = lab.switch(&config, &[]);
    let pid = first.id();
    let second = lab.switch(&config, &[]).wait_with_output().unwrap();
    let first = stop(first);
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert!(!second.status.success());
    let said = text(&second.stderr);
    assert!(
        said.contains(&format!(
            "{} is already a port of another rocelab switch (pid {pid})",
            lab.root_if(0)
        )),
        "{said}"
    );
}

/// `endpoint --json` was written when the run failed, while docs/limits.md said outputs
/// are put in place only on success. A failed rank's report is kept, and says why.
#[test]
fn a_failed_endpoint_reports_how_far_it_got_and_why() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("a_failed_endpoint_reports_how_far_it_got_and_why") {
        return;
    }
    // No switch: what rank 0 sends to rank 1 goes nowhere, and it never finishes.
    let lab = Lab::new("ef", 2);
    let report = lab.path("ep0.json");
    let out = lab
        .endpoint(
            0,
            &[
                "--mode",
                "send",
                "--to",
                "1",
                "--bytes",
                "1M",
                "--limit",
                "0.3",
                "--json",
                report.to_str().unwrap(),
            ],
        )
        .wait_with_output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not finished before --limit"),
        "{}",
        text(&out.stderr)
    );
    let r = json(&report);
    assert_eq!(r["done"], false);
    assert_eq!(r["error"], "not finished before --limit");
    assert_eq!(r["ended"], "limit");
    assert_eq!(r["sent_bytes"], 0);
    assert!(r["counters"]["data_packets_sent"].as_u64().unwrap() > 0);
    assert_eq!(
        common::undocumented_keys("endpoint", &r),
        Vec::<String>::new()
    );
}

#[test]
fn a_send_without_bytes_ends_at_the_limit_or_a_signal_and_succeeds() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("a_send_without_bytes_ends_at_the_limit_or_a_signal_and_succeeds") {
        return;
    }
    // Ranks 0 and 1 send to 2, each on its own QP (a receiver serves one run of each).
    let lab = Lab::new("es", 3);
    let config = switch_config(&lab, 1.0, &[]);
    let sw = lab.switch(&config, &["--duration", "4"]);
    let rx = lab.endpoint(2, &["--mode", "receive", "--limit", "3.5"]);
    std::thread::sleep(Duration::from_millis(200));
    let send = |rank: usize, extra: &[&str], report: &Path| {
        let mut args = vec!["--mode", "send", "--to", "2", "--rate", "0.2"];
        args.extend_from_slice(&["--json", report.to_str().unwrap()]);
        args.extend_from_slice(extra);
        lab.endpoint(rank, &args)
    };
    let at_limit = lab.path("limit.json");
    let out = send(0, &["--limit", "0.8"], &at_limit)
        .wait_with_output()
        .unwrap();
    let signal = lab.path("signal.json");
    let child = send(1, &[], &signal);
    std::thread::sleep(Duration::from_millis(800));
    let stopped = stop(child);
    stop(rx);
    stop(sw);
    for (out, report, ended) in [
        (&out, &at_limit, "limit"),
        (&stopped, &signal, "interrupted"),
    ] {
        let (o, e) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{ended}: {o}{e}");
        assert!(o.contains(" bytes in ") && o.contains(" Gb/s)"), "{o}");
        let r = json(report);
        assert_eq!(r["done"], true, "{r}");
        assert_eq!(r["ended"], ended, "{r}");
        assert!(r["error"].is_null(), "{r}");
        assert!(r["sent_bytes"].as_u64().unwrap() > 0, "{r}");
        // Paced at 0.2 Gb/s: the payload rate is below it, and not far below.
        let gbps = r["sent_gbps"].as_f64().unwrap();
        assert!((0.05..0.2).contains(&gbps), "{gbps} Gb/s");
        assert_eq!(
            common::undocumented_keys("endpoint", &r),
            Vec::<String>::new()
        );
    }
}

#[test]
fn a_signal_while_the_endpoint_prepares_its_buffers_ends_it_with_its_report() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("a_signal_while_the_endpoint_prepares_its_buffers_ends_it_with_its_report") {
        return;
    }
    // Up to 256 MiB a rank: its buffers take over a second to build.
    let lab = Lab::new("ep", 2);
    let report = lab.path("ep0.json");
    let child = lab.endpoint(
        0,
        &[
            "-e",
            "256M",
            "--limit",
            "5",
            "--json",
            report.to_str().unwrap(),
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    let out = stop(child);
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "ended by rocelab, not by the signal: {err}"
    );
    assert!(err.contains("interrupted"), "{err}");
    let r = json(&report);
    assert_eq!(r["ended"], "interrupted", "{r}");
    assert_eq!(r["done"], false);
    assert_eq!(r["counters"]["data_packets_sent"], 0, "it never started");
    let left: Vec<_> = std::fs::read_dir(lab.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

#[test]
fn a_receiver_warns_when_a_sender_run_again_is_discarded_as_duplicates() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("a_receiver_warns_when_a_sender_run_again_is_discarded_as_duplicates") {
        return;
    }
    let lab = Lab::new("dr", 2);
    let config = switch_config(&lab, 1.0, &[]);
    let sw = lab.switch(&config, &["--duration", "5"]);
    let report = lab.path("rx.json");
    let rx = lab.endpoint(
        1,
        &[
            "--mode",
            "receive",
            "--limit",
            "4",
            "--json",
            report.to_str().unwrap(),
        ],
    );
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..2 {
        let out = lab
            .endpoint(
                0,
                &[
                    "--mode", "send", "--to", "1", "--bytes", "256K", "--limit", "1.5",
                ],
            )
            .wait_with_output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    std::thread::sleep(Duration::from_millis(300));
    let out = stop(rx);
    stop(sw);
    // 256 KiB in 1024-byte packets (the default path MTU): 256 packets a run.
    let r = json(&report);
    assert_eq!(r["counters"]["data_packets_received"], 256, "{r}");
    assert_eq!(r["counters"]["duplicates_received"], 256, "{r}");
    let err = text(&out.stderr);
    assert!(
        err.contains("data packets received as duplicates") && err.contains("restart it"),
        "{err}"
    );
}

#[test]
fn an_endpoint_whose_path_mtu_does_not_fit_the_interface_is_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("an_endpoint_whose_path_mtu_does_not_fit_the_interface_is_refused") {
        return;
    }
    let lab = Lab::with_mtu("em", 2, 1500);
    let config = lab.path("ep.toml");
    let report = lab.path("ep0.json");
    // 2048 + 64 bytes of headers fit 2112: the case at the edge runs past the check.
    for (mtu, fits) in [(4096, false), (2048, false), (1024, true)] {
        std::fs::write(&config, format!("mtu = {mtu}\n")).unwrap();
        let _ = std::fs::remove_file(&report);
        let out = lab
            .endpoint(
                0,
                &[
                    "--mode",
                    "send",
                    "--to",
                    "1",
                    "--bytes",
                    "4K",
                    "--limit",
                    "0.3",
                    "--linger",
                    "0",
                    "--endpoint-config",
                    config.to_str().unwrap(),
                    "--json",
                    report.to_str().unwrap(),
                ],
            )
            .wait_with_output()
            .unwrap();
        let err = text(&out.stderr);
        assert!(!out.status.success(), "no receiver: never finishes");
        if fits {
            assert!(err.contains("not finished before --limit"), "{err}");
        } else {
            // IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 + ICRC 4 (IBA, RoCEv2 annex).
            let needed = mtu + 64;
            assert!(
                err.contains(&format!("path MTU {mtu} does not fit"))
                    && err.contains("MTU 1500")
                    && err.contains(&format!("{needed} bytes of IP"))
                    && err.contains("at most 1024"),
                "{err}"
            );
            assert!(!report.exists(), "refused before the run: no report");
        }
    }
}

#[test]
fn what_a_killed_run_left_is_removed_by_the_next() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("what_a_killed_run_left_is_removed_by_the_next") {
        return;
    }
    // A process that is gone, and what a killed run of it leaves: a namespace holding one
    // end of a veth, the other end in the root namespace, both with rocelab's alias.
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let prefix = netns::prefix_of(pid);
    let ns = format!("{prefix}x");
    let (root_end, ns_end) = (format!("{prefix}v"), format!("{prefix}w"));
    let ip_ok = |args: &[&str]| {
        assert!(
            Command::new("ip").args(args).status().unwrap().success(),
            "ip {args:?}"
        )
    };
    ip_ok(&["netns", "add", &ns]);
    ip_ok(&[
        "link", "add", &root_end, "type", "veth", "peer", "name", &ns_end,
    ]);
    for end in [&root_end, &ns_end] {
        ip_ok(&["link", "set", end, "alias", netns::ALIAS]);
    }
    ip_ok(&["link", "set", &ns_end, "netns", &ns]);
    // A look-alike of the same dead pid that rocelab did not make (no alias): left alone.
    let foreign = format!("{prefix}f");
    ip_ok(&[
        "link",
        "add",
        &foreign,
        "type",
        "veth",
        "peer",
        "name",
        &format!("{prefix}g"),
    ]);
    // What a lab killed between `ip netns add` and its veth, or between `ip link add` and
    // the alias, leaves: an empty namespace and a pair without the alias, named exactly
    // as the lab names them (netns::lab_host_role): removed all the same.
    let (lab_ns, lab_root, lab_host) = (
        format!("{prefix}r0"),
        format!("{prefix}sr0"),
        format!("{prefix}hr0"),
    );
    ip_ok(&["netns", "add", &lab_ns]);
    ip_ok(&[
        "link", "add", &lab_root, "type", "veth", "peer", "name", &lab_host,
    ]);
    // An empty namespace of that pid not named as the lab's: left alone.
    let foreign_ns = format!("{prefix}n");
    ip_ok(&["netns", "add", &foreign_ns]);
    assert_eq!(netns::leftovers_of(pid).len(), 8);
    let _next = Netns::new().unwrap();
    let mut left = netns::leftovers_of(pid);
    let _ = Command::new("ip").args(["link", "del", &foreign]).status();
    let _ = Command::new("ip")
        .args(["netns", "del", &foreign_ns])
        .status();
    left.sort();
    assert_eq!(left, vec![foreign, format!("{prefix}g"), foreign_ns]);
}

/// Issue 10, item 10: `traffic send --pps` once paced batches of 64 frames (64 frames went
/// at once, whatever the rate), and a frame larger than the interface MTU sent nothing
/// and exited 0. Now each frame leaves at its own time, and a frame too large is refused.
#[test]
fn traffic_send_paces_each_frame_and_refuses_frames_over_the_mtu() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("traffic_send_paces_each_frame_and_refuses_frames_over_the_mtu") {
        return;
    }
    let lab = Lab::new("tp", 2);
    let iface = lab.host_if(0);
    let send = |extra: &[&str]| {
        let mut args = vec!["traffic", "send", "--iface", &iface, "--dst-mac"];
        let dst = mac(1);
        args.push(&dst);
        args.extend_from_slice(extra);
        lab.exec(0, bin(), &args).output().unwrap()
    };
    // 20 frames/s for 0.2 s: frames at 0, 50, 100 and 150 ms (a batch of 64 before).
    let out = send(&["--pps", "20", "--duration", "0.2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let sent = line["sent"].as_u64().unwrap();
    assert!((3..=5).contains(&sent), "sent {sent}");
    // The lab's veths have MTU 9000 at most: a 9100-byte frame cannot go.
    let out = send(&["--size", "9102", "--duration", "0.1"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("MTU"), "{}", text(&out.stderr));
}

/// Issue 10, item 9: the pnet backend once cut a frame larger than its read buffer and
/// forwarded the rest, malformed, as lossy class 0. A cut frame is counted and dropped.
#[test]
fn a_frame_larger_than_the_port_mtu_is_counted_not_forwarded_cut() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("a_frame_larger_than_the_port_mtu_is_counted_not_forwarded_cut") {
        return;
    }
    let lab = Lab::new("mt", 2);
    // Ports of MTU 1500 (read buffer 1582 bytes) on veths of MTU 9000.
    let config = switch_config(&lab, 1.0, &[("mtu = 9216", "mtu = 1500")]);
    // Each backend finds out in its own way: the ring's slot gives the whole length, and
    // so does recvmsg asked with MSG_TRUNC.
    for backend in ["mmap", "pnet"] {
        too_large_on(&lab, &config, backend);
    }
}

fn too_large_on(lab: &Lab, config: &Path, backend: &str) {
    let stats = lab.path(&format!("stats-{backend}.json"));
    let sw = lab.switch(
        config,
        &["--json", stats.to_str().unwrap(), "--io", backend],
    );
    let iface = lab.host_if(0);
    let dst = mac(1);
    let out = lab
        .exec(
            0,
            bin(),
            &[
                "traffic",
                "send",
                "--iface",
                &iface,
                "--dst-mac",
                &dst,
                "--size",
                "4058",
                "--count",
                "5",
                "--duration",
                "1",
            ],
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::thread::sleep(Duration::from_millis(300));
    let sw_out = stop(sw);
    let report = json(&stats);
    let truncated: u64 = report["kernel"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["truncated"].as_u64().unwrap())
        .sum();
    assert_eq!(truncated, 5, "{backend}: {}", text(&sw_out.stdout));
    let forwarded = class_sum(&report, 0, "tx_frames") + class_sum(&report, 3, "tx_frames");
    assert_eq!(forwarded, 0, "{backend}: nothing forwarded cut");
    assert!(text(&sw_out.stdout).contains("arrived cut short"));
}

/// With `--json -` the report alone goes to standard output, as `jq` needs; the interval
/// lines and the summary go to standard error.
#[test]
fn a_switch_report_on_standard_output_is_the_json_alone() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("a_switch_report_on_standard_output_is_the_json_alone") {
        return;
    }
    let lab = Lab::new("js", 2);
    let config = switch_config(&lab, 1.0, &[]);
    let out = Command::new(bin())
        .args(["switch", "--config", config.to_str().unwrap()])
        .args(["--interval", "0.2", "--duration", "0.7", "--json", "-"])
        .arg("--port")
        .arg(format!("p0={}", lab.root_if(0)))
        .arg("--port")
        .arg(format!("p1={}", lab.root_if(1)))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    assert!(report["kernel"].is_array(), "{report}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("kpps") && stderr.contains("kernel receive drops"),
        "{stderr}"
    );
}

/// A counter of one port's class in a --json report.
fn port_class(report: &serde_json::Value, port: usize, class: u64, field: &str) -> u64 {
    report["ports"][port]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["class"] == class)
        .map(|c| c[field].as_u64().unwrap())
        .sum()
}

fn ip_link(args: &[&str]) {
    let out = Command::new("ip").arg("link").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip link {args:?}: {}",
        text(&out.stderr)
    );
}

/// f04: a port whose interface was down at the start, or went away while the switch ran,
/// stopped the whole switch ("stopped: ... (receive): Network is down"). It is marked down,
/// said on standard error, and the other ports keep forwarding; a port that comes back
/// up forwards again.
#[test]
fn a_port_that_goes_down_or_away_leaves_the_other_ports_forwarding() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("a_port_that_goes_down_or_away_leaves_the_other_ports_forwarding") {
        return;
    }
    let lab = Lab::new("dn", 4);
    let config = switch_config(&lab, 1.0, &[]);
    let stats = lab.path("stats.json");
    ip_link(&["set", &lab.root_if(2), "down"]);
    let sw = lab.switch(
        &config,
        &["--json", stats.to_str().unwrap(), "--duration", "3"],
    );
    ip_link(&["set", &lab.root_if(2), "up"]);
    ip_link(&["del", &lab.root_if(3)]);
    // Past the second a down port drops its frames for before it tries again.
    std::thread::sleep(Duration::from_millis(1300));
    // A destination no host has: flooded whatever the hosts' kernels send meanwhile (host
    // 1's IPv6 autoconfiguration, say, would teach the switch where mac(1) is).
    let (iface, dst) = (lab.host_if(0), mac(0xee));
    let out = lab
        .exec(
            0,
            bin(),
            &[
                "traffic",
                "send",
                "--iface",
                &iface,
                "--dst-mac",
                &dst,
                "--count",
                "3",
            ],
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sw_out = sw.wait_with_output().unwrap();
    let stderr = text(&sw_out.stderr);
    assert!(sw_out.status.success(), "{stderr}");
    for (i, says) in [(2, "is down"), (2, "is up again"), (3, "is down")] {
        let line = format!("port {} {says}", lab.root_if(i));
        assert!(stderr.contains(&line), "{line} not in {stderr}");
    }
    let report = json(&stats);
    // Flooded: to p1, to p2 back up, and to p3 gone. Class 3
    // alone: a veth coming up sends IPv6 frames of its own, class 0.
    for p in [1, 2] {
        assert_eq!(
            port_class(&report, p, 3, "tx_frames"),
            3,
            "port {p}; {stderr}\n{report:#}"
        );
    }
    let refused = report["kernel"][3]["tx_refused"].as_u64().unwrap();
    assert!(refused >= 3, "p3 gone: {refused} refused");
}

/// f15: RoCE data in a lossy class (the sonic preset, DSCP 26) drew a warning and a
/// `warnings` entry from `rocelab replay`, none from the live switch.
#[test]
fn the_live_switch_warns_of_roce_data_in_a_lossy_class() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("the_live_switch_warns_of_roce_data_in_a_lossy_class") {
        return;
    }
    let lab = Lab::new("lw", 2);
    let stats = lab.path("stats.json");
    let sw = Command::new(bin())
        .args(["switch", "--preset", "sonic", "--interval", "0"])
        .args(["--duration", "1.5", "--json", stats.to_str().unwrap()])
        .arg("--port")
        .arg(format!("p0={}", lab.root_if(0)))
        .arg("--port")
        .arg(format!("p1={}", lab.root_if(1)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let (iface, dst) = (lab.host_if(0), mac(1));
    let out = lab
        .exec(
            0,
            bin(),
            &[
                "traffic",
                "send",
                "--iface",
                &iface,
                "--dst-mac",
                &dst,
                "--count",
                "5",
                "--dscp",
                "26",
            ],
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sw_out = sw.wait_with_output().unwrap();
    let stderr = text(&sw_out.stderr);
    assert!(sw_out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: RoCE data (UDP 4791)") && stderr.contains("a lossy class"),
        "{stderr}"
    );
    let report = json(&stats);
    assert_eq!(report["warnings"][0]["kind"], "roce_data_lossy", "{report}");
}

/// `--static-mac`: a frame to a static address goes out of its port alone from the first
/// frame (before the switch learned anything), where an unknown address is flooded.
#[test]
fn a_static_mac_entry_forwards_from_the_first_frame_without_flooding() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("a_static_mac_entry_forwards_from_the_first_frame_without_flooding") {
        return;
    }
    let lab = Lab::new("sm", 3);
    let config = switch_config(&lab, 1.0, &[]);
    let stats = lab.path("stats.json");
    // mac(2) in Cisco's dotted form, as NX-OS's `mac address-table static` takes it.
    assert_eq!(mac(2), "02:00:c6:12:00:02");
    let entry = "0200.c612.0002=p2";
    let sw = lab.switch(
        &config,
        &[
            "--json",
            stats.to_str().unwrap(),
            "--static-mac",
            entry,
            "--realtime",
        ],
    );
    let iface = lab.host_if(0);
    let send = |dst: &str, count: &str| {
        let out = lab
            .exec(
                0,
                bin(),
                &[
                    "traffic",
                    "send",
                    "--iface",
                    &iface,
                    "--dst-mac",
                    dst,
                    "--count",
                    count,
                    "--duration",
                    "1",
                ],
            )
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    };
    // Host 2 has sent nothing: only its static entry says where it is.
    send(&mac(2), "5");
    send("02:00:00:00:00:99", "3");
    std::thread::sleep(Duration::from_millis(300));
    let sw_out = stop(sw);
    // --realtime, where the system allows it (root here).
    let priority = if rocelab::runtime::realtime_allowed().is_ok() {
        "real-time priority, 1 static MAC"
    } else {
        "real-time priority not allowed"
    };
    assert!(
        text(&sw_out.stderr).contains(priority),
        "{}",
        text(&sw_out.stderr)
    );
    assert!(
        text(&sw_out.stderr).contains("1 static MAC"),
        "{}",
        text(&sw_out.stderr)
    );
    let report = json(&stats);
    // RoCE's class 3 only: the namespaces' own IPv6 chatter is class 0.
    assert_eq!(port_class(&report, 2, 3, "tx_frames"), 5 + 3, "{report}");
    assert_eq!(
        port_class(&report, 1, 3, "tx_frames"),
        3,
        "flooded only the unknown"
    );
}

/// `traffic count` times the span from the first RoCE frame to the last by the kernel's
/// receive times: 11 frames paced 5 ms apart span 50 ms. (It took the times the ring was
/// read, every half millisecond.)
#[test]
fn traffic_count_counts_and_times_what_arrives() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !live("traffic_count_counts_and_times_what_arrives") {
        return;
    }
    let lab = Lab::new("tc", 2);
    let config = switch_config(&lab, 1.0, &[]);
    let sw = lab.switch(&config, &[]);
    let sink = lab.host_if(1);
    let counter = lab
        .exec(
            1,
            bin(),
            &["traffic", "count", "--iface", &sink, "--duration", "1.5"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let iface = lab.host_if(0);
    let dst = mac(1);
    let sent = lab
        .exec(
            0,
            bin(),
            &[
                "traffic",
                "send",
                "--iface",
                &iface,
                "--dst-mac",
                &dst,
                "--pps",
                "200",
                "--count",
                "11",
                "--duration",
                "1",
            ],
        )
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", text(&sent.stderr));
    let out = counter.wait_with_output().unwrap();
    stop(sw);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line: serde_json::Value = serde_json::from_str(text(&out.stdout).trim())
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    assert_eq!(line["roce"], 11, "{line}");
    let span = line["span_s"].as_f64().unwrap();
    assert!((0.045..0.08).contains(&span), "span {span} s: {line}");
}
