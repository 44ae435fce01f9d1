//! `rocelab config import`: a realistic SONiC CONFIG_DB document and an NX-OS QoS
//! configuration (tests/data, written from each format's public documentation) import to
//! the values they state, with every warning; deliberately wrong variants give the
//! warning that names the mistake; both imports pass `conformance`.

mod common;

use rocelab::config::import::{ImportWarning, nxos, sonic};
use rocelab::config::{Schedule, SwitchConfig, WatchdogAction, XoffRule};
use rocelab::conformance::{self, Status};
use rocelab::time::Nanos;

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn sources(w: &[ImportWarning]) -> Vec<&str> {
    w.iter().map(|w| w.source.as_str()).collect()
}

fn passes_conformance(cfg: &SwitchConfig, name: &str) {
    let report = conformance::run(cfg, name);
    assert!(report.failing_ids().is_empty(), "{name}: {report:#?}");
    assert!(report.passed >= 14, "{name}: {report:#?}");
}

#[test]
fn sonic_config_db_imports_every_value() {
    let imp = sonic::import(&data("sonic_config_db.json"), "config_db.json").unwrap();
    let c = &imp.config;
    for d in 0..64 {
        let want = match d {
            3 => 3,
            4 => 4,
            5 => 2,
            8 => 0,
            46 => 5,
            48 => 6,
            _ => 1,
        };
        assert_eq!(c.dscp_to_tc[d], want, "DSCP {d}");
    }
    assert_eq!(c.lossless.iter().collect::<Vec<_>>(), [3, 4]);
    assert_eq!(c.tc_to_queue, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(c.shared_bytes, 12_582_912);
    assert_eq!(c.ports.len(), 4);
    assert_eq!(c.ports[3].name, "Ethernet12");
    assert_eq!(c.ports[3].cable, Nanos(200));
    assert!(
        c.ports
            .iter()
            .all(|p| p.bits_per_sec == 100_000_000_000 && p.mtu == 9100)
    );
    for pg in [3, 4] {
        // The 40 m profile, the larger headroom: size 71680 = reserve + xoff 52224.
        assert_eq!(c.pgs[pg].reserve_bytes, 71_680 - 52_224);
        assert_eq!(c.pgs[pg].headroom_bytes, Some(52_224));
        assert_eq!(
            c.pgs[pg].xoff,
            XoffRule::Dynamic {
                alpha: 1.0,
                xon_offset_bytes: 0
            }
        );
    }
    assert_eq!(c.queue_limit, rocelab::config::QueueLimit::Dynamic(8.0));
    assert_eq!(c.queue_reserve_bytes, 9216);
    assert_eq!(c.pgs[0].reserve_bytes, 0);
    for q in [0, 1, 2, 5, 6] {
        assert_eq!(c.queues[q].schedule, Schedule::Dwrr(14), "queue {q}");
        assert!(c.queues[q].ecn.is_none());
    }
    for q in [3, 4] {
        assert_eq!(c.queues[q].schedule, Schedule::Dwrr(15));
        let red = c.queues[q].ecn.unwrap();
        assert_eq!(
            (red.kmin_bytes, red.kmax_bytes, red.pmax),
            (1_048_576, 2_097_152, 0.05)
        );
    }
    assert!(c.watchdog.enabled);
    assert_eq!(
        (
            c.watchdog.detection,
            c.watchdog.restoration,
            c.watchdog.poll
        ),
        (
            Nanos::from_millis(200),
            Nanos::from_millis(200),
            Nanos::from_millis(200)
        )
    );
    assert_eq!(c.watchdog.action, WatchdogAction::Drop);
    assert_eq!(
        sources(&imp.warnings),
        [
            "FLEX_COUNTER_TABLE",
            "SYSLOG_SERVER",
            "VERSIONS",
            "BUFFER_PG|Ethernet12|3-4|profile",
            "BUFFER_PG|Ethernet12|3-4|profile",
            "DSCP_TO_TC_MAP|AZURE (via PORT_QOS_MAP|global|dscp_to_tc_map)",
        ],
        "{:#?}",
        imp.warnings
    );
    assert!(imp.warnings[5].message.contains("CNPs (DSCP 48"));
    // Every value carries its source.
    for line in imp.toml.lines().filter(|l| l.contains(" = ")) {
        assert!(line.contains(" # "), "no source on: {line}");
    }
    // The TOML is what it resolves to.
    assert_eq!(&SwitchConfig::from_toml(&imp.toml).unwrap(), c);
    passes_conformance(c, "config_db.json");
}

#[test]
fn bracketed_references_of_older_sonic_read_the_same() {
    let text = data("sonic_config_db.json");
    let old = text
        .replace(
            "\"profile\": \"egress_lossy_profile\"",
            "\"profile\": \"[BUFFER_PROFILE|egress_lossy_profile]\"",
        )
        .replace(
            "\"scheduler\": \"scheduler.1\"",
            "\"scheduler\": \"[SCHEDULER|scheduler.1]\"",
        )
        .replace(
            "\"wred_profile\": \"AZURE_LOSSLESS\"",
            "\"wred_profile\": \"[WRED_PROFILE|AZURE_LOSSLESS]\"",
        );
    assert_ne!(old, text);
    let a = sonic::import(&text, "new").unwrap().config;
    let b = sonic::import(&old, "old").unwrap().config;
    assert_eq!(a, b);
}

/// Each common mistake, alone, gives its warning with the source path that shows it.
#[test]
fn sonic_mistakes_are_named_with_their_source() {
    let text = data("sonic_config_db.json");
    let cases: [(&str, &str, &str, &str); 4] = [
        (
            "\"3\": \"3\",\n            \"4\": \"4\",\n            \"5\": \"2\",\n            \"6\": \"1\",\n            \"7\": \"1\",",
            "\"3\": \"1\",\n            \"4\": \"1\",\n            \"5\": \"2\",\n            \"6\": \"3\",\n            \"7\": \"4\",",
            "DSCP_TO_TC_MAP|AZURE (via PORT_QOS_MAP|global|dscp_to_tc_map)",
            "none of RoCE's usual DSCPs",
        ),
        (
            "\"xon\": \"19456\",\n            \"xoff\": \"52224\"",
            "\"xon\": \"60000\",\n            \"xoff\": \"52224\"",
            "BUFFER_PROFILE|pg_lossless_100000_40m_profile|xon",
            "above XOFF",
        ),
        (
            "\"xoff\": \"52224\"",
            "\"xoff\": \"20000\"",
            "BUFFER_PROFILE|pg_lossless_100000_40m_profile|xoff",
            "is below what its ports need (Ethernet12 48488 B (100 Gb/s, 40 m, MTU 9100)",
        ),
        (
            "\"green_min_threshold\": \"1048576\"",
            "\"green_min_threshold\": \"8000000\"",
            "WRED_PROFILE|AZURE_LOSSLESS|green_min_threshold, green_max_threshold, green_drop_probability 5 % (QUEUE|Ethernet0|3|wred_profile)",
            "PFC fires before ECN",
        ),
    ];
    for (from, to, source, says) in cases {
        assert!(text.contains(from), "{from}");
        let wrong = text.replace(from, to).replace(
            "\"green_max_threshold\": \"2097152\"",
            if from.contains("green") {
                "\"green_max_threshold\": \"9000000\""
            } else {
                "\"green_max_threshold\": \"2097152\""
            },
        );
        let imp = sonic::import(&wrong, "wrong").unwrap();
        assert!(
            imp.warnings
                .iter()
                .any(|w| w.source == source && w.message.contains(says)),
            "{to}: {:#?}",
            imp.warnings
        );
    }
    // The too-small headroom fails conformance on the in-flight rows.
    let small = text
        .replace("\"xoff\": \"52224\"", "\"xoff\": \"20000\"")
        .replace("\"xoff\": \"48128\"", "\"xoff\": \"20000\"");
    let imp = sonic::import(&small, "small").unwrap();
    // Said once per profile, naming its ports, and not again in the linter's words
    // (rocelab's pg.3 and pg.4 headroom_bytes, from the 40 m profile).
    let short: Vec<&ImportWarning> = imp
        .warnings
        .iter()
        .filter(|w| w.message.contains("below"))
        .collect();
    assert_eq!(
        sources(&short.iter().map(|w| (*w).clone()).collect::<Vec<_>>()),
        [
            "BUFFER_PROFILE|pg_lossless_100000_5m_profile|xoff",
            "BUFFER_PROFILE|pg_lossless_100000_40m_profile|xoff"
        ],
        "{:#?}",
        imp.warnings
    );
    assert!(
        short[0]
            .message
            .contains("Ethernet0 44113 B (100 Gb/s, 5 m, MTU 9100), Ethernet4 44113 B"),
        "{short:#?}"
    );
    let cfg = imp.config;
    let report = conformance::run(&cfg, "small");
    assert!(
        report
            .checks
            .iter()
            .any(|c| c.id.starts_with("headroom_in_flight.") && c.status == Status::Fail)
    );
}

/// rocelab gives every port the largest bound profile's headroom, so that profile is checked
/// against every port, bound or not: a port without a BUFFER_PG entry that needs more is
/// named (the configuration check's own warning on pg.N.headroom_bytes, which would name
/// it, is not given beside the importer's).
#[test]
fn the_headroom_every_port_takes_is_checked_on_every_port() {
    let text = data("sonic_config_db.json");
    let unbound = r#""Ethernet12|3-4": {
            "profile": "pg_lossless_100000_40m_profile"
        }
    },
    "BUFFER_QUEUE""#;
    assert!(text.contains(unbound));
    let text = text
        .replace(
            unbound,
            "\"Ethernet12|5\": {\"profile\": \"NULL\"}\n    },\n    \"BUFFER_QUEUE\"",
        )
        .replace("\"xoff\": \"48128\"", "\"xoff\": \"44000\"");
    let imp = sonic::import(&text, "unbound").unwrap();
    let short: Vec<&ImportWarning> = imp
        .warnings
        .iter()
        .filter(|w| w.message.contains("below"))
        .collect();
    assert_eq!(short.len(), 1, "{:#?}", imp.warnings);
    assert_eq!(
        short[0].source,
        "BUFFER_PROFILE|pg_lossless_100000_5m_profile|xoff"
    );
    assert!(
        short[0].message.contains("Ethernet0 44113 B")
            && short[0]
                .message
                .contains("Ethernet12 48488 B (100 Gb/s, 40 m, MTU 9100)"),
        "{short:#?}"
    );
    assert_eq!(imp.config.pgs[3].headroom_bytes, Some(44_000));
}

