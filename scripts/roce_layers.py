"""Scapy layers that scapy.contrib.roce lacks (RETH, DETH, ImmDt), bound after BTH.

Shared by gen_pcaps.py and icrc_check.py.  Importing this module also loads
scapy.contrib.roce (BTH, AETH, CNPPadding) and scapy.contrib.mac_control.

Header layout follows IBA Table 38 for the RC opcodes and the two UD opcodes:

    0x03 SEND Last w/Imm          ImmDt
    0x05 SEND Only w/Imm          ImmDt
    0x06 RDMA WRITE First         RETH
    0x09 RDMA WRITE Last w/Imm    ImmDt
    0x0A RDMA WRITE Only          RETH
    0x0B RDMA WRITE Only w/Imm    RETH, ImmDt
    0x0C RDMA READ Request        RETH
    0x0D READ Response First      AETH
    0x0F READ Response Last       AETH
    0x10 READ Response Only       AETH
    0x11 ACKNOWLEDGE              AETH          (bound by scapy itself)
    0x64 UD SEND Only             DETH
    0x65 UD SEND Only w/Imm       DETH, ImmDt
    0x81 CNP                      CNPPadding    (bound by scapy itself)

Every other opcode carries payload directly after the BTH.

The BTH ICRC is a scapy FCSField (a trailer of the whole packet): on build with
icrc=None, BTH.post_build computes it over BTH + everything built after it, so
these extra layers are covered without any special handling.
"""

from scapy.fields import BitField, ByteField, IntField, XIntField, XLongField
from scapy.packet import Packet, bind_layers
from scapy.contrib.roce import BTH, AETH, CNPPadding  # noqa: F401  (re-exported)
import scapy.contrib.mac_control  # noqa: F401  (binds Ether type 0x8808)

# Opcodes whose first extension header is followed by an ImmDt.
_RETH_THEN_IMM = {0x0B}
_DETH_THEN_IMM = {0x65}


def _bth_opcode(layer):
    """Opcode of the BTH this extension header sits on, or None."""
    under = layer.underlayer
    while under is not None and not isinstance(under, BTH):
        under = under.underlayer
    return None if under is None else under.opcode


class ImmDt(Packet):
    name = "ImmDt"
    fields_desc = [XIntField("imm", 0)]


class RETH(Packet):
    name = "RETH"
    fields_desc = [
        XLongField("va", 0),
        XIntField("rkey", 0),
        IntField("dmalen", 0),
    ]

    def guess_payload_class(self, payload):
        if _bth_opcode(self) in _RETH_THEN_IMM:
            return ImmDt
        return Packet.guess_payload_class(self, payload)


class DETH(Packet):
    name = "DETH"
    fields_desc = [
        XIntField("qkey", 0),
        ByteField("reserved", 0),
        BitField("srcqp", 0, 24),
    ]

    def guess_payload_class(self, payload):
        if _bth_opcode(self) in _DETH_THEN_IMM:
            return ImmDt
        return Packet.guess_payload_class(self, payload)


for _op in (0x03, 0x05, 0x09):
    bind_layers(BTH, ImmDt, opcode=_op)
for _op in (0x06, 0x0A, 0x0B, 0x0C):
    bind_layers(BTH, RETH, opcode=_op)
for _op in (0x0D, 0x0F, 0x10):
    bind_layers(BTH, AETH, opcode=_op)
for _op in (0x64, 0x65):
    bind_layers(BTH, DETH, opcode=_op)

# Layers that are transport headers (not payload) when counting payload bytes.
TRANSPORT_HEADERS = (RETH, AETH, DETH, ImmDt)
