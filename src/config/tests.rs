use super::*;

fn with(extra: &str) -> Result<SwitchConfig, ConfigError> {
    SwitchConfig::from_toml(&format!("{}\n{extra}", preset_text("default").unwrap()))
}

#[test]
fn every_preset_loads() {
    for (name, _) in PRESETS {
        let cfg = SwitchConfig::preset(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!cfg.lossless.is_empty(), "{name}");
    }
}

#[test]
fn default_preset_is_the_design_convention() {
    let cfg = SwitchConfig::preset("default").unwrap();
    assert_eq!(
        (cfg.dscp_to_tc[26], cfg.dscp_to_tc[24], cfg.dscp_to_tc[48]),
        (3, 3, 6)
    );
    assert_eq!(cfg.dscp_to_tc[0], 0);
    assert_eq!(cfg.lossless, PrioritySet::single(3));
    assert_eq!(cfg.queues[6].schedule, Schedule::Strict);
    assert_eq!(cfg.port_defaults.bits_per_sec, 100_000_000_000);
    assert_eq!(cfg.port_defaults.cable, Nanos(25));
}

#[test]
fn unknown_key_is_named_with_what_is_allowed() {
    let e = SwitchConfig::from_toml("[queue.3]\nschedule = \"dwrr\"\nwieght = 5\n").unwrap_err();
    assert!(e.message.contains("unknown field `wieght`"), "{e}");
    assert!(e.message.contains("weight"), "{e}");
    assert!(e.key.starts_with("line 3"), "{e}");
}

/// The smallest valid file: one lossless class with its queue.
const MINIMAL: &str =
    "[pfc]\nlossless = [3]\n[classify]\ndscp_to_tc = [[26, 3]]\n[queue.3]\nschedule = \"dwrr\"\n";

#[test]
fn impossible_values_are_refused_with_the_key() {
    SwitchConfig::from_toml(MINIMAL).unwrap();
    let cases = [
        (
            "[queue.5]\necn = { kmin_bytes = 300, kmax_bytes = 200, pmax = 0.1 }",
            "queue.5.ecn.kmin_bytes",
        ),
        (
            "[queue.5]\necn = { kmin_bytes = 100, kmax_bytes = 200, pmax = 1.5 }",
            "queue.5.ecn.pmax",
        ),
        ("[pg.2]\nheadroom_bytes = 100000", "pg.2"),
        ("[queue.9]\nschedule = \"strict\"", "queue.9"),
        (
            "[queue.5]\nschedule = \"strict\"\nweight = 3",
            "queue.5.weight",
        ),
        (
            "[port_defaults]\nspeed_gbps = 0",
            "port_defaults.speed_gbps",
        ),
        ("[port_defaults]\nmtu = 20", "port_defaults.mtu"),
        ("[buffer]\npg_alpha = -1", "buffer.pg_alpha"),
    ];
    for (extra, key) in cases {
        let e = match SwitchConfig::from_toml(&format!("{MINIMAL}{extra}\n")) {
            Err(e) => e,
            Ok(_) => panic!("{extra} was accepted"),
        };
        assert_eq!(e.key, key, "{extra}: {e}");
    }
}

/// A headroom below what the port needs is what a real switch accepts and a lab should
/// show: it loads, and `lint` names the key, the port and the bytes needed.
#[test]
fn a_headroom_below_the_minimum_loads_with_a_warning() {
    let cfg =
        SwitchConfig::from_toml(&format!("{MINIMAL}[pg.3]\nheadroom_bytes = 1000\n")).unwrap();
    let lints = cfg.lint();
    let w = lints
        .iter()
        .find(|w| w.key == "pg.3.headroom_bytes")
        .expect("a headroom warning");
    assert!(
        w.message.contains("1000") && w.message.contains("needs"),
        "{w:?}"
    );
    assert!(
        SwitchConfig::from_toml(MINIMAL)
            .unwrap()
            .lint()
            .iter()
            .all(|w| w.key != "pg.3.headroom_bytes")
    );
}

