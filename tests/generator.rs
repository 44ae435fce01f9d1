//! The committed reference captures are exactly what scripts/gen_pcaps.py makes: nobody
//! edited an expected value by hand, and the generator is deterministic.

mod common;

use std::process::Command;

#[test]
fn committed_captures_are_what_the_generator_makes() {
    let test = "committed_captures_are_what_the_generator_makes";
    if !common::have_scapy(test) {
        return;
    }
    let recorded: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::repo("pcaps/roce_streams.json")).unwrap(),
    )
    .unwrap();
    let pinned = recorded["scapy"].as_str().unwrap().to_owned();
    let installed = Command::new("python3")
        .args(["-c", "import scapy; print(scapy.__version__)"])
        .output()
        .unwrap();
    let installed = String::from_utf8_lossy(&installed.stdout).trim().to_owned();
    if installed != pinned {
        common::skip(
            test,
            &format!(
                "scapy {installed} is installed, the captures were made with {pinned} (pip install -r scripts/requirements.txt)"
            ),
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("python3")
        .arg(common::repo("scripts/gen_pcaps.py"))
        .arg("--out")
        .arg(dir.path())
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "gen_pcaps.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut compared = 0;
    for entry in std::fs::read_dir(common::repo("pcaps")).unwrap() {
        let committed = entry.unwrap().path();
        let name = committed.file_name().unwrap();
        let fresh = dir.path().join(name);
        assert!(fresh.exists(), "the generator no longer makes {name:?}");
        assert!(
            std::fs::read(&committed).unwrap() == std::fs::read(&fresh).unwrap(),
            "pcaps/{} differs from what scripts/gen_pcaps.py makes now; regenerate and commit",
            name.to_string_lossy()
        );
        compared += 1;
    }
    let made = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(
        compared, made,
        "the generator makes files that are not committed"
    );
}