/// PFC_WD per port: each field is taken as most ports have it, ports with other settings
/// are named, and a port without an entry (no watchdog on the switch) is warned about
/// (differing ports were dropped without a word, and with every port's setting different
/// the first port's was taken whole). Every port's values are checked.
#[test]
fn sonic_watchdog_settings_that_differ_per_port_are_named() {
    let text = data("sonic_config_db.json");
    let wd = |port: &str, action: &str, detection: &str| {
        format!(
            r#""{port}": {{
            "action": "drop",
            "detection_time": "200",
            "restoration_time": "200",
            "pfc_stat_history": "disable"
        }}"#
        )
        .replace("\"drop\"", &format!("\"{action}\""))
        .replace(
            "\"detection_time\": \"200\"",
            &format!("\"detection_time\": \"{detection}\""),
        )
    };
    let original = |port: &str| wd(port, "drop", "200");
    for port in ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"] {
        assert!(text.contains(&original(port)), "{port}");
    }
    let mixed = text
        .replace(&original("Ethernet0"), &wd("Ethernet0", "drop", "200"))
        .replace(&original("Ethernet4"), &wd("Ethernet4", "forward", "1000"))
        .replace(&original("Ethernet8"), &wd("Ethernet8", "alert", "1000"))
        .replace(&format!("{},\n        ", original("Ethernet12")), "")
        .replace(&format!(",\n        {}", original("Ethernet12")), "");
    assert!(!mixed.contains(&original("Ethernet12")));
    let imp = sonic::import(&mixed, "mixed").unwrap();
    assert_eq!(
        imp.config.watchdog.detection.0, 1_000_000_000,
        "{}",
        imp.toml
    );
    let say = |needle: &str| {
        imp.warnings
            .iter()
            .find(|w| w.message.contains(needle))
            .unwrap_or_else(|| panic!("{needle}: {:#?}", imp.warnings))
            .clone()
    };
    let differ = say("other watchdog settings");
    assert!(
        differ.message.contains("Ethernet0 (drop, 200 ms, 200 ms)")
            && differ
                .message
                .contains("Ethernet4 (forward, 1000 ms, 200 ms)"),
        "{differ:?}"
    );
    assert!(say("no PFC_WD entry").message.contains("Ethernet12"));
    let bad = text.replace(&original("Ethernet8"), &wd("Ethernet8", "shout", "200"));
    let e = sonic::import(&bad, "bad").unwrap_err().to_string();
    assert!(e.contains("PFC_WD|Ethernet8|action"), "{e}");
}

/// What a CONFIG_DB leaves out is said, not filled in silently: a port without `mtu`
/// takes SONiC's 9100 with a comment saying so (the comment named PORT|…|mtu as if it
/// were there); a port no CABLE_LENGTH names gets 5 m, assumed with a warning (it got
/// 0 m without a word); a port two CABLE_LENGTH entries give different lengths is warned
/// about; `wred_green_enable: false` leaves the queue without ECN with a warning; and a
/// pool without a size in the dynamic buffer model (SONiC computes it) takes rocelab's
/// default with a warning, where it was refused.
#[test]
fn sonic_values_left_out_are_said() {
    let mut doc: serde_json::Value = serde_json::from_str(&data("sonic_config_db.json")).unwrap();
    doc["PORT"]["Ethernet8"]
        .as_object_mut()
        .unwrap()
        .remove("mtu");
    doc["CABLE_LENGTH"]["AZURE"]
        .as_object_mut()
        .unwrap()
        .remove("Ethernet4");
    doc["CABLE_LENGTH"]["OTHER"] = serde_json::json!({"Ethernet0": "300m"});
    doc["WRED_PROFILE"]["AZURE_LOSSLESS"]["wred_green_enable"] = "false".into();
    doc["DEVICE_METADATA"]["localhost"]["buffer_model"] = "dynamic".into();
    doc["BUFFER_POOL"]["ingress_lossless_pool"]
        .as_object_mut()
        .unwrap()
        .remove("size");
    let imp = sonic::import(&doc.to_string(), "left out").unwrap();
    let port = |n: &str| imp.config.ports.iter().find(|p| p.name == n).unwrap();
    assert_eq!(port("Ethernet8").mtu, 9100);
    assert!(
        imp.toml
            .contains("# no PORT|Ethernet8|mtu: SONiC's default 9100"),
        "{}",
        imp.toml
    );
    assert_eq!(port("Ethernet4").cable, Nanos(25));
    assert_eq!(port("Ethernet0").cable, Nanos(25));
    let say = |source: &str, needle: &str| {
        assert!(
            imp.warnings
                .iter()
                .any(|w| w.source == source && w.message.contains(needle)),
            "{source}: {needle}: {:#?}",
            imp.warnings
        )
    };
    say("CABLE_LENGTH", "no cable length for Ethernet4: 5m assumed");
    say(
        "CABLE_LENGTH|AZURE|Ethernet0",
        "different cable lengths (AZURE 5m, OTHER 300m)",
    );
    say(
        "WRED_PROFILE|AZURE_LOSSLESS|wred_green_enable",
        "no ECN profile",
    );
    say(
        "BUFFER_POOL|ingress_lossless_pool|size",
        "dynamic buffer model",
    );
    assert!(imp.config.queues[3].ecn.is_none());
    assert_eq!(imp.config.shared_bytes, 32 << 20);
    // The static model needs the size.
    doc["DEVICE_METADATA"]["localhost"]["buffer_model"] = "traditional".into();
    let e = sonic::import(&doc.to_string(), "static")
        .unwrap_err()
        .to_string();
    assert!(e.contains("BUFFER_POOL|ingress_lossless_pool|size"), "{e}");
}

