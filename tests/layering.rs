//! The dependency direction of the design (docs/design.md): the cores (switch, endpoint)
//! and the leaves never import a driver, I/O or the command line, and the two cores never
//! import each other; the leaves (wire, time, link, bytes, config, series, rand) import
//! neither; no driver imports report, which renders what the drivers compute.
//! Checked on the source text, so a new `use` that bends the layout
//! fails here before it spreads.

use std::path::Path;

/// Every `crate::<module>` a source tree names.
fn imports(dir: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![root.join(dir)];
    if root.join(format!("{dir}.rs")).exists() {
        stack = vec![root.join(format!("{dir}.rs"))];
    }
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if p.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, _) in text.match_indices("crate::") {
            let module: String = text[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            found.push((p.display().to_string(), module));
        }
    }
    found
}

fn assert_none(dir: &str, forbidden: &[&str]) {
    let bad: Vec<_> = imports(dir)
        .into_iter()
        .filter(|(_, m)| forbidden.contains(&m.as_str()))
        .collect();
    assert!(bad.is_empty(), "{dir} imports {bad:?}");
}

const DRIVERS: [&str; 9] = [
    "conformance",
    "runtime",
    "replay",
    "sim",
    "lab",
    "report",
    "io",
    "capture",
    "inspect",
];

#[test]
fn the_cores_import_no_driver_and_not_each_other() {
    let mut switch_forbidden = DRIVERS.to_vec();
    switch_forbidden.push("endpoint");
    assert_none("switch", &switch_forbidden);
    let mut endpoint_forbidden = DRIVERS.to_vec();
    endpoint_forbidden.push("switch");
    assert_none("endpoint", &endpoint_forbidden);
}

#[test]
fn the_leaves_import_no_core_and_no_driver() {
    let mut forbidden = DRIVERS.to_vec();
    forbidden.extend(["switch", "endpoint"]);
    for leaf in [
        "wire", "time", "link", "bytes", "config", "series", "rand", "credit",
    ] {
        assert_none(leaf, &forbidden);
    }
    // Every random stream of a run comes from it: it must not depend on what it seeds.
    assert_eq!(imports("rand"), Vec::new(), "rand imports nothing");
}

#[test]
fn no_driver_imports_report() {
    // A driver computes what a run comes to and report renders it: a driver that
    // reached for report would tie the two layers into a loop.
    for driver in DRIVERS.iter().filter(|&&d| d != "report") {
        assert_none(driver, &["report"]);
    }
}
