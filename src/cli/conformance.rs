//! `rocelab conformance`: sonic-mgmt's qos_sai procedures in virtual time against a
//! switch configuration, a row per check.

use super::{JsonReport, Preset, SwitchConfigArgs};
use anyhow::Result;
use rocelab::conformance::{self, Status};
use std::path::PathBuf;

/// Run the procedures of SONiC's qos_sai tests (PFC XOFF/XON points, headroom, lossy drop
/// point, DSCP to queue, DWRR shares, watermarks, PFC watchdog) against a configuration in
/// virtual time: a row per check with the value the configuration gives, the measured
/// one, and pass or fail. Exits non-zero when a check fails.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(flatten)]
    switch: SwitchConfigArgs,
    /// Also write the checks as JSON (`-`: to standard output, instead of the table).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Show how each expected value follows from the configuration.
    #[arg(long)]
    wide: bool,
}

/// Runs `rocelab conformance`.
pub(crate) fn run(args: Args) -> Result<()> {
    let cfg = args.switch.load(Preset::Default)?;
    let inputs: Vec<PathBuf> = args.switch.config.iter().cloned().collect();
    let json = JsonReport::create(args.json.as_deref(), &inputs)?;
    let name = args.switch.describe(Preset::Default);
    for w in cfg.lint() {
        noteln!("rocelab: warning: {}: {}", w.key, w.message);
    }
    let report = conformance::run(&cfg, &name);
    print_table(&report, args.wide);
    json.write(&serde_json::to_value(&report)?)?;
    if report.failed > 0 {
        anyhow::bail!(
            "{} of {} checks failed against {name}",
            report.failed,
            report.checks.len()
        );
    }
    Ok(())
}

/// What the table is, said before it: both columns come from rocelab.
const SELF_CONSISTENCY: [&str; 3] = [
    "expected: computed from the configuration by rocelab's rules (docs/qos.md); measured: rocelab's",
    "own switch model put through sonic-mgmt's procedures in virtual time. Both come from rocelab:",
    "a self-consistency check of the model and the configuration, not a test of a device.",
];

/// `text` cut at spaces into lines of at most `width` characters (a word longer than that
/// stays whole on its own line).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let last = lines.last_mut().expect("one line at least");
        if last.is_empty() {
            last.push_str(word);
        } else if last.chars().count() + 1 + word.chars().count() <= width {
            last.push(' ');
            last.push_str(word);
        } else {
            lines.push(word.to_owned());
        }
    }
    lines
}

fn print_table(report: &conformance::Report, wide: bool) {
    sayln!(
        "conformance of {} ({} B test frames)",
        report.config,
        report.frame_bytes
    );
    for line in SELF_CONSISTENCY {
        sayln!("{line}");
    }
    let title_w = report
        .checks
        .iter()
        .map(|c| c.title.chars().count())
        .max()
        .unwrap_or(5)
        .min(if wide { 200 } else { 64 });
    let exp_w = report
        .checks
        .iter()
        .map(|c| c.expected.len())
        .max()
        .unwrap_or(8)
        .max(8);
    sayln!(
        "{:<title_w$}  {:<exp_w$}  {:<8}  measured",
        "check",
        "expected",
        "result"
    );
    for c in &report.checks {
        let status = match c.status {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::Skip => "skip",
        };
        // A long check name wraps under itself, whole: never cut short.
        let title = wrap(&c.title, title_w);
        sayln!(
            "{:<title_w$}  {:<exp_w$}  {status:<8}  {}",
            title[0],
            c.expected,
            c.measured
        );
        for more in &title[1..] {
            sayln!("  {more}");
        }
        if wide || c.status != Status::Pass {
            sayln!("{:<title_w$}  {}", "", c.basis);
        }
    }
    sayln!(
        "{} passed, {} failed, {} not applicable",
        report.passed,
        report.failed,
        report.skipped
    );
}
