//! `rocelab traffic`: a fast RoCE sender and a frame counter, for benchmarks and tests.

use super::{interface_mac, parse_mac, seconds};
use anyhow::Result;
use rocelab::io::Backend;
use rocelab::runtime::{self, traffic};
use std::net::Ipv4Addr;

/// Traffic tools for benchmarks and tests: a fast RoCE sender (ignores PFC) and a frame
/// counter.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand, Debug)]
enum Action {
    /// Send RoCEv2 RC WRITE frames as fast as the socket allows (or at --pps).
    Send {
        /// Interface to send on.
        #[arg(long)]
        iface: String,
        /// Destination MAC address.
        #[arg(long)]
        dst_mac: String,
        /// Source MAC address (default: the interface's).
        #[arg(long)]
        src_mac: Option<String>,
        /// Destination IPv4 address.
        #[arg(long, default_value = "198.18.0.2")]
        dst_ip: Ipv4Addr,
        /// Source IPv4 address.
        #[arg(long, default_value = "198.18.0.1")]
        src_ip: Ipv4Addr,
        /// Frame length in bytes without FCS (62 or more; size - 58 a multiple of 4).
        #[arg(long, default_value_t = 62)]
        size: usize,
        /// DSCP of the frames.
        #[arg(long, default_value_t = 26)]
        dscp: u8,
        /// Seconds to send.
        #[arg(long, default_value_t = 5.0)]
        duration: f64,
        /// Frames per second (default: as fast as possible).
        #[arg(long)]
        pps: Option<f64>,
        /// Stop after this many frames.
        #[arg(long)]
        count: Option<u64>,
    },
    /// Count frames arriving on an interface; prints one JSON line.
    Count {
        /// Interface to listen on.
        #[arg(long)]
        iface: String,
        /// Seconds to count.
        #[arg(long, default_value_t = 5.0)]
        duration: f64,
        /// Socket backend: mmap (a TPACKET_V2 ring; sees 802.1Q tags) or pnet.
        #[arg(long = "io", value_enum, default_value_t = Backend::Mmap)]
        backend: Backend,
    },
}

/// Runs `rocelab traffic`.
pub(crate) fn run(args: Args) -> Result<()> {
    let stop = runtime::stop_on_signals()?;
    match args.action {
        Action::Send {
            iface,
            dst_mac,
            src_mac,
            dst_ip,
            src_ip,
            size,
            dscp,
            duration,
            pps,
            count,
        } => {
            // The values first, then the interface (as `switch` refuses it for a port).
            if dscp > 63 {
                anyhow::bail!("--dscp {dscp}: DSCPs are 0-63");
            }
            if let Some(p) = pps
                && !traffic::PPS_RANGE.contains(&p)
            {
                anyhow::bail!("--pps {p}: give 0.001 to 1e9 frames per second");
            }
            super::not_loopback(&format!("--iface {iface}"), &iface)?;
            let spec = traffic::SendSpec {
                dst_mac: parse_mac("--dst-mac", &dst_mac)?,
                src_mac: match src_mac {
                    Some(m) => parse_mac("--src-mac", &m)?,
                    None => interface_mac(&iface)?,
                },
                iface,
                dst_ip,
                src_ip,
                size,
                dscp,
                duration: seconds("--duration", duration)?,
                pps,
                count,
            };
            let (sent, secs) = traffic::send(&spec, &stop)?;
            sayln!(
                "{}",
                rocelab::report::document(
                    "traffic-send",
                    serde_json::json!({"sent": sent, "seconds": secs, "pps": sent as f64 / secs.max(1e-9)})
                )
            );
            Ok(())
        }
        Action::Count {
            iface,
            duration,
            backend,
        } => {
            let c = traffic::count(&iface, backend, seconds("--duration", duration)?, &stop)?;
            sayln!(
                "{}",
                rocelab::report::document("traffic-count", serde_json::to_value(c)?)
            );
            Ok(())
        }
    }
}