#[test]
fn static_thresholds_need_xon_below_xoff() {
    let text = r#"
        [buffer]
        threshold = "static"
        queue_limit_bytes = 100000
        [pfc]
        lossless = [3]
        [classify]
        dscp_to_tc = [[26, 3]]
        [queue.3]
        schedule = "dwrr"
        [pg.3]
        xoff_bytes = 20000
        xon_bytes = 20000
    "#;
    let e = SwitchConfig::from_toml(text).unwrap_err();
    assert_eq!(e.key, "pg.3.xon_bytes", "{e}");
    let ok =
        SwitchConfig::from_toml(&text.replace("xon_bytes = 20000", "xon_bytes = 18000")).unwrap();
    assert_eq!(
        ok.pgs[3].xoff,
        XoffRule::Static {
            xoff_bytes: 20000,
            xon_bytes: 18000
        }
    );
}

#[test]
fn lossless_class_needs_its_own_configured_queue() {
    let text = r#"
        [pfc]
        lossless = [3]
        [classify]
        dscp_to_tc = [[26, 3]]
    "#;
    let e = SwitchConfig::from_toml(text).unwrap_err();
    assert!(e.message.contains("no [queue.3] section"), "{e}");
    let shared = format!("{text}\n[queue.3]\nschedule = \"dwrr\"\n").replace(
        "dscp_to_tc = [[26, 3]]",
        "dscp_to_tc = [[26, 3]]\ntc_to_queue = [0, 1, 2, 3, 3, 5, 6, 7]",
    );
    let e = SwitchConfig::from_toml(&shared).unwrap_err();
    assert_eq!(e.key, "classify.tc_to_queue", "{e}");
    let unreachable = r#"
        [pfc]
        lossless = [5]
        [queue.5]
        schedule = "dwrr"
    "#;
    let e = SwitchConfig::from_toml(unreachable).unwrap_err();
    assert!(e.message.contains("no DSCP maps to traffic class 5"), "{e}");
}

#[test]
fn unknown_preset_lists_the_presets() {
    let e = SwitchConfig::preset("arista").unwrap_err();
    assert!(e.message.contains("default, nexus-ai, sonic"), "{e}");
}

#[test]
fn ports_take_defaults_and_overrides() {
    let cfg = with(
        "[[ports]]\nname = \"a\"\nspeed_gbps = 25\n[[ports]]\nname = \"b\"\ncable_ns = 1000\n",
    )
    .unwrap();
    assert_eq!(cfg.ports[0].bits_per_sec, 25_000_000_000);
    assert_eq!(cfg.ports[0].cable, Nanos(25));
    assert_eq!(cfg.ports[1].cable, Nanos(1000));
    assert_eq!(cfg.port_or_default("zz").bits_per_sec, 100_000_000_000);
    let e = with("[[ports]]\nname = \"a\"\n[[ports]]\nname = \"a\"\n").unwrap_err();
    assert!(e.message.contains("listed twice"), "{e}");
    let e = with("[[ports]]\nname = \"a\"\ncable_m = 1\ncable_ns = 5\n").unwrap_err();
    assert!(e.message.contains("not both"), "{e}");
}

#[test]
fn red_probability_follows_the_line() {
    let red = RedProfile {
        kmin_bytes: 100,
        kmax_bytes: 300,
        pmax: 0.2,
        gentle: false,
    };
    assert_eq!(red.probability(100), 0.0);
    assert!((red.probability(200) - 0.1).abs() < 1e-12);
    assert!((red.probability(300) - 0.2).abs() < 1e-12);
    assert_eq!(red.probability(301), 1.0);
}

/// The minimal file, parsed, with `edit` applied, resolved: values TOML cannot write
/// (above i64::MAX, NaN) go through `edit`.
fn resolve_with(edit: impl FnOnce(&mut ConfigFile)) -> Result<SwitchConfig, ConfigError> {
    let mut file: ConfigFile = toml::from_str(MINIMAL).unwrap();
    edit(&mut file);
    file.resolve()
}

