//! The command line: one file per subcommand (its clap `Args` and its `run`), and the
//! argument groups and helpers they share. Errors are explained here, at the edge, with
//! anyhow: which file, which flag, what to do; the library's errors are typed.

/// `print!` to standard output, where a closed pipe (`rocelab sim | head`) is not an
/// error: what cannot be printed is dropped and the run goes on, so its output files are
/// still written.
macro_rules! say {
    ($($arg:tt)*) => { $crate::cli::write_stdout(format_args!($($arg)*)) };
}

/// `println!` to standard output, as [`say!`].
macro_rules! sayln {
    () => { $crate::cli::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => {{
        $crate::cli::write_stdout(format_args!($($arg)*));
        $crate::cli::write_stdout(format_args!("\n"));
    }};
}

/// `eprintln!` that never panics: a closed or broken standard error (`rocelab sim 2>&1 |
/// head -1`) drops the line and the run goes on, so its output files are still written.
macro_rules! noteln {
    ($($arg:tt)*) => {
        $crate::cli::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` as [`noteln!`].
macro_rules! note {
    ($($arg:tt)*) => { $crate::cli::write_stderr(format_args!($($arg)*)) };
}

pub(crate) mod compare;
pub(crate) mod config;
pub(crate) mod conformance;
pub(crate) mod endpoint;
pub(crate) mod inspect;
pub(crate) mod lab;
pub(crate) mod replay;
pub(crate) mod sim;
pub(crate) mod sweep;
pub(crate) mod switch;
pub(crate) mod traffic;
pub(crate) mod tune;

use anyhow::{Context, Result};
use rocelab::config::SwitchConfig;
use rocelab::config::endpoint::EndpointConfig;
use rocelab::io::Backend;
use rocelab::output::{self, OutputFile};
use rocelab::runtime::CoreList;
use rocelab::wire::MacAddr;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Set when a JSON report or a capture goes to standard output (`--json -`, `--pcap -`):
/// the text that would go there goes to standard error instead, so that standard output
/// carries that output alone.
static TEXT_TO_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sends the text that would go to standard output to standard error: standard output
/// carries an output of the run (`--json -`, `replay --pcap -`).
pub(crate) fn text_to_stderr() {
    TEXT_TO_STDERR.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Writes to standard output unless the reader has gone (a closed pipe); other write
/// errors are reported once on standard error. With `--json -`, to standard error.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::sync::atomic::Ordering;
    if TEXT_TO_STDERR.load(Ordering::Relaxed) {
        write_stderr(args);
        return;
    }
    write_json_stdout(args);
}

/// Writes to standard error, dropping what a closed or broken one cannot take.
pub(crate) fn write_stderr(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// A command's text as an `io::Write`, for code that prints through a writer (the live
/// switch's interval lines): standard output as [`say!`] prints, so that under `--json -`
/// it goes to standard error and standard output stays one JSON document.
pub(crate) struct TextOut;

impl std::io::Write for TextOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        write_stdout(format_args!("{}", String::from_utf8_lossy(buf)));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        use std::sync::atomic::Ordering;
        if TEXT_TO_STDERR.load(Ordering::Relaxed) {
            let _ = std::io::stderr().flush();
        } else if !STDOUT_CLOSED.load(Ordering::Relaxed) {
            let _ = std::io::stdout().flush();
        }
        Ok(())
    }
}

/// Writes to standard output whatever `--json -` says, quietly ending at a closed pipe.
fn write_json_stdout(args: std::fmt::Arguments<'_>) {
    use std::sync::atomic::Ordering;
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            noteln!("rocelab: standard output: {e}");
        }
    }
}

/// An nccl-tests style size sweep: `-b`, `-e`, `-f`.
#[derive(clap::Args, Debug)]
pub(crate) struct SizeSweepArgs {
    /// Smallest all-reduce size in bytes, as nccl-tests -b (K, M, G suffixes allowed).
    #[arg(short = 'b', long, default_value = "8K", value_parser = rocelab::bytes::parse)]
    pub min_bytes: u64,
    /// Largest all-reduce size, as nccl-tests -e.
    #[arg(short = 'e', long, default_value = "16M", value_parser = rocelab::bytes::parse)]
    pub max_bytes: u64,
    /// Size factor, as nccl-tests -f.
    #[arg(short = 'f', long, default_value_t = 2)]
    pub factor: u64,
    /// The most memory the all-reduce buffers of this process may take, MiB.
    #[arg(long, value_name = "MIB", default_value_t = 4096)]
    pub memory_budget_mib: u64,
}

impl SizeSweepArgs {
    /// The sizes, refused when `ranks` ranks in this process would register more than
    /// `budget_mib` of buffers.
    pub(crate) fn sizes_within(&self, ranks: usize, budget_mib: u64) -> Result<Vec<u64>> {
        let sizes = self.sizes()?;
        let need = rocelab::endpoint::app::size_sweep::rank_buffer_bytes(&sizes)
            .saturating_mul(ranks as u64);
        if need > budget_mib.saturating_mul(1 << 20) {
            anyhow::bail!(
                "-e {}: {ranks} rank(s) here would register about {} MiB of all-reduce buffers \
                 (every size's data and staging at once), over --memory-budget-mib {budget_mib}: \
                 lower -e, or raise --memory-budget-mib if the machine has the memory",
                self.max_bytes,
                need >> 20
            );
        }
        Ok(sizes)
    }

    /// The sizes: -b, -b·f, … up to -e.
    pub(crate) fn sizes(&self) -> Result<Vec<u64>> {
        rocelab::endpoint::app::size_sweep::sizes(self.min_bytes, self.max_bytes, self.factor)
            .with_context(|| {
                format!(
                    "-b {} -e {} -f {}",
                    self.min_bytes, self.max_bytes, self.factor
                )
            })
    }
}

/// How a live command moves frames and where its threads run.
#[derive(clap::Args, Debug)]
pub(crate) struct LiveArgs {
    /// Socket backend: mmap (a TPACKET_V2 receive ring and batched sendmmsg; sees 802.1Q
    /// tags) or pnet (pnet's channel, a system call per frame sent).
    #[arg(long = "io", value_enum, default_value_t = Backend::Mmap)]
    pub backend: Backend,
    /// Spin while waiting instead of sleeping (lower latency, a whole core busy).
    #[arg(long)]
    pub busy_poll: bool,
}

/// [`REALTIME_PRIORITY`](rocelab::runtime::REALTIME_PRIORITY) when `wanted` and the
/// process may take it; otherwise `None`, with a warning when it was wanted (`quiet` names
/// the flag that says not to try).
pub(crate) fn realtime_or_warn(wanted: bool, quiet: &str) -> Option<u8> {
    if !wanted {
        return None;
    }
    match rocelab::runtime::realtime_allowed() {
        Ok(()) => Some(rocelab::runtime::REALTIME_PRIORITY),
        Err(e) => {
            noteln!(
                "rocelab: warning: real-time priority not allowed here ({e}): the threads run at normal priority, and one preempted by other work holds the frames that arrive meanwhile, which shows as queues ({quiet} says not to try)"
            );
            None
        }
    }
}

/// A `--cores` list, checked against this machine (none given: empty, no pinning).
pub(crate) fn checked_cores(cores: Option<&CoreList>) -> Result<CoreList> {
    let cores = cores.cloned().unwrap_or_default();
    cores.check().context("--cores")?;
    Ok(cores)
}

/// How the switch counters are printed (`--counters`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Counters {
    /// A row per port and class, the common columns (under 120 characters).
    #[default]
    Table,
    /// Every counter: drops by cause, XON, PG watermarks, storms, sojourn.
    Wide,
    /// SONiC's `show pfc counters`, `show queue counters`, `show queue wredcounters` and
    /// `show pfcwd stats`.
    Sonic,
    /// NX-OS's `show interface priority-flow-control` and `show queuing interface`.
    Nxos,
}

impl Counters {
    /// The library's style.
    pub(crate) fn style(self) -> rocelab::report::counters::CounterStyle {
        use rocelab::report::counters::CounterStyle;
        match self {
            Counters::Table => CounterStyle::Table,
            Counters::Wide => CounterStyle::Wide,
            Counters::Sonic => CounterStyle::Sonic,
            Counters::Nxos => CounterStyle::Nxos,
        }
    }
}

/// The built-in switch configurations.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Preset {
    /// The Nexus/SONiC convention: DSCP 24/26 lossless on priority 3, CNPs strict.
    Default,
    /// Cisco Nexus 9000 AI/ML blueprint values.
    NexusAi,
    /// SONiC's defaults (the AZURE maps and profiles).
    Sonic,
}

impl Preset {
    /// The preset's name, as `config show` takes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Preset::Default => "default",
            Preset::NexusAi => "nexus-ai",
            Preset::Sonic => "sonic",
        }
    }
}

/// Where a switch configuration comes from: a file or a preset.
#[derive(clap::Args, Debug)]
pub(crate) struct SwitchConfigArgs {
    /// Switch configuration file (TOML).
    #[arg(long, conflicts_with = "preset")]
    pub config: Option<PathBuf>,
    /// Built-in configuration (default: `default`; for `lab`: `nexus-ai`). `rocelab config
    /// show NAME` prints it.
    #[arg(long, value_enum)]
    pub preset: Option<Preset>,
    /// Change one key of the switch configuration by its dotted path, over the file or
    /// preset (repeatable): `--set buffer.shared_bytes=4M --set pfc.lossless=[3,4]`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl SwitchConfigArgs {
    /// The configuration: the file, else the preset, else `default`.
    pub(crate) fn load(&self, default: Preset) -> Result<SwitchConfig> {
        let (text, origin) = match &self.config {
            Some(path) => (
                read_config(path)?,
                format!("configuration {}", path.display()),
            ),
            None => {
                let name = self.preset.unwrap_or(default).name();
                let text = rocelab::config::preset_text(name)
                    .ok_or_else(|| anyhow::anyhow!("no preset named '{name}'"))?;
                (text.to_owned(), format!("preset {name}"))
            }
        };
        if self.set.is_empty() {
            return SwitchConfig::from_toml(&text).with_context(|| origin);
        }
        let mut table: toml::Table = toml::from_str(&text).with_context(|| origin.clone())?;
        for assignment in &self.set {
            rocelab::config::set_key(&mut table, assignment)
                .with_context(|| format!("--set {assignment}"))?;
        }
        SwitchConfig::from_table(table)
            .with_context(|| format!("{origin} with --set {}", self.set.join(" --set ")))
    }

    /// What the configuration is called in a header line (with its `--set` changes).
    pub(crate) fn describe(&self, default: Preset) -> String {
        let base = self.config.as_ref().map_or_else(
            || self.preset.unwrap_or(default).name().to_owned(),
            |p| p.display().to_string(),
        );
        if self.set.is_empty() {
            base
        } else {
            format!("{base} with {}", self.set.join(", "))
        }
    }
}

/// An endpoint configuration file, with the file named in any error (not yet validated:
/// callers override fields first).
pub(crate) fn load_endpoint_config(path: &Path) -> Result<EndpointConfig> {
    let text = read_config(path)?;
    EndpointConfig::from_toml(&text).with_context(|| format!("configuration {}", path.display()))
}

/// A configuration file's text, read with a size cap (`config check /dev/zero` once read
/// until memory ran out).
fn read_config(path: &Path) -> Result<String> {
    Ok(rocelab::config::read_text(path)?)
}

/// The two non-empty halves of a `KEY=VALUE` flag (`--in PORT=FILE`, `--port NAME=IFNAME`);
/// `form` and `example` say what was expected.
pub(crate) fn key_value<'a>(
    flag: &str,
    spec: &'a str,
    form: &str,
    example: &str,
) -> Result<(&'a str, &'a str)> {
    spec.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .with_context(|| format!("{flag} {spec}: expected {form}, e.g. {flag} {example}"))
}

/// What an all-reduce size that did not finish says in its time column: `interrupted`
/// after Ctrl-C or SIGTERM, `timeout` when a limit ended the run.
pub(crate) fn unfinished(stop: &std::sync::atomic::AtomicBool) -> &'static str {
    if rocelab::runtime::stopped(stop) {
        "interrupted"
    } else {
        "timeout"
    }
}

