//! Network namespaces and veth pairs for live runs and tests, made with iproute2 and always
//! removed: names carry a per-run prefix (`rl` + the process id in base 36), [`Netns`]
//! removes what it made when dropped (also on panic), and [`remove_stale`] removes what a
//! killed run left behind.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, Output, Stdio};

/// The prefix every name starts with.
pub const FAMILY: &str = "rl";

/// The alias of every veth rocelab makes: only links (and namespaces holding links) with
/// it are ever removed as leftovers.
pub const ALIAS: &str = "rocelab-lab";

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

fn ip(args: &[&str]) -> io::Result<Output> {
    Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot run `ip` ({e}): install iproute2 (apt-get install iproute2)"),
            )
        })
}

fn ip_ok(args: &[&str]) -> io::Result<()> {
    let out = ip(args)?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    // A child killed by a signal (Ctrl-C reaches the whole process group) says nothing.
    let why = if !said.is_empty() {
        said
    } else if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&out.status) {
        format!("killed by signal {signal} (the lab was being stopped)")
    } else {
        format!("failed ({}) without a message", out.status)
    };
    Err(io::Error::other(format!("ip {}: {why}", args.join(" "))))
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
    namespaces: Vec<String>,
    /// veth ends in the root namespace (deleting one deletes its pair).
    links: Vec<String>,
}

impl Netns {
    /// A set for this process; first removes what killed runs left behind.
    pub fn new() -> io::Result<Netns> {
        remove_stale();
        Ok(Netns {
            prefix: prefix_of(std::process::id()),
            namespaces: Vec::new(),
            links: Vec::new(),
        })
    }

    /// The full name of `role` (at most 15 bytes for an interface).
    pub fn name(&self, role: &str) -> String {
        format!("{}{role}", self.prefix)
    }

    /// Makes namespace `role` with its loopback up; returns its full name.
    pub fn namespace(&mut self, role: &str) -> io::Result<String> {
        let name = self.name(role);
        ip_ok(&["netns", "add", &name])?;
        self.namespaces.push(name.clone());
        ip_ok(&["-n", &name, "link", "set", "lo", "up"])?;
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
        ip_ok(&add)?;
        self.links.push(root_end.clone());
        // The alias marks the pair as rocelab's for `remove_stale`.
        ip_ok(&["link", "set", &root_end, "alias", ALIAS])?;
        ip_ok(&["link", "set", &ns_end, "alias", ALIAS])?;
        ip_ok(&["link", "set", &ns_end, "netns", ns])?;
        ip_ok(&["-n", ns, "link", "set", &ns_end, "up"])?;
        ip_ok(&["link", "set", &root_end, "up"])
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
            ip_ok(&["-n", ns, "addr", "add", cidr, "dev", &ns_end])?;
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
        for link in self.links.drain(..) {
            let _ = ip(&["link", "del", &link]);
        }
        for ns in self.namespaces.drain(..) {
            let _ = ip(&["netns", "del", &ns]);
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Removes namespaces and root-namespace links that rocelab made (named with a run prefix
/// and holding a veth with rocelab's alias) for processes that are gone.
pub fn remove_stale() {
    let dead = |name: &str| {
        pid_in(name).is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
    };
    let ours = |links: &str| links.contains(ALIAS);
    // Namespaces first, while their veth (and its alias) is still inside.
    if let Ok(out) = ip(&["netns", "list"]) {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split_whitespace().next().unwrap_or("");
            if dead(name)
                && let Ok(links) = ip(&["-n", name, "-o", "link", "show"])
                && ours(&String::from_utf8_lossy(&links.stdout))
            {
                let _ = ip(&["netns", "del", name]);
            }
        }
    }
    if let Ok(out) = ip(&["-o", "link", "show"]) {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            // "7: rlabc-s0@if6: <...> ... alias rocelab-lab": the name ends at '@' or ':'.
            let Some(name) = line
                .split(": ")
                .nth(1)
                .map(|n| n.split(['@', ':']).next().unwrap_or(n))
            else {
                continue;
            };
            if dead(name) && ours(line) {
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
            if let Some(name) = line
                .split(": ")
                .nth(1)
                .map(|n| n.split(['@', ':']).next().unwrap_or(n))
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
}
