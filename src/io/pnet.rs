//! The portable backend: pnet's AF_PACKET channel sends, on a socket we open ourselves (so
//! that it ignores outgoing frames), never blocking (the caller polls the socket). Frames
//! are received on the same socket in batches, with one `recvmmsg` for up to 64, each
//! straight into a pool buffer and with the kernel's receive time (SO_TIMESTAMPNS) in
//! the same call: pnet's receiver reads with `recvfrom` into its own buffer, which would
//! need a system call, a copy and an ioctl (SIOCGSTAMPNS) per frame. Like `recvfrom`,
//! `recvmmsg` does not see the 802.1Q tag the kernel moved into the packet's metadata:
//! frames arrive untagged (use the mmap backend where tags matter).

use super::{
    FrameRx, FrameTx, KernelStats, Pool, RxFrame, add_kernel_stats, device_busy, packet_socket,
    port_gone,
};
use pnet_datalink::{Channel, Config, DataLinkSender};
use std::io;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};
use std::time::Duration;

pub(super) fn open(ifname: &str, mtu: usize) -> io::Result<(Box<dyn FrameRx>, Box<dyn FrameTx>)> {
    let iface = pnet_datalink::interfaces()
        .into_iter()
        .find(|i| i.name == ifname)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface named '{ifname}' in this network namespace"),
            )
        })?;
    let socket = packet_socket()?;
    super::set_buffer(&socket, libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, 8 << 20);
    super::set_buffer(&socket, libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, 8 << 20);
    // Every frame received carries its receive time.
    super::set_int(&socket, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
    // pnet takes the descriptor over (and closes it when its sender goes); a duplicate
    // receives, and reads the statistics.
    let fd = socket.try_clone()?;
    let veth = super::is_veth(&fd, ifname);
    let config = Config {
        // pnet's buffers, room for the largest frame plus a VLAN tag (it truncates
        // silently otherwise); its receiver, and so its read buffer, goes unused.
        read_buffer_size: mtu + 64,
        write_buffer_size: mtu + 64,
        // Never block: the run-to-completion thread waits on all its ports at once.
        read_timeout: Some(Duration::ZERO),
        write_timeout: Some(Duration::ZERO),
        socket_fd: Some(socket.into_raw_fd()),
        ..Config::default()
    };
    match pnet_datalink::channel(&iface, config) {
        // pnet's receiver goes unused (see the module documentation).
        Ok(Channel::Ethernet(tx, _)) => Ok((
            Box::new(PnetRx {
                buffer: mtu + 64,
                bufs: Vec::with_capacity(RX_BATCH),
                batch: Batch::new(),
                fd,
                stats: KernelStats::default(),
                veth,
            }),
            Box::new(PnetTx { tx, refused: 0 }),
        )),
        Ok(_) => Err(io::Error::other(format!(
            "{ifname}: not an Ethernet channel"
        ))),
        Err(e) => Err(io::Error::new(e.kind(), format!("{ifname}: {e}"))),
    }
}

/// Most frames one `recvmmsg` takes.
const RX_BATCH: usize = 64;

struct PnetRx {
    /// The largest frame taken, bytes: the MTU and headers, with room to spare.
    buffer: usize,
    /// Empty buffers from the pool, kept for the next batch.
    bufs: Vec<Vec<u8>>,
    /// The message headers of a batch, allocated once.
    batch: Box<Batch>,
    /// The socket, a duplicate of the sender's descriptor.
    fd: OwnedFd,
    stats: KernelStats,
    veth: bool,
}

/// What one `recvmmsg` fills: a header, an iovec and a control buffer per frame.
struct Batch {
    msgs: [libc::mmsghdr; RX_BATCH],
    iovs: [libc::iovec; RX_BATCH],
    controls: [Control; RX_BATCH],
}

// SAFETY: the pointers in a batch are set afresh before every call that uses them, by
// the thread that owns the receiver; between calls they are never followed.
unsafe impl Send for Batch {}

impl Batch {
    fn new() -> Box<Batch> {
        // SAFETY: all-zero headers and iovecs are valid (null pointers, zero lengths).
        Box::new(unsafe { std::mem::zeroed() })
    }
}