/// Review item 1: `cable_ns = u64::MAX` wrapped the headroom product to less than a 25 ns
/// cable's; it is refused with its range, and the formula saturates if called anyway.
#[test]
fn huge_cable_is_refused_and_headroom_never_shrinks() {
    let e = resolve_with(|f| f.port_defaults.cable_ns = Some(u64::MAX)).unwrap_err();
    assert_eq!(e.key, "port_defaults.cable_ns", "{e}");
    assert!(e.message.contains("give 0 to 500000 ns"), "{e}");
    let e = resolve_with(|f| {
        f.ports = vec![PortSpec {
            name: Some("p".into()),
            cable_ns: Some(500_001),
            ..PortSpec::default()
        }]
    })
    .unwrap_err();
    assert_eq!(e.key, "ports[0].cable_ns", "{e}");
    let cfg = resolve_with(|f| f.port_defaults.cable_ns = Some(MAX_CABLE_NS)).unwrap();
    assert_eq!(cfg.port_defaults.cable, Nanos(500_000));
    let short = PortConfig {
        cable: Nanos(25),
        ..cfg.port_defaults.clone()
    };
    let endless = PortConfig {
        cable: Nanos(u64::MAX),
        bits_per_sec: u64::MAX,
        ..cfg.port_defaults.clone()
    };
    assert!(min_headroom_bytes(&cfg.port_defaults) > min_headroom_bytes(&short));
    assert_eq!(min_headroom_bytes(&endless), u64::MAX);
}

/// Review item 1: `shared_bytes = 2^62` with `pg_alpha = 4` truncated the dynamic limit to
/// 0; the pool is capped at 1 TiB (the MMU's own test, `switch::mmu`, checks that the
/// limit saturates beyond that).
#[test]
fn huge_shared_pool_is_refused() {
    let e = resolve_with(|f| {
        f.buffer.shared_bytes = 1 << 62;
        f.buffer.pg_alpha = Some(4.0);
    })
    .unwrap_err();
    assert_eq!(e.key, "buffer.shared_bytes", "{e}");
    assert!(e.message.contains("1 TiB"), "{e}");
    let cfg = resolve_with(|f| {
        f.buffer.shared_bytes = MAX_BUFFER_BYTES;
        f.buffer.pg_alpha = Some(8.0);
    })
    .unwrap();
    assert_eq!(cfg.shared_bytes, MAX_BUFFER_BYTES);
    assert!(matches!(cfg.pgs[3].xoff, XoffRule::Dynamic { alpha, .. } if alpha == 8.0));
}

