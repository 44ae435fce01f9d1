//! Moving frames between the cores and network interfaces, for a run-to-completion
//! thread that owns several ports: every receive and send call returns at once, and the
//! thread waits on all its ports together ([`wait`]). Frames come in buffers from a
//! [`Pool`] (no allocation per frame once the pool is warm), each with the kernel's
//! receive time. Two backends, chosen with `--io`:
//!
//! - [`Backend::Pnet`], the portable one: pnet's AF_PACKET channel sends, one frame per
//!   call; frames are received on the same socket in batches (`recvmmsg`), each straight
//!   into a pool buffer with the kernel's receive time (SO_TIMESTAMPNS);
//! - [`Backend::Mmap`], the fast Linux one: a PACKET_MMAP TPACKET_V2 receive ring (every
//!   frame is handed over as soon as it lands, with its time; a busy port is read without
//!   a system call) and `sendmmsg` batches with PACKET_QDISC_BYPASS.
//!
//! Both sockets set PACKET_IGNORE_OUTGOING, so a port never hears its own transmissions,
//! and large socket buffers; the kernel's drop counts (PACKET_STATISTICS) are reported.

mod mmap;
mod pnet;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Which socket layer moves the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// pnet's AF_PACKET channel to send, `recvmmsg` batches on its socket to receive.
    Pnet,
    /// AF_PACKET with a TPACKET_V2 receive ring and `sendmmsg`.
    Mmap,
}

/// What the kernel counted on a receive socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct KernelStats {
    /// Frames the socket received.
    pub packets: u64,
    /// Frames the kernel dropped because the socket's buffer or ring was full.
    pub drops: u64,
    /// Frames larger than the receive buffer (the port's MTU and headers): they arrived
    /// cut short and were dropped, never passed on.
    pub truncated: u64,
    /// Frames to send that the kernel refused for good (too large for the interface), or
    /// that a port busy for too long had to give up.
    pub tx_refused: u64,
}

/// Frame buffers of one thread. A buffer taken from an empty pool is allocated; one given
/// back to a full pool is freed.
#[derive(Debug)]
pub struct Pool {
    free: Vec<Vec<u8>>,
    count: usize,
    capacity: usize,
}

impl Pool {
    /// A pool of `count` buffers of `capacity` bytes each, allocated and mapped now (a
    /// page fault per buffer on the hot path would cost microseconds).
    pub fn new(count: usize, capacity: usize) -> Pool {
        let free = (0..count)
            .map(|_| {
                let mut buf = Vec::with_capacity(capacity);
                buf.resize(capacity, 1u8);
                buf.clear();
                buf
            })
            .collect();
        Pool {
            free,
            count,
            capacity,
        }
    }

    /// An empty buffer: a pooled one, or a new one of the pool's capacity when none is left.
    pub fn get(&mut self) -> Vec<u8> {
        self.free
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.capacity))
    }

    /// Gives a buffer back.
    pub fn put(&mut self, mut buf: Vec<u8>) {
        if self.free.len() < self.count {
            buf.clear();
            self.free.push(buf);
        }
    }

    /// Evens this pool out against `shared`, a store the pools of several threads use
    /// (buffers received by one thread may be sent, and given back, by another): above
    /// three quarters full it leaves the excess over half there; under an eighth it
    /// takes enough back to be half full, if the store has them. Returns whether it moved
    /// any.
    pub fn balance(&mut self, shared: &mut Vec<Vec<u8>>) -> bool {
        let half = self.count / 2;
        if self.free.len() > self.count * 3 / 4 {
            shared.extend(self.free.drain(half..));
            true
        } else if self.free.len() < self.count / 8 && !shared.is_empty() {
            let want = (half - self.free.len()).min(shared.len());
            self.free.extend(shared.drain(shared.len() - want..));
            true
        } else {
            false
        }
    }

    /// Whether [`balance`](Self::balance) would move buffers.
    pub fn unbalanced(&self) -> bool {
        self.free.len() > self.count * 3 / 4 || self.free.len() < self.count / 8
    }
}

/// A received frame.
#[derive(Debug)]
pub struct RxFrame {
    /// The frame, Ethernet header first, FCS excluded, in a buffer from the pool.
    pub data: Vec<u8>,
    /// When the kernel received it, ns since the Unix epoch (CLOCK_REALTIME), if it said.
    pub stamp: Option<u64>,
}

/// The receive side of a port.
pub trait FrameRx: Send {
    /// The descriptor that polls readable when frames wait.
    fn fd(&self) -> RawFd;

    /// Appends up to `max` frames that are waiting now to `out`, each in a buffer from
    /// `pool`, without blocking. Returns how many were appended.
    fn receive(&mut self, out: &mut Vec<RxFrame>, max: usize, pool: &mut Pool)
    -> io::Result<usize>;

    /// What the kernel counted since the socket opened.
    fn kernel_stats(&mut self) -> KernelStats;

    /// Whether a frame waits, if the backend can tell without a system call (a receive
    /// ring can); None otherwise. A spinning thread polls this instead of the socket.
    fn peek(&self) -> Option<bool> {
        None
    }

