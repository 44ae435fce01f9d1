//! UDP (RFC 768) header view.

use super::{BuildError, Field, Layer, ParseError, array, be16, invalid, len16, need, truncated};

/// The IANA port of RoCEv2 (InfiniBand Annex A17).
pub const ROCEV2_PORT: u16 = 4791;
/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

mod field {
    pub(super) const SRC_PORT: usize = 0;
    pub(super) const DST_PORT: usize = 2;
    pub(super) const LENGTH: usize = 4;
    pub(super) const CHECKSUM: usize = 6;
}

/// A view of a UDP datagram whose length field has been checked.
#[derive(Debug, Clone)]
pub struct UdpDatagram<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpDatagram<T> {
    /// Wraps `buffer` (the IP payload) after checking that the UDP length is at least 8 and
    /// fits in it.
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let b = buffer.as_ref();
        let Some(h) = b.first_chunk::<HEADER_LEN>() else {
            return Err(truncated(Layer::Udp, 0, HEADER_LEN, b.len()));
        };
        check_header(h, 0, b.len())?;
        Ok(UdpDatagram { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Source port: RoCEv2 NICs hash the QP into it, for ECMP entropy.
    pub fn src_port(&self) -> u16 {
        be16(array(self.b(), field::SRC_PORT))
    }

    /// Destination port: 4791 ([`ROCEV2_PORT`]) for RoCEv2.
    pub fn dst_port(&self) -> u16 {
        be16(array(self.b(), field::DST_PORT))
    }

    /// Length of header and payload.
    pub fn len(&self) -> usize {
        usize::from(be16(array(self.b(), field::LENGTH)))
    }

    /// Always false: the length is at least the 8-byte header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Checksum as stored (RoCEv2 senders usually leave it 0).
    pub fn checksum(&self) -> u16 {
        be16(array(self.b(), field::CHECKSUM))
    }

    /// The payload, up to the UDP length.
    pub fn payload(&self) -> &[u8] {
        &self.b()[HEADER_LEN..self.len()]
    }
}

/// Checks the header `h` of a datagram at `offset` in an IP packet that ends at `ip_end`:
/// the length covers the header and stays within the packet. Returns the UDP length.
#[inline(always)]
pub(crate) fn check_header(
    h: &[u8; HEADER_LEN],
    offset: usize,
    ip_end: usize,
) -> Result<usize, ParseError> {
    let len = usize::from(be16([h[field::LENGTH], h[field::LENGTH + 1]]));
    if len < HEADER_LEN {
        return Err(invalid(Field::UdpLength, len));
    }
    if ip_end - offset < len {
        return Err(truncated(Layer::Udp, offset, len, ip_end));
    }
    Ok(len)
}

/// Writes a UDP header with checksum 0 into `buf`.
///
/// RoCEv2 senders leave the UDP checksum 0: the ICRC protects the payload end to end
/// (IBA Annex A17.4.5.2).
pub fn emit(
    buf: &mut [u8],
    src_port: u16,
    dst_port: u16,
    payload_len: usize,
) -> Result<usize, BuildError> {
    need(buf, HEADER_LEN)?;
    let len = len16(Layer::Udp, payload_len + HEADER_LEN)?;
    buf[field::SRC_PORT..field::SRC_PORT + 2].copy_from_slice(&src_port.to_be_bytes());
    buf[field::DST_PORT..field::DST_PORT + 2].copy_from_slice(&dst_port.to_be_bytes());
    buf[field::LENGTH..field::LENGTH + 2].copy_from_slice(&len.to_be_bytes());
    buf[field::CHECKSUM..field::CHECKSUM + 2].fill(0);
    Ok(HEADER_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_is_checked() {
        let mut buf = [0u8; 12];
        emit(&mut buf, 49152, ROCEV2_PORT, 4).unwrap();
        assert!(emit(&mut buf, 1, 2, 65_530).is_err());
        assert!(emit(&mut buf[..7], 1, 2, 0).is_err());
        let d = UdpDatagram::new_checked(&buf[..]).unwrap();
        assert_eq!((d.src_port(), d.dst_port(), d.len()), (49152, 4791, 12));
        assert!(UdpDatagram::new_checked(&buf[..11]).is_err());
        buf[5] = 7;
        assert!(matches!(
            UdpDatagram::new_checked(&buf[..]),
            Err(ParseError::Invalid { .. })
        ));
    }
}