#[test]
fn broken_sonic_documents_are_errors_not_panics() {
    for (doc, says) in [
        ("not json", "not a CONFIG_DB JSON document"),
        ("[1, 2]", "JSON object of tables"),
        (
            r#"{"PORT": {"Ethernet0": {"speed": "fast"}}}"#,
            "PORT|Ethernet0|speed",
        ),
        (
            r#"{"PORT": {"Ethernet0": {"speed": "100000"}}, "CABLE_LENGTH": {"AZURE": {"Ethernet0": "far"}}}"#,
            "CABLE_LENGTH|AZURE|Ethernet0",
        ),
        (
            r#"{"PORT": {"Ethernet0": {"speed": "100000"}}, "PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "3,9"}}}"#,
            "pfc_enable",
        ),
        (
            r#"{"PORT": {"Ethernet0": {"speed": "100000"}}, "PORT_QOS_MAP": {"Ethernet0": {"dscp_to_tc_map": "X"}}}"#,
            "DSCP_TO_TC_MAP|X",
        ),
    ] {
        let e = sonic::import(doc, "doc").unwrap_err().to_string();
        assert!(e.contains(says), "{doc}: {e}");
    }
}

/// `speed auto` (negotiated) is common on NX-OS: it keeps the port defaults' speed, with a
/// warning, rather than stopping the import. An mtu that is not a number, and a document
/// with no QoS in it, are refused by name; a port name with a quote is written escaped.
#[test]
fn nxos_speed_auto_mtu_words_and_documents_without_qos() {
    let text = data("nxos_running_config.txt");
    let auto = text.replace(
        "interface Ethernet1/1\n",
        "interface Ethernet1/1\n  speed auto\n",
    );
    let imp = nxos::import(&auto, "auto").unwrap();
    assert!(
        imp.config
            .ports
            .iter()
            .all(|p| p.bits_per_sec == 100_000_000_000)
    );
    assert!(
        imp.warnings
            .iter()
            .any(|w| w.message.contains("speed auto")),
        "{:?}",
        imp.warnings
    );
    // In an interface, and in the network-qos class.
    for (from, to) in [
        (
            "  mtu 9216\n  priority-flow-control",
            "  mtu jumbo\n  priority-flow-control",
        ),
        ("    mtu 9216\n    pause", "    mtu jumbo\n    pause"),
    ] {
        assert!(text.contains(from), "{from:?}");
        let e = nxos::import(&text.replacen(from, to, 1), "jumbo")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("mtu jumbo") && e.contains("number of bytes"),
            "{e}"
        );
    }
    for not_qos in ["", "{\"PORT\": {}}", "[buffer]\nshared_bytes = 1000\n"] {
        let e = nxos::import(not_qos, "other").unwrap_err().to_string();
        assert!(e.contains("no NX-OS QoS configuration"), "{not_qos:?}: {e}");
    }
    // The same for SONiC: a JSON object with no table rocelab reads.
    for not_config_db in ["{}", "{\"DEVICE_METADATA\": {}}", "{\"a\": [1, 2]}"] {
        let e = sonic::import(not_config_db, "other")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no CONFIG_DB table"), "{not_config_db:?}: {e}");
    }
    let quoted = text.replace("interface Ethernet1/2\n", "interface Ethernet1/2\"x\n");
    let imp = nxos::import(&quoted, "quoted").unwrap();
    assert!(imp.config.ports.iter().any(|p| p.name == "Ethernet1/2\"x"));
}

/// An interface's own QoS commands that rocelab takes for every port (its watchdog, its
/// queuing policy) are warned about by their line when they differ from the system's, and
/// so is any other QoS command in an interface; those that agree, and descriptions, are
/// not.
#[test]
fn nxos_interface_qos_that_differs_from_the_system_is_warned_about() {
    let text = data("nxos_running_config.txt");
    let plain = nxos::import(&text, "running-config").unwrap();
    let per_port = |imp: &rocelab::config::import::Imported| -> Vec<String> {
        imp.warnings
            .iter()
            .filter(|w| w.message.contains("Ethernet1/"))
            .map(|w| format!("{}: {}", w.source, w.message))
            .collect()
    };
    // Every interface agrees with the system's watchdog (on), one describes its RoCE.
    assert!(
        !per_port(&plain)
            .iter()
            .any(|w| w.contains("watchdog") || w.contains("QoS command")),
        "{:?}",
        per_port(&plain)
    );
    let edited = text
        .replacen(
            "  priority-flow-control watch-dog-interval on
",
            "  priority-flow-control watch-dog-interval off
",
            1,
        )
        .replacen(
            "interface Ethernet1/2\n",
            "interface Ethernet1/2\n  service-policy type queuing output OTHER_QUEUING\n  priority-flow-control watch-dog interval 200\n  description ecn and buffer tuning lab\n",
            1,
        );
    let imp = nxos::import(&edited, "running-config").unwrap();
    let warned = per_port(&imp);
    let has = |needle: &str| warned.iter().any(|w| w.contains(needle));
    assert!(
        has("the PFC watchdog is off on Ethernet1/1 and on for the system"),
        "{warned:?}"
    );
    assert!(
        has("Ethernet1/2 queues by OTHER_QUEUING, not the system policy"),
        "{warned:?}"
    );
    assert!(
        has("priority-flow-control watch-dog interval 200") || has("QoS command on Ethernet1/2"),
        "{warned:?}"
    );
    assert!(!has("description"), "{warned:?}");
    // Each names its line.
    assert!(warned.iter().all(|w| w.contains("line ")), "{warned:?}");
}

/// The ports' MTU is the lossless class's (`pause pfc-cos`), whatever class comes first:
/// its frames are what the headroom must hold.
#[test]
fn nxos_port_mtu_is_the_lossless_class_s() {
    let text = data("nxos_running_config.txt").replace(
        "policy-map type network-qos qos_network\n",
        "policy-map type network-qos qos_network\n  class type network-qos c-8q-nq1\n    mtu 1500\n",
    );
    assert!(text.contains("c-8q-nq1"));
    let imp = nxos::import(&text, "running-config").unwrap();
    assert!(imp.config.ports.iter().all(|p| p.mtu == 9216));
}

