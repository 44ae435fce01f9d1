//! The portable backend: pnet's AF_PACKET channel on a socket we open ourselves (so that it
//! ignores outgoing frames), read buffer sized to the MTU, never blocking (the caller
//! polls the socket); each frame's receive time comes from SIOCGSTAMPNS. pnet reads with `recvfrom`,
//! which does not see the 802.1Q tag the kernel moved into the packet's metadata: frames
//! arrive untagged (use the mmap backend where tags matter).

use super::{
    FrameRx, FrameTx, KernelStats, Pool, RxFrame, device_busy, packet_socket, port_gone, read_stats,
};
use pnet_datalink::{Channel, Config, DataLinkReceiver, DataLinkSender};
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
    // pnet takes the descriptor over (and closes it); a duplicate keeps the statistics
    // and the receive times. This first read turns the socket's timestamps on.
    let fd = socket.try_clone()?;
    let _ = last_stamp(&fd);
    let veth = super::is_veth(&fd, ifname);
    let config = Config {
        // Room for the largest frame plus a VLAN tag: pnet truncates silently otherwise.
        read_buffer_size: mtu + 64,
        write_buffer_size: mtu + 64,
        // Never block: the run-to-completion thread waits on all its ports at once.
        read_timeout: Some(Duration::ZERO),
        write_timeout: Some(Duration::ZERO),
        socket_fd: Some(socket.into_raw_fd()),
        ..Config::default()
    };
    match pnet_datalink::channel(&iface, config) {
        Ok(Channel::Ethernet(tx, rx)) => Ok((
            Box::new(PnetRx {
                rx,
                buffer: mtu + 64,
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

struct PnetRx {
    rx: Box<dyn DataLinkReceiver>,
    /// The read buffer's size, bytes.
    buffer: usize,
    /// The same socket, for its statistics and its receive times.
    fd: OwnedFd,
    stats: KernelStats,
    veth: bool,
}

/// SIOCGSTAMPNS: the receive time of the last frame read from a socket, as a timespec.
/// (0x8907 is the original request, whose timespec has the platform's `time_t`: 64 bits on
/// the 64-bit Linux targets rocelab builds for; the `_NEW` request exists for 32-bit ones.)
const SIOCGSTAMPNS: libc::c_ulong = 0x8907;

/// The receive time of the last frame read from `fd`, ns since the Unix epoch. The first
/// call turns the socket's timestamps on (and has none to give).
fn last_stamp(fd: &OwnedFd) -> Option<u64> {
    // SAFETY: an all-zero timespec is valid; the ioctl fills it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: SIOCGSTAMPNS writes one timespec to the pointer given.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), SIOCGSTAMPNS as _, &mut ts) };
    (r == 0 && ts.tv_sec > 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
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
            match self.rx.next() {
                // recvfrom cuts a frame at the read buffer's size without saying so; the
                // buffer is 64 bytes above the largest valid frame, so a full one was cut.
                Ok(frame) if frame.len() >= self.buffer => self.stats.truncated += 1,
                Ok(frame) => {
                    let mut data = pool.get();
                    data.extend_from_slice(frame);
                    out.push(RxFrame {
                        data,
                        stamp: last_stamp(&self.fd),
                    });
                    got += 1;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::TimedOut
                            | io::ErrorKind::WouldBlock
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(got)
    }

    fn instant_link(&self) -> bool {
        self.veth
    }

    fn kernel_stats(&mut self) -> KernelStats {
        let s = read_stats(&self.fd);
        self.stats.packets += s.packets;
        self.stats.drops += s.drops;
        self.stats
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