/// Every byte quantity, time and alpha names its key and its range when out of it.
#[test]
fn every_quantity_has_its_range() {
    type Edit = fn(&mut ConfigFile);
    let cases: [(Edit, &str, &str); 18] = [
        (|f| f.mac_age_secs = 0, "mac_age_secs", "1 to 1000000"),
        (
            |f| f.mac_age_secs = u64::MAX,
            "mac_age_secs",
            "1 to 1000000",
        ),
        (
            |f| f.port_defaults.mtu = Some(67),
            "port_defaults.mtu",
            "68",
        ),
        (
            |f| f.port_defaults.speed_gbps = Some(f64::NAN),
            "port_defaults.speed_gbps",
            "0.001 to 1600",
        ),
        (
            |f| f.port_defaults.cable_m = Some(f64::INFINITY),
            "port_defaults.cable_m",
            "100000 m",
        ),
        (
            |f| f.buffer.queue_reserve_bytes = MAX_BUFFER_BYTES + 1,
            "buffer.queue_reserve_bytes",
            "1 TiB",
        ),
        (
            |f| f.buffer.pg_reserve_bytes = u64::MAX,
            "buffer.pg_reserve_bytes",
            "1 TiB",
        ),
        (
            |f| f.buffer.pg_alpha = Some(1.0 / 256.0),
            "buffer.pg_alpha",
            "[1/128, 8]",
        ),
        (
            |f| f.buffer.queue_alpha = Some(16.0),
            "buffer.queue_alpha",
            "[1/128, 8]",
        ),
        (
            |f| f.buffer.pg_alpha = Some(f64::NAN),
            "buffer.pg_alpha",
            "[1/128, 8]",
        ),
        (
            |f| {
                f.buffer.threshold = ThresholdMode::Static;
                f.buffer.queue_limit_bytes = Some(u64::MAX);
            },
            "buffer.queue_limit_bytes",
            "1 TiB",
        ),
        (
            |f| {
                f.pg.insert(
                    "3".into(),
                    PgSpec {
                        reserve_bytes: Some(u64::MAX),
                        ..PgSpec::default()
                    },
                );
            },
            "pg.3.reserve_bytes",
            "1 TiB",
        ),
        (
            |f| {
                f.pg.insert(
                    "3".into(),
                    PgSpec {
                        xon_offset_bytes: Some(u64::MAX),
                        ..PgSpec::default()
                    },
                );
            },
            "pg.3.xon_offset_bytes",
            "1 TiB",
        ),
        (
            |f| {
                f.pg.insert(
                    "3".into(),
                    PgSpec {
                        headroom_bytes: Some(u64::MAX),
                        ..PgSpec::default()
                    },
                );
            },
            "pg.3.headroom_bytes",
            "1 TiB",
        ),
        (
            |f| {
                f.queue.get_mut("3").unwrap().ecn = Some(RedSpec {
                    kmin_bytes: 0,
                    kmax_bytes: u64::MAX,
                    pmax: 0.5,
                    gentle: false,
                })
            },
            "queue.3.ecn.kmax_bytes",
            "1 TiB",
        ),
        (
            |f| {
                f.queue.get_mut("3").unwrap().ecn = Some(RedSpec {
                    kmin_bytes: 0,
                    kmax_bytes: 1000,
                    pmax: f64::NAN,
                    gentle: false,
                })
            },
            "queue.3.ecn.pmax",
            "(0, 1]",
        ),
        (
            |f| f.watchdog.poll_ms = u64::MAX,
            "watchdog.poll_ms",
            "1 to 3600000 ms",
        ),
        (
            |f| {
                let q = f.queue.remove("3").unwrap();
                f.queue.insert("03".into(), q);
            },
            "queue.03",
            "numbered 0-7",
        ),
    ];
    for (edit, key, range) in cases {
        let e = resolve_with(edit).unwrap_err();
        assert_eq!(e.key, key, "{e}");
        assert!(e.message.contains(range), "{key}: {e}");
    }
    // The ends of the ranges are accepted.
    resolve_with(|f| {
        f.mac_age_secs = 1_000_000;
        f.port_defaults.mtu = Some(68);
        f.buffer.pg_alpha = Some(1.0 / 128.0);
        f.buffer.queue_alpha = Some(8.0);
        f.buffer.queue_reserve_bytes = MAX_BUFFER_BYTES;
        f.watchdog.poll_ms = 3_600_000;
    })
    .unwrap();
}

/// Review item 2: a DSCP pair with extra elements, a DSCP listed twice (the later won),
/// and both `cable_m` and `cable_ns` under `port_defaults` are refused.
#[test]
fn dscp_pairs_are_pairs_each_dscp_once_and_one_cable() {
    let e = SwitchConfig::from_toml(
        "[pfc]\nlossless = [3]\n[classify]\ndscp_to_tc = [[26, 3, 5]]\n[queue.3]\n",
    )
    .unwrap_err();
    assert!(e.key.starts_with("line 4"), "{e}");
    assert!(
        e.message.contains("entry 0 has 3 element(s)") && e.message.contains("[dscp, class]"),
        "{e}"
    );
    let e = SwitchConfig::from_toml("[classify]\ndscp_to_tc = [[26]]\n").unwrap_err();
    assert!(e.message.contains("entry 0 has 1 element(s)"), "{e}");
    let e = SwitchConfig::from_toml(&MINIMAL.replace("[[26, 3]]", "[[26, 3], [10, 1], [26, 0]]"))
        .unwrap_err();
    assert_eq!(e.key, "classify.dscp_to_tc[2]", "{e}");
    assert!(
        e.message
            .contains("DSCP 26 is listed twice (first at classify.dscp_to_tc[0])"),
        "{e}"
    );
    let e = SwitchConfig::from_toml(&format!(
        "{MINIMAL}[port_defaults]\ncable_m = 1\ncable_ns = 5\n"
    ))
    .unwrap_err();
    assert_eq!(e.key, "port_defaults", "{e}");
    assert!(e.message.contains("not both"), "{e}");
}