/// Room for one control message holding a timespec (CMSG_SPACE(16) is 32 on 64-bit
/// Linux), aligned as a `cmsghdr`.
type Control = [u64; 8];

/// The receive time in the control messages of `msg`, ns since the Unix epoch.
fn stamp_of(msg: &libc::msghdr) -> Option<u64> {
    // SAFETY: `msg` was filled by recvmsg, so its control buffer holds well-formed
    // messages up to `msg_controllen`; the CMSG macros only walk them.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !cmsg.is_null() {
        // SAFETY: a non-null header CMSG_FIRSTHDR / CMSG_NXTHDR returned lies in the buffer.
        let header = unsafe { &*cmsg };
        if header.cmsg_level == libc::SOL_SOCKET && header.cmsg_type == libc::SCM_TIMESTAMPNS {
            // SAFETY: SCM_TIMESTAMPNS data is one timespec; it may be unaligned.
            let ts: libc::timespec =
                unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
            return (ts.tv_sec > 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
        }
        // SAFETY: as CMSG_FIRSTHDR.
        cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
    }
    None
}

impl FrameRx for PnetRx {
    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn receive(
        &mut self,
        out: &mut Vec<RxFrame>,
        max: usize,
        pool: &mut Pool,
    ) -> io::Result<usize> {
        let mut got = 0;
        while got < max {
            let n = (max - got).min(RX_BATCH);
            while self.bufs.len() < n {
                let mut data = pool.get();
                data.clear();
                data.reserve(self.buffer);
                self.bufs.push(data);
            }
            let Batch {
                msgs,
                iovs,
                controls,
            } = &mut *self.batch;
            for (k, data) in self.bufs[..n].iter_mut().enumerate() {
                iovs[k] = libc::iovec {
                    iov_base: data.as_mut_ptr().cast(),
                    iov_len: self.buffer,
                };
                let msg = &mut msgs[k].msg_hdr;
                msg.msg_iov = &mut iovs[k];
                msg.msg_iovlen = 1;
                msg.msg_control = controls[k].as_mut_ptr().cast();
                msg.msg_controllen = std::mem::size_of::<Control>() as _;
            }
            // SAFETY: each of the first `n` headers points at its iovec (`self.buffer`
            // bytes of a buffer's capacity, reserved above) and its control buffer, all
            // of which outlive the call. MSG_TRUNC: each frame's whole length is returned
            // even when it was cut, so a cut frame is one at least as long as the buffer.
            let r = unsafe {
                libc::recvmmsg(
                    self.fd.as_raw_fd(),
                    msgs.as_mut_ptr(),
                    n as libc::c_uint,
                    libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                    std::ptr::null_mut(),
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) {
                    break;
                }
                return Err(e);
            }
            let r = r as usize;
            for (k, mut data) in self.bufs.drain(..r).enumerate() {
                let len = msgs[k].msg_len as usize;
                // The buffer is 64 bytes above the largest valid frame: one that filled
                // it was cut, or too large.
                if len >= self.buffer {
                    self.stats.truncated += 1;
                    pool.put(data);
                    continue;
                }
                // SAFETY: the kernel wrote `len` bytes (fewer than `self.buffer`, which
                // the vector's capacity holds) at its start.
                unsafe { data.set_len(len) };
                out.push(RxFrame {
                    data,
                    stamp: stamp_of(&msgs[k].msg_hdr),
                });
                got += 1;
            }
            if r < n {
                break;
            }
        }
        Ok(got)
    }

    fn instant_link(&self) -> bool {
        self.veth
    }

    fn kernel_stats(&mut self) -> KernelStats {
        add_kernel_stats(&self.fd, &mut self.stats)
    }
}

struct PnetTx {
    tx: Box<dyn DataLinkSender>,
    refused: u64,
}

impl FrameTx for PnetTx {
    fn transmit(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        let mut done = 0;
        for f in frames {
            match self.tx.send_to(f, None) {
                Some(Ok(())) => {}
                Some(Err(e)) if port_gone(&e) => return Err(e),
                // The device is busy: the rest waits for later.
                Some(Err(e)) if device_busy(&e) => break,
                // A frame the kernel refuses for good (too large, say).
                _ => self.refused += 1,
            }
            done += 1;
        }
        Ok(done)
    }

    fn refused(&self) -> u64 {
        self.refused
    }
}
