//! InfiniBand extended transport headers (IBA vol. 1, 9.3): which ones follow the BTH for
//! each opcode, and their fields.

use super::bth::{Opcode, Transport};
use super::{BuildError, Layer, ParseError, array, be24, need, put_be24};

/// RDETH: Reliable Datagram extended header (4 bytes).
pub const RDETH_LEN: usize = 4;
/// DETH: Datagram extended header (8 bytes).
pub const DETH_LEN: usize = 8;
/// XRCETH: XRC extended header (4 bytes).
pub const XRCETH_LEN: usize = 4;
/// RETH: RDMA extended header (16 bytes).
pub const RETH_LEN: usize = 16;
/// AtomicETH: atomic extended header (28 bytes).
pub const ATOMIC_ETH_LEN: usize = 28;
/// AETH: ACK extended header (4 bytes).
pub const AETH_LEN: usize = 4;
/// AtomicAckETH: atomic ACK extended header (8 bytes).
pub const ATOMIC_ACK_ETH_LEN: usize = 8;
/// ImmDt: immediate data (4 bytes).
pub const IMMDT_LEN: usize = 4;
/// IETH: invalidate extended header (4 bytes).
pub const IETH_LEN: usize = 4;
/// FETH: flush extended header (4 bytes, IBA 1.5).
pub const FETH_LEN: usize = 4;

/// Which extended headers follow the BTH, in wire order (IBA 9.2: RDETH, DETH, XRCETH,
/// FETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layout {
    /// RDETH (RD only).
    pub rdeth: bool,
    /// DETH (UD, RD requests).
    pub deth: bool,
    /// XRCETH (XRC requests).
    pub xrceth: bool,
    /// FETH (RC FLUSH).
    pub feth: bool,
    /// RETH (WRITE First/Only, READ Request, FLUSH, ATOMIC WRITE).
    pub reth: bool,
    /// AtomicETH (CmpSwap, FetchAdd).
    pub atomic_eth: bool,
    /// AETH (acknowledges, READ Response First/Last/Only).
    pub aeth: bool,
    /// AtomicAckETH (ATOMIC ACK).
    pub atomic_ack_eth: bool,
    /// ImmDt (... with Immediate).
    pub immdt: bool,
    /// IETH (SEND ... with Invalidate).
    pub ieth: bool,
}

/// [`Layout::of`] every opcode, worked out at compile time.
static LAYOUTS: [Layout; 256] = {
    let mut table = [Layout::NONE; 256];
    let mut op = 0;
    while op < 256 {
        table[op] = Layout::compute(Opcode(op as u8));
        op += 1;
    }
    table
};

/// Each opcode's [`Layout::bits`]: what [`ExtHeaders::check_for`] compares in one step.
static BITS: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut op = 0;
    while op < 256 {
        table[op] = LAYOUTS[op].bits();
        op += 1;
    }
    table
};

/// [`Layout::len`] of every opcode's layout: the hot paths look a length up instead of
/// adding ten conditional terms.
static LENS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut op = 0;
    while op < 256 {
        table[op] = LAYOUTS[op].len() as u8;
        op += 1;
    }
    table
};

impl Layout {
    /// No extended headers.
    pub const NONE: Layout = Layout {
        rdeth: false,
        deth: false,
        xrceth: false,
        feth: false,
        reth: false,
        atomic_eth: false,
        aeth: false,
        atomic_ack_eth: false,
        immdt: false,
        ieth: false,
    };

    /// The layout IBA defines for `opcode`; no extended headers for undefined opcodes.
    #[inline]
    pub fn of(opcode: Opcode) -> Layout {
        LAYOUTS[usize::from(opcode.0)]
    }

    /// [`of`](Self::of), from the IBA's tables.
    const fn compute(opcode: Opcode) -> Layout {
        if !opcode.is_defined() {
            return Layout::NONE;
        }
        let op = opcode.0 & 0x1f;
        let is_request = !(op >= 0x0d && op <= 0x12);
        let mut l = Layout {
            immdt: matches!(op, 0x03 | 0x05 | 0x09 | 0x0b),
            reth: matches!(op, 0x06 | 0x0a | 0x0b | 0x0c | 0x1c | 0x1d),
            feth: op == 0x1c,
            aeth: matches!(op, 0x0d | 0x0f | 0x10 | 0x11 | 0x12),
            atomic_ack_eth: op == 0x12,
            atomic_eth: matches!(op, 0x13 | 0x14),
            ieth: matches!(op, 0x16 | 0x17),
            ..Layout::NONE
        };
        match opcode.transport() {
            Transport::Ud => l.deth = true,
            Transport::Rd => {
                l.rdeth = true;
                l.deth = is_request;
            }
            Transport::Xrc => l.xrceth = is_request,
            Transport::Cnp => l = Layout::NONE,
            Transport::Rc | Transport::Uc | Transport::Vendor => {}
        }
        l
    }