/// Review item 4: the duplicate-name check is a hash set (100 000 ports took 13.5 s in
/// the quadratic one), and more than 4096 ports are refused under the key `ports`.
#[test]
fn port_count_is_capped_and_duplicates_found_at_the_cap() {
    let ports = |n: usize, last: &str| -> String {
        let mut t = String::from(MINIMAL);
        for i in 0..n - 1 {
            t.push_str(&format!("[[ports]]\nname = \"p{i}\"\n"));
        }
        t.push_str(&format!("[[ports]]\nname = \"{last}\"\n"));
        t
    };
    let start = std::time::Instant::now();
    let e = SwitchConfig::from_toml(&ports(100_000, "last")).unwrap_err();
    assert_eq!(e.key, "ports", "{e}");
    assert!(
        e.message.contains("100000 ports") && e.message.contains("4096"),
        "{e}"
    );
    let cfg = SwitchConfig::from_toml(&ports(MAX_PORTS, "last")).unwrap();
    assert_eq!(cfg.ports.len(), MAX_PORTS);
    let e = SwitchConfig::from_toml(&ports(MAX_PORTS, "p17")).unwrap_err();
    assert_eq!(e.key, format!("ports[{}].name", MAX_PORTS - 1), "{e}");
    assert!(e.message.contains("'p17' is listed twice"), "{e}");
    let e = SwitchConfig::from_toml(&ports(MAX_PORTS + 1, "last")).unwrap_err();
    assert_eq!(e.key, "ports", "{e}");
    // Generous for a loaded 2-core machine; the quadratic check took seconds.
    assert!(start.elapsed().as_secs() < 30, "{:?}", start.elapsed());
}

/// Review item 3: a configuration is read with a cap: /dev/zero and an endless FIFO
/// give `TooLarge` after reading at most cap + 1 bytes, instead of filling memory.
#[test]
fn read_text_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let ok = dir.path().join("ok.toml");
    std::fs::write(&ok, MINIMAL).unwrap();
    assert_eq!(read_text(&ok).unwrap(), MINIMAL);

    let e = read_text(Path::new("/dev/zero")).unwrap_err();
    assert!(
        matches!(e, ReadError::TooLarge { limit, .. } if limit == MAX_CONFIG_BYTES),
        "{e}"
    );
    assert!(e.to_string().contains("/dev/zero"), "{e}");

    let exact = dir.path().join("exact.toml");
    std::fs::write(&exact, "a".repeat(100)).unwrap();
    assert_eq!(read_text_limited(&exact, 100).unwrap().len(), 100);
    assert!(matches!(
        read_text_limited(&exact, 99),
        Err(ReadError::TooLarge { limit: 99, .. })
    ));

    let binary = dir.path().join("bin.toml");
    std::fs::write(&binary, [0xff, 0xfe, 0x00]).unwrap();
    assert!(matches!(read_text(&binary), Err(ReadError::NotText { .. })));
    assert!(matches!(
        read_text(&dir.path().join("missing.toml")),
        Err(ReadError::Io { .. })
    ));
    // A directory is named as one (it said 'Is a directory (os error 21)').
    let e = read_text(dir.path()).unwrap_err();
    assert!(matches!(e, ReadError::IsDirectory { .. }), "{e}");
    assert!(
        e.to_string().ends_with("is a directory; give a file"),
        "{e}"
    );

    // A FIFO whose writer never stops: the reader stops at the cap and closes it, and the
    // writer then gets EPIPE (Rust ignores SIGPIPE).
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let writer_path = fifo.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(writer_path)
            .unwrap();
        let block = [b'#'; 65536];
        while f.write_all(&block).is_ok() {}
    });
    let e = read_text(&fifo).unwrap_err();
    assert!(matches!(e, ReadError::TooLarge { .. }), "{e}");
    writer.join().unwrap();
}

