"""HMAC-SHA256 under a fixed key, with the key's two padded blocks hashed once.

Every ``/auth`` computes two MACs (the token's signature, the session cookie's) and every
file URL one. ``hmac.digest`` hands each to OpenSSL 3's one-shot HMAC, which looks up its
MAC and digest implementations and sets up three contexts per call; under load that cost
more than the hashing. HMAC (RFC 2104) is ``H((K ^ opad) || H((K ^ ipad) || m))``: the
two keyed prefixes are the same for every message, so :class:`HmacSha256` hashes them once
and copies the two hash states per message, which is what ``hmac.HMAC.copy`` does too.
The MACs are byte for byte those of ``hmac.digest`` (``tests/test_hmac_sha256.py``).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

__all__ = ["HmacSha256", "hmac_sha256_for"]

_BLOCK_SIZE = 64  # SHA-256's block size in bytes
_IPAD = bytes(byte ^ 0x36 for byte in range(256))
_OPAD = bytes(byte ^ 0x5C for byte in range(256))


class HmacSha256:
    """``digest(message)`` is ``hmac.digest(key, message, "sha256")``."""

    __slots__ = ("_inner", "_outer")

    def __init__(self, key: bytes) -> None:
        if len(key) > _BLOCK_SIZE:
            key = hashlib.sha256(key).digest()
        block = key.ljust(_BLOCK_SIZE, b"\0")
        self._inner = hashlib.sha256(block.translate(_IPAD))
        self._outer = hashlib.sha256(block.translate(_OPAD))

    def digest(self, message: bytes) -> bytes:
        inner = self._inner.copy()
        inner.update(message)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()


@lru_cache(maxsize=256)
def hmac_sha256_for(key: bytes) -> HmacSha256:
    """The :class:`HmacSha256` of ``key``, kept for the few keys a process signs with.

    Clients' API keys change only by rotation, so a bounded cache keyed by the key itself
    serves every token of a client after its first; a rotated-out key just ages out.
    """
    return HmacSha256(key)