#[test]
fn nxos_running_config_imports_every_value() {
    let imp = nxos::import(&data("nxos_running_config.txt"), "running-config").unwrap();
    let c = &imp.config;
    for d in 0..64 {
        let want = match d {
            24 | 26 => 3,
            48 => 7,
            _ => 0,
        };
        assert_eq!(c.dscp_to_tc[d], want, "DSCP {d}");
    }
    assert_eq!(c.lossless.iter().collect::<Vec<_>>(), [3]);
    assert_eq!(c.queues[7].schedule, Schedule::Strict);
    assert_eq!(c.queues[3].schedule, Schedule::Dwrr(50));
    assert_eq!(c.queues[0].schedule, Schedule::Dwrr(40));
    assert_eq!(c.queues[1].schedule, Schedule::Dwrr(10));
    assert_eq!(c.queues[2].schedule, Schedule::Dwrr(1));
    let red = c.queues[3].ecn.unwrap();
    assert_eq!(
        (red.kmin_bytes, red.kmax_bytes, red.pmax),
        (150_000, 3_000_000, 0.07)
    );
    let names: Vec<&str> = c.ports.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["Ethernet1/1", "Ethernet1/2", "Ethernet1/3"]);
    assert!(c.ports.iter().all(|p| p.mtu == 9216));
    // interval 200 ms x shutdown-multiplier 2; x auto-restore multiplier 5.
    assert_eq!(
        (
            c.watchdog.detection,
            c.watchdog.restoration,
            c.watchdog.poll
        ),
        (
            Nanos::from_millis(400),
            Nanos::from_millis(1000),
            Nanos::from_millis(200)
        )
    );
    assert_eq!(
        sources(&imp.warnings),
        [
            "line 15: hardware qos pfc mc-drop",
            "line 20: priority-flow-control fixed-restore multiplier 20",
            "(not QoS)",
            "line 104: service-policy type qos input QOS_CLASSIFICATION_WIDE",
            "line 67: service-policy type queuing output QOS_EGRESS_PORT",
        ],
        "{:#?}",
        imp.warnings
    );
    assert!(
        imp.warnings[2].message.contains("hostname")
            && imp.warnings[2].message.contains("ip route")
    );
    passes_conformance(c, "running-config");
}

/// Cisco's one-line form, `pause buffer-size B pause-threshold X resume-threshold Y pfc-cos
/// N`, makes class N lossless as `pause pfc-cos N` does (it was read as thresholds only,
/// and RoCE's class came out lossy with exit 0). A running-config without a queuing policy
/// (the default one is not listed) gives the lossless queue rocelab's default with a
/// warning; it was refused ("queue 3 ... has no [queue.3] section").
#[test]
fn nxos_pause_with_its_buffer_and_the_default_queuing_policy() {
    let text = data("nxos_running_config.txt");
    let one_line = text.replace(
        "    pause pfc-cos 3\n",
        "    pause buffer-size 152000 pause-threshold 103000 resume-threshold 83000 pfc-cos 3\n",
    );
    let imp = nxos::import(&one_line, "one line").unwrap();
    assert_eq!(imp.config.lossless.iter().collect::<Vec<_>>(), [3]);
    assert!(
        imp.warnings
            .iter()
            .any(|w| w.source.contains("pfc-cos 3") && w.message.contains("not imported")),
        "{:#?}",
        imp.warnings
    );
    let e = nxos::import(&text.replace("pause pfc-cos 3", "pause pfc-cos"), "bare").unwrap_err();
    assert!(e.to_string().contains("pfc-cos needs a list"), "{e}");

    let default_queuing =
        text.replace("  service-policy type queuing output QOS_EGRESS_PORT\n", "");
    assert_ne!(default_queuing, text);
    let imp = nxos::import(&default_queuing, "default queuing").unwrap();
    assert_eq!(imp.config.queues[3].schedule, Schedule::Dwrr(1));
    assert!(
        imp.warnings
            .iter()
            .any(|w| w.source == "class type queuing c-out-8q-q3"
                && w.message.contains("DWRR weight 1")),
        "{:#?}",
        imp.warnings
    );
    passes_conformance(&imp.config, "default queuing");
}

/// `class-map type network-qos C` / `match qos-group N` is read (it was warned about as
/// "QoS command not imported"); a network-qos class that pauses a CoS other than its
/// qos-group is refused naming both (it was refused as "no DSCP maps to traffic class
/// 3"); with only `match cos` the configuration check's CNP warning names a source (it
/// printed an empty one).
#[test]
fn nxos_network_qos_classes_and_their_qos_groups() {
    let text = data("nxos_running_config.txt");
    let with_class_map = format!(
        "class-map type network-qos c-8q-nq3\n  match qos-group 3\n{}",
        text
    );
    let imp = nxos::import(&with_class_map, "class-map").unwrap();
    assert!(
        !imp.warnings
            .iter()
            .any(|w| w.source.contains("type network-qos")),
        "{:#?}",
        imp.warnings
    );
    let e = nxos::import(
        &text.replace("pause pfc-cos 3", "pause pfc-cos 4"),
        "mismatch",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("class c-8q-nq3 carries qos-group [3] and pauses CoS [4]"),
        "{e}"
    );
    let renamed = with_class_map
        .replace("c-8q-nq3", "ROCE_NQ")
        .replace("match qos-group 3\n", "match qos-group 4\n");
    let e = nxos::import(&renamed, "renamed").unwrap_err().to_string();
    assert!(e.contains("ROCE_NQ carries qos-group [4]"), "{e}");
    let cos_only = text
        .replace("match dscp 24,26", "match cos 3")
        .replace("match dscp 24-31", "match cos 3")
        .replace("match dscp 48", "match cos 6")
        .replace("    pause pfc-cos 3\n", "");
    let imp = nxos::import(&cos_only, "cos").unwrap();
    let cnp = imp
        .warnings
        .iter()
        .find(|w| w.message.contains("CNPs"))
        .expect("CNP warning");
    assert_eq!(cnp.source, "no `match dscp` in the qos policy's class-maps");
}

#[test]
fn nxos_mistakes_are_named_with_their_line() {
    let text = data("nxos_running_config.txt");
    // RoCE's DSCPs in a lossy qos-group (the lossless one takes DSCP 20, which no NIC
    // sends), and XON above XOFF in the network-qos class.
    let wrong = text
        .replace("match dscp 24,26", "match dscp 20")
        .replace("    pause pfc-cos 3\n", "    pause pfc-cos 3\n    pause buffer-size 152000 pause-threshold 80000 resume-threshold 90000\n");
    let imp = nxos::import(&wrong, "wrong").unwrap();
    let roce = imp
        .warnings
        .iter()
        .find(|w| w.message.contains("none of RoCE's usual DSCPs"))
        .expect("RoCE lossy");
    assert!(
        roce.source.contains("ROCEv2 -> line 30: set qos-group 3"),
        "{roce:?}"
    );
    assert!(imp.warnings.iter().any(
        |w| w.source.contains("resume-threshold 90000") && w.message.contains("XON above XOFF")
    ));
    for (from, to, says) in [
        ("match dscp 48", "match dscp 99", "'99'"),
        ("    set qos-group 7", "    set qos-group", "give one value"),
        ("c-out-8q-q7", "c-out-8q-q", "give one value"),
        (
            "minimum-threshold 150 kbytes",
            "minimum-threshold 150 packets",
            "packets",
        ),
    ] {
        let e = nxos::import(&text.replace(from, to), "bad")
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{to}: {e}");
    }
}

