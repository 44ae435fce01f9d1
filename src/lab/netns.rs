//! Network namespaces and veth pairs for live runs and tests, made with iproute2 and always
//! removed: names carry a per-run prefix (`rl` + the process id in base 36), [`Netns`]
//! records each name before the command that makes it runs and removes what it made when
//! dropped (also on panic), and [`remove_stale`] removes what a killed run left behind.
//! The `ip` commands run in a process group of their own with SIGINT ignored, so that a
//! terminal's Ctrl-C, sent to the whole foreground group, reaches rocelab (which stops
//! and removes what it made) and not a command halfway through its work.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Output, Stdio};

/// The prefix every name starts with.
pub const FAMILY: &str = "rl";

/// The alias of every veth rocelab makes. Leftovers of a dead process are removed when
/// they carry it, or when their names are exactly those `rocelab lab` gives (see
/// [`lab_host_role`]): the alias is set by a command after the one that makes the link.
pub const ALIAS: &str = "rocelab-lab";

/// True for the roles `rocelab lab` names its hosts' namespaces with: `r0` to `r63` (the
/// ranks) and `b0`, `b1` (background senders), a number without leading zeros.
pub fn lab_host_role(role: &str) -> bool {
    let Some(number) = role.strip_prefix(['r', 'b']) else {
        return false;
    };
    (1..=2).contains(&number.len())
        && number.bytes().all(|b| b.is_ascii_digit())
        && (number == "0" || !number.starts_with('0'))
}

/// The role of host `host`'s veth end in the root namespace, the switch's port.
pub fn switch_end_role(host: &str) -> String {
    format!("s{host}")
}

/// The role of host `host`'s veth end in its namespace.
pub fn host_end_role(host: &str) -> String {
    format!("h{host}")
}

/// True for the roles of the lab's veth ends ([`switch_end_role`], [`host_end_role`] of a
/// [`lab_host_role`]).
pub fn lab_link_role(role: &str) -> bool {
    role.strip_prefix(['s', 'h']).is_some_and(lab_host_role)
}

/// The run prefix of process `pid`: `rl` and the pid in base 36, then `-`.
pub fn prefix_of(pid: u32) -> String {
    let mut digits = Vec::new();
    let mut n = pid;
    loop {
        digits.push(char::from_digit(n % 36, 36).unwrap_or('0'));
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.reverse();
    format!("{FAMILY}{}-", digits.into_iter().collect::<String>())
}

/// The process id a name made by [`prefix_of`] carries (only names in exactly that form:
/// `rlab-test` or `rl00a-x` are not ours).
fn pid_in(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(FAMILY)?;
    let (digits, _) = rest.split_once('-')?;
    let pid = u32::from_str_radix(digits, 36).ok()?;
    name.starts_with(&prefix_of(pid)).then_some(pid)
}

/// The role in `name` after a run prefix (`rlab-sr0`: `sr0`), and the pid the prefix
/// carries.
fn split_name(name: &str) -> Option<(u32, &str)> {
    let pid = pid_in(name)?;
    Some((pid, &name[prefix_of(pid).len()..]))
}

/// Runs `ip args`, in a process group of its own (see the module's comment), with SIGINT
/// ignored: a Ctrl-C that reaches the child in the instant before it leaves rocelab's
/// group would otherwise still kill it (a process-group spawn resets caught signals to
/// their default before it moves the child).
fn ip(args: &[&str]) -> io::Result<Output> {
    let mut command = Command::new("ip");
    command.args(args).stdin(Stdio::null()).process_group(0);
    // SAFETY: the hook runs in the forked child before exec and calls only signal(2),
    // which is async-signal-safe; until then the child has rocelab's handler, which only
    // raises a flag in the child's copy of memory.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    command.output().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot run `ip` ({e}): install iproute2 (apt-get install iproute2)"),
        )
    })
}

/// How `ip` runs: the real command, or a test's stand-in.
type IpRunner = fn(&[&str]) -> io::Result<Output>;

/// Why an `ip` command failed, and whether it may have done its work all the same.
#[derive(Debug)]
struct IpFailed {
    error: io::Error,
    /// Killed by a signal (or never seen to end): what it was making may exist.
    maybe_done: bool,
}

