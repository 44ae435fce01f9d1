//! ECN codepoints (RFC 3168) and CE marking in place.

use super::ipv4::set_tos_in_header;
use super::ipv6::set_traffic_class_in_header;
use super::meta::FrameMeta;
use std::fmt;

/// The two ECN bits of the IPv4 TOS byte or the IPv6 traffic class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Ecn {
    /// 00: the sender does not support ECN.
    #[default]
    NotEct = 0,
    /// 01: ECN-capable transport (1).
    Ect1 = 1,
    /// 10: ECN-capable transport (0), what RoCEv2 NICs send.
    Ect0 = 2,
    /// 11: congestion experienced.
    Ce = 3,
}

impl Ecn {
    /// Takes the low two bits of a TOS or traffic-class byte.
    #[inline]
    pub fn from_bits(tos: u8) -> Ecn {
        match tos & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// True for ECT(0) and ECT(1): a switch may mark these CE instead of dropping them.
    #[inline]
    pub fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
}

impl fmt::Display for Ecn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ecn::NotEct => "Not-ECT",
            Ecn::Ect1 => "ECT(1)",
            Ecn::Ect0 => "ECT(0)",
            Ecn::Ce => "CE",
        })
    }
}

/// What [`mark_ce`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CeMark {
    /// ECT(0) or ECT(1) became CE.
    Marked,
    /// Already CE; unchanged.
    AlreadyCe,
    /// Not-ECT: must not be marked (a switch drops it instead, as WRED would).
    NotEct,
    /// Not an IP frame, or `meta` does not describe this frame; unchanged.
    NotIp,
}

/// Marks an ECT frame CE in place.
///
/// IPv4: the TOS byte is rewritten and the header checksum patched incrementally
/// (RFC 1624). IPv6: the traffic class is rewritten (no checksum). The RoCEv2 ICRC stays
/// valid because it covers the TOS / traffic class as all ones.
#[inline]
pub fn mark_ce(frame: &mut [u8], meta: &FrameMeta) -> CeMark {
    let ecn = meta.ecn();
    if !meta.is_ip() {
        return CeMark::NotIp;
    }
    match ecn {
        Ecn::Ce => return CeMark::AlreadyCe,
        Ecn::NotEct => return CeMark::NotEct,
        Ecn::Ect0 | Ecn::Ect1 => {}
    }
    let l3 = usize::from(meta.l3_offset());
    let new_tos = meta.tos() | Ecn::Ce as u8;
    if meta.is_ipv4() {
        let Some(header) = frame.get_mut(l3..l3 + super::ipv4::HEADER_LEN) else {
            return CeMark::NotIp;
        };
        if header[1] != meta.tos() {
            return CeMark::NotIp;
        }
        set_tos_in_header(header, new_tos);
    } else {
        let Some(header) = frame.get_mut(l3..l3 + super::ipv6::HEADER_LEN) else {
            return CeMark::NotIp;
        };
        if (header[0] << 4) | (header[1] >> 4) != meta.tos() {
            return CeMark::NotIp;
        }
        set_traffic_class_in_header(header, new_tos);
    }
    CeMark::Marked
}