/// The command line: `config import sonic -` reads standard input and writes TOML to
/// standard output, warnings to standard error; `conformance --json -` writes one JSON
/// document.
#[test]
fn import_and_conformance_from_the_command_line() {
    use std::process::Command;
    let exe = env!("CARGO_BIN_EXE_rocelab");
    let out = common::run_with_input(
        Command::new(exe).args(["config", "import", "sonic", "-"]),
        data("sonic_config_db.json").as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let toml = String::from_utf8(out.stdout).unwrap();
    assert!(SwitchConfig::from_toml(&toml).is_ok());
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: VERSIONS: table not imported"));
    let dir = std::env::temp_dir().join(format!("rocelab-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("imported.toml");
    std::fs::write(&path, &toml).unwrap();
    let v = common::json_of(
        Command::new(exe)
            .args(["conformance", "--config"])
            .arg(&path)
            .args(["--json", "-"]),
    );
    assert_eq!(v["schema"], "rocelab.conformance/1");
    assert_eq!(v["failed"], 0);
    assert!(v["checks"].as_array().unwrap().len() >= 20);
    let bad = Command::new(exe)
        .args(["config", "import", "nxos"])
        .arg(dir.join("missing.cfg"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("missing.cfg"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SONiC's dynamic buffer model: lossless PGs bound to "NULL", the switch computing each
/// port's headroom. The import computes it as SONiC's Mellanox plugin does: 44 032 B at
/// 100 G / 5 m / MTU 9100 and 48 128 B at 40 m (the plugin's own worked examples), with
/// the 19 KiB pipeline latency as the reserve and alpha from the default dynamic_th.
#[test]
fn sonic_dynamic_buffer_model_computes_headroom_per_port() {
    let mut doc: serde_json::Value = serde_json::from_str(&data("sonic_config_db.json")).unwrap();
    doc["DEVICE_METADATA"]["localhost"]["buffer_model"] = "dynamic".into();
    for port in ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"] {
        doc["BUFFER_PG"][format!("{port}|3-4")]["profile"] = "NULL".into();
    }
    doc["LOSSLESS_TRAFFIC_PATTERN"] =
        serde_json::json!({"AZURE": {"mtu": "1024", "small_packet_percentage": "100"}});
    doc["DEFAULT_LOSSLESS_BUFFER_PARAMETER"] =
        serde_json::json!({"AZURE": {"default_dynamic_th": "-1"}});
    let imp = sonic::import(&doc.to_string(), "dynamic").unwrap();
    let c = &imp.config;
    assert_eq!(
        c.headroom_model,
        rocelab::config::headroom::HeadroomModel::SonicMellanox
    );
    let by_name = |n: &str| c.ports.iter().find(|p| p.name == n).unwrap().clone();
    assert_eq!(c.headroom_bytes(3, &by_name("Ethernet0")), 44_032);
    assert_eq!(c.headroom_bytes(4, &by_name("Ethernet12")), 48_128);
    assert_eq!(c.pgs[3].reserve_bytes, 19_456);
    assert_eq!(
        c.pgs[3].xoff,
        XoffRule::Dynamic {
            alpha: 0.5,
            xon_offset_bytes: 0
        }
    );
    // A traffic pattern other than the plugin's default is named.
    assert!(
        imp.warnings
            .iter()
            .any(|w| w.source == "LOSSLESS_TRAFFIC_PATTERN|AZURE")
    );
    assert!(
        !imp.warnings
            .iter()
            .any(|w| w.source.starts_with("BUFFER_PG|<port>"))
    );
    // The plugin sizes for the lossless pattern's 1024-byte frames; with jumbo frames and
    // a peer answering at the 802.3 limit, 40 m needs 2 x 9100 + 2 x 200 ns x 100 Gb/s
    // + 72 (the PFC frame) + 394 x 64 = 48 488 B, 360 B more than 48 128. The import says
    // so, and conformance finds the drop on the 40 m port only.
    assert!(
        imp.warnings.iter().any(|w| w.message.contains(
            "Ethernet0, Ethernet4, Ethernet8: 44032 B of 44113 B; Ethernet12: 48128 B of 48488 B"
        )),
        "{:#?}",
        imp.warnings
    );
    let report = conformance::run(c, "dynamic");
    assert_eq!(
        report.failing_ids(),
        [
            "headroom_in_flight.pg3.Ethernet12",
            "headroom_in_flight.pg4.Ethernet12"
        ]
    );
}

/// Cut short anywhere, or with any one line dropped, the documents give a configuration
/// or an error, never a panic.
#[test]
fn damaged_documents_never_panic() {
    let sonic_doc = data("sonic_config_db.json");
    for cut in (0..sonic_doc.len()).step_by(41) {
        let _ = sonic::import(&sonic_doc[..cut], "cut");
    }
    let nx = data("nxos_running_config.txt");
    let lines: Vec<&str> = nx.lines().collect();
    for skip in 0..lines.len() {
        let text: Vec<&str> = lines
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, l)| *l)
            .collect();
        let _ = nxos::import(&text.join("\n"), "damaged");
        let _ = nxos::import(&lines[..skip].join("\n"), "cut");
    }
    // Each line's words cut to its first one.
    for i in 0..lines.len() {
        let mut v: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
        let indent = v[i].len() - v[i].trim_start().len();
        let first = v[i].split_whitespace().next().unwrap_or("").to_owned();
        v[i] = format!("{}{first}", " ".repeat(indent));
        let _ = nxos::import(&v.join("\n"), "words");
    }
}

/// Hand-written and generated CONFIG_DBs give numbers and booleans where SONiC writes
/// strings: they read the same (every string of digits as a number, "true" as true).
/// A field that is an object, an array or null is refused by its TABLE|key|field, as
/// is an entry or a table that is not an object.
#[test]
fn sonic_numbers_and_booleans_read_as_strings_do() {
    let text = data("sonic_config_db.json");
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    // Every field of every table that is a string of a number or of true/false, as JSON.
    for table in doc.as_object_mut().unwrap().values_mut() {
        for entry in table.as_object_mut().unwrap().values_mut() {
            let Some(fields) = entry.as_object_mut() else {
                continue;
            };
            for v in fields.values_mut() {
                let Some(s) = v.as_str() else { continue };
                if let Ok(n) = s.parse::<i64>() {
                    *v = n.into();
                } else if let Ok(b) = s.parse::<bool>() {
                    *v = b.into();
                }
            }
        }
    }
    assert_eq!(doc["PORT"]["Ethernet0"]["mtu"], 9100);
    assert_eq!(doc["SCHEDULER"]["scheduler.0"]["weight"], 14);
    assert_eq!(
        doc["WRED_PROFILE"]["AZURE_LOSSLESS"]["wred_green_enable"],
        true
    );
    let strings = sonic::import(&text, "strings").unwrap();
    let numbers = sonic::import(&doc.to_string(), "numbers").unwrap();
    assert_eq!(numbers.config, strings.config);
    assert_eq!(numbers.warnings, strings.warnings);
    // A whole number written with a fraction is that number.
    doc["PORT"]["Ethernet0"]["mtu"] = serde_json::json!(9100.0);
    let c = sonic::import(&doc.to_string(), "float").unwrap().config;
    assert_eq!(c.ports[0].mtu, 9100);
    for (table, key, field, value, says) in [
        (
            "PORT",
            "Ethernet0",
            "mtu",
            serde_json::json!({"v": 1}),
            "PORT|Ethernet0|mtu: an object",
        ),
        (
            "SCHEDULER",
            "scheduler.0",
            "weight",
            serde_json::json!([14]),
            "SCHEDULER|scheduler.0|weight: an array",
        ),
        (
            "QUEUE",
            "Ethernet0|3",
            "scheduler",
            serde_json::Value::Null,
            "QUEUE|Ethernet0|3|scheduler: null",
        ),
    ] {
        let mut bad = doc.clone();
        bad[table][key][field] = value;
        let e = sonic::import(&bad.to_string(), "bad")
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{e}");
    }
    let mut bad = doc.clone();
    bad["QUEUE"]["Ethernet0|3"] = "scheduler.1".into();
    let e = sonic::import(&bad.to_string(), "bad")
        .unwrap_err()
        .to_string();
    assert!(e.contains("QUEUE|Ethernet0|3: a string"), "{e}");
    let mut bad = doc.clone();
    bad["PORT"] = serde_json::json!(["Ethernet0"]);
    let e = sonic::import(&bad.to_string(), "bad")
        .unwrap_err()
        .to_string();
    assert!(e.contains("PORT: an array"), "{e}");
    // The dynamic buffer model's parameters, as numbers, read as strings do.
    let mut dynamic = doc.clone();
    dynamic["DEVICE_METADATA"]["localhost"]["buffer_model"] = "dynamic".into();
    for port in ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"] {
        dynamic["BUFFER_PG"][format!("{port}|3-4")]["profile"] = "NULL".into();
    }
    dynamic["DEFAULT_LOSSLESS_BUFFER_PARAMETER"] =
        serde_json::json!({"AZURE": {"default_dynamic_th": -1}});
    dynamic["LOSSLESS_TRAFFIC_PATTERN"] =
        serde_json::json!({"AZURE": {"mtu": 1024, "small_packet_percentage": 100}});
    let imp = sonic::import(&dynamic.to_string(), "dynamic").unwrap();
    assert_eq!(
        imp.config.pgs[3].xoff,
        XoffRule::Dynamic {
            alpha: 0.5,
            xon_offset_bytes: 0
        }
    );
    assert!(
        imp.warnings
            .iter()
            .any(|w| w.source == "LOSSLESS_TRAFFIC_PATTERN|AZURE")
    );
}

/// A lossless queue (PORT_QOS_MAP pfc_enable) that no QUEUE entry names has no scheduler
/// in SONiC, and the switch schedules it by its default. It imports with rocelab's default
/// for the queue, DWRR weight 1 and no ECN, and a warning; it used to fail validation
/// ("no [queue.3] section").
#[test]
fn sonic_lossless_queue_without_a_queue_entry_takes_the_default() {
    let mut doc: serde_json::Value = serde_json::from_str(&data("sonic_config_db.json")).unwrap();
    for port in ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"] {
        doc["QUEUE"]
            .as_object_mut()
            .unwrap()
            .remove(&format!("{port}|3"))
            .unwrap();
    }
    let imp = sonic::import(&doc.to_string(), "no queue 3").unwrap();
    let c = &imp.config;
    assert_eq!(c.queues[3].schedule, Schedule::Dwrr(1));
    assert!(c.queues[3].ecn.is_none());
    assert_eq!(c.queues[4].schedule, Schedule::Dwrr(15));
    let w = imp
        .warnings
        .iter()
        .find(|w| w.source == "QUEUE|<port>|3")
        .expect("warned");
    assert!(w.message.contains("DWRR weight 1"), "{w:?}");
    assert!(imp.toml.contains("# no QUEUE|<port>|3"), "{}", imp.toml);
}

/// Values the importers used to change or drop without a word: each is now a warning
/// naming its source and what rocelab does instead, or a refusal where it has no sensible
/// meaning.
#[test]
fn values_changed_or_dropped_are_warned_about_or_refused() {
    let text = data("sonic_config_db.json");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let import = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut d = doc.clone();
        edit(&mut d);
        sonic::import(&d.to_string(), "edited")
    };
    // A scheduler weight of 0: weight 1, with a warning.
    let imp = import(&|d| d["SCHEDULER"]["scheduler.0"]["weight"] = "0".into()).unwrap();
    assert_eq!(imp.config.queues[0].schedule, Schedule::Dwrr(1));
    let w = imp
        .warnings
        .iter()
        .find(|w| w.source == "SCHEDULER|scheduler.0|weight")
        .expect("warned");
    assert!(w.message.contains("imports it as 1"), "{w:?}");
    // A weight that is not a whole number, a scheduler or WRED profile that does not
    // exist, a scheduler type SONiC does not know: refused.
    type Edit<'a> = &'a dyn Fn(&mut serde_json::Value);
    let refused: [(Edit, &str); 5] = [
        (
            &|d| d["SCHEDULER"]["scheduler.0"]["weight"] = "-3".into(),
            "SCHEDULER|scheduler.0|weight: '-3' is not a whole number",
        ),
        (
            &|d| d["SCHEDULER"]["scheduler.0"]["weight"] = "2.5".into(),
            "SCHEDULER|scheduler.0|weight: '2.5'",
        ),
        (
            &|d| d["QUEUE"]["Ethernet0|0"]["scheduler"] = "scheduler.9".into(),
            "scheduler: names scheduler 'scheduler.9', which SCHEDULER lacks",
        ),
        (
            &|d| d["QUEUE"]["Ethernet0|3"]["wred_profile"] = "GONE".into(),
            "wred_profile: names WRED profile 'GONE', which WRED_PROFILE lacks",
        ),
        (
            &|d| d["SCHEDULER"]["scheduler.1"]["type"] = "WFQ".into(),
            "SCHEDULER|scheduler.1|type: 'WFQ' is not STRICT, DWRR or WRR",
        ),
    ];
    for (edit, says) in refused {
        let e = import(edit).unwrap_err().to_string();
        assert!(e.contains(says), "{says}: {e}");
    }
    // Queues 8 to 15 (multicast queues on some ASICs): not imported, with one warning for
    // every port that binds them.
    let imp = import(&|d| {
        for port in ["Ethernet0", "Ethernet4"] {
            d["QUEUE"][format!("{port}|8-15")] = serde_json::json!({"scheduler": "scheduler.0"});
        }
    })
    .unwrap();
    let beyond: Vec<_> = imp
        .warnings
        .iter()
        .filter(|w| w.source.starts_with("QUEUE|<port>|"))
        .collect();
    assert_eq!(beyond.len(), 1, "{beyond:?}");
    assert_eq!(beyond[0].source, "QUEUE|<port>|8 to 15");
    assert!(
        beyond[0]
            .message
            .contains("queues 8 to 15 on Ethernet0, Ethernet4: rocelab has 8 queues"),
        "{:?}",
        beyond[0]
    );
    // A field the buffer model reads that is not a scalar is refused, as in the tables
    // imported; the buffer model's tables' other fields are not read.
    let e = import(&|d| {
        d["DEVICE_METADATA"]["localhost"]["buffer_model"] = serde_json::json!(["dynamic"]);
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("DEVICE_METADATA|localhost|buffer_model") && e.contains("an array"),
        "{e}"
    );
    import(&|d| d["DEVICE_METADATA"]["localhost"]["other"] = serde_json::json!({"x": 1})).unwrap();

    // NX-OS: a shutdown multiplier (or interval) of 0 leaves no detection time: refused.
    // An auto-restore multiplier of 0 leaves no restoration time: rocelab's longest, 1 h,
    // with a warning (it was the interval, 200 ms, without one).
    let nx = data("nxos_running_config.txt");
    for (from, to) in [
        (
            "watch-dog shutdown-multiplier 2",
            "watch-dog shutdown-multiplier 0",
        ),
        ("watch-dog interval 200", "watch-dog interval 0"),
    ] {
        assert!(nx.contains(from));
        let e = nxos::import(&nx.replace(from, to), "zero")
            .unwrap_err()
            .to_string();
        assert!(e.contains(to) && e.contains("no detection time"), "{e}");
    }
    let imp = nxos::import(
        &nx.replace("auto-restore multiplier 5", "auto-restore multiplier 0"),
        "zero",
    )
    .unwrap();
    assert_eq!(
        imp.config.watchdog.restoration,
        Nanos::from_millis(3_600_000)
    );
    assert!(imp.warnings.iter().any(|w| w.source
        == "line 19: priority-flow-control auto-restore multiplier 0"
        && w.message.contains("3600000 ms")));
}

#[test]
fn sonic_integers_are_never_rounded_or_clamped_silently() {
    let text = data("sonic_config_db.json");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let import = |table: &str, key: &str, field: &str, value: &str| {
        let mut d = doc.clone();
        d[table][key][field] = value.into();
        sonic::import(&d.to_string(), "edited")
    };
    // Where SONiC takes an unsigned integer, "-1" and "2.9" are refused with the
    // TABLE|key|field and the value as written (they were read as 0 and 2).
    for (table, key, field) in [
        ("BUFFER_PROFILE", "pg_lossless_100000_5m_profile", "xoff"),
        ("BUFFER_PROFILE", "pg_lossless_100000_5m_profile", "size"),
        ("BUFFER_PROFILE", "egress_lossy_profile", "size"),
        ("BUFFER_POOL", "ingress_lossless_pool", "size"),
        ("WRED_PROFILE", "AZURE_LOSSLESS", "green_min_threshold"),
        ("WRED_PROFILE", "AZURE_LOSSLESS", "green_max_threshold"),
        ("WRED_PROFILE", "AZURE_LOSSLESS", "green_drop_probability"),
        ("PORT", "Ethernet0", "mtu"),
        ("PORT", "Ethernet0", "speed"),
    ] {
        for bad in ["-1", "2.9"] {
            let e = import(table, key, field, bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!(
                    "{table}|{key}|{field}: '{bad}' is not a whole number"
                )),
                "{table}|{key}|{field} = {bad}: {e}"
            );
        }
    }
    // dynamic_th is a signed exponent: -1 is alpha 1/2, as SONiC reads it; 2.9 is refused.
    let mut d = doc.clone();
    for profile in [
        "pg_lossless_100000_5m_profile",
        "pg_lossless_100000_40m_profile",
    ] {
        d["BUFFER_PROFILE"][profile]["dynamic_th"] = "-1".into();
    }
    let imp = sonic::import(&d.to_string(), "edited").unwrap();
    assert!(
        matches!(imp.config.pgs[3].xoff, XoffRule::Dynamic { alpha, .. } if alpha == 0.5),
        "{:?}",
        imp.config.pgs[3].xoff
    );
    let e = import(
        "BUFFER_PROFILE",
        "pg_lossless_100000_5m_profile",
        "dynamic_th",
        "2.9",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "BUFFER_PROFILE|pg_lossless_100000_5m_profile|dynamic_th: '2.9' is not a whole number"
        ),
        "{e}"
    );
    // A negative cable length is refused too.
    let e = import("CABLE_LENGTH", "AZURE", "Ethernet0", "-5m")
        .unwrap_err()
        .to_string();
    assert!(e.contains("CABLE_LENGTH|AZURE|Ethernet0: '-5m'"), "{e}");
}