fn ip_ok_with(run: IpRunner, args: &[&str]) -> Result<(), IpFailed> {
    let out = run(args).map_err(|error| IpFailed {
        error,
        maybe_done: false,
    })?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    let signal = std::os::unix::process::ExitStatusExt::signal(&out.status);
    // A child killed by a signal says nothing; it may have been killed after the kernel
    // did the work.
    let why = if !said.is_empty() {
        said
    } else if let Some(signal) = signal {
        format!("killed by signal {signal}")
    } else {
        format!("failed ({}) without a message", out.status)
    };
    Err(IpFailed {
        error: io::Error::other(format!("ip {}: {why}", args.join(" "))),
        maybe_done: signal.is_some(),
    })
}

/// Why namespaces cannot be made here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// The effective user is not root (euid 0).
    #[error("network namespaces and raw sockets need root")]
    NotRoot,
    /// No iproute2.
    #[error("`ip` (iproute2) is not installed: apt-get install iproute2")]
    NoIproute,
}

/// Ok when `ip` runs and we are root: what every live test and `rocelab lab` need.
pub fn can_make_namespaces() -> Result<(), Unavailable> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Unavailable::NotRoot);
    }
    match ip(&["-V"]) {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err(Unavailable::NoIproute),
    }
}

/// Joins the calling thread (only) to network namespace `ns`.
pub fn enter(ns: &str) -> io::Result<()> {
    let file = std::fs::File::open(format!("/var/run/netns/{ns}"))?;
    // SAFETY: setns on the calling thread with a namespace file descriptor.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Namespaces and veth pairs of one run.
#[derive(Debug)]
pub struct Netns {
    prefix: String,
    /// Namespaces made, or being made.
    namespaces: Vec<String>,
    /// veth ends in the root namespace (deleting one deletes its pair), made or being made.
    links: Vec<String>,
    run: IpRunner,
}

impl Netns {
    /// A set for this process; first removes what killed runs left behind.
    pub fn new() -> io::Result<Netns> {
        remove_stale();
        Ok(Netns::with_runner(ip))
    }

    fn with_runner(run: IpRunner) -> Netns {
        Netns {
            prefix: prefix_of(std::process::id()),
            namespaces: Vec::new(),
            links: Vec::new(),
            run,
        }
    }

    /// The full name of `role` (at most 15 bytes for an interface).
    pub fn name(&self, role: &str) -> String {
        format!("{}{role}", self.prefix)
    }

    fn ip_ok(&self, args: &[&str]) -> io::Result<()> {
        ip_ok_with(self.run, args).map_err(|f| f.error)
    }

    /// Runs `args`, which make `name`, recorded in `made` before they run: whatever
    /// happens to the command, `name` is removed with the rest, unless the command said
    /// it failed (then it made nothing, and a name that was there before is not ours).
    fn make(
        &mut self,
        list: fn(&mut Netns) -> &mut Vec<String>,
        name: &str,
        args: &[&str],
    ) -> io::Result<()> {
        list(self).push(name.to_owned());
        match ip_ok_with(self.run, args) {
            Ok(()) => Ok(()),
            Err(f) => {
                if !f.maybe_done {
                    list(self).pop();
                }
                Err(f.error)
            }
        }
    }

    /// Makes namespace `role` with its loopback up; returns its full name.
    pub fn namespace(&mut self, role: &str) -> io::Result<String> {
        let name = self.name(role);
        self.make(|n| &mut n.namespaces, &name, &["netns", "add", &name])?;
        self.ip_ok(&["-n", &name, "link", "set", "lo", "up"])?;
        Ok(name)
    }

    /// A veth pair: `root_end` stays in the root namespace (up, no address), `ns_end`
    /// goes into namespace `ns` with `mac`, `cidr` (an address in 198.18.0.0/15) and `mtu`.
    /// Checksum and segmentation offloads are turned off on both ends, so that every frame
    /// a raw socket sees is complete and the size it will be on the wire.
    pub fn veth(
        &mut self,
        root_end: &str,
        ns: &str,
        ns_end: &str,
        mac: Option<&str>,
        cidr: Option<&str>,
        mtu: u32,
    ) -> io::Result<()> {
        self.veth_pair(root_end, ns, ns_end, mac, mtu)?;
        self.configure(root_end, ns, ns_end, cidr)
    }

    /// The first half of [`veth`](Self::veth): the pair exists with its `mtu`, `ns_end`
    /// in namespace `ns` with `mac`, both ends up (a packet socket bound to an interface
    /// that is down reports "network is down"), no address yet, offloads still on.
    /// Sockets can be opened on them from here on.
    pub fn veth_pair(
        &mut self,
        root_end: &str,
        ns: &str,
        ns_end: &str,
        mac: Option<&str>,
        mtu: u32,
    ) -> io::Result<()> {
        let (root_end, ns_end) = (self.name(root_end), self.name(ns_end));
        if root_end.len() > 15 || ns_end.len() > 15 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "interface name over 15 bytes",
            ));
        }
        let mtu = mtu.to_string();
        let mut add = vec![
            "link", "add", &root_end, "mtu", &mtu, "type", "veth", "peer", "name", &ns_end, "mtu",
            &mtu,
        ];
        if let Some(mac) = mac {
            add.extend(["address", mac]);
        }
        self.make(|n| &mut n.links, &root_end, &add)?;
        // The alias marks the pair as rocelab's for `remove_stale` (the kernel ignores an
        // alias given to `ip link add`).
        self.ip_ok(&["link", "set", &root_end, "alias", ALIAS])?;
        self.ip_ok(&["link", "set", &ns_end, "alias", ALIAS])?;
        self.ip_ok(&["link", "set", &ns_end, "netns", ns])?;
        self.ip_ok(&["-n", ns, "link", "set", &ns_end, "up"])?;
        self.ip_ok(&["link", "set", &root_end, "up"])
    }

    /// The second half of [`veth`](Self::veth), on a pair [`veth_pair`](Self::veth_pair)
    /// made: `ns_end`'s address `cidr`, offloads off on both ends.
    pub fn configure(
        &mut self,
        root_end: &str,
        ns: &str,
        ns_end: &str,
        cidr: Option<&str>,
    ) -> io::Result<()> {
        let (root_end, ns_end) = (self.name(root_end), self.name(ns_end));
        if let Some(cidr) = cidr {
            self.ip_ok(&["-n", ns, "addr", "add", cidr, "dev", &ns_end])?;
        }
        offloads_off(None, &root_end)?;
        offloads_off(Some(ns), &ns_end)?;
        Ok(())
    }

    /// A command to run inside namespace `ns`.
    pub fn exec(&self, ns: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, program]);
        c
    }

    /// Removes everything now (also done on drop).
    pub fn remove(&mut self) {
        for link in std::mem::take(&mut self.links) {
            let _ = (self.run)(&["link", "del", &link]);
        }
        for ns in std::mem::take(&mut self.namespaces) {
            let _ = (self.run)(&["netns", "del", &ns]);
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The interface name of one line of `ip -o link show`: "7: rlabc-s0@if6: <...> ... alias
/// rocelab-lab" names `rlabc-s0` (the name ends at '@' or ':').
fn link_name(line: &str) -> Option<&str> {
    line.split(": ")
        .nth(1)
        .map(|n| n.split(['@', ':']).next().unwrap_or(n))
}

/// Whether a link of a dead run, `name` as `ip -o link show` lists it in `line`, is
/// rocelab's: it carries the alias, or its name is exactly a lab veth end's (a run killed
/// between making the pair and setting its alias leaves one without).
fn stale_link_is_ours(name: &str, line: &str) -> bool {
    line.contains(ALIAS) || split_name(name).is_some_and(|(_, role)| lab_link_role(role))
}

/// Whether a namespace of a dead run, `name` holding the links `ip -o link show` lists in
/// `links`, is rocelab's: it holds a link with the alias, or its name is exactly a lab
/// host's and it holds nothing but its loopback and lab veth ends (a run killed between
/// making the namespace and its veth leaves it empty).
fn stale_namespace_is_ours(name: &str, links: &str) -> bool {
    if links.contains(ALIAS) {
        return true;
    }
    split_name(name).is_some_and(|(_, role)| lab_host_role(role))
        && links.lines().filter_map(link_name).all(|link| {
            link == "lo" || split_name(link).is_some_and(|(_, role)| lab_link_role(role))
        })
}

/// Removes namespaces and root-namespace links that rocelab made (named with a run prefix,
/// and carrying rocelab's alias or named exactly as the lab names them) for processes that
/// are gone.
pub fn remove_stale() {
    let dead = |name: &str| {
        pid_in(name).is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
    };
    // Namespaces first, while their veth (and its alias) is still inside.
    if let Ok(out) = ip(&["netns", "list"]) {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split_whitespace().next().unwrap_or("");
            if dead(name)
                && let Ok(links) = ip(&["-n", name, "-o", "link", "show"])
                && links.status.success()
                && stale_namespace_is_ours(name, &String::from_utf8_lossy(&links.stdout))
            {
                let _ = ip(&["netns", "del", name]);
            }
        }
    }
    if let Ok(out) = ip(&["-o", "link", "show"]) {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Some(name) = link_name(line) else {
                continue;
            };
            if dead(name) && stale_link_is_ours(name, line) {
                let _ = ip(&["link", "del", name]);
            }
        }
    }
}

