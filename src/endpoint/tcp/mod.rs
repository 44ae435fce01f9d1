//! A sans-IO TCP for iWARP (issue 36): the sender (segmentation at the MSS, a SACK
//! scoreboard, RFC 6675 loss recovery, the RFC 6298 timer), the receiver's view of the
//! stream with its SACK blocks, and congestion control (Reno, DCTCP, CUBIC). No socket,
//! no thread, no clock: the driver passes the time in and sends what comes out.

pub mod cc;
pub mod receiver;
pub mod rto;
pub mod sender;

pub use cc::{AckInfo, CongestionControl, Cubic, Dctcp, Reno};
pub use receiver::{Arrival, Receiver};
pub use rto::{RtoConfig, RtoEstimator};
pub use sender::{Sender, SenderStats, Transmit};