#[test]
fn names_from_the_input_cannot_inject_toml_keys() {
    // A file name, and a port name, with a newline and a key after it: both land in
    // comments of the TOML, where a newline would end the comment and `seed = 42` would
    // be read as a key.
    let evil = "x\nseed = 42\n[watchdog]\nenabled = true";
    let text = data("sonic_config_db.json");
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let port = doc["PORT"]["Ethernet0"].clone();
    doc["PORT"][format!("Ethernet0{evil}")] = port;
    let imp = sonic::import(&doc.to_string(), evil).unwrap();
    let nx = nxos::import(&data("nxos_running_config.txt"), evil).unwrap();
    for toml in [&imp.toml, &nx.toml] {
        assert!(
            !toml.lines().any(|l| l.trim_start().starts_with("seed")),
            "{toml}"
        );
        assert!(toml.contains(r"x\nseed = 42\n[watchdog]"), "{toml}");
        assert!(!toml.lines().any(|l| l == "enabled = true"), "{toml}");
        let cfg = SwitchConfig::from_toml(toml).unwrap();
        assert_eq!(cfg.seed, 1, "the default seed");
    }
    // The port keeps its name, newline and all, as a quoted TOML string.
    assert!(
        imp.config
            .ports
            .iter()
            .any(|p| p.name == format!("Ethernet0{evil}")),
        "{:?}",
        imp.config.ports.iter().map(|p| &p.name).collect::<Vec<_>>()
    );
}

