//! The InfiniBand Base Transport Header (IBA vol. 1, 9.2) and its opcodes.

use super::xth::Layout;
use super::{BuildError, Layer, ParseError, array, be16, be24, need, put_be24, truncated};
use std::fmt;

/// Length of the BTH.
pub const HEADER_LEN: usize = 12;
/// Largest 24-bit queue pair number or PSN.
pub const MAX_24BIT: u32 = 0x00ff_ffff;

mod field {
    pub(super) const OPCODE: usize = 0;
    /// SE (bit 7), MigReq (bit 6), PadCnt (bits 5-4), TVer (bits 3-0).
    pub(super) const FLAGS: usize = 1;
    pub(super) const PKEY: usize = 2;
    /// FECN (bit 7), BECN (bit 6), six reserved bits: the byte the ICRC masks.
    pub(super) const FECN_BECN: usize = 4;
    pub(super) const DEST_QP: usize = 5;
    /// AckReq (bit 7), seven reserved bits.
    pub(super) const ACK_REQ: usize = 8;
    pub(super) const PSN: usize = 9;
}

/// Offset of the FECN/BECN byte in the BTH (masked to all ones in the ICRC).
pub(crate) const FECN_BECN_OFFSET: usize = field::FECN_BECN;

/// A BTH opcode: transport in bits 7-5, operation in bits 4-0.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Opcode(pub u8);

/// The transport service an opcode belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Reliable Connected.
    Rc,
    /// Unreliable Connected.
    Uc,
    /// Reliable Datagram.
    Rd,
    /// Unreliable Datagram.
    Ud,
    /// RoCEv2 Congestion Notification Packet (IBA Annex A17).
    Cnp,
    /// Extended Reliable Connected.
    Xrc,
    /// Manufacturer specific (0xC0-0xFF).
    Vendor,
}

impl Opcode {
    /// RC SEND First.
    pub const RC_SEND_FIRST: Opcode = Opcode(0x00);
    /// RC SEND Middle.
    pub const RC_SEND_MIDDLE: Opcode = Opcode(0x01);
    /// RC SEND Last.
    pub const RC_SEND_LAST: Opcode = Opcode(0x02);
    /// RC SEND Last with Immediate.
    pub const RC_SEND_LAST_IMM: Opcode = Opcode(0x03);
    /// RC SEND Only.
    pub const RC_SEND_ONLY: Opcode = Opcode(0x04);
    /// RC SEND Only with Immediate.
    pub const RC_SEND_ONLY_IMM: Opcode = Opcode(0x05);
    /// RC RDMA WRITE First.
    pub const RC_WRITE_FIRST: Opcode = Opcode(0x06);
    /// RC RDMA WRITE Middle.
    pub const RC_WRITE_MIDDLE: Opcode = Opcode(0x07);
    /// RC RDMA WRITE Last.
    pub const RC_WRITE_LAST: Opcode = Opcode(0x08);
    /// RC RDMA WRITE Last with Immediate.
    pub const RC_WRITE_LAST_IMM: Opcode = Opcode(0x09);
    /// RC RDMA WRITE Only.
    pub const RC_WRITE_ONLY: Opcode = Opcode(0x0a);
    /// RC RDMA WRITE Only with Immediate.
    pub const RC_WRITE_ONLY_IMM: Opcode = Opcode(0x0b);
    /// RC RDMA READ Request.
    pub const RC_READ_REQUEST: Opcode = Opcode(0x0c);
    /// RC RDMA READ Response First.
    pub const RC_READ_RESPONSE_FIRST: Opcode = Opcode(0x0d);
    /// RC RDMA READ Response Middle.
    pub const RC_READ_RESPONSE_MIDDLE: Opcode = Opcode(0x0e);
    /// RC RDMA READ Response Last.
    pub const RC_READ_RESPONSE_LAST: Opcode = Opcode(0x0f);
    /// RC RDMA READ Response Only.
    pub const RC_READ_RESPONSE_ONLY: Opcode = Opcode(0x10);
    /// RC Acknowledge (ACK or NAK, told apart by the AETH syndrome).
    pub const RC_ACK: Opcode = Opcode(0x11);
    /// RC ATOMIC Acknowledge.
    pub const RC_ATOMIC_ACK: Opcode = Opcode(0x12);
    /// RC CmpSwap.
    pub const RC_CMP_SWAP: Opcode = Opcode(0x13);
    /// RC FetchAdd.
    pub const RC_FETCH_ADD: Opcode = Opcode(0x14);
    /// RC FLUSH (IBA 1.5): persist a remote range.
    pub const RC_FLUSH: Opcode = Opcode(0x1c);
    /// RC ATOMIC WRITE (IBA 1.5): an 8-byte write done atomically.
    pub const RC_ATOMIC_WRITE: Opcode = Opcode(0x1d);
    /// UD SEND Only.
    pub const UD_SEND_ONLY: Opcode = Opcode(0x64);
    /// UD SEND Only with Immediate.
    pub const UD_SEND_ONLY_IMM: Opcode = Opcode(0x65);
    /// RoCEv2 Congestion Notification Packet.
    pub const CNP: Opcode = Opcode(0x81);

