//! Classification: a frame's traffic class from its DSCP (or 802.1Q PCP), and from the
//! class its egress queue and ingress priority group.

use crate::config::{CLASSES, SwitchConfig, Trust};
use crate::wire::FrameMeta;

/// The lookup tables of a configuration, flattened for the hot path.
#[derive(Debug, Clone)]
pub struct Classifier {
    trust: Trust,
    dscp_to_tc: [u8; 64],
    pcp_to_tc: [u8; CLASSES],
    tc_to_queue: [u8; CLASSES],
}

impl Classifier {
    /// The tables of `cfg`.
    pub fn new(cfg: &SwitchConfig) -> Classifier {
        Classifier {
            trust: cfg.trust,
            dscp_to_tc: cfg.dscp_to_tc,
            pcp_to_tc: cfg.pcp_to_tc,
            tc_to_queue: cfg.tc_to_queue,
        }
    }

    /// The traffic class (= PFC priority = ingress priority group) of a frame.
    /// With DSCP trust, non-IP frames take the class of DSCP 0; with PCP trust, untagged
    /// frames take the class of PCP 0.
    #[inline]
    pub fn traffic_class(&self, meta: &FrameMeta) -> u8 {
        match self.trust {
            Trust::Dscp => self.dscp_to_tc[usize::from(meta.dscp())],
            Trust::Pcp => self.pcp_to_tc[usize::from(meta.vlan_pcp().unwrap_or(0) & 7)],
        }
    }

    /// The class of frames that did not parse: that of DSCP 0 (or PCP 0).
    pub fn default_class(&self) -> u8 {
        match self.trust {
            Trust::Dscp => self.dscp_to_tc[0],
            Trust::Pcp => self.pcp_to_tc[0],
        }
    }

    /// The egress queue of a class.
    #[inline]
    pub fn queue(&self, tc: u8) -> usize {
        usize::from(self.tc_to_queue[usize::from(tc & 7)])
    }
}
