//! The RoCEv2 Congestion Notification Packet (IBA Annex A17.9.3).
//!
//! A notification point that sees CE on a RoCE packet tells the sender with a CNP: BTH
//! opcode 0x81, BECN set, dest QP = the sender's QP, PSN 0, then 16 reserved zero bytes
//! and the ICRC. By convention it travels at DSCP 48, which switches map to a
//! strict-priority class.

use super::bth::{BthRepr, Opcode};
use super::ethernet::{MacAddr, VlanTag};
use super::roce::{IpRepr, RoceRepr};
use super::xth::ExtHeaders;

/// The 16 reserved bytes after a CNP's BTH.
pub const RESERVED: [u8; 16] = [0; 16];
/// DSCP that CNPs carry by convention (CS6).
pub const DSCP: u8 = 48;
/// Length of a CNP over IPv4 without a tag: 14 + 20 + 8 + 12 + 16 + 4.
pub const FRAME_LEN_IPV4: usize = 74;

/// Where a CNP goes: the addresses of the congested flow's sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CnpRepr {
    /// Destination MAC (the flow's sender).
    pub eth_dst: MacAddr,
    /// Source MAC (the notification point).
    pub eth_src: MacAddr,
    /// 802.1Q tag, if the link is tagged.
    pub vlan: Option<VlanTag>,
    /// IP header: source = the notification point, destination = the flow's sender;
    /// normally DSCP [`DSCP`].
    pub ip: IpRepr,
    /// UDP source port.
    pub udp_src_port: u16,
    /// Partition key of the flow.
    pub pkey: u16,
    /// The sender's QP, which the CNP slows down.
    pub dest_qp: u32,
}

impl CnpRepr {
    /// The frame to emit.
    pub fn to_roce(&self) -> RoceRepr<'static> {
        RoceRepr {
            eth_dst: self.eth_dst,
            eth_src: self.eth_src,
            vlan: self.vlan,
            ip: self.ip,
            udp_src_port: self.udp_src_port,
            bth: BthRepr {
                opcode: Opcode::CNP,
                becn: true,
                pkey: self.pkey,
                dest_qp: self.dest_qp,
                psn: 0,
                ..BthRepr::default()
            },
            ext: ExtHeaders::default(),
            payload: &RESERVED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Ecn;
    use crate::wire::ipv4::Ipv4Repr;
    use std::net::Ipv4Addr;

    /// Rebuilds the real ConnectX-4 Lx CNP (the capture roce_cnp_connectx4lx_1pkt.pcap)
    /// byte for byte from its fields, ICRC included.
    #[test]
    fn rebuilds_real_hardware_cnp() {
        let cnp = CnpRepr {
            eth_dst: MacAddr([0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2]),
            eth_src: MacAddr([0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32]),
            vlan: None,
            ip: IpRepr::V4(Ipv4Repr {
                src: Ipv4Addr::new(10, 0, 17, 1),
                dst: Ipv4Addr::new(10, 0, 18, 1),
                dscp: DSCP,
                ecn: Ecn::Ect0,
                ident: 0x718c,
                dont_frag: true,
                ttl: 64,
            }),
            udp_src_port: 0,
            pkey: 0xffff,
            dest_qp: 0x118,
        };
        let mut buf = [0u8; 128];
        let n = cnp.to_roce().emit(&mut buf).unwrap();
        assert_eq!(n, FRAME_LEN_IPV4);
        assert_eq!(&buf[..n], &crate::wire::fixtures::REAL_CNP[..]);
    }
}