/// A flag's value in seconds as a duration.
pub(crate) fn seconds(flag: &str, v: f64) -> Result<Duration> {
    if (0.0..1e9).contains(&v) {
        Ok(Duration::from_secs_f64(v))
    } else {
        anyhow::bail!("{flag} {v}: give a number of seconds, 0 to 1e9")
    }
}

/// A MAC address flag.
pub(crate) fn parse_mac(flag: &str, s: &str) -> Result<MacAddr> {
    s.parse()
        .ok()
        .with_context(|| format!("{flag} {s}: give a MAC address like 02:00:c6:12:00:01"))
}

/// Refuses a loopback interface (ARPHRD_LOOPBACK, type 772) where an Ethernet port is
/// wanted: it has no Ethernet peer, and every frame sent on it comes back in. `what` is
/// the flag as given (`--port p0=lo`, `--iface lo`).
pub(crate) fn not_loopback(what: &str, iface: &str) -> Result<()> {
    let kind = std::fs::read_to_string(format!("/sys/class/net/{iface}/type"));
    if kind.is_ok_and(|k| k.trim() == "772") {
        anyhow::bail!(
            "{what}: {iface} is a loopback interface, not an Ethernet port; give a veth or a NIC"
        );
    }
    Ok(())
}

/// The MAC address of an interface in this network namespace.
pub(crate) fn interface_mac(iface: &str) -> Result<MacAddr> {
    let path = format!("/sys/class/net/{iface}/address");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("no interface named '{iface}' in this network namespace"))?;
    parse_mac("--src-mac", text.trim())
}

