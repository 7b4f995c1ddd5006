"""Identifier and secret generation in the formats the reference product's clients expect."""

from __future__ import annotations

import base64
import itertools
import os
import secrets
import ssl
import string

_MIXED = string.ascii_letters + string.digits
_LOWER = string.ascii_lowercase + string.digits


def _random(alphabet: str, length: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


def client_identifier() -> str:
    """8 mixed-case letters and digits."""
    return _random(_MIXED, 8)


def user_identifier() -> str:
    """8 mixed-case letters and digits."""
    return _random(_MIXED, 8)


def template_identifier() -> str:
    """8 letters and digits."""
    return _random(_MIXED, 8)


def draft_hash() -> str:
    """32 lowercase letters and digits; it is the ``<draftId>`` of every URL."""
    return _random(_LOWER, 32)


def api_key() -> str:
    """48 URL-safe characters: more than the 256 bits lcobucci/jwt 5 demands of HMAC keys."""
    return secrets.token_urlsafe(36)


def processing_id() -> str:
    """32 hex digits."""
    return secrets.token_hex(16)


def file_identifier() -> str:
    """An uploaded file (``POST /api-ext/file``): 32 lowercase letters and digits."""
    return _random(_LOWER, 32)


def secret_token(nbytes: int) -> str:
    """``nbytes`` bytes from a CSPRNG as URL-safe base64 text, as ``secrets.token_urlsafe``
    writes them: for the secrets made while a request is served (login handoff codes, file
    links, the editor's form token).

    The bytes come from OpenSSL's DRBG (``ssl.RAND_bytes``: seeded from the kernel, reseeded
    in a forked child; it raises rather than answer unseeded) instead of ``os.urandom``.
    Why: ``os.urandom`` is a ``getrandom`` system call around which CPython lets go of the
    GIL, and in a gunicorn worker whose other threads wait for the GIL that hands the CPU
    over mid-request. Measured with ``bench/wsgi_auth.py --threads 4`` (4 threads, as a
    worker of the deploy config), before and after: a login's one draw cost about 2 context
    switches (9.3 against 7.5 per login) and 15-20 µs of CPU; ``RAND_bytes`` draws in user
    space and keeps the GIL.
    """
    return base64.urlsafe_b64encode(ssl.RAND_bytes(nbytes)).rstrip(b"=").decode("ascii")


def link_token() -> str:
    """Unguessable name of a short-lived file link (192 bits)."""
    return secret_token(24)


class _ProcessTags:
    """A random prefix drawn once per process and a counter; drawn anew in a forked child."""

    def __init__(self) -> None:
        self.renew()

    def renew(self) -> None:
        self.prefix = secrets.token_hex(8)
        self.counter = itertools.count()


_TAGS = _ProcessTags()
if hasattr(os, "register_at_fork"):  # gunicorn forks its workers from the arbiter
    os.register_at_fork(after_in_child=_TAGS.renew)


def unique_tag() -> str:
    """A value no other call makes, in this process or any other: for request ids and
    claim tokens, which must be unique but need not be secret (never for a secret).

    Cheaper than ``secrets``: no system call per value, so no hand-over of the GIL to
    another thread in the middle of a request.
    """
    return f"{_TAGS.prefix}{next(_TAGS.counter):012x}"  # 28 hex digits, whatever the count
