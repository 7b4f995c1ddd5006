"""What pps takes for a host name: one rule for redirect targets and allowed hosts. No Flask.

ASCII labels of 1 to 63 characters (letters, digits, ``-`` and ``_``), at most 253 in all,
lower case, no trailing dot: what IDNA encodes without failing and what URL parsers hand
back as a URL's host. Internationalised names come as their ``xn--`` form.
"""

from __future__ import annotations

import ipaddress
import re

__all__ = ["is_host", "is_host_name"]

_HOST_NAME = re.compile(r"[a-z0-9][a-z0-9_\-]{0,62}(?:\.[a-z0-9_\-]{1,63})*")
_MAX_HOST_NAME = 253


def is_host_name(name: str) -> bool:
    """Whether ``name`` is a host name by the rule above (not an IP literal)."""
    return len(name) <= _MAX_HOST_NAME and _HOST_NAME.fullmatch(name) is not None


def is_host(name: str) -> bool:
    """A host name, or an IPv4 or IPv6 literal (without brackets)."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return is_host_name(name)
    return True
