//! Ethernet II with an optional IEEE 802.1Q tag.

use super::{BuildError, Layer, ParseError, array, be16, need, truncated};
use std::fmt;
use std::str::FromStr;

/// EtherType values rocelab knows.
#[allow(missing_docs)] // IPV4, ARP, IPV6: the names say it
pub mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const ARP: u16 = 0x0806;
    /// IEEE 802.1Q customer VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// IEEE 802.1ad service VLAN tag (QinQ outer tag).
    pub const QINQ: u16 = 0x88A8;
    pub const IPV6: u16 = 0x86DD;
    /// MAC Control (IEEE 802.3 Annex 31B PAUSE, IEEE 802.1Qbb PFC).
    pub const MAC_CONTROL: u16 = 0x8808;
}

mod field {
    use std::ops::Range;
    pub(super) const DST: Range<usize> = 0..6;
    pub(super) const SRC: Range<usize> = 6..12;
    pub(super) const ETHERTYPE: usize = 12;
}

/// Length of an untagged Ethernet II header.
pub const HEADER_LEN: usize = 14;
/// Length of an IEEE 802.1Q tag (TPID + TCI).
pub const VLAN_TAG_LEN: usize = 4;
/// Minimum Ethernet frame length without the FCS; shorter frames are padded with zeros.
pub const MIN_FRAME_LEN: usize = 60;

/// A 48-bit IEEE MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);

    /// True for group (multicast and broadcast) addresses: the I/G bit is set.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 1 == 1
    }

    /// True for ff:ff:ff:ff:ff:ff.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why a string is not a MAC address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{0}' is not a MAC address: expected six hex octets like 02:00:5e:00:53:01 (or Cisco's 0200.5e00.5301)"
)]
pub struct MacAddrParseError(String);

impl FromStr for MacAddr {
    type Err = MacAddrParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || MacAddrParseError(s.to_owned());
        let mut out = [0u8; 6];
        // Cisco's form, as NX-OS prints and takes it: three dot-separated groups of four.
        if s.contains('.') {
            let groups: Vec<&str> = s.split('.').collect();
            let hex = |g: &str| g.len() == 4 && g.bytes().all(|b| b.is_ascii_hexdigit());
            if groups.len() != 3 || !groups.iter().all(|g| hex(g)) {
                return Err(err());
            }
            for (pair, group) in out.chunks_exact_mut(2).zip(groups) {
                let v = u16::from_str_radix(group, 16).map_err(|_| err())?;
                pair.copy_from_slice(&v.to_be_bytes());
            }
            return Ok(MacAddr(out));
        }
        let mut parts = s.split([':', '-']);
        for byte in &mut out {
            let part = parts.next().ok_or_else(err)?;
            // from_str_radix alone would take a sign: "+a" is not an octet.
            if part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(err());
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| err())?;
        }
        if parts.next().is_some() {
            return Err(err());
        }
        Ok(MacAddr(out))
    }
}

/// The EtherType after up to two VLAN tags (802.1ad / 802.1Q), and the offset of what
/// follows; `None` if the frame is too short for its tags.
pub fn l3_offset(frame: &[u8]) -> Option<(u16, usize)> {
    let mut at = field::ETHERTYPE;
    for _ in 0..3 {
        let ethertype = be16(frame.get(at..at + 2)?.try_into().ok()?);
        if ethertype != ethertype::VLAN && ethertype != ethertype::QINQ {
            return Some((ethertype, at + 2));
        }
        at += VLAN_TAG_LEN;
    }
    None
}

/// An IEEE 802.1Q tag control information field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlanTag {
    /// Priority code point, 0-7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier, 0-4095.
    pub vid: u16,
}

impl VlanTag {
    /// Decodes a 16-bit TCI.
    pub fn from_tci(tci: u16) -> Self {
        VlanTag {
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0fff,
        }
    }

    /// Encodes the TCI; out-of-range PCP and VID bits are masked off.
    pub fn tci(&self) -> u16 {
        (u16::from(self.pcp & 7) << 13) | (u16::from(self.dei) << 12) | (self.vid & 0x0fff)
    }
}

/// A view of an Ethernet II header over a buffer.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps a buffer of at least [`HEADER_LEN`] bytes.
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let len = buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(truncated(Layer::Ethernet, 0, HEADER_LEN, len));
        }
        Ok(EthernetFrame { buffer })
    }

    #[allow(missing_docs)]
    pub fn dst(&self) -> MacAddr {
        MacAddr(array(self.buffer.as_ref(), field::DST.start))
    }

    #[allow(missing_docs)]
    pub fn src(&self) -> MacAddr {
        MacAddr(array(self.buffer.as_ref(), field::SRC.start))
    }

    /// The EtherType (or TPID, when a tag follows) right after the addresses.
    pub fn ethertype(&self) -> u16 {
        be16(array(self.buffer.as_ref(), field::ETHERTYPE))
    }

    /// Returns the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    #[allow(missing_docs)]
    pub fn set_dst(&mut self, addr: MacAddr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&addr.0);
    }

    #[allow(missing_docs)]
    pub fn set_src(&mut self, addr: MacAddr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&addr.0);
    }
}