    /// The transport service, from bits 7-5 (0xC0-0xFF: vendor-defined).
    pub const fn transport(self) -> Transport {
        match self.0 >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            2 => Transport::Rd,
            3 => Transport::Ud,
            4 => Transport::Cnp,
            5 => Transport::Xrc,
            _ => Transport::Vendor,
        }
    }

    const fn operation(self) -> u8 {
        self.0 & 0x1f
    }

    /// True when IBA defines this opcode (RoCEv2 adds 0x81, CNP; IBA 1.5 adds RC FLUSH
    /// and ATOMIC WRITE).
    pub const fn is_defined(self) -> bool {
        let op = self.operation();
        match self.transport() {
            Transport::Rc => op <= 0x14 || matches!(op, 0x16 | 0x17 | 0x1c | 0x1d),
            Transport::Xrc => op <= 0x14 || op == 0x16 || op == 0x17,
            Transport::Uc => op <= 0x0b,
            Transport::Rd => op <= 0x15,
            Transport::Ud => op == 0x04 || op == 0x05,
            Transport::Cnp => op == 0x01,
            Transport::Vendor => false,
        }
    }

    /// The operation in Wireshark's words (`RDMA WRITE Only with Immediate`), `None` for
    /// an opcode its transport does not define.
    fn operation_words(self) -> Option<&'static str> {
        if !self.is_defined() {
            return None;
        }
        const OPS: [&str; 30] = [
            "SEND First",
            "SEND Middle",
            "SEND Last",
            "SEND Last with Immediate",
            "SEND Only",
            "SEND Only with Immediate",
            "RDMA WRITE First",
            "RDMA WRITE Middle",
            "RDMA WRITE Last",
            "RDMA WRITE Last with Immediate",
            "RDMA WRITE Only",
            "RDMA WRITE Only with Immediate",
            "RDMA READ Request",
            "RDMA READ response First",
            "RDMA READ response Middle",
            "RDMA READ response Last",
            "RDMA READ response Only",
            "Acknowledge",
            "ATOMIC Acknowledge",
            "CmpSwap",
            "FetchAdd",
            "RESYNC",
            "SEND Last with Invalidate",
            "SEND Only with Invalidate",
            "",
            "",
            "",
            "",
            "FLUSH",
            "ATOMIC WRITE",
        ];
        let op = usize::from(self.operation());
        Some(match self.transport() {
            Transport::Ud if op == 0x04 => "SEND only",
            Transport::Ud => "SEND only with Immediate",
            Transport::Cnp => "CNP",
            _ => OPS[op],
        })
    }

    /// Short name as rocelab prints it: the transport, then Wireshark's words for the
    /// operation, e.g. `RC RDMA WRITE Only with Immediate`, `CNP`.
    pub fn name(self) -> &'static str {
        self.names().0
    }

    /// The name Wireshark's InfiniBand dissector gives (`tshark -G values`,
    /// `infiniband.bth.opcode`), e.g. `Reliable Connection (RC) - RDMA WRITE First`;
    /// `CNP`, and `Unknown` for opcodes the IBA does not define.
    pub fn wireshark_name(self) -> &'static str {
        self.names().1
    }

    /// The IBTA name as the Linux kernel spells it (`IB_OPCODE_RC_RDMA_WRITE_FIRST`
    /// without the prefix), e.g. `RC_RDMA_WRITE_FIRST`, `CNP`, `RESERVED`.
    pub fn ibta_name(self) -> &'static str {
        self.names().2
    }

    /// (short, Wireshark, IBTA) names, built once per opcode and kept.
    fn names(self) -> (&'static str, &'static str, &'static str) {
        static NAMES: std::sync::OnceLock<Vec<(String, String, String)>> =
            std::sync::OnceLock::new();
        let all = NAMES.get_or_init(|| (0..=255u8).map(|o| Opcode(o).build_names()).collect());
        let (a, b, c) = &all[usize::from(self.0)];
        (a, b, c)
    }

    fn build_names(self) -> (String, String, String) {
        let (short, long) = match self.transport() {
            Transport::Rc => ("RC", "Reliable Connection (RC)"),
            Transport::Uc => ("UC", "Unreliable Connection (UC)"),
            Transport::Rd => ("RD", "Reliable Datagram (RD)"),
            Transport::Ud => ("UD", "Unreliable Datagram (UD)"),
            Transport::Xrc => ("XRC", "Extended Reliable Connection (XRC)"),
            Transport::Cnp => ("", ""),
            Transport::Vendor => {
                return (
                    "vendor-specific".into(),
                    "Unknown".into(),
                    "VENDOR_SPECIFIC".into(),
                );
            }
        };
        let Some(words) = self.operation_words() else {
            return ("reserved".into(), "Unknown".into(), "RESERVED".into());
        };
        if self.transport() == Transport::Cnp {
            return ("CNP".into(), "CNP".into(), "CNP".into());
        }
        let ibta = words
            .replace("CmpSwap", "COMPARE SWAP")
            .replace("FetchAdd", "FETCH ADD")
            .to_uppercase()
            .replace(' ', "_");
        (
            format!("{short} {words}"),
            format!("{long} - {words}"),
            format!("{short}_{ibta}"),
        )
    }

    /// The extended transport headers that follow the BTH for this opcode.
    pub fn layout(self) -> Layout {
        Layout::of(self)
    }

    /// True for a CNP.
    pub fn is_cnp(self) -> bool {
        self == Opcode::CNP
    }

    /// True for responder-generated packets (READ responses and acknowledges), which use
    /// the requester's PSN space.
    pub fn is_response(self) -> bool {
        matches!(
            self.transport(),
            Transport::Rc | Transport::Rd | Transport::Xrc
        ) && (0x0d..=0x12).contains(&self.operation())
    }

    /// True for packets whose PSNs advance one by one: everything but acknowledges and
    /// CNPs (an ACK carries the PSN it acknowledges, and ACKs may be coalesced).
    pub fn is_sequenced(self) -> bool {
        let ack = matches!(
            self.transport(),
            Transport::Rc | Transport::Rd | Transport::Xrc
        ) && (self.operation() == 0x11 || self.operation() == 0x12);
        !ack && !self.is_cnp()
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#04x} ({})", self.0, self.name())
    }
}