#[test]
fn gentle_red_rises_from_pmax_to_one_between_kmax_and_twice_kmax() {
    let red = |gentle| RedProfile {
        kmin_bytes: 1000,
        kmax_bytes: 2000,
        pmax: 0.2,
        gentle,
    };
    for gentle in [false, true] {
        assert_eq!(red(gentle).probability(1000), 0.0);
        assert!((red(gentle).probability(1500) - 0.1).abs() < 1e-12);
        assert!((red(gentle).probability(2000) - 0.2).abs() < 1e-12);
    }
    assert_eq!(red(false).probability(2001), 1.0, "WRED jumps to 1");
    // Gentle: 0.2 + 0.8 x 1000/2000 = 0.6 half way to 2 x Kmax, 1 from there.
    assert!((red(true).probability(3000) - 0.6).abs() < 1e-12);
    assert_eq!(red(true).probability(4000), 1.0);
    assert_eq!(red(true).probability(9000), 1.0);
}

/// `rocelab config show endpoint` prints exactly the defaults.
#[test]
fn the_endpoint_defaults_file_is_the_default_configuration() {
    use crate::config::endpoint::EndpointConfig;
    let parsed = EndpointConfig::from_toml(crate::config::ENDPOINT_DEFAULTS).unwrap();
    assert_eq!(
        format!("{parsed:?}"),
        format!("{:?}", EndpointConfig::default())
    );
}

#[test]
fn set_reaches_into_arrays_of_tables_by_index() {
    let mut t: toml::Table = toml::from_str(
        "[[workload]]\nkind = \"poisson\"\nload = 0.5\n[[workload]]\nkind = \"all-to-all\"\n",
    )
    .unwrap();
    super::set_key(&mut t, "workload.0.load=0.2").unwrap();
    super::set_key(&mut t, "workload.1.bytes=4K").unwrap();
    assert_eq!(t["workload"][0]["load"].as_float(), Some(0.2));
    assert_eq!(t["workload"][1]["bytes"].as_str(), Some("4K"));
    let e = super::set_key(&mut t, "workload.2.load=1").unwrap_err();
    assert_eq!(e.key, "workload.2");
    assert!(e.message.contains("0 to 1"), "{e}");
    let e = super::set_key(&mut t, "workload.0=1").unwrap_err();
    assert!(e.message.contains("is a list"), "{e}");
}

/// A pause of 1 quantum leaves no refresh interval below it. It was refused as
/// "pfc.refresh_quanta: 1 must be below pfc.pause_quanta (1)", naming a key the user
/// had not set; the refusal now names the pause and what it needs.
#[test]
fn a_pause_of_one_quantum_is_refused_for_what_it_is() {
    let text = preset_text("default")
        .unwrap()
        .replace("refresh_quanta = 32768", "")
        .replace("pause_quanta = 65535", "pause_quanta = 1");
    let e = SwitchConfig::from_toml(&text).unwrap_err().to_string();
    assert!(
        e.contains("pfc.pause_quanta") && e.contains("give 2 to 65535"),
        "{e}"
    );
    let two = text.replace("pause_quanta = 1", "pause_quanta = 2");
    let cfg = SwitchConfig::from_toml(&two).unwrap();
    assert_eq!((cfg.pause_quanta, cfg.refresh_quanta), (2, 1));
}