#[test]
fn nxos_classification_applied_per_interface_as_the_ai_ml_blueprint_does() {
    // Cisco's AI/ML blueprint applies `service-policy type qos input` on each interface
    // and none under `system qos`: it was refused ("priority 3 is lossless but no DSCP
    // maps to traffic class 3").
    let text = data("nxos_ai_blueprint_per_interface.txt");
    let imp = nxos::import(&text, "ai-leaf.txt").unwrap();
    let c = &imp.config;
    assert_eq!(c.dscp_to_tc[24], 3);
    assert_eq!(c.dscp_to_tc[26], 3);
    assert_eq!(c.dscp_to_tc[48], 7);
    assert_eq!(c.dscp_to_tc[0], 0);
    assert!(c.lossless.contains(3));
    assert_eq!(c.ports.len(), 4);
    assert!(
        imp.warnings.iter().all(|w| !w.message.contains("qos input")
            && !w.message.contains("DSCP")
            && !w.message.contains("classif")),
        "{:#?}",
        imp.warnings
    );
    assert!(
        imp.toml.contains(
            "service-policy type qos input AI-ML-CLASSIFY (applied on 4 of 4 interfaces)"
        ),
        "{}",
        imp.toml
    );
    passes_conformance(c, "ai-leaf");

    // One interface applies another policy: the one most apply is taken, and the odd one
    // is named with its line.
    let odd = text.replacen(
        "  description spine-02\n  mtu 9216\n  speed 400000\n  priority-flow-control mode on\n  priority-flow-control watch-dog-interval on\n  service-policy type qos input AI-ML-CLASSIFY",
        "  description spine-02\n  mtu 9216\n  speed 400000\n  priority-flow-control mode on\n  priority-flow-control watch-dog-interval on\n  service-policy type qos input OTHER",
        1,
    );
    assert_ne!(odd, text);
    let imp = nxos::import(&odd, "odd.txt").unwrap();
    assert_eq!(imp.config.dscp_to_tc[26], 3);
    let w = imp
        .warnings
        .iter()
        .find(|w| w.source.ends_with("service-policy type qos input OTHER"))
        .expect("the odd interface is named");
    assert!(
        w.source.starts_with("line ")
            && w.message.contains(
                "Ethernet1/50 classifies by OTHER, other interfaces by AI-ML-CLASSIFY: rocelab has one classification for every port"
            ),
        "{w:?}"
    );
    // An interface without a policy: on the switch its traffic is class-default's.
    let none = text.replacen("  service-policy type qos input AI-ML-CLASSIFY\n", "", 1);
    let imp = nxos::import(&none, "none.txt").unwrap();
    assert!(
        imp.warnings
            .iter()
            .any(|w| w.source.ends_with("interface Ethernet1/1")
                && w.message
                    .contains("Ethernet1/1 applies no qos input policy")),
        "{:#?}",
        imp.warnings
    );
}

