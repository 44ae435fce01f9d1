//! What can stop a live run: a port that fails (its socket errs), a setup step that
//! fails, or a peers file that cannot be read.

use std::io;

/// A port's socket failed while the run went on; the run stops.
#[derive(Debug, thiserror::Error)]
#[error("{port} ({action}): {cause}")]
pub struct PortError {
    /// The port's interface.
    pub port: String,
    /// What it was doing: "receive" or "send".
    pub action: &'static str,
    /// The kernel's error.
    pub cause: io::Error,
}

impl Clone for PortError {
    /// The same error: the OS error code where there is one, else its kind and message.
    fn clone(&self) -> PortError {
        let cause = match self.cause.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(self.cause.kind(), self.cause.to_string()),
        };
        PortError {
            port: self.port.clone(),
            action: self.action,
            cause,
        }
    }
}

impl serde::Serialize for PortError {
    /// As its message: a report reads it, nothing parses it.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A live run that could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// Opening a socket, binding the metrics endpoint, or moving frames.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A frame the traffic sender cannot build.
    #[error("building the frames: {0}")]
    Build(#[from] crate::wire::BuildError),
    /// A sending rate outside what the sender can pace.
    #[error("--pps {0}: give 0.001 to 1e9 frames per second")]
    Rate(f64),
    /// Frames larger than the interface takes.
    #[error(
        "frame size {size} does not fit {iface}'s MTU {mtu} (size - 14 must be at most the MTU)"
    )]
    TooLarge {
        /// The frame size asked for.
        size: usize,
        /// The interface.
        iface: String,
        /// Its MTU.
        mtu: usize,
    },
    /// The kernel refused every frame.
    #[error("{iface} refuses every {size}-byte frame; nothing was sent")]
    Refused {
        /// The interface.
        iface: String,
        /// The frame size.
        size: usize,
    },
    /// A frame size the traffic sender cannot build.
    #[error(
        "frame size {0}: give 62 or more, with (size - 58) a multiple of 4 (e.g. 62, 66, 1082)"
    )]
    FrameSize(usize),
    /// An interface another rocelab switch has as a port.
    #[error(transparent)]
    Held(#[from] super::port_lock::Held),
    /// A thread of the run panicked (a bug: its message went to standard error).
    #[error("a {0} thread panicked")]
    ThreadPanicked(&'static str),
}

/// A peers file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeersError {
    /// Not TOML of the peers file's shape.
    #[error("{0}")]
    Syntax(String),
    /// A MAC address that does not parse.
    #[error("peer[{index}].mac: '{value}' is not a MAC address like 02:00:c6:12:00:01")]
    Mac {
        /// Index of the `[[peer]]` entry, from 0 in file order.
        index: usize,
        /// What it says.
        value: String,
    },
    /// An address no station can have: a group or zero MAC; an unspecified, broadcast,
    /// multicast or loopback IPv4 address.
    #[error("peer[{index}].{field}: {value} is {why}; give a host's unicast address")]
    NotUnicast {
        /// Index of the `[[peer]]` entry, from 0 in file order.
        index: usize,
        /// `mac` or `ip`.
        field: &'static str,
        /// What it says.
        value: String,
        /// What kind of address it is.
        why: &'static str,
    },
    /// Two ranks with the same address: frames for one would reach the other.
    #[error("ranks {first} and {second} both have {field} {value}; each rank needs its own")]
    Shared {
        /// `mac` or `ip`.
        field: &'static str,
        /// The address.
        value: String,
        /// The lower rank.
        first: usize,
        /// The higher rank.
        second: usize,
    },
    /// A QP number outside what the endpoint allocates from.
    #[error("peer[{index}].qpn: {value} is not allowed; give 2 to 16711679")]
    Qpn {
        /// Index of the `[[peer]]` entry, from 0 in file order.
        index: usize,
        /// What it says.
        value: u32,
    },
    /// Ranks not 0..N once each.
    #[error("ranks must be 0 to {last} once each; rank {missing} is missing or repeated")]
    Ranks {
        /// The largest rank there should be.
        last: usize,
        /// The first rank out of place.
        missing: usize,
    },
    /// Fewer than two ranks.
    #[error("a peers file needs at least 2 ranks")]
    TooFew,
    /// More ranks than a ring all-reduce can name in its immediate data.
    #[error("{0} ranks: a peers file lists at most 4096")]
    TooMany(usize),
}
