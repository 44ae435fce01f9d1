//! The NIC's side of the congestion controls other than DCQCN ([`super::cc`]): the RTT of
//! each ACK from the send times, the CE echo, and HPCC's telemetry into and out of packets.

use super::cc::{AckSample, Controller, Path};
use super::{Endpoint, Qp};
use crate::config::cc::base_rtt;
use crate::config::endpoint::{Cc, EndpointConfig};
use crate::time::Nanos;
use crate::wire::{self, int};

/// Sets `flag` in the BTH's FECN/BECN byte of the RoCE frame `frame` (the byte the ICRC
/// masks, so the ICRC stays valid).
pub(super) fn flag_bth(frame: &mut [u8], flag: u8) {
    if let Some(meta) = wire::parse_meta(frame)
        && meta.is_roce()
    {
        frame[meta.bth_offset() + wire::bth::FECN_BECN_OFFSET] |= flag;
    }
}

impl Endpoint {
    /// A new QP's controller, `None` for DCQCN (or InfiniBand's congestion control).
    pub(super) fn controller(&self) -> Option<Box<Controller>> {
        if self.ib_cc.is_some() {
            return None;
        }
        let path = Path {
            line_bps: self.cfg.bits_per_sec(),
            base_rtt: base_rtt(self.cfg.base_rtt_us),
            mtu: u64::from(self.cfg.mtu),
        };
        Controller::new(&self.cfg, path).map(Box::new)
    }

    /// Whether CE is echoed in ACKs rather than answered with CNPs: every control but
    /// DCQCN (and InfiniBand's, which answers each FECN with a CNP).
    pub(super) fn echoes_ce(&self) -> bool {
        self.cfg.cc != Cc::Dcqcn && self.ib_cc.is_none()
    }

    /// A data packet for QP `qi` that carries telemetry: its trailer is kept for the next
    /// ACK, and the payload without it is returned.
    pub(super) fn take_int<'a>(&mut self, qi: usize, payload: &'a [u8]) -> &'a [u8] {
        let Some(at) = payload.len().checked_sub(int::TRAILER_LEN) else {
            return payload;
        };
        let mut t = [0u8; int::TRAILER_LEN];
        t.copy_from_slice(&payload[at..]);
        self.qps[qi].int_echo = Some(t);
        &payload[..at]
    }

    /// A positive ACK reached QP `qi`, which had `acked_before` packets acknowledged; it
    /// echoed CE if `ece`, and telemetry if `echo`.
    pub(super) fn cc_on_ack(
        &mut self,
        now: Nanos,
        qi: usize,
        acked_before: u64,
        ece: bool,
        echo: Option<&[u8]>,
    ) {
        let mut hops = std::mem::take(&mut self.int_hops);
        hops.clear();
        if let Some(trailer) = echo {
            int::hops(trailer, &mut hops);
        }
        let q = &mut self.qps[qi];
        let acked = q.req.acked_count();
        let rtt = q.rtt_of(now, acked);
        let sample = AckSample {
            now,
            acked,
            sent: q.req.sent_count(),
            newly_acked: acked.saturating_sub(acked_before),
            ece,
            rtt,
            int: &hops,
        };
        if let Some(c) = q.cc.as_mut() {
            c.on_ack(&sample);
        }
        self.int_hops = hops;
    }
}

/// DCQCN's window, run.py's `dcqcn_vwin`: BDP × Rc / line rate bytes in flight.
#[derive(Debug, Clone, Copy)]
pub(super) struct DcqcnWindow {
    bdp_bytes: u64,
    line_bps: u64,
}

impl DcqcnWindow {
    /// The window `cfg` asks for, if it does (`dcqcn.window` with `cc = "dcqcn"`).
    pub(super) fn of(cfg: &EndpointConfig) -> Option<DcqcnWindow> {
        (cfg.cc == Cc::Dcqcn && cfg.dcqcn.window).then(|| {
            let path = Path {
                line_bps: cfg.bits_per_sec(),
                base_rtt: base_rtt(cfg.base_rtt_us),
                mtu: u64::from(cfg.mtu),
            };
            DcqcnWindow {
                bdp_bytes: path.bdp_bytes(),
                line_bps: path.line_bps,
            }
        })
    }

    /// Bytes in flight at `rate_bps`: at least one.
    fn bytes(self, rate_bps: u64) -> u64 {
        let w =
            u128::from(self.bdp_bytes) * u128::from(rate_bps) / u128::from(self.line_bps.max(1));
        (w as u64).max(1)
    }
}

impl Qp {
    /// The RTT of the newest packet an ACK through `acked` packets acknowledged, if it was
    /// sent once; the send times it covers are forgotten.
    fn rtt_of(&mut self, now: Nanos, acked: u64) -> Option<Nanos> {
        let mut rtt = None;
        while let Some(&(psn, at)) = self.sent_at.front() {
            if psn >= acked {
                break;
            }
            rtt = Some(now.saturating_sub(at));
            self.sent_at.pop_front();
        }
        rtt
    }

    /// The rate its packets are paced at, bit/s.
    #[inline]
    pub(super) fn rate_bps(&self) -> u64 {
        match &self.cc {
            Some(c) => c.rate_bps(),
            None => self.rp.rate_bps(),
        }
    }

    /// Its window in packets: the configured one, or less when its control (or DCQCN's
    /// window, `dcqcn`) limits the bytes in flight (a packet more while fewer bytes than
    /// the window are in flight).
    #[inline]
    pub(super) fn window(&self, configured: u64, mtu: u64, dcqcn: Option<DcqcnWindow>) -> u64 {
        let bytes = match &self.cc {
            Some(c) => c.window_bytes(),
            None => dcqcn.map(|w| w.bytes(self.rp.rate_bps())),
        };
        match bytes {
            Some(bytes) => configured.min(bytes.div_ceil(mtu.max(1)).max(1)),
            None => configured,
        }
    }
}
