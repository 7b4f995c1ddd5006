"""Tokens and templates as the reference product's public shop clients make them.

The Magento 2 module (``risscsolutions/printformer-magento-2``) and the editor demo
(``risscsolutions/printformer-editor-demo``) both sign with lcobucci/jwt 4
(``Configuration::forSymmetricSigner(new Sha256(), ...)``): the header is
``{"typ": "JWT", "alg": "HS256"}`` plus any ``withHeader`` entries, and dates are written by
``MicrosecondBasedDateConversion`` (a float with microseconds, an int when they are zero).
This module writes those bytes itself rather than through a JWT library, so that the tokens
are the clients' and not a library's idea of them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

from test_editor import DATA_KEYS, SPEC

from pps.platform.models import Client, Template
from pps.platform.repository.sql import SqlRepository

__all__ = ["DATA_KEYS", "lcobucci_date", "lcobucci_token", "php_base64", "renderable_template"]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _php_json(value: Any) -> bytes:
    # json_encode(..., JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE), as lcobucci/jwt 4.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def lcobucci_date(seconds: float) -> float | int:
    """``MicrosecondBasedDateConversion``: ``U.u`` as a float, an int without microseconds."""
    whole = int(seconds)
    micro = round((seconds - whole) * 1_000_000)
    return whole if micro == 0 else float(f"{whole}.{micro:06d}")


def lcobucci_token(key: str, claims: dict[str, Any], headers: dict[str, Any] | None = None) -> str:
    """``$builder->...->getToken($signer, InMemory::plainText($key))->toString()``."""
    header = {"typ": "JWT", "alg": "HS256", **(headers or {})}
    signing_input = f"{_b64url(_php_json(header))}.{_b64url(_php_json(claims))}"
    signature = hmac.new(key.encode(), signing_input.encode("ascii"), hashlib.sha256).digest()
    return f"{signing_input}.{_b64url(signature)}"


def now_and_in(days: float) -> tuple[float | int, float | int]:
    """``issuedAt(new DateTimeImmutable())`` and ``expiresAt(... + P<days>D)``."""
    now = time.time()
    return lcobucci_date(now), lcobucci_date(now + days * 86400)


def php_base64(url: str) -> str:
    """PHP's ``base64_encode``: standard alphabet with padding."""
    return base64.b64encode(url.encode()).decode("ascii")


def renderable_template(repo: SqlRepository, client: Client, name: str = "Flyer A5") -> Template:
    """A two-page template pps can render (the editor tests' spec)."""
    return repo.create_template(
        client.identifier,
        name=name,
        data_keys=DATA_KEYS,
        custom_attributes={"sku": "FLY-A5"},
        page_count=2,
        spec=SPEC,
    )