    /// Whether the interface is a veth, whose frames arrive the moment their sender hands
    /// them over: no serialisation, no cable (a NIC's arrive when their last bit has).
    fn instant_link(&self) -> bool;
}

/// The transmit side of a port.
pub trait FrameTx: Send {
    /// Sends `frames` in order without blocking. Returns how many were dealt with from the
    /// front: sent, or refused for good (too large for the interface, say: counted in
    /// [`FrameTx::refused`]). Fewer than all means the device is busy now: the caller
    /// offers the rest again later.
    fn transmit(&mut self, frames: &[Vec<u8>]) -> io::Result<usize>;

    /// Frames the kernel refused for good since the socket opened.
    fn refused(&self) -> u64;
}

/// Waits until one of `fds` is readable or `timeout` passes (nanosecond resolution);
/// returns whether one is. An interrupted wait returns false.
pub fn wait(fds: &mut [libc::pollfd], timeout: Duration) -> io::Result<bool> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    for f in fds.iter_mut() {
        f.revents = 0;
    }
    // SAFETY: `fds` is a valid slice of pollfds and its length is passed; no signal mask.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(r > 0)
}

/// A pollfd that waits for `fd` to be readable.
pub fn readable(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// The socket error pending on `fd` (reading it clears it), if any.
pub fn socket_error(fd: RawFd) -> Option<io::Error> {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: SO_ERROR into an int of the size given.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (r == 0 && err != 0).then(|| io::Error::from_raw_os_error(err))
}

/// Whether a send error means the port is gone (interface down or removed).
pub(crate) fn port_gone(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENXIO | libc::ENODEV | libc::ENETDOWN)
    )
}

/// Whether a send error means "the device is busy now, offer it again".
fn device_busy(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOBUFS | libc::EAGAIN | libc::EINTR)
    ) || e.kind() == io::ErrorKind::TimedOut
}

/// Opens interface `ifname` for frames of up to `mtu` bytes (Ethernet header included,
/// FCS excluded).
pub fn open(
    backend: Backend,
    ifname: &str,
    mtu: usize,
) -> io::Result<(Box<dyn FrameRx>, Box<dyn FrameTx>)> {
    match backend {
        Backend::Pnet => pnet::open(ifname, mtu),
        Backend::Mmap => mmap::open(ifname, mtu),
    }
}

/// An interface request naming `name`, the rest zero; None if the name is too long.
fn ifreq_for(name: &str) -> Option<libc::ifreq> {
    if name.len() >= libc::IFNAMSIZ {
        return None;
    }
    // SAFETY: an all-zero ifreq is valid; the name is copied in below, NUL-terminated
    // (it is shorter than the field, which stays zero after it).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    Some(req)
}

/// The MTU of interface `name` in the network namespace of socket `fd`, if it can be read.
fn interface_mtu(fd: &OwnedFd, name: &str) -> Option<usize> {
    let mut req = ifreq_for(name)?;
    // SAFETY: SIOCGIFMTU reads the name and writes the MTU into the ifreq given.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFMTU as _, &mut req) };
    // SAFETY: SIOCGIFMTU filled the union's MTU member.
    let mtu = unsafe { req.ifr_ifru.ifru_mtu };
    (r == 0 && mtu > 0).then_some(mtu as usize)
}

/// The largest frame that can arrive on interface `name`: `mtu`, or less when the
/// interface's own MTU (plus an Ethernet header and a VLAN tag) is smaller.
fn largest_frame(fd: &OwnedFd, name: &str, mtu: usize) -> usize {
    interface_mtu(fd, name).map_or(mtu, |m| mtu.min(m + 18))
}

/// The Linux `ethtool_drvinfo` (ETHTOOL_GDRVINFO's answer).
#[repr(C)]
struct DrvInfo {
    cmd: u32,
    driver: [u8; 32],
    version: [u8; 32],
    fw_version: [u8; 32],
    bus_info: [u8; 32],
    erom_version: [u8; 32],
    reserved2: [u8; 12],
    n_priv_flags: u32,
    n_stats: u32,
    testinfo_len: u32,
    eedump_len: u32,
    regdump_len: u32,
}

/// Whether interface `name` (in the network namespace of socket `fd`) is a veth.
fn is_veth(fd: &OwnedFd, name: &str) -> bool {
    const ETHTOOL_GDRVINFO: u32 = 3;
    let Some(mut req) = ifreq_for(name) else {
        return false;
    };
    // SAFETY: an all-zero ethtool_drvinfo is valid; the command set below completes it.
    let mut info: DrvInfo = unsafe { std::mem::zeroed() };
    info.cmd = ETHTOOL_GDRVINFO;
    req.ifr_ifru.ifru_data = (&mut info as *mut DrvInfo).cast();
    // SAFETY: SIOCETHTOOL reads the name and the command and fills `info`, which outlives
    // the call.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCETHTOOL as _, &mut req) };
    r == 0 && info.driver.starts_with(b"veth\0")
}

