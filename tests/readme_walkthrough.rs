//! The README's replay walkthrough, run verbatim: the shell block that generates an
//! incast with scapy, replays it through the SONiC preset and dissects the output with
//! tshark must show CE marks, PFC XOFF and XON. And the same incast at the DSCP the
//! preset makes lossy is named in a warning.

mod common;

use std::path::Path;
use std::process::Command;

/// The README's first `sh` block that runs `gen_incast.py`.
fn walkthrough() -> String {
    let readme = std::fs::read_to_string(common::repo("README.md")).unwrap();
    let mut blocks = readme.split("```sh\n").skip(1);
    blocks
        .find_map(|b| {
            let block = b.split("```").next()?;
            block.contains("gen_incast.py").then(|| block.to_owned())
        })
        .expect("the README has the walkthrough")
}

fn bash_in(dir: &Path, script: &str) -> std::process::Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_rocelab")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .expect("run bash")
}

#[test]
fn the_replay_walkthrough_shows_pfc_and_ce_verbatim() {
    let test = "the_replay_walkthrough_shows_pfc_and_ce_verbatim";
    if !common::have_scapy(test) || !common::have_tool(test, "tshark", "apt-get install tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(common::repo("scripts"), dir.path().join("scripts")).unwrap();
    let out = bash_in(dir.path(), &walkthrough());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("CE: queue 3 at"), "{stdout}");
    assert!(stdout.contains("PFC XOFF prio 3"), "{stdout}");
    assert!(stdout.contains("PFC XON prio 3"), "{stdout}");
    assert!(
        !stderr.contains("warning:"),
        "nothing misclassified: {stderr}"
    );

    // Peers that ignore pause: tshark reads each first dropped frame as received
    // (inbound) on its port, with the explanation as its comment.
    let out = bash_in(
        dir.path(),
        "rocelab replay --config my.toml --split-by mac incast.pcap --peer-ignores-pause \
             --pcap drop.pcapng >/dev/null
         tshark -r drop.pcapng -Y 'frame.comment contains \"DROPPED\"' -T fields \
             -e frame.packet_flags_direction -e frame.comment",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(!lines.is_empty(), "{stdout}");
    for l in lines {
        assert!(
            l.starts_with("0x00000001\tDROPPED: ") && l.contains("lossless PG 3 dropped"),
            "{l}"
        );
    }

    // The generator's default DSCP (26) is lossy in SONiC's maps: replay says so, once.
    let out = bash_in(
        dir.path(),
        "python3 scripts/gen_incast.py lossy.pcap --senders 2 --frames 50 >/dev/null
         rocelab replay --config my.toml --split-by mac lossy.pcap --json r.json >/dev/null",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("warning:").count(), 1, "{stderr}");
    assert!(
        stderr.contains("DSCP 26 -> traffic class 1 -> queue 1, a lossy class")
            && stderr.contains("DSCP 3 or 4"),
        "{stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(report["warnings"][0]["kind"], "roce_data_lossy");
}
