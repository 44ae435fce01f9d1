//! `rocelab tune`: what it exports imports back to the recommended settings, and a small
//! tune on an imported SONiC configuration writes its report, plot and exports.

use rocelab::config::export::{self, SwitchChanges};
use rocelab::config::import;

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The ECN profile of queue `q` and the lossless PG alpha, as a configuration has them.
fn ecn(c: &rocelab::config::SwitchConfig, q: usize) -> (u64, u64, f64) {
    let red = c.queues[q].ecn.expect("an ECN profile");
    (red.kmin_bytes, red.kmax_bytes, red.pmax)
}

fn pg_alpha(c: &rocelab::config::SwitchConfig) -> Option<f64> {
    c.pgs.iter().find_map(|pg| match pg.xoff {
        rocelab::config::XoffRule::Dynamic { alpha, .. } if pg.lossless => Some(alpha),
        _ => None,
    })
}

#[test]
fn a_sonic_export_imports_back_to_the_recommended_settings() {
    let text = data("sonic_config_db.json");
    let before = import::sonic::import(&text, "config_db.json").unwrap();
    assert_eq!(ecn(&before.config, 3), (1_048_576, 2_097_152, 0.05));
    let changes = SwitchChanges {
        queues: vec![3, 4],
        kmin_bytes: Some(40_960),
        kmax_bytes: Some(409_600),
        pmax: Some(0.2),
        pg_alpha: Some(0.25),
    };
    let (db, patch) = export::sonic(&text, &changes).unwrap();
    let after = import::sonic::import(&db, "config_db.json").unwrap();
    for q in [3, 4] {
        assert_eq!(ecn(&after.config, q), (40_960, 409_600, 0.2));
    }
    assert_eq!(pg_alpha(&after.config), Some(0.25));
    // Nothing else moved: it is the import with the same keys changed, as tune's
    // recommended.toml has them.
    let mut table: toml::Table = toml::from_str(&before.toml).unwrap();
    for set in [
        "queue.3.ecn.kmin_bytes=40960",
        "queue.3.ecn.kmax_bytes=409600",
        "queue.3.ecn.pmax=0.2",
        "queue.4.ecn.kmin_bytes=40960",
        "queue.4.ecn.kmax_bytes=409600",
        "queue.4.ecn.pmax=0.2",
        "buffer.pg_alpha=0.25",
    ] {
        rocelab::config::set_key(&mut table, set).unwrap();
    }
    let expected = rocelab::config::SwitchConfig::from_table(table).unwrap();
    assert_eq!(format!("{:?}", after.config), format!("{expected:?}"));
    // The patch: replace operations on the profile's fields, values as CONFIG_DB strings
    // (RFC 6902; dynamic_th 0 -> -2 is alpha 1 -> 1/4).
    let ops: serde_json::Value = serde_json::from_str(&patch).unwrap();
    let ops = ops.as_array().unwrap();
    assert!(ops.contains(&serde_json::json!({
        "op": "replace", "path": "/WRED_PROFILE/AZURE_LOSSLESS/green_min_threshold", "value": "40960"
    })));
    assert!(ops.contains(&serde_json::json!({
        "op": "replace", "path": "/BUFFER_PROFILE/pg_lossless_100000_5m_profile/dynamic_th", "value": "-2"
    })));
    assert_eq!(ops.len(), 3 + 2, "{patch}");
}

#[test]
fn an_nxos_export_imports_back_to_the_recommended_settings() {
    for file in [
        "nxos_running_config.txt",
        "nxos_ai_blueprint_per_interface.txt",
    ] {
        let text = data(file);
        let changes = SwitchChanges {
            queues: vec![3],
            kmin_bytes: Some(40_000),
            kmax_bytes: Some(400_000),
            pmax: Some(0.2),
            pg_alpha: None,
        };
        let (full, lines) = export::nxos(&text, &changes).unwrap();
        let after = import::nxos::import(&full, file).unwrap();
        assert_eq!(ecn(&after.config, 3), (40_000, 400_000, 0.2), "{file}");
        assert!(lines.contains(
            "    random-detect minimum-threshold 40 kbytes maximum-threshold 400 kbytes drop-probability 20 weight 0 ecn"
        ), "{lines}");
        assert!(lines.starts_with("policy-map type queuing "), "{lines}");
        // Every other line is the input's.
        assert_eq!(full.lines().count(), text.lines().count());
        let alpha = SwitchChanges {
            pg_alpha: Some(2.0),
            ..changes
        };
        assert!(export::nxos(&text, &alpha).is_err());
    }
}

#[test]
fn a_toml_export_reads_back_with_each_change_commented() {
    let imported = import::sonic::import(&data("sonic_config_db.json"), "c.json").unwrap();
    let table: toml::Table = toml::from_str(&imported.toml).unwrap();
    let changes = vec![
        (
            "queue.3.ecn.kmin_bytes".to_owned(),
            toml::Value::Integer(40_960),
            "p99 FCT slowdown 20 -> 10".to_owned(),
        ),
        (
            "buffer.pg_alpha".to_owned(),
            toml::Value::Float(0.25),
            "same".to_owned(),
        ),
    ];
    let text = export::toml(&table, &changes).unwrap();
    let back = rocelab::config::SwitchConfig::from_toml(&text).unwrap();
    assert_eq!(back.queues[3].ecn.unwrap().kmin_bytes, 40_960);
    assert_eq!(pg_alpha(&back), Some(0.25));
    assert!(
        text.contains("was 1048576: p99 FCT slowdown 20 -> 10"),
        "{text}"
    );
    assert!(text.contains("pg_alpha was 1"), "{text}");
}