/// The names of existing namespaces and links made by process `pid`.
pub fn leftovers_of(pid: u32) -> Vec<String> {
    let prefix = prefix_of(pid);
    let mut found = Vec::new();
    if let Ok(out) = ip(&["-o", "link", "show"]) {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(name) = link_name(line)
                && name.starts_with(&prefix)
            {
                found.push(name.to_owned());
            }
        }
    }
    if let Ok(out) = ip(&["netns", "list"]) {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split_whitespace().next().unwrap_or("");
            if name.starts_with(&prefix) {
                found.push(name.to_owned());
            }
        }
    }
    found
}

/// ethtool's legacy "set" commands (linux/ethtool.h): transmit checksum, scatter-gather,
/// TSO, GSO, GRO.
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_SSG: u32 = 0x19;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// Turns checksum and segmentation offloads off on `iface`, in namespace `ns` (or the
/// current one), as `ethtool -K IFACE tx off sg off tso off gso off gro off` would,
/// without needing ethtool (the ioctl runs on a thread that joins the namespace), and
/// IPv6 off on it.
pub fn offloads_off(ns: Option<&str>, iface: &str) -> io::Result<()> {
    let ns = ns.map(str::to_owned);
    let iface = iface.to_owned();
    std::thread::spawn(move || -> io::Result<()> {
        if let Some(ns) = &ns {
            enter(ns)?;
        }
        // No IPv6 chatter (router solicitations, DAD) on lab links: the sysctl of this
        // thread's namespace; not fatal where IPv6 is absent.
        let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{iface}/disable_ipv6"), "1");
        // SAFETY: plain socket(2); owned (and closed) by `sock`.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is fresh and owned by nobody else: every return below closes it.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        let name =
            CString::new(iface.clone()).map_err(|_| io::Error::other("bad interface name"))?;
        let mut result = Ok(());
        for cmd in [
            ETHTOOL_SGRO,
            ETHTOOL_SGSO,
            ETHTOOL_STSO,
            ETHTOOL_SSG,
            ETHTOOL_STXCSUM,
        ] {
            let mut value = EthtoolValue { cmd, data: 0 };
            // SAFETY: an all-zero ifreq is valid; the name fits (checked by the kernel's
            // 16-byte limit below) and ifr_data points at `value` for the call.
            let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
            let bytes = name.as_bytes_with_nul();
            if bytes.len() > req.ifr_name.len() {
                result = Err(io::Error::other("interface name too long"));
                break;
            }
            for (d, s) in req.ifr_name.iter_mut().zip(bytes) {
                *d = *s as libc::c_char;
            }
            req.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
            // SAFETY: SIOCETHTOOL with a valid ifreq and ethtool_value.
            if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut req) } != 0 {
                let e = io::Error::last_os_error();
                // A feature the driver cannot change is already what it is: fine.
                if !matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP)) {
                    result = Err(io::Error::other(format!(
                        "{iface}: turning offloads off: {e}"
                    )));
                }
            }
        }
        result
    })
    .join()
    .map_err(|_| io::Error::other("offload thread panicked"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_fds() -> usize {
        std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
    }

    #[test]
    fn the_offload_error_paths_close_their_socket() {
        // A name with a NUL fails after the socket is open; one too long fails in the loop.
        let before = open_fds();
        for _ in 0..200 {
            assert!(offloads_off(None, "bad\0name").is_err());
            assert!(offloads_off(None, "a-name-longer-than-sixteen-bytes").is_err());
        }
        // Other tests open files meanwhile; a leak would add 400.
        let grown = open_fds().saturating_sub(before);
        assert!(grown < 100, "{grown} more file descriptors open");
    }

    #[test]
    fn prefixes_round_trip_the_pid() {
        for pid in [1, 35, 36, 4_194_304, u32::MAX] {
            let p = prefix_of(pid);
            // Linux's largest pid_max (2^22) gives 8 bytes, leaving 7 of 15 for a role.
            assert!(p.len() <= if pid <= 4_194_304 { 8 } else { 10 }, "{p}");
            assert_eq!(pid_in(&format!("{p}s0")), Some(pid));
        }
        assert_eq!(pid_in("rlx"), None);
        assert_eq!(pid_in("eth0"), None);
        // Canonical for pid 371: such a name is only removed when its link also carries
        // rocelab's alias (see `remove_stale`).
        assert_eq!(pid_in("rlab-test"), Some(371));
        assert_eq!(pid_in("rl00a-x"), None, "not the canonical spelling of 10");
    }

    /// A run killed between `ip link add` and the alias left a veth that no later run
    /// removed. Names exactly the lab's are now recognised; nothing else without the alias.
    #[test]
    fn a_dead_runs_lab_names_are_its_own_and_look_alikes_are_not() {
        let p = prefix_of(4_000_000);
        let line = |name: &str, alias: bool| {
            format!(
                "9: {name}@if8: <BROADCAST,MULTICAST> mtu 9000 qdisc noop state DOWN\\    link/ether 02:00:c6:12:00:00 brd ff:ff:ff:ff:ff:ff{}",
                if alias { " alias rocelab-lab" } else { "" }
            )
        };
        for role in ["sr0", "hr0", "sr63", "hb1", "sb0"] {
            let name = format!("{p}{role}");
            assert_eq!(link_name(&line(&name, false)), Some(name.as_str()));
            assert!(stale_link_is_ours(&name, &line(&name, false)), "{role}");
        }
        for role in [
            "f", "g", "s", "sr", "sr00", "sr012", "sx0", "xr0", "r0", "sr0x", "kls0",
        ] {
            let name = format!("{p}{role}");
            assert!(!stale_link_is_ours(&name, &line(&name, false)), "{role}");
            // The alias (set by rocelab on every veth it makes) makes any name ours.
            assert!(stale_link_is_ours(&name, &line(&name, true)), "{role}");
        }
        assert!(!stale_link_is_ours("eth0", &line("eth0", false)));
        let lo = "1: lo: <LOOPBACK> mtu 65536 qdisc noop state DOWN\\    link/loopback 00:00:00:00:00:00";
        let ns = format!("{p}r3");
        // Empty (killed before its veth was made), or holding the lab's own veth end.
        assert!(stale_namespace_is_ours(&ns, lo));
        let with_end = format!("{lo}\n{}", line(&format!("{p}hr3"), false));
        assert!(stale_namespace_is_ours(&ns, &with_end));
        // Holding something else, or not named as a lab host: not ours.
        let other = format!("{lo}\n{}", line("eth1", false));
        assert!(!stale_namespace_is_ours(&ns, &other));
        assert!(!stale_namespace_is_ours(&format!("{p}x"), lo));
        assert!(!stale_namespace_is_ours(&format!("{p}r03"), lo));
        assert!(stale_namespace_is_ours(
            &format!("{p}x"),
            &format!("{lo}\n{}", line("v", true))
        ));
    }

    thread_local! {
        static CALLS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// An `ip` that records its commands; an `add` is killed by SIGINT (after the kernel
    /// could have done it), a `netns add` of `…taken` fails with a message.
    fn fake_ip(args: &[&str]) -> io::Result<Output> {
        use std::os::unix::process::ExitStatusExt as _;
        CALLS.with(|c| c.borrow_mut().push(args.join(" ")));
        let status = if args.contains(&"add") && args.iter().any(|a| a.ends_with("taken")) {
            std::process::ExitStatus::from_raw(1 << 8)
        } else if args.contains(&"add") {
            std::process::ExitStatus::from_raw(libc::SIGINT)
        } else {
            std::process::ExitStatus::from_raw(0)
        };
        Ok(Output {
            status,
            stdout: Vec::new(),
            stderr: if status.code() == Some(1) {
                b"File exists".to_vec()
            } else {
                Vec::new()
            },
        })
    }

    /// Ctrl-C killed `ip link add` after the kernel had made the pair, and the name, then
    /// recorded only after the command succeeded, was never removed. It is recorded first.
    #[test]
    fn a_name_is_removed_even_when_the_command_making_it_was_killed() {
        CALLS.with(|c| c.borrow_mut().clear());
        let mut net = Netns::with_runner(fake_ip);
        let (ns, root_end, p) = (net.name("r0"), net.name("sr0"), net.name(""));
        assert!(net.namespace("r0").is_err());
        assert!(
            net.veth_pair("sr0", &ns, "hr0", None, 9000)
                .unwrap_err()
                .to_string()
                .contains("killed by signal 2")
        );
        // A command that said it failed made nothing: what has that name is not ours.
        assert!(net.namespace("taken").is_err());
        CALLS.with(|c| c.borrow_mut().clear());
        net.remove();
        let calls = CALLS.with(|c| c.borrow().clone());
        assert_eq!(
            calls,
            [format!("link del {root_end}"), format!("netns del {ns}")],
            "not {p}taken"
        );
    }
}
