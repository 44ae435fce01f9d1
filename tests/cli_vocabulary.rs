//! One vocabulary across subcommands (issue 13): every `--help` is read, and the shared
//! flags have the same names, value names and meanings wherever they appear. The old
//! names (`--report`, `--stats-json`, `--link-gbps`, replay's `--out FILE`) still work
//! as hidden aliases, and appear in no help.

mod common;

use common::net::roce;
use rocelab::time::Nanos;
use rocelab::wire::Ecn;
use std::collections::BTreeMap;
use std::process::Command;

const COMMANDS: [&str; 14] = [
    "inspect",
    "replay",
    "config check",
    "conformance",
    "switch",
    "endpoint",
    "sim",
    "sweep",
    "tune",
    "compare",
    "traffic send",
    "traffic count",
    "lab",
    "config import",
];

/// The long flags a command's help lists, with the text of each (its value name and
/// description, up to the next flag).
fn flags(command: &str) -> BTreeMap<String, String> {
    let mut args: Vec<&str> = command.split(' ').collect();
    args.push("--help");
    let out = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(&args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{command} --help");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut found = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let starts_flag = t.starts_with("--") || (t.starts_with('-') && t.contains(", --"));
        if starts_flag && line.len() - t.len() <= 6 {
            if let Some((k, v)) = current.take() {
                found.insert(k, v);
            }
            let long = t[t.find("--").unwrap()..]
                .split(|c: char| c.is_whitespace() || c == '=')
                .next()
                .unwrap()
                .to_owned();
            current = Some((long, t.to_owned()));
        } else if let Some((_, v)) = current.as_mut() {
            v.push(' ');
            v.push_str(t);
        }
    }
    if let Some((k, v)) = current {
        found.insert(k, v);
    }
    found
}

#[test]
fn shared_flags_have_one_name_and_one_meaning() {
    let all: BTreeMap<&str, BTreeMap<String, String>> =
        COMMANDS.iter().map(|c| (*c, flags(c))).collect();
    let has = |c: &str, f: &str| all[c].contains_key(f);
    let text = |c: &str, f: &str| all[c][f].clone();

    // Old names are gone from every help.
    for (c, f) in &all {
        for old in ["--report", "--stats-json", "--link-gbps", "--metrics-json"] {
            assert!(!f.contains_key(old), "{c} still shows {old}");
        }
    }
    // The switch's configuration: --config FILE | --preset NAME | --set KEY=VALUE wherever
    // a switch runs.
    for c in [
        "replay",
        "conformance",
        "switch",
        "sim",
        "sweep",
        "compare",
        "lab",
    ] {
        for f in ["--config", "--preset", "--set"] {
            assert!(has(c, f), "{c} lacks {f}");
        }
        assert!(
            text(c, "--set").contains("KEY=VALUE"),
            "{c}: {}",
            text(c, "--set")
        );
        assert!(text(c, "--preset").contains("sonic"), "{c}");
    }
    // A machine report: --json FILE, `-` for standard output.
    for c in [
        "replay",
        "conformance",
        "switch",
        "endpoint",
        "sweep",
        "compare",
    ] {
        let t = text(c, "--json");
        assert!(t.contains("<FILE>") && t.contains("`-`"), "{c}: {t}");
    }
    // inspect's JSON lines go to standard output.
    assert!(text("inspect", "--json").contains("JSON"));
    // A run's bundle: --out DIR.
    for c in ["sim", "sweep", "compare", "lab"] {
        assert!(
            text(c, "--out").contains("<DIR>"),
            "{c}: {}",
            text(c, "--out")
        );
    }
    for (c, f) in &all {
        if let Some(t) = f.get("--out") {
            assert!(
                t.contains("<DIR>") || *c == "config import",
                "{c}: --out {t}"
            );
        }
    }
    // Link rates: --rate GBPS.
    for c in ["lab", "endpoint"] {
        assert!(has(c, "--rate"), "{c} lacks --rate");
    }
    assert!(text("endpoint", "--rate").contains("GBPS"));
    // The counters' shapes.
    for c in ["replay", "switch", "sim", "lab"] {
        let t = text(c, "--counters");
        for v in ["table", "wide", "sonic", "nxos"] {
            assert!(t.contains(v), "{c}: --counters {t}");
        }
    }
    // One default socket backend.
    for c in ["switch", "endpoint", "lab", "traffic count"] {
        assert!(
            text(c, "--io").contains("[default: mmap]"),
            "{c}: {}",
            text(c, "--io")
        );
    }
    // The endpoint's configuration has one name.
    for c in ["endpoint", "lab"] {
        assert!(has(c, "--endpoint-config"), "{c}");
    }
}

