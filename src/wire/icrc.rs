//! The RoCEv2 invariant CRC (IBA Annex A17.3.3).
//!
//! CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) over: eight bytes of 0xFF standing
//! for the masked LRH; the IP header with its variant fields set to all ones (IPv4: TOS,
//! TTL, header checksum; IPv6: traffic class, flow label, hop limit); the UDP header with
//! the checksum set to all ones; the BTH with byte 4 (FECN, BECN, reserved) set to all
//! ones; then everything after the BTH up to the ICRC. Stored least-significant byte first.
//!
//! Because TOS / traffic class are masked, a switch may rewrite ECN without touching it.

use super::meta::FrameMeta;
use super::{bth, ipv4, ipv6, udp};

/// Length of the ICRC.
pub const ICRC_LEN: usize = 4;

/// Computes the ICRC of a RoCE frame; `None` if `meta` is not RoCE or does not fit `frame`,
/// or if IPv6 extension headers precede UDP: the annex masks the variant fields of the
/// fixed header only, RoCEv2 NICs send none (Linux rxe reads UDP right after the fixed
/// header), and a hop-by-hop option may change on the way; such an ICRC is not judged.
pub fn compute(frame: &[u8], meta: &FrameMeta) -> Option<u32> {
    if !meta.is_roce() {
        return None;
    }
    compute_at(
        frame,
        usize::from(meta.l3_offset()),
        usize::from(meta.l4_offset()),
        meta.is_ipv4(),
        meta.icrc_offset(),
    )
}

/// Computes the ICRC from explicit offsets: the IP header at `l3`, UDP at `l4`, the ICRC at
/// `icrc_at`. `None` when the offsets do not fit the frame.
pub(crate) fn compute_at(
    frame: &[u8],
    l3: usize,
    l4: usize,
    is_ipv4: bool,
    icrc_at: usize,
) -> Option<u32> {
    let bth_at = l4 + udp::HEADER_LEN;
    if icrc_at + ICRC_LEN > frame.len() || bth_at + bth::HEADER_LEN > icrc_at || l4 < l3 {
        return None;
    }
    // The masked headers go into one buffer and through the CRC in one call: crc32fast
    // is fast on long inputs and slow on many short ones.
    let ip_len = l4 - l3;
    // IPv4 with options reaches 60 bytes, more than IPv6's 40.
    let mut pseudo = [0u8; 8 + 60 + udp::HEADER_LEN + bth::HEADER_LEN];
    pseudo[..8].fill(0xff);
    let ip = pseudo.get_mut(8..8 + ip_len)?;
    ip.copy_from_slice(&frame[l3..l4]);
    if is_ipv4 {
        if ip.len() < ipv4::HEADER_LEN {
            return None;
        }
        ip[1] = 0xff; // TOS
        ip[8] = 0xff; // TTL
        ip[10] = 0xff; // header checksum
        ip[11] = 0xff;
    } else {
        if ip.len() != ipv6::HEADER_LEN {
            return None;
        }
        ip[0] |= 0x0f; // traffic class: low nibble of byte 0 ...
        ip[1] = 0xff; // ... high nibble of byte 1; the flow label fills the rest of 1..4
        ip[2] = 0xff;
        ip[3] = 0xff;
        ip[7] = 0xff; // hop limit
    }
    let udp_at = 8 + ip_len;
    let bth_end = udp_at + udp::HEADER_LEN + bth::HEADER_LEN;
    pseudo[udp_at..bth_end].copy_from_slice(&frame[l4..bth_at + bth::HEADER_LEN]);
    pseudo[udp_at + 6] = 0xff; // UDP checksum
    pseudo[udp_at + 7] = 0xff;
    pseudo[udp_at + udp::HEADER_LEN + bth::FECN_BECN_OFFSET] = 0xff;
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&pseudo[..bth_end]);
    hasher.update(&frame[bth_at + bth::HEADER_LEN..icrc_at]);
    Some(hasher.finalize())
}

/// The ICRC stored in a RoCE frame.
pub fn stored(frame: &[u8], meta: &FrameMeta) -> Option<u32> {
    if !meta.is_roce() {
        return None;
    }
    let at = meta.icrc_offset();
    let bytes = frame.get(at..at + ICRC_LEN)?;
    Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

/// True when the stored ICRC matches the computed one; `None` for non-RoCE frames.
pub fn verify(frame: &[u8], meta: &FrameMeta) -> Option<bool> {
    Some(compute(frame, meta)? == stored(frame, meta)?)
}

/// Computes the ICRC and stores it; returns it, or `None` for non-RoCE frames.
pub fn fill(frame: &mut [u8], meta: &FrameMeta) -> Option<u32> {
    let crc = compute(frame, meta)?;
    let at = meta.icrc_offset();
    frame
        .get_mut(at..at + ICRC_LEN)?
        .copy_from_slice(&crc.to_le_bytes());
    Some(crc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::fixtures::REAL_CNP;
    use crate::wire::meta::parse;

    #[test]
    fn real_hardware_cnp_verifies() {
        let meta = parse(&REAL_CNP).unwrap();
        assert_eq!(stored(&REAL_CNP, &meta), Some(0x2a00_fd82));
        assert_eq!(compute(&REAL_CNP, &meta), Some(0x2a00_fd82));
    }

    #[test]
    fn masked_fields_do_not_change_it_and_others_do() {
        let meta = parse(&REAL_CNP).unwrap();
        let mut f = REAL_CNP;
        f[15] ^= 0x03; // ECN
        f[22] = 1; // TTL
        f[24] ^= 0x55; // IP checksum
        f[40] = 0x12; // UDP checksum
        f[46] = 0x80; // FECN instead of BECN
        assert_eq!(verify(&f, &meta), Some(true));
        f[49] ^= 1; // dest QP
        assert_eq!(verify(&f, &meta), Some(false));
    }
}
