//! The portable backend: pnet's AF_PACKET channel on a socket we open ourselves (so that it
//! ignores outgoing frames), read buffer sized to the MTU. pnet reads with `recvfrom`,
//! which does not see the 802.1Q tag the kernel moved into the packet's metadata: frames
//! arrive untagged (use the mmap backend where tags matter).

use super::{FrameRx, FrameTx, KernelStats, Pool, packet_socket, read_stats};
use pnet_datalink::{Channel, Config, DataLinkReceiver, DataLinkSender};
use std::io;
use std::os::fd::{IntoRawFd, OwnedFd};
use std::time::Duration;

/// How long one `next()` may block: the receive thread checks for shutdown this often.
const READ_TIMEOUT: Duration = Duration::from_millis(20);

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
    // pnet takes the descriptor over (and closes it); a duplicate keeps the statistics.
    let stats_fd = socket.try_clone()?;
    let config = Config {
        // Room for the largest frame plus a VLAN tag: pnet truncates silently otherwise.
        read_buffer_size: mtu + 64,
        write_buffer_size: mtu + 64,
        read_timeout: Some(READ_TIMEOUT),
        // A send that cannot go within this is lost (a jammed port must not hang us).
        write_timeout: Some(Duration::from_millis(100)),
        socket_fd: Some(socket.into_raw_fd()),
        ..Config::default()
    };
    match pnet_datalink::channel(&iface, config) {
        Ok(Channel::Ethernet(tx, rx)) => Ok((
            Box::new(PnetRx {
                rx,
                buffer: mtu + 64,
                stats_fd,
                stats: KernelStats::default(),
            }),
            Box::new(PnetTx { tx }),
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
    stats_fd: OwnedFd,
    stats: KernelStats,
}

impl FrameRx for PnetRx {
    fn receive(
        &mut self,
        out: &mut Vec<Vec<u8>>,
        max: usize,
        _timeout: Duration,
        pool: &Pool,
    ) -> io::Result<usize> {
        if max == 0 {
            return Ok(0);
        }
        match self.rx.next() {
            // recvfrom cuts a frame at the read buffer's size without saying so; the
            // buffer is 64 bytes above the largest valid frame, so a full one was cut.
            Ok(frame) if frame.len() >= self.buffer => {
                self.stats.truncated += 1;
                Ok(0)
            }
            Ok(frame) => {
                let mut buf = pool.get();
                buf.extend_from_slice(frame);
                out.push(buf);
                Ok(1)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::TimedOut
                        | io::ErrorKind::WouldBlock
                        | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(0)
            }
            Err(e) => Err(e),
        }
    }

    fn kernel_stats(&mut self) -> KernelStats {
        let s = read_stats(&self.stats_fd);
        self.stats.packets += s.packets;
        self.stats.drops += s.drops;
        self.stats
    }
}

struct PnetTx {
    tx: Box<dyn DataLinkSender>,
}

impl FrameTx for PnetTx {
    fn transmit(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        let mut sent = 0;
        for f in frames {
            match self.tx.send_to(f, None) {
                Some(Ok(())) => sent += 1,
                Some(Err(e))
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ENXIO | libc::ENODEV | libc::ENETDOWN)
                    ) =>
                {
                    return Err(e);
                }
                // A frame the kernel refuses (too large, queue full) is lost, as on a wire.
                _ => {}
            }
        }
        Ok(sent)
    }
}