/// A view of a BTH over a buffer of at least [`HEADER_LEN`] bytes.
#[derive(Debug, Clone)]
pub struct Bth<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Bth<T> {
    /// Wraps a buffer that starts with a BTH.
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let len = buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(truncated(Layer::Bth, 0, HEADER_LEN, len));
        }
        Ok(Bth { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Opcode (byte 0): it decides which extended headers follow.
    pub fn opcode(&self) -> Opcode {
        Opcode(self.b()[field::OPCODE])
    }

    /// Solicited Event.
    pub fn solicited(&self) -> bool {
        self.b()[field::FLAGS] & 0x80 != 0
    }

    /// MigReq: path-migration state (IBA automatic path migration); rocelab ignores it.
    pub fn migreq(&self) -> bool {
        self.b()[field::FLAGS] & 0x40 != 0
    }

    /// Pad count: bytes of padding after the payload, 0-3.
    pub fn pad_count(&self) -> u8 {
        (self.b()[field::FLAGS] >> 4) & 3
    }

    /// Transport header version (0).
    pub fn tver(&self) -> u8 {
        self.b()[field::FLAGS] & 0x0f
    }

    /// Partition key (0xffff: the default full-membership partition).
    pub fn pkey(&self) -> u16 {
        be16(array(self.b(), field::PKEY))
    }

    /// Forward ECN (set by IB switches; unused in RoCEv2, which uses IP ECN).
    pub fn fecn(&self) -> bool {
        self.b()[field::FECN_BECN] & 0x80 != 0
    }

    /// Backward ECN: set in CNPs.
    pub fn becn(&self) -> bool {
        self.b()[field::FECN_BECN] & 0x40 != 0
    }

    /// Destination queue pair (24 bits).
    pub fn dest_qp(&self) -> u32 {
        be24(array(self.b(), field::DEST_QP))
    }

    /// AckReq: the requester asks for an acknowledge.
    pub fn ack_req(&self) -> bool {
        self.b()[field::ACK_REQ] & 0x80 != 0
    }

    /// Packet sequence number (24 bits).
    pub fn psn(&self) -> u32 {
        be24(array(self.b(), field::PSN))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Bth<T> {
    /// Sets the PSN (24 bits; higher bits are dropped).
    pub fn set_psn(&mut self, psn: u32) {
        put_be24(&mut self.buffer.as_mut()[field::PSN..], psn & MAX_24BIT);
    }

    /// Sets or clears BECN.
    pub fn set_becn(&mut self, becn: bool) {
        let b = &mut self.buffer.as_mut()[field::FECN_BECN];
        *b = (*b & !0x40) | if becn { 0x40 } else { 0 };
    }
}

/// The BTH as plain fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BthRepr {
    /// Opcode: it decides which extended headers follow.
    pub opcode: Opcode,
    /// Solicited Event.
    pub solicited: bool,
    /// MigReq: path-migration state (IBA automatic path migration); rocelab ignores it.
    pub migreq: bool,
    /// Pad count, 0-3. Builders derive it from the payload length.
    pub pad_count: u8,
    /// Transport header version (0).
    pub tver: u8,
    /// Partition key (0xffff: the default full-membership partition).
    pub pkey: u16,
    /// Forward ECN.
    pub fecn: bool,
    /// Backward ECN.
    pub becn: bool,
    /// Destination QP (24 bits).
    pub dest_qp: u32,
    /// AckReq: the requester asks for an acknowledge.
    pub ack_req: bool,
    /// PSN (24 bits).
    pub psn: u32,
}

impl BthRepr {
    /// Reads a checked view.
    pub fn parse<T: AsRef<[u8]>>(bth: &Bth<T>) -> BthRepr {
        BthRepr {
            opcode: bth.opcode(),
            solicited: bth.solicited(),
            migreq: bth.migreq(),
            pad_count: bth.pad_count(),
            tver: bth.tver(),
            pkey: bth.pkey(),
            fecn: bth.fecn(),
            becn: bth.becn(),
            dest_qp: bth.dest_qp(),
            ack_req: bth.ack_req(),
            psn: bth.psn(),
        }
    }

    /// Writes the 12-byte BTH into `buf`; reserved bits are zero, 24-bit fields masked.
    /// Returns 12.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, BuildError> {
        need(buf, HEADER_LEN)?;
        let b = &mut buf[..HEADER_LEN];
        b[field::OPCODE] = self.opcode.0;
        b[field::FLAGS] = (u8::from(self.solicited) << 7)
            | (u8::from(self.migreq) << 6)
            | ((self.pad_count & 3) << 4)
            | (self.tver & 0x0f);
        b[field::PKEY..field::PKEY + 2].copy_from_slice(&self.pkey.to_be_bytes());
        b[field::FECN_BECN] = (u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6);
        put_be24(&mut b[field::DEST_QP..], self.dest_qp & MAX_24BIT);
        b[field::ACK_REQ] = u8::from(self.ack_req) << 7;
        put_be24(&mut b[field::PSN..], self.psn & MAX_24BIT);
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The BTH of a real ConnectX-4 Lx CNP (the capture roce_cnp_connectx4lx_1pkt.pcap).
    const CNP_BTH: [u8; 12] = [
        0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn reads_real_cnp_bth() {
        let bth = Bth::new_checked(&CNP_BTH[..]).unwrap();
        let repr = BthRepr::parse(&bth);
        assert_eq!(repr.opcode, Opcode::CNP);
        assert!(repr.becn && !repr.fecn);
        assert_eq!(repr.dest_qp, 0x118);
        assert_eq!(repr.pkey, 0xffff);
        assert_eq!(repr.psn, 0);
        let mut out = [0u8; 12];
        repr.emit(&mut out).unwrap();
        assert_eq!(out, CNP_BTH);
    }

    #[test]
    fn every_defined_opcode_has_a_name_and_transport() {
        let defined = (0..=255u8).filter(|&op| Opcode(op).is_defined()).count();
        // IBA vol. 1 table 37: RC 0x00-0x14, 0x16, 0x17 and (1.5) 0x1C, 0x1D: 25; UC 0x00-0x0B:
        // 12; RD 0x00-0x15: 22; UD 0x04, 0x05: 2; CNP 0x81: 1; XRC as RC before 1.5: 23.
        assert_eq!(defined, 25 + 12 + 22 + 2 + 1 + 23);
        assert_eq!(Opcode(0x55).name(), "RD RESYNC");
        assert_eq!(Opcode(0x1c).name(), "RC FLUSH");
        assert_eq!(Opcode(0x1d).name(), "RC ATOMIC WRITE");
        assert_eq!(Opcode(0x15).name(), "reserved");
        assert_eq!(Opcode(0xc0).name(), "vendor-specific");
        assert_eq!(
            Opcode::RC_WRITE_ONLY_IMM.name(),
            "RC RDMA WRITE Only with Immediate"
        );
        assert_eq!(
            Opcode::RC_WRITE_ONLY_IMM.ibta_name(),
            "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE"
        );
        assert_eq!(Opcode(0x13).ibta_name(), "RC_COMPARE_SWAP");
        assert_eq!(Opcode::CNP.wireshark_name(), "CNP");
        assert_eq!(Opcode(0xab).name(), "XRC RDMA WRITE Only with Immediate");
        assert!(!Opcode::RC_ACK.is_sequenced());
        assert!(Opcode::RC_READ_RESPONSE_MIDDLE.is_sequenced());
        assert!(Opcode::RC_READ_RESPONSE_MIDDLE.is_response());
    }
}