/// The MTU of `iface` in this network namespace, bytes.
pub(crate) fn interface_mtu(iface: &str) -> Result<usize> {
    let path = format!("/sys/class/net/{iface}/mtu");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("no interface named '{iface}' in this network namespace"))?;
    text.trim()
        .parse()
        .with_context(|| format!("{path}: not an MTU: {}", text.trim()))
}

/// A JSON report (`--json FILE`, `--report FILE`, `--stats-json FILE`): opened before the
/// run, so a path that cannot be written fails at once, and written whole (or not at all)
/// after it; `-` is standard output.
pub(crate) struct JsonReport(Option<JsonSink>);

enum JsonSink {
    File(OutputFile),
    Stdout,
}

impl JsonReport {
    /// Starts the report at `path`, if one was asked for; `inputs` must not be it.
    pub(crate) fn create<P: AsRef<Path>>(path: Option<&Path>, inputs: &[P]) -> Result<JsonReport> {
        let Some(path) = path else {
            return Ok(JsonReport(None));
        };
        if output::is_stdout(path) {
            text_to_stderr();
            return Ok(JsonReport(Some(JsonSink::Stdout)));
        }
        output::refuse_inputs(path, inputs)?;
        Ok(JsonReport(Some(JsonSink::File(OutputFile::create(path)?))))
    }

    /// True when a report was asked for.
    pub(crate) fn wanted(&self) -> bool {
        self.0.is_some()
    }

    /// Writes `value`, pretty-printed, and puts the file in place.
    pub(crate) fn write(self, value: &serde_json::Value) -> Result<()> {
        let text = serde_json::to_string_pretty(value)? + "\n";
        match self.0 {
            None => Ok(()),
            Some(JsonSink::Stdout) => {
                write_json_stdout(format_args!("{text}"));
                Ok(())
            }
            Some(JsonSink::File(mut out)) => {
                out.file()
                    .write_all(text.as_bytes())
                    .with_context(|| format!("cannot write {}", out.path().display()))?;
                out.commit()?;
                Ok(())
            }
        }
    }
}