    /// The total length of the extended headers `opcode` carries: `Layout::of(opcode).len()`,
    /// from a table.
    #[inline]
    pub fn len_of(opcode: Opcode) -> usize {
        usize::from(LENS[usize::from(opcode.0)])
    }

    /// Total length of the extended headers.
    pub const fn len(&self) -> usize {
        self.rdeth as usize * RDETH_LEN
            + self.deth as usize * DETH_LEN
            + self.xrceth as usize * XRCETH_LEN
            + self.feth as usize * FETH_LEN
            + self.reth as usize * RETH_LEN
            + self.atomic_eth as usize * ATOMIC_ETH_LEN
            + self.aeth as usize * AETH_LEN
            + self.atomic_ack_eth as usize * ATOMIC_ACK_ETH_LEN
            + self.immdt as usize * IMMDT_LEN
            + self.ieth as usize * IETH_LEN
    }

    /// True when no extended header follows the BTH.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The headers present as one bit each, in wire order from bit 0.
    #[inline(always)]
    const fn bits(&self) -> u16 {
        let present = [
            self.rdeth,
            self.deth,
            self.xrceth,
            self.feth,
            self.reth,
            self.atomic_eth,
            self.aeth,
            self.atomic_ack_eth,
            self.immdt,
            self.ieth,
        ];
        let mut bits = 0;
        let mut i = 0;
        while i < present.len() {
            bits |= (present[i] as u16) << i;
            i += 1;
        }
        bits
    }

    /// The names of the headers present, in wire order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        [
            (self.rdeth, "RDETH"),
            (self.deth, "DETH"),
            (self.xrceth, "XRCETH"),
            (self.feth, "FETH"),
            (self.reth, "RETH"),
            (self.atomic_eth, "AtomicETH"),
            (self.aeth, "AETH"),
            (self.atomic_ack_eth, "AtomicAckETH"),
            (self.immdt, "ImmDt"),
            (self.ieth, "IETH"),
        ]
        .into_iter()
        .filter_map(|(present, name)| present.then_some(name))
    }
}

/// RETH: the remote buffer of an RDMA WRITE or READ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reth {
    /// Remote virtual address.
    pub va: u64,
    /// R_Key: names the responder's registered region the access is checked against.
    pub rkey: u32,
    /// DMA length in bytes.
    pub dma_len: u32,
}

/// AETH: acknowledge syndrome and message sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Aeth {
    /// Syndrome: bits 7-5 say ACK (000), RNR NAK (001) or NAK (011); bits 4-0 the detail.
    pub syndrome: u8,
    /// Message sequence number (24 bits).
    pub msn: u32,
}

/// What an AETH syndrome says (IBA 9.7.5.1, table 44).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckKind {
    /// Positive acknowledge; the low five bits are the credit count.
    Ack,
    /// Receiver not ready; the low five bits encode the RNR timer.
    RnrNak,
    /// PSN sequence error: the requester must go back to the PSN in the BTH.
    NakPsnSequenceError,
    /// NAK code 1: invalid request (an opcode or length the responder does not support).
    NakInvalidRequest,
    /// NAK code 2: remote access error (bad R_Key, address or access rights).
    NakRemoteAccessError,
    /// NAK code 3: remote operational error (the responder could not complete it).
    NakRemoteOperationalError,
    /// NAK code 4: invalid RD request.
    NakInvalidRdRequest,
    /// Bits 7-5 010 or 1xx, or a NAK code above 4: reserved in IBA.
    Reserved,
}

impl Aeth {
    /// Decodes the syndrome.
    pub fn kind(&self) -> AckKind {
        match (self.syndrome >> 5, self.syndrome & 0x1f) {
            (0b000, _) => AckKind::Ack,
            (0b001, _) => AckKind::RnrNak,
            (0b011, 0) => AckKind::NakPsnSequenceError,
            (0b011, 1) => AckKind::NakInvalidRequest,
            (0b011, 2) => AckKind::NakRemoteAccessError,
            (0b011, 3) => AckKind::NakRemoteOperationalError,
            (0b011, 4) => AckKind::NakInvalidRdRequest,
            _ => AckKind::Reserved,
        }
    }
}

