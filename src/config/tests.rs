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
        ("[pg.3]\nheadroom_bytes = 1000", "pg.3.headroom_bytes"),
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
    let e =
        SwitchConfig::from_toml(&format!("{MINIMAL}[pg.3]\nheadroom_bytes = 1000\n")).unwrap_err();
    assert!(e.message.contains("omit it to have it computed"), "{e}");
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
    };
    assert_eq!(red.probability(100), 0.0);
    assert!((red.probability(200) - 0.1).abs() < 1e-12);
    assert!((red.probability(300) - 0.2).abs() < 1e-12);
    assert_eq!(red.probability(301), 1.0);
}