#[test]
fn nxos_reversed_ranges_are_refused_with_their_line() {
    // `match dscp 26-24,24` gave DSCPs {24}: 26, the NIC's RoCE default, fell into the
    // lossy default class without a word. NX-OS prints ranges low to high.
    let text = data("nxos_running_config.txt");
    let bad = text.replace("  match dscp 24,26\n", "  match dscp 26-24,24\n");
    assert_ne!(bad, text);
    let e = nxos::import(&bad, "reversed").unwrap_err().to_string();
    let line = bad
        .lines()
        .position(|l| l.contains("26-24"))
        .map(|n| n + 1)
        .unwrap();
    assert!(
        e.contains(&format!(
            "line {line}: match dscp 26-24,24: '26-24' is a range from high to low: write it 24-26"
        )),
        "{e}"
    );
    let bad = text.replace("pause pfc-cos 3", "pause pfc-cos 4-3");
    let e = nxos::import(&bad, "reversed").unwrap_err().to_string();
    assert!(e.contains("pause pfc-cos 4-3: '4-3' is a range"), "{e}");
}

#[test]
fn import_errors_name_the_input_never_the_toml_rocelab_wrote() {
    // A value that passes the importer but not rocelab's limits is named by its source
    // in the input and rocelab's key; it was "line 20, column 7 (ports[1].mtu)", a line
    // of TOML the user never saw.
    let text = data("sonic_config_db.json");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let sonic_err = |table: &str, key: &str, field: &str, value: &str| {
        let mut d = doc.clone();
        d[table][key][field] = value.into();
        sonic::import(&d.to_string(), "edited")
            .unwrap_err()
            .to_string()
    };
    let e = sonic_err("PORT", "Ethernet4", "mtu", "5000000000");
    assert!(
        e.contains("PORT|Ethernet4|mtu (ports[1].mtu): ") && !e.contains("column"),
        "{e}"
    );
    let e = sonic_err("PORT", "Ethernet4", "speed", "0");
    assert!(
        e.contains("PORT|Ethernet4|speed = 0 (Mb/s) (ports[1].speed_gbps): "),
        "{e}"
    );
    // A pool past rocelab's limit keeps every digit (it was read through a double).
    let e = sonic_err(
        "BUFFER_POOL",
        "ingress_lossless_pool",
        "size",
        "99999999999999999",
    );
    assert!(
        e.contains("BUFFER_POOL|ingress_lossless_pool|size (buffer.shared_bytes): 99999999999999999 is not allowed"),
        "{e}"
    );
    // A drop probability is a percentage: 500 is refused as written, not as pmax 5.
    let e = sonic_err(
        "WRED_PROFILE",
        "AZURE_LOSSLESS",
        "green_drop_probability",
        "500",
    );
    assert!(
        e.contains(
            "WRED_PROFILE|AZURE_LOSSLESS|green_drop_probability: '500' is not a percentage 0 to 100"
        ),
        "{e}"
    );

    // NX-OS: the line, with the value as written.
    let nx = data("nxos_ai_blueprint_per_interface.txt");
    let line_of = |text: &str, what: &str| text.lines().position(|l| l.contains(what)).unwrap() + 1;
    let bad = nx.replacen("  speed 400000", "  speed 4000000000", 1);
    let e = nxos::import(&bad, "x").unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "line {}: speed 4000000000 (Mb/s) (ports[0].speed_gbps): ",
            line_of(&bad, "speed 4000000000")
        )),
        "{e}"
    );
    let bad = nx.replace(
        "minimum-threshold 150 kbytes",
        "minimum-threshold 99999999999999 mbytes",
    );
    let e = nxos::import(&bad, "x").unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "line {}: random-detect",
            line_of(&bad, "99999999999999")
        )) && e.contains("'99999999999999 mbytes' is not a whole number of bytes")
            && !e.contains("18446744073709551615"),
        "{e}"
    );
    let bad = nx.replace("drop-probability 7 ", "drop-probability 700 ");
    let e = nxos::import(&bad, "x").unwrap_err().to_string();
    assert!(
        e.contains("drop-probability must be a percent, 0 to 100"),
        "{e}"
    );
    // A speed that is not a whole number of Mb/s, a percent above 100: refused by line,
    // not read as 400.0005 Gb/s or weight 150.
    for (from, to, says) in [
        (
            "  speed 400000",
            "  speed 400000.5",
            "speed 400000.5: speed is a whole number of Mb/s",
        ),
        (
            "bandwidth remaining percent 60",
            "bandwidth remaining percent 150",
            "bandwidth remaining percent 150: 150 is not a percent, 0 to 100",
        ),
    ] {
        let bad = nx.replacen(from, to, 1);
        let e = nxos::import(&bad, "x").unwrap_err().to_string();
        assert!(
            e.contains(&format!("line {}: {says}", line_of(&bad, to.trim()))),
            "{e}"
        );
    }
}

#[test]
fn import_warnings_stay_one_line_each_whatever_the_names() {
    // A port name with a newline: its warnings (no cable length for it) are still one
    // line each on standard error, as docs/import.md promises.
    let text = data("sonic_config_db.json");
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let port = doc["PORT"]["Ethernet0"].clone();
    doc["PORT"]["Ethernet99\nwarning: forged"] = port;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("db.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(["config", "import", "sonic", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().all(|l| l.starts_with("warning: ")),
        "{stderr}"
    );
    assert!(
        !stderr.lines().any(|l| l.starts_with("warning: forged")),
        "{stderr}"
    );
    assert!(stderr.contains(r"Ethernet99\nwarning: forged"), "{stderr}");
}

/// A watchdog interval times a multiplier past what 64 bits hold is refused with both
/// lines (it once overflowed), and a watchdog that is off is not read for its times.
#[test]
fn nxos_watchdog_times_past_64_bits_are_refused_with_their_lines() {
    let text = data("nxos_running_config.txt");
    // 200 ms x 2^64 - 1 is past u64::MAX.
    let huge = text.replace(
        "watch-dog shutdown-multiplier 2",
        "watch-dog shutdown-multiplier 18446744073709551615",
    );
    let e = nxos::import(&huge, "rc").unwrap_err().to_string();
    assert!(
        e.contains("watch-dog interval 200;")
            && e.contains("shutdown-multiplier 18446744073709551615:"),
        "{e}"
    );
    let huge = text.replace(
        "auto-restore multiplier 5",
        "auto-restore multiplier 18446744073709551615",
    );
    let e = nxos::import(&huge, "rc").unwrap_err().to_string();
    assert!(
        e.contains("auto-restore multiplier 18446744073709551615:"),
        "{e}"
    );
    let off = huge.replace(
        "priority-flow-control watch-dog-interval on\npriority-flow-control watch-dog interval",
        "priority-flow-control watch-dog-interval off\npriority-flow-control watch-dog interval",
    );
    let imp = nxos::import(&off, "rc").unwrap();
    assert!(!imp.config.watchdog.enabled);
}