/// DETH: queue key and source QP of a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Deth {
    /// Q_Key: the receiving datagram QP accepts the packet only if it matches its own.
    pub qkey: u32,
    /// Source QP (24 bits).
    pub src_qp: u32,
}

/// AtomicETH: the operands of CmpSwap / FetchAdd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AtomicEth {
    /// Remote virtual address (8-byte aligned).
    pub va: u64,
    /// R_Key of the responder's region holding `va`.
    pub rkey: u32,
    /// Swap (CmpSwap) or add (FetchAdd) data.
    pub swap_add: u64,
    /// Compare data (CmpSwap).
    pub compare: u64,
}

/// The extended headers of one packet, as plain fields; `None` where the opcode has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtHeaders {
    /// RDETH: end-to-end context (24 bits).
    pub rdeth: Option<u32>,
    /// DETH: Q_Key and source QP (UD, RD requests).
    pub deth: Option<Deth>,
    /// XRCETH: XRC shared receive queue (24 bits).
    pub xrceth: Option<u32>,
    /// FETH: flush type and selectivity (the 32-bit word).
    pub feth: Option<u32>,
    /// RETH: remote address, R_Key and DMA length (WRITE First/Only, READ Request).
    pub reth: Option<Reth>,
    /// AtomicETH: the operands of CmpSwap / FetchAdd.
    pub atomic_eth: Option<AtomicEth>,
    /// AETH: syndrome and MSN (acknowledges, READ Response First/Last/Only).
    pub aeth: Option<Aeth>,
    /// AtomicAckETH: the original remote data.
    pub atomic_ack_eth: Option<u64>,
    /// ImmDt: 32 bits handed to the responder in its completion (... with Immediate).
    pub immdt: Option<u32>,
    /// IETH: the R_Key to invalidate.
    pub ieth: Option<u32>,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(array(b, at))
}

fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(array(b, at))
}

impl ExtHeaders {
    /// The layout these headers fill.
    #[inline]
    pub fn layout(&self) -> Layout {
        Layout {
            rdeth: self.rdeth.is_some(),
            deth: self.deth.is_some(),
            xrceth: self.xrceth.is_some(),
            feth: self.feth.is_some(),
            reth: self.reth.is_some(),
            atomic_eth: self.atomic_eth.is_some(),
            aeth: self.aeth.is_some(),
            atomic_ack_eth: self.atomic_ack_eth.is_some(),
            immdt: self.immdt.is_some(),
            ieth: self.ieth.is_some(),
        }
    }

    /// Parses the headers `layout` names from the start of `b` (the bytes after the BTH,
    /// ICRC excluded); `offset` is where `b` starts in the frame, for error messages.
    /// Inlined, so that the headers are built where the caller keeps them: built out of
    /// line and moved, they were read back with wide loads right after the narrow stores
    /// that wrote them, a store-forwarding stall on every frame an endpoint receives.
    #[inline(always)]
    pub fn parse(layout: Layout, b: &[u8], offset: usize) -> Result<ExtHeaders, ParseError> {
        Self::parse_sized(layout, layout.len(), b, offset)
    }

    /// [`parse`](Self::parse) of the headers `opcode` carries.
    #[inline(always)]
    pub fn parse_for(opcode: Opcode, b: &[u8], offset: usize) -> Result<ExtHeaders, ParseError> {
        Self::parse_sized(Layout::of(opcode), Layout::len_of(opcode), b, offset)
    }

    /// `len` is `layout.len()`.
    #[inline(always)]
    fn parse_sized(
        layout: Layout,
        len: usize,
        b: &[u8],
        offset: usize,
    ) -> Result<ExtHeaders, ParseError> {
        if len == 0 {
            // Most frames (WRITE Middle, a CNP) carry none.
            return Ok(ExtHeaders::default());
        }
        if b.len() < len {
            return Err(super::truncated(
                Layer::ExtHeaders,
                offset,
                len,
                offset + b.len(),
            ));
        }
        let mut at = 0;
        let mut take = |present: bool, n: usize| {
            let start = at;
            at += if present { n } else { 0 };
            present.then_some(start)
        };
        Ok(ExtHeaders {
            rdeth: take(layout.rdeth, RDETH_LEN).map(|i| be24(array(b, i + 1))),
            deth: take(layout.deth, DETH_LEN).map(|i| Deth {
                qkey: be32(b, i),
                src_qp: be24(array(b, i + 5)),
            }),
            xrceth: take(layout.xrceth, XRCETH_LEN).map(|i| be24(array(b, i + 1))),
            feth: take(layout.feth, FETH_LEN).map(|i| be32(b, i)),
            reth: take(layout.reth, RETH_LEN).map(|i| Reth {
                va: be64(b, i),
                rkey: be32(b, i + 8),
                dma_len: be32(b, i + 12),
            }),
            atomic_eth: take(layout.atomic_eth, ATOMIC_ETH_LEN).map(|i| AtomicEth {
                va: be64(b, i),
                rkey: be32(b, i + 8),
                swap_add: be64(b, i + 12),
                compare: be64(b, i + 20),
            }),
            aeth: take(layout.aeth, AETH_LEN).map(|i| Aeth {
                syndrome: b[i],
                msn: be24(array(b, i + 1)),
            }),
            atomic_ack_eth: take(layout.atomic_ack_eth, ATOMIC_ACK_ETH_LEN).map(|i| be64(b, i)),
            immdt: take(layout.immdt, IMMDT_LEN).map(|i| be32(b, i)),
            ieth: take(layout.ieth, IETH_LEN).map(|i| be32(b, i)),
        })
    }