#[test]
fn old_flag_names_still_work() {
    let dir = std::env::temp_dir().join(format!("rocelab-vocab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // replay's old --out FILE and --report FILE.
    let cap = dir.join("two.pcap");
    common::write_pcap(
        &cap,
        (0..4).map(|i| {
            (
                Nanos(1_000 * i as u64),
                roce(i % 2, 1 - i % 2, 26, Ecn::Ect0, 1082, i as u32),
            )
        }),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(["replay", "--split-by", "mac"])
        .arg(&cap)
        .arg("--out")
        .arg(dir.join("o.pcapng"))
        .arg("--report")
        .arg(dir.join("r.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.join("o.pcapng").exists() && dir.join("r.json").exists());
    // And --json - gives one JSON document on standard output, the text on stderr.
    let v = common::json_of(
        Command::new(env!("CARGO_BIN_EXE_rocelab"))
            .args(["replay", "--split-by", "mac"])
            .arg(&cap)
            .args(["--json", "-"]),
    );
    assert!(v.get("ports").is_some(), "{v}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--set KEY=VALUE` changes the switch configuration (or, in `sim`, the scenario) by its
/// dotted path, sizes with suffixes; a bad assignment names itself.
#[test]
fn set_changes_one_key_by_its_path() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rocelab"))
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&[
        "sim",
        "pfc-incast",
        "--preset",
        "sonic",
        "--set",
        "switch.buffer.shared_bytes=2M",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("switch: preset sonic; ECN off; changed buffer.shared_bytes = \"2M\""),
        "{text}"
    );
    // The too-small headroom of the conformance test, from the command line: exit 1.
    let o = run(&[
        "conformance",
        "--preset",
        "default",
        "--set",
        "pg.3.headroom_bytes=20000",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("FAIL"));
    for (bad, says) in [
        ("nokey", "--set takes KEY=VALUE"),
        ("buffer.shared_bytes=lots", "--set buffer.shared_bytes=lots"),
        ("seed.x=1", "--set seed.x=1"),
    ] {
        let o = run(&["conformance", "--preset", "default", "--set", bad]);
        assert!(!o.status.success());
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(says), "{bad}: {e}");
    }
}

/// `rocelab --help` listed `--json FILE` among the flags that mean the same everywhere,
/// but `inspect --json FILE` and `sim --json` were refused ("unexpected argument"). Each
/// shared flag now says where it applies (`in: ...`): every command named takes it, and
/// every command that takes it is named in its entry.
#[test]
fn the_top_level_help_says_where_each_shared_flag_applies() {
    let out = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let section = help
        .split_once("Flags that mean the same")
        .expect("the shared flags' section")
        .1;
    // Entries start at a line "  --flag ..."; "in: a, b, c" on a line of their own, up to
    // a ';', lists where the flag applies.
    let mut entries: Vec<(Vec<String>, Vec<String>, String)> = Vec::new();
    for line in section.lines().skip(1) {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if t.starts_with("--") && indent == 2 {
            let head = t.split("  ").next().unwrap();
            let names = head
                .split_whitespace()
                .filter(|w| w.starts_with("--"))
                .map(str::to_owned)
                .collect();
            entries.push((names, Vec::new(), t.to_owned()));
        } else if let Some(entry) = entries.last_mut().filter(|_| indent > 2) {
            if let Some(list) = t.strip_prefix("in: ") {
                let list = list.split(';').next().unwrap();
                entry.1 = list.split(", ").map(|c| c.trim().to_owned()).collect();
            }
            entry.2.push(' ');
            entry.2.push_str(t);
        }
    }
    assert_eq!(entries.len(), 7, "{section}");
    let all: BTreeMap<&str, BTreeMap<String, String>> =
        COMMANDS.iter().map(|c| (*c, flags(c))).collect();
    for (names, commands, text) in &entries {
        assert!(!commands.is_empty(), "no 'in:' list for {names:?}: {text}");
        for flag in names {
            for c in commands {
                let f = all
                    .get(c.as_str())
                    .unwrap_or_else(|| panic!("{flag}: no command {c}"));
                assert!(f.contains_key(flag), "{flag}: the help says {c} takes it");
            }
            for (c, f) in &all {
                if f.contains_key(flag) {
                    assert!(
                        text.contains(c),
                        "{flag}: {c} takes it and its entry does not say so: {text}"
                    );
                }
            }
        }
    }
}