/// An Ethernet II header with at most one 802.1Q tag, as plain fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // dst, src: the names say it
pub struct EthernetRepr {
    pub dst: MacAddr,
    pub src: MacAddr,
    /// The 802.1Q tag, if any.
    pub vlan: Option<VlanTag>,
    /// EtherType of the payload (after the tag).
    pub ethertype: u16,
}

impl EthernetRepr {
    /// Parses the header and at most one tag; returns it with the header length.
    pub fn parse(frame: &[u8]) -> Result<(EthernetRepr, usize), ParseError> {
        let eth = EthernetFrame::new_checked(frame)?;
        let mut repr = EthernetRepr {
            dst: eth.dst(),
            src: eth.src(),
            vlan: None,
            ethertype: eth.ethertype(),
        };
        if repr.ethertype != ethertype::VLAN && repr.ethertype != ethertype::QINQ {
            return Ok((repr, HEADER_LEN));
        }
        let tag = frame
            .get(HEADER_LEN..HEADER_LEN + VLAN_TAG_LEN)
            .ok_or_else(|| truncated(Layer::Vlan, HEADER_LEN, VLAN_TAG_LEN, frame.len()))?;
        repr.vlan = Some(VlanTag::from_tci(be16([tag[0], tag[1]])));
        repr.ethertype = be16([tag[2], tag[3]]);
        Ok((repr, HEADER_LEN + VLAN_TAG_LEN))
    }

    /// Length of the header this emits.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + if self.vlan.is_some() { VLAN_TAG_LEN } else { 0 }
    }

    /// Writes the header into the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, BuildError> {
        need(buf, self.header_len())?;
        buf[field::DST].copy_from_slice(&self.dst.0);
        buf[field::SRC].copy_from_slice(&self.src.0);
        let mut at = field::ETHERTYPE;
        if let Some(tag) = self.vlan {
            buf[at..at + 2].copy_from_slice(&ethertype::VLAN.to_be_bytes());
            buf[at + 2..at + 4].copy_from_slice(&tag.tci().to_be_bytes());
            at += VLAN_TAG_LEN;
        }
        buf[at..at + 2].copy_from_slice(&self.ethertype.to_be_bytes());
        Ok(at + 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_parse_and_display_round_trip() {
        let mac: MacAddr = "01:80:C2:00:00:01".parse().unwrap();
        assert_eq!(mac.0, [0x01, 0x80, 0xc2, 0, 0, 1]);
        assert_eq!(mac.to_string(), "01:80:c2:00:00:01");
        assert!(mac.is_multicast());
        assert!("01:80:c2:00:00".parse::<MacAddr>().is_err());
        assert!("01:80:c2:00:00:01:02".parse::<MacAddr>().is_err());
        assert!("01:80:c2:00:00:zz".parse::<MacAddr>().is_err());
        assert!("001:80:c2:00:00:01".parse::<MacAddr>().is_err());
        assert!("+1:80:c2:00:00:01".parse::<MacAddr>().is_err());
        // Cisco's dotted form, as `show mac address-table` prints it.
        assert_eq!(
            "0180.c200.0001".parse::<MacAddr>().unwrap().to_string(),
            "01:80:c2:00:00:01"
        );
        for bad in [
            "0180.c200",
            "0180.c200.001",
            "0180.c200.+001",
            "0180.c200.0001.0000",
        ] {
            assert!(bad.parse::<MacAddr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn tci_layout_matches_802_1q() {
        // PCP 3, DEI 1, VID 100: 011 1 000001100100
        let tag = VlanTag {
            pcp: 3,
            dei: true,
            vid: 100,
        };
        assert_eq!(tag.tci(), 0b0111_0000_0110_0100);
        assert_eq!(VlanTag::from_tci(tag.tci()), tag);
    }

    #[test]
    fn tagged_header_round_trips() {
        let repr = EthernetRepr {
            dst: MacAddr([2, 0, 0, 0, 0, 2]),
            src: MacAddr([2, 0, 0, 0, 0, 1]),
            vlan: Some(VlanTag {
                pcp: 5,
                dei: false,
                vid: 42,
            }),
            ethertype: ethertype::IPV6,
        };
        let mut buf = [0u8; 18];
        assert_eq!(repr.emit(&mut buf), Ok(18));
        assert!(repr.emit(&mut buf[..17]).is_err());
        assert_eq!(EthernetRepr::parse(&buf).unwrap(), (repr, 18));
        assert!(matches!(
            EthernetRepr::parse(&buf[..16]),
            Err(ParseError::Truncated {
                layer: Layer::Vlan,
                ..
            })
        ));
    }
}