/// The index of interface `name`.
pub fn ifindex(name: &str) -> io::Result<i32> {
    let c = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name with a NUL"))?;
    // SAFETY: `c` is a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if index == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface named '{name}' in this network namespace"),
        ));
    }
    Ok(index as i32)
}

/// An AF_PACKET raw socket, not yet bound, that ignores frames this host sends. Opened
/// with protocol 0, it hears nothing until [`bind`] names the interface (and the protocol):
/// no frame of another port slips in first.
fn packet_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(if e.raw_os_error() == Some(libc::EPERM) {
            io::Error::new(
                e.kind(),
                "raw sockets need root (or CAP_NET_RAW): run as root",
            )
        } else {
            e
        });
    }
    // SAFETY: `fd` is a fresh descriptor owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    set_int(&fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, 1)?;
    Ok(fd)
}

fn set_int(fd: &OwnedFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: `value` outlives the call and its size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Sets a socket buffer to `bytes`, beyond the sysctl limit when root may.
fn set_buffer(fd: &OwnedFd, force: i32, plain: i32, bytes: i32) {
    if set_int(fd, libc::SOL_SOCKET, force, bytes).is_err() {
        let _ = set_int(fd, libc::SOL_SOCKET, plain, bytes);
    }
}

/// Puts interface `index` in promiscuous mode for as long as `fd` is open (frames for
/// other MACs reach a switch port on a real NIC too).
fn promiscuous(fd: &OwnedFd, index: i32) -> io::Result<()> {
    // SAFETY: an all-zero packet_mreq is valid; the fields set below complete it.
    let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
    mreq.mr_ifindex = index;
    mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
    // SAFETY: `mreq` outlives the call and its size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            (&mreq as *const libc::packet_mreq).cast(),
            std::mem::size_of::<libc::packet_mreq>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Binds `fd` to interface `index`, receiving every protocol when `receive` (else none).
fn bind(fd: &OwnedFd, index: i32, receive: bool) -> io::Result<()> {
    // SAFETY: an all-zero sockaddr_ll is valid; the fields set below complete it.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = if receive {
        (libc::ETH_P_ALL as u16).to_be()
    } else {
        0
    };
    addr.sll_ifindex = index;
    // SAFETY: `addr` is a sockaddr_ll of the size passed.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A receive socket's totals: its PACKET_STATISTICS, counts since the last read (the
/// kernel resets them), added to `stats`, what the port counted itself.
fn add_kernel_stats(fd: &OwnedFd, stats: &mut KernelStats) -> KernelStats {
    let s = read_stats(fd);
    stats.packets += s.packets;
    stats.drops += s.drops;
    *stats
}

/// PACKET_STATISTICS: counts since the last read (the kernel resets them).
fn read_stats(fd: &OwnedFd) -> KernelStats {
    // SAFETY: an all-zero tpacket_stats_v3 is valid; getsockopt fills at most `len` bytes.
    let mut st: libc::tpacket_stats_v3 = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tpacket_stats_v3>() as libc::socklen_t;
    // SAFETY: as above.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut st as *mut libc::tpacket_stats_v3).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return KernelStats::default();
    }
    KernelStats {
        packets: u64::from(st.tp_packets),
        drops: u64::from(st.tp_drops),
        truncated: 0,
        tx_refused: 0,
    }
}

/// Puts back the 802.1Q tag the kernel took off into the packet's metadata.
fn with_vlan(frame: &[u8], tci: u16, tpid: u16, out: &mut Vec<u8>) {
    out.clear();
    if frame.len() < 12 {
        out.extend_from_slice(frame);
        return;
    }
    out.extend_from_slice(&frame[..12]);
    out.extend_from_slice(&tpid.to_be_bytes());
    out.extend_from_slice(&tci.to_be_bytes());
    out.extend_from_slice(&frame[12..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_of_two_threads_even_out_through_the_shared_store() {
        let mut shared = Vec::new();
        let mut sender = Pool::new(64, 16);
        let mut receiver = Pool::new(64, 16);
        // Half the sender's buffers are out (frames it received and sent).
        let own: Vec<Vec<u8>> = (0..32).map(|_| sender.get()).collect();
        assert!(!sender.unbalanced());
        // The receiver hands 30 frames over to the sender, which sends them and gives
        // their buffers back to its own pool.
        let handed: Vec<Vec<u8>> = (0..30).map(|_| receiver.get()).collect();
        assert!(!receiver.unbalanced(), "34 of 64 left");
        for buf in handed {
            sender.put(buf);
        }
        assert!(sender.unbalanced(), "62 of 64");
        assert!(sender.balance(&mut shared));
        assert_eq!(
            (sender.free.len(), shared.len()),
            (32, 30),
            "the excess over half"
        );
        // The receiver, running low, takes them back rather than allocating.
        let more: Vec<Vec<u8>> = (0..30).map(|_| receiver.get()).collect();
        assert!(receiver.unbalanced(), "4 of 64 left");
        assert!(receiver.balance(&mut shared));
        assert_eq!((receiver.free.len(), shared.len()), (32, 2));
        assert!(!sender.balance(&mut shared), "nothing to move");
        drop((own, more));
    }
}