    /// Checks that these headers are exactly what `opcode` carries.
    #[inline]
    pub fn check_for(&self, opcode: Opcode) -> Result<(), BuildError> {
        // Every frame built asks: the headers present as bits against the opcode's, one
        // comparison rather than ten.
        if self.layout().bits() == BITS[usize::from(opcode.0)] {
            return Ok(());
        }
        self.mismatch(opcode)
    }

    /// [`check_for`](Self::check_for)'s error.
    #[cold]
    fn mismatch(&self, opcode: Opcode) -> Result<(), BuildError> {
        let want = opcode.layout();
        let have = self.layout();
        debug_assert_ne!(want, have, "check_for's bits agree with the layouts");
        let problem = if have.len() < want.len() {
            "needs extended headers that are missing"
        } else {
            "does not carry some of the extended headers given"
        };
        Err(BuildError::HeadersMismatch {
            opcode: opcode.0,
            name: opcode.name(),
            problem,
        })
    }

    /// Writes the headers present into `buf`, in wire order; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, BuildError> {
        need(buf, self.layout().len())?;
        Ok(self.put(buf))
    }

    /// [`emit`](Self::emit) into a buffer known to be large enough (it panics otherwise).
    #[inline]
    pub(crate) fn put(&self, buf: &mut [u8]) -> usize {
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            buf[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        let mut word24 = [0u8; 4];
        if let Some(ctx) = self.rdeth {
            put_be24(&mut word24[1..], ctx);
            put(&word24);
        }
        if let Some(d) = self.deth {
            put(&d.qkey.to_be_bytes());
            let mut src = [0u8; 4];
            put_be24(&mut src[1..], d.src_qp);
            put(&src);
        }
        if let Some(srq) = self.xrceth {
            put_be24(&mut word24[1..], srq);
            put(&word24);
        }
        if let Some(feth) = self.feth {
            put(&feth.to_be_bytes());
        }
        if let Some(r) = self.reth {
            put(&r.va.to_be_bytes());
            put(&r.rkey.to_be_bytes());
            put(&r.dma_len.to_be_bytes());
        }
        if let Some(a) = self.atomic_eth {
            put(&a.va.to_be_bytes());
            put(&a.rkey.to_be_bytes());
            put(&a.swap_add.to_be_bytes());
            put(&a.compare.to_be_bytes());
        }
        if let Some(a) = self.aeth {
            let mut w = [a.syndrome, 0, 0, 0];
            put_be24(&mut w[1..], a.msn);
            put(&w);
        }
        if let Some(orig) = self.atomic_ack_eth {
            put(&orig.to_be_bytes());
        }
        if let Some(imm) = self.immdt {
            put(&imm.to_be_bytes());
        }
        if let Some(rkey) = self.ieth {
            put(&rkey.to_be_bytes());
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_length_table_and_parse_for_agree_with_the_layouts() {
        let bytes: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
        for op in 0..=255u8 {
            let opcode = Opcode(op);
            let layout = Layout::of(opcode);
            assert_eq!(Layout::len_of(opcode), layout.len(), "opcode {op:#04x}");
            assert_eq!(
                ExtHeaders::parse_for(opcode, &bytes, 0),
                ExtHeaders::parse(layout, &bytes, 0),
                "opcode {op:#04x}"
            );
            let h = ExtHeaders::parse_for(opcode, &bytes, 0).unwrap();
            let (mut emitted, mut put) = ([0u8; 64], [0u8; 64]);
            assert_eq!(h.emit(&mut emitted), Ok(h.put(&mut put)));
            assert_eq!(emitted, put);
        }
    }

    /// Header sizes as IBA vol. 1 section 9.3 gives them (RDETH 4, DETH 8, XRCETH 4,
    /// RETH 16, AtomicETH 28, AETH 4, AtomicAckETH 8, ImmDt 4, IETH 4, FETH 4), written
    /// as numbers here rather than the module's constants.
    #[test]
    fn layouts_follow_iba_table_38() {
        let len = |op: u8| Opcode(op).layout().len();
        assert_eq!(len(0x01), 0); // RC SEND Middle
        assert_eq!(len(0x0b), 16 + 4); // RC WRITE Only Imm: RETH, ImmDt
        assert_eq!(len(0x0e), 0); // RC READ Response Middle
        assert_eq!(len(0x0f), 4); // RC READ Response Last: AETH
        assert_eq!(len(0x12), 4 + 8); // RC ATOMIC ACK: AETH, AtomicAckETH
        assert_eq!(len(0x13), 28); // RC CmpSwap: AtomicETH
        assert_eq!(len(0x17), 4); // RC SEND Only Inv: IETH
        assert_eq!(len(0x1c), 4 + 16); // RC FLUSH: FETH, RETH
        assert_eq!(len(0x1d), 16); // RC ATOMIC WRITE: RETH (its 8 data bytes are payload)
        assert_eq!(len(0x65), 8 + 4); // UD SEND Only Imm: DETH, ImmDt
        assert_eq!(len(0x4a), 4 + 8 + 16); // RD WRITE Only: RDETH, DETH, RETH
        assert_eq!(len(0x51), 4 + 4); // RD ACK: RDETH, AETH
        assert_eq!(len(0x55), 4 + 8); // RD RESYNC: RDETH, DETH
        assert_eq!(len(0xaa), 4 + 16); // XRC WRITE Only: XRCETH, RETH
        assert_eq!(len(0xb1), 4); // XRC ACK: AETH
        assert_eq!(len(0x81), 0); // CNP
        assert_eq!(len(0x15), 0); // reserved
    }

    /// Wire order: RDETH, DETH, then RETH for an RD WRITE Only.
    #[test]
    fn headers_are_emitted_in_wire_order() {
        let h = ExtHeaders {
            rdeth: Some(0x0a0b0c),
            deth: Some(Deth {
                qkey: 0x1122_3344,
                src_qp: 0x55_6677,
            }),
            reth: Some(Reth {
                va: 0x8899_aabb_ccdd_eeff,
                rkey: 0x0102_0304,
                dma_len: 0x0506_0708,
            }),
            ..ExtHeaders::default()
        };
        let mut buf = [0u8; 28];
        h.emit(&mut buf).unwrap();
        let expected = [
            0, 0x0a, 0x0b, 0x0c, // RDETH: reserved, EE context
            0x11, 0x22, 0x33, 0x44, 0, 0x55, 0x66, 0x77, // DETH: Q_Key, reserved, src QP
            0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, // RETH: VA
            1, 2, 3, 4, 5, 6, 7, 8, // R_Key, DMA length
        ];
        assert_eq!(buf, expected);
        assert_eq!(ExtHeaders::parse(Opcode(0x4a).layout(), &buf, 0), Ok(h));
    }

    #[test]
    fn emit_parse_round_trip() {
        let h = ExtHeaders {
            reth: Some(Reth {
                va: 0x0000_aaab_09dd_5000,
                rkey: 0x2d5,
                dma_len: 18,
            }),
            immdt: Some(0xdead_beef),
            ..ExtHeaders::default()
        };
        h.check_for(Opcode::RC_WRITE_ONLY_IMM).unwrap();
        assert!(h.check_for(Opcode::RC_WRITE_ONLY).is_err());
        let mut buf = [0u8; 20];
        assert_eq!(h.emit(&mut buf), Ok(20));
        assert!(h.emit(&mut buf[..19]).is_err());
        assert_eq!(ExtHeaders::parse(h.layout(), &buf, 0).unwrap(), h);
        assert!(ExtHeaders::parse(h.layout(), &buf[..19], 0).is_err());
    }

    #[test]
    fn aeth_syndromes() {
        let kind = |s| {
            Aeth {
                syndrome: s,
                msn: 0,
            }
            .kind()
        };
        assert_eq!(kind(0x1f), AckKind::Ack);
        assert_eq!(kind(0x20), AckKind::RnrNak);
        assert_eq!(kind(0x60), AckKind::NakPsnSequenceError);
        assert_eq!(kind(0x63), AckKind::NakRemoteOperationalError);
        assert_eq!(kind(0x40), AckKind::Reserved);
    }
}
