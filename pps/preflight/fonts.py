"""Whether a font's licence lets it be embedded: the OS/2 table's ``fsType``.

Read by hand from the sfnt table directory (a dozen bytes at fixed offsets, OpenType spec
"OS/2 — fsType"): pps ships no font library besides reportlab, whose parser refuses such
fonts outright instead of saying why.
"""

from __future__ import annotations

import struct

__all__ = ["RESTRICTED_LICENSE", "embedding_restricted", "fs_type"]

#: fsType bits 0-3 equal to 2: "Restricted License embedding", the font must not be embedded.
RESTRICTED_LICENSE = 0x0002


def fs_type(data: bytes) -> int | None:
    """The ``fsType`` of a TrueType/OpenType font file; None when it has no OS/2 table."""
    if len(data) < 12 or data[:4] not in (b"\x00\x01\x00\x00", b"true", b"OTTO"):
        return None
    (count,) = struct.unpack_from(">H", data, 4)
    for index in range(count):
        record = 12 + 16 * index
        if record + 16 > len(data):
            return None
        tag, _checksum, offset, length = struct.unpack_from(">4sIII", data, record)
        if tag == b"OS/2":
            if length < 10 or offset + 10 > len(data):
                return None
            (value,) = struct.unpack_from(">H", data, offset + 8)
            return int(value)
    return None


def embedding_restricted(data: bytes) -> bool:
    """Whether the font's licence forbids embedding it (fsType = Restricted License)."""
    value = fs_type(data)
    return value is not None and value & 0x000F == RESTRICTED_LICENSE
