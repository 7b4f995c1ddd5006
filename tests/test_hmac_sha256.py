"""HmacSha256 must be HMAC-SHA256 exactly: tokens and session cookies are checked with it."""

from __future__ import annotations

import hmac
import random

import pytest

from pps.hmac_sha256 import HmacSha256, hmac_sha256_for


@pytest.mark.parametrize("key_length", [0, 1, 32, 48, 63, 64, 65, 128, 1000])
def test_equals_the_standard_library_for_every_key_length(key_length: int) -> None:
    rng = random.Random(key_length)
    key = rng.randbytes(key_length)
    mac = HmacSha256(key)
    for length in (0, 1, 55, 56, 63, 64, 65, 300, 5000):
        message = rng.randbytes(length)
        assert mac.digest(message) == hmac.digest(key, message, "sha256")


def test_one_key_gives_the_same_mac_for_every_use_of_a_message() -> None:
    # The keyed states are copied per message, never updated in place.
    mac = HmacSha256(b"secret")
    first = mac.digest(b"a")
    mac.digest(b"something else entirely")
    assert mac.digest(b"a") == first == hmac.digest(b"secret", b"a", "sha256")


def test_different_keys_give_different_macs() -> None:
    assert HmacSha256(b"key-1").digest(b"m") != HmacSha256(b"key-2").digest(b"m")
    # A long key is hashed first, as RFC 2104 says, not cut to the block size.
    long_key = b"x" * 64 + b"tail"
    assert HmacSha256(long_key).digest(b"m") != HmacSha256(b"x" * 64).digest(b"m")


def test_keyed_macs_are_kept_per_key() -> None:
    assert hmac_sha256_for(b"shared key") is hmac_sha256_for(b"shared key")
    assert hmac_sha256_for(b"shared key") is not hmac_sha256_for(b"other key")
