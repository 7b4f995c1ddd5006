"""Where pps may send requests a shop asked for: one rule for notifications, webhooks and ACL.

Shops name URLs pps then calls (``stateChangedNotifyUrl``, webhooks, the remote ACL), so
pps must not become a way to reach what only pps can reach (server-side request forgery):

* only ``http`` and ``https``, no user name or password in the URL; a path or query beyond
  ASCII is sent percent-encoded as UTF-8, as browsers send it;
* every address the host resolves to is judged by :func:`address_problem`: each IANA
  special-purpose range (the IPv4 and IPv6 Special-Purpose Address Registries, RFC 6890
  and successors) is refused, from an explicit table below, with ``ipaddress``'s
  ``is_global`` as the net under it for anything the table misses. Loopback and private-use
  ranges (RFC 1918, CGNAT, unique-local) are *relaxable*: allowed with
  ``PPS_NOTIFY_ALLOW_PRIVATE``, or for the host names a client's operator allowed
  (``pps client allow-host``); everything else there is refused always;
* IPv6 forms that carry an IPv4 address (IPv4-mapped, 6to4, NAT64) are judged by the IPv4
  address they lead to; IPv4-compatible, IPv4-translated (SIIT) and Teredo addresses, and
  the rest of the IETF's reserved ``::/8``, are refused outright;
* the check runs when the URL is given *and again at every send*, and the connection goes to
  the very address that was checked (Host header and TLS name stay the URL's host), so a
  DNS answer that changes in between (DNS rebinding) cannot redirect it;
* redirects are never followed (``http.client`` follows none) and proxies from the
  environment are ignored;
* a body is read only up to the size its caller takes (:func:`get`: a customer's PDF up to
  ``PPS_MAX_UPLOAD_BYTES``), and reading stops as soon as it is known to be longer;
* one request has one deadline for everything (the name lookup, connect, TLS handshake,
  send, every read): a receiver that trickles its answer a byte at a time is cut off when
  the deadline passes, not allowed another timeout per read, and a name server that never
  answers costs the deadline, not the system resolver's own timeout
  (:mod:`pps.platform.name_lookup`); checking a URL a shop gives waits for the lookup at
  most the ``timeout`` the caller passes;
* a name that does not resolve (NXDOMAIN, a failing name server) is refused where the URL
  is given, but at send time it is a failed attempt like a connection error
  (:class:`RequestFailed`), which the caller may retry; a name that resolves to a refused
  address is refused always (:class:`ForbiddenTarget`).
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from urllib.parse import SplitResult, quote, urlsplit

from pps.platform.name_lookup import LookupTimeout, Resolver, default_resolver

__all__ = [
    "ADDRESS_RULES",
    "SPECIAL_PURPOSE",
    "ForbiddenTarget",
    "IPAddress",
    "NameNotResolved",
    "NotResolvedInTime",
    "RequestFailed",
    "Response",
    "ResponseTooLarge",
    "Target",
    "address_problem",
    "check_url",
    "get",
    "parse_target",
    "post",
    "resolve",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_URL_LENGTH = 2000
#: The rule above in one sentence, for the API reference of every URL a shop gives.
ADDRESS_RULES = (
    "Loopback and private (RFC 1918, CGNAT, unique-local) addresses are refused (422) "
    "unless the operator allows them (PPS_NOTIFY_ALLOW_PRIVATE, or `pps client allow-host` "
    "for this client's host); link-local and every other special-purpose address always. "
    "Checked now and again at every send."
)
#: Largest answer body read; receivers' answers are not used beyond the ACL's small JSON.
MAX_RESPONSE_BYTES = 256 * 1024
#: Every printable ASCII character: kept as it is in a request target; only the characters
#: beyond ASCII are percent-encoded.
_PRINTABLE_ASCII = "".join(chr(code) for code in range(0x21, 0x7F))


class ForbiddenTarget(ValueError):
    """The URL may not be called; the message says why, for the shop's developer."""


class NameNotResolved(ForbiddenTarget):
    """The host's name did not resolve: no such name (NXDOMAIN), no address, or the name
    server failed (``EAI_AGAIN``). Refused where a URL is given; at send time a failed
    attempt like a connection error, retried, since a shop's DNS may be back in a minute."""


class NotResolvedInTime(ForbiddenTarget):
    """The host's name did not resolve within the time there was (or every lookup thread
    waits on a silent name server): the URL cannot be judged now, which may pass."""


class RequestFailed(Exception):
    """The request did not get an answer (network error, deadline). The message may name
    addresses (for logs); ``timed_out`` and ``cause`` (the network error's type) let a
    caller say what happened without them."""

    def __init__(
        self, message: str, *, timed_out: bool = False, cause: type[BaseException] | None = None
    ) -> None:
        super().__init__(message)
        self.timed_out = timed_out
        self.cause = cause


@dataclass(frozen=True)
class _Range:
    network: IPNetwork
    problem: str
    relaxable: bool = False


def _r(cidr: str, problem: str, relaxable: bool = False) -> _Range:
    return _Range(ipaddress.ip_network(cidr), problem, relaxable)


#: The special-purpose registries, most specific entries first (the first match names the
#: problem). Relaxable entries are the ones an intranet shop may legitimately live in.
SPECIAL_PURPOSE: tuple[_Range, ...] = (
    # IPv4 (iana-ipv4-special-registry), plus multicast and the rest of class E.
    _r("0.0.0.0/32", "is unspecified"),
    _r("0.0.0.0/8", "is unspecified ('this network')"),
    _r("10.0.0.0/8", "is a private address", relaxable=True),
    _r("100.64.0.0/10", "is a private address (shared, CGNAT)", relaxable=True),
    _r("127.0.0.0/8", "is a loopback address", relaxable=True),
    _r("169.254.0.0/16", "is link-local"),
    _r("172.16.0.0/12", "is a private address", relaxable=True),
    _r("192.0.0.0/24", "is special-purpose (IETF protocol assignments, DS-Lite, NAT64)"),
    _r("192.0.2.0/24", "is reserved for documentation (TEST-NET-1)"),
    _r("192.31.196.0/24", "is special-purpose (AS112)"),
    _r("192.52.193.0/24", "is special-purpose (AMT)"),
    _r("192.88.99.0/24", "is special-purpose (deprecated 6to4 relay anycast)"),
    _r("192.168.0.0/16", "is a private address", relaxable=True),
    _r("192.175.48.0/24", "is special-purpose (AS112 direct delegation)"),
    _r("198.18.0.0/15", "is reserved for benchmarking"),
    _r("198.51.100.0/24", "is reserved for documentation (TEST-NET-2)"),
    _r("203.0.113.0/24", "is reserved for documentation (TEST-NET-3)"),
    _r("224.0.0.0/4", "is a multicast address"),
    _r("255.255.255.255/32", "is reserved (limited broadcast)"),
    _r("240.0.0.0/4", "is reserved"),
    # IPv6 (iana-ipv6-special-registry). Forms carrying IPv4 are handled before this table.
    _r("::/128", "is unspecified"),
    _r("::1/128", "is a loopback address", relaxable=True),
    _r("::/96", "is an IPv4-compatible address (deprecated)"),
    _r("64:ff9b:1::/48", "is special-purpose (local-use IPv4/IPv6 translation)"),
    _r("::ffff:0:0:0/96", "is an IPv4-translated address (SIIT)"),
    # The rest of ::/8 is reserved by the IETF (RFC 4291): nothing there is reachable,
    # though ``is_global`` calls it global.
    _r("::/8", "is reserved by the IETF"),
    _r("100::/64", "is special-purpose (discard-only)"),
    _r("100:0:0:1::/64", "is special-purpose (dummy prefix)"),
    _r("2001::/32", "is a Teredo tunnelling address"),
    _r("2001:db8::/32", "is reserved for documentation"),
    _r("2001::/23", "is special-purpose (IETF protocol assignments: benchmarking, ORCHID, ...)"),
    _r("2620:4f:8000::/48", "is special-purpose (AS112 direct delegation)"),
    _r("3fff::/20", "is reserved for documentation"),
    _r("5f00::/16", "is special-purpose (SRv6 SIDs)"),
    _r("fc00::/7", "is a private address (unique-local)", relaxable=True),
    _r("fe80::/10", "is link-local"),
    _r("fec0::/10", "is reserved (deprecated site-local)"),
    _r("ff00::/8", "is a multicast address"),
)

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address packets to ``address`` end up at: IPv4-mapped, 6to4, NAT64."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_problem(address: IPAddress, allow_private: bool) -> str | None:
    """Why ``address`` may not be connected to, or None when it may.

    ``allow_private`` lifts only the relaxable entries (loopback and private use).
    """
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return address_problem(embedded, allow_private)
    for entry in SPECIAL_PURPOSE:
        if address.version == entry.network.version and address in entry.network:
            if entry.relaxable and allow_private:
                return None
            return entry.problem
    # The net under the table: whatever the standard library knows is not global.
    if not address.is_global:
        return "is not a globally reachable address"
    return None


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str


def parse_target(url: str) -> Target:
    """The parts of a URL, or :class:`ForbiddenTarget` for a URL of the wrong shape."""
    if not isinstance(url, str) or not url:
        raise ForbiddenTarget("Must be an http:// or https:// URL.")
    if len(url) > MAX_URL_LENGTH:
        raise ForbiddenTarget(f"Must be at most {MAX_URL_LENGTH} characters long.")
    if any(ord(char) <= 0x20 or ord(char) == 0x7F for char in url):
        raise ForbiddenTarget("Must not contain spaces or control characters.")
    try:
        parts: SplitResult = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ForbiddenTarget(f"Is not a valid URL: {exc}.") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ForbiddenTarget("Must be an http:// or https:// URL.")
    if "@" in parts.netloc:
        raise ForbiddenTarget("Must not contain a user name or password.")
    host = parts.hostname
    if not host:
        raise ForbiddenTarget("Must name a host.")
    if port == 0:  # no server listens there; a client would quietly use 80 or 443
        raise ForbiddenTarget("Must not name port 0.")
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    try:
        # HTTP sends the request target as ASCII: characters beyond it go as their UTF-8
        # bytes, percent-encoded, as a browser sends them.
        path = quote(path, safe=_PRINTABLE_ASCII)
    except UnicodeError:
        raise ForbiddenTarget("Is not a valid URL: it is not valid Unicode text.") from None
    return Target(scheme, host, port or (443 if scheme == "https" else 80), path)


#: The answer for every localhost name (RFC 6761 6.3), given without asking a name server.
_LOCALHOST = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


def _is_localhost_name(host: str) -> bool:
    """``localhost`` and the names under it, with or without the root's dot.

    RFC 6761 6.3 reserves them for loopback and asks resolvers not to send them to a name
    server: ``localhost.`` (the dot keeps it out of /etc/hosts) went to the machine's name
    server, out of the host, only for its answer to be refused or, worse, to be a public
    address that would then be let through.
    """
    name = host.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


def resolve(
    target: Target,
    allow_private: bool,
    *,
    allowed_hosts: Collection[str] = (),
    purpose: str = "Requests",
    timeout: float,
    resolver: Resolver | None = None,
) -> list[IPAddress]:
    """Every address of the target's host, each checked; :class:`ForbiddenTarget` if any fails.

    An IP literal is judged without any lookup, and so is a localhost name (as loopback,
    :func:`_is_localhost_name`). For a name, *all* its addresses must be
    allowed: a name with one public and one private address is refused, not half-trusted.
    A host in ``allowed_hosts`` (a client's intranet hosts) is judged as with
    ``allow_private``. The lookup is waited for at most ``timeout`` seconds
    (:class:`NotResolvedInTime`), in ``resolver``'s threads (the process's by default).
    """
    allow = allow_private or target.host.lower().rstrip(".") in allowed_hosts
    try:
        literal: IPAddress | None = ipaddress.ip_address(target.host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [literal]
    elif _is_localhost_name(target.host):
        addresses = list(_LOCALHOST)
    else:
        try:
            infos = (resolver or default_resolver()).getaddrinfo(target.host, target.port, timeout)
        except LookupTimeout as exc:
            raise NotResolvedInTime(str(exc)) from None
        except UnicodeError as exc:  # not a name at all (an empty or over-long label)
            raise ForbiddenTarget(f"The host {target.host!r} cannot be resolved: {exc}.") from None
        except OSError as exc:  # socket.gaierror: NXDOMAIN, EAI_AGAIN, EAI_FAIL, ...
            raise NameNotResolved(f"The host {target.host!r} cannot be resolved: {exc}.") from None
        addresses = []
        for info in infos:
            # Drop an IPv6 zone ("fe80::1%eth0"); such addresses are link-local anyway.
            text = str(info[4][0]).split("%", 1)[0]
            address = ipaddress.ip_address(text)
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise NameNotResolved(f"The host {target.host!r} has no address.")
    for address in addresses:
        problem = address_problem(address, allow)
        if problem is not None:
            what = "" if literal is not None else f"{target.host!r} resolves to {address}, which "
            raise ForbiddenTarget(
                f"{purpose} are not sent there: {what or f'{address} '}{problem}."
            )
    return addresses


def check_url(
    url: str,
    *,
    allow_private: bool,
    allowed_hosts: Collection[str] = (),
    purpose: str = "Requests",
    timeout: float,
    resolver: Resolver | None = None,
) -> Target:
    """Validate a URL a shop gave; :class:`ForbiddenTarget` if refused.

    Called within a web request, so its host name is waited for at most ``timeout``
    seconds (:class:`NotResolvedInTime`), never the system resolver's own timeout.
    """
    target = parse_target(url)
    resolve(
        target,
        allow_private,
        allowed_hosts=allowed_hosts,
        purpose=purpose,
        timeout=timeout,
        resolver=resolver,
    )
    return target


class _Pinned:
    """Connects to one checked address; :meth:`abort` ends the socket from another thread.

    Connecting and the TLS handshake each get only what is left of the deadline: the
    timer's :meth:`abort` cannot reach a socket the TLS layer has not handed back yet, so
    a handshake may not outlast the deadline, and an abort that came meanwhile is honoured
    as soon as the socket is known.
    """

    _address: IPAddress
    _ends_at: float
    _aborted: bool
    _abort_lock: threading.Lock
    sock: socket.socket | None
    #: The socket :meth:`abort` ends. Not ``sock``: ``http.client`` lets go of that when
    #: the answer ends with the connection (``Connection: close``, no length), and the
    #: response then reads its body from this very socket.
    _held: socket.socket | None

    def _setup(self, address: IPAddress, ends_at: float) -> None:
        self._address = address
        self._ends_at = ends_at
        self._aborted = False
        self._abort_lock = threading.Lock()
        self._held = None

    def _remaining(self) -> float:
        left = self._ends_at - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        return left

    def _adopt(self, sock: socket.socket) -> None:
        """Make ``sock`` the connection's socket, unless the deadline passed meanwhile."""
        with self._abort_lock:
            self.sock = sock
            self._held = sock
            if self._aborted:
                raise TimeoutError("deadline passed while connecting")

    def _open(self, port: int) -> socket.socket:
        raw = socket.create_connection((str(self._address), port), self._remaining())
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._adopt(raw)
        return raw

    def abort(self) -> None:
        """Shut the connection down: a read blocked in another thread returns at once."""
        with self._abort_lock:
            self._aborted = True
            sock = self._held
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class _PinnedHTTPConnection(_Pinned, http.client.HTTPConnection):
    def __init__(self, host: str, port: int, address: IPAddress, timeout: float) -> None:
        http.client.HTTPConnection.__init__(self, host, port, timeout=timeout)
        self._setup(address, time.monotonic() + timeout)

    def connect(self) -> None:
        self._open(self.port)


class _PinnedHTTPSConnection(_Pinned, http.client.HTTPSConnection):
    """As the plain one, with TLS verified against the URL's host name."""

    def __init__(self, host: str, port: int, address: IPAddress, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        http.client.HTTPSConnection.__init__(self, host, port, timeout=timeout, context=self._tls)
        self._setup(address, time.monotonic() + timeout)

    def connect(self) -> None:
        raw = self._open(self.port)
        raw.settimeout(self._remaining())  # the whole handshake, not each of its reads
        self._adopt(self._tls.wrap_socket(raw, server_hostname=self.host))


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    elapsed: float


class ResponseTooLarge(RequestFailed):
    """The answer's body is longer than the caller takes: reading stopped past ``limit``
    bytes (or at once, when ``Content-Length`` said so)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is larger than {limit} bytes")
        self.limit = limit


#: Bytes read from the socket at a time while a body is read up to its limit.
_CHUNK = 1024 * 1024


def _read_body(response: http.client.HTTPResponse, limit: int) -> bytes:
    """The body, or :class:`ResponseTooLarge` as soon as it is known to pass ``limit``:
    never more than ``limit`` plus one chunk is held. A body cut short of its
    ``Content-Length`` is :class:`http.client.IncompleteRead` (a failed request)."""
    declared = (response.getheader("Content-Length") or "").strip()
    # ASCII digits only (``"\u00b2"`` is a digit to isdigit(), not to int()), and a number
    # longer than the limit's is larger without int(), which refuses thousands of digits.
    digits = declared.lstrip("0") or "0"
    if (
        declared.isascii()
        and declared.isdigit()
        and (len(digits) > len(str(limit)) or int(digits) > limit)
    ):
        raise ResponseTooLarge(limit)
    parts: list[bytes] = []
    size = 0
    while True:
        part = response.read(min(_CHUNK, limit + 1 - size))
        if not part:
            if response.length:
                # The connection ended before the Content-Length announced: a read with a
                # size returns what came without saying so, and a cut PDF must not pass
                # for the whole one.
                raise http.client.IncompleteRead(b"".join(parts), response.length)
            return b"".join(parts)
        parts.append(part)
        size += len(part)
        if size > limit:
            raise ResponseTooLarge(limit)


def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    deadline: float,
    allow_private: bool,
    allowed_hosts: Collection[str] = (),
    purpose: str = "Requests",
    resolver: Resolver | None = None,
) -> Response:
    """POST ``body`` to ``url`` once, within ``deadline`` seconds in all, the name lookup
    included.

    :class:`ForbiddenTarget` when the URL or an address is refused (checked now, at send
    time), :class:`RequestFailed` when no complete answer came in time (a name that did not
    resolve in time is one: ``timed_out``, ``cause`` :class:`NotResolvedInTime`; so is a
    name that did not resolve at all: ``cause`` :class:`NameNotResolved`). Any status is
    returned as it came; redirects are not followed.
    """
    return _request(
        "POST",
        url,
        body,
        headers,
        deadline=deadline,
        allow_private=allow_private,
        allowed_hosts=allowed_hosts,
        purpose=purpose,
        resolver=resolver,
        max_bytes=MAX_RESPONSE_BYTES,
        truncate=True,
    )


def get(
    url: str,
    headers: Mapping[str, str],
    *,
    deadline: float,
    max_bytes: int,
    allow_private: bool,
    allowed_hosts: Collection[str] = (),
    purpose: str = "Requests",
    resolver: Resolver | None = None,
) -> Response:
    """GET ``url`` once, as :func:`post` sends (same checks, one deadline, no redirects),
    reading a body of at most ``max_bytes``: a longer one is :class:`ResponseTooLarge`,
    found out without reading on past the limit."""
    return _request(
        "GET",
        url,
        None,
        headers,
        deadline=deadline,
        allow_private=allow_private,
        allowed_hosts=allowed_hosts,
        purpose=purpose,
        resolver=resolver,
        max_bytes=max_bytes,
        truncate=False,
    )


def _request(
    method: str,
    url: str,
    body: bytes | None,
    headers: Mapping[str, str],
    *,
    deadline: float,
    allow_private: bool,
    allowed_hosts: Collection[str],
    purpose: str,
    resolver: Resolver | None,
    max_bytes: int,
    truncate: bool,
) -> Response:
    """One request; ``truncate``: a longer body is cut at ``max_bytes`` (an answer only
    looked at), else it is :class:`ResponseTooLarge`."""
    started = time.monotonic()
    target = parse_target(url)
    try:
        addresses = resolve(
            target,
            allow_private,
            allowed_hosts=allowed_hosts,
            purpose=purpose,
            timeout=deadline,
            resolver=resolver,
        )
    except NotResolvedInTime as exc:
        raise RequestFailed(str(exc), timed_out=True, cause=NotResolvedInTime) from None
    except NameNotResolved as exc:
        # Like a connection error: the name may resolve at the next attempt. An address
        # the rules refuse stays a ForbiddenTarget, never retried.
        raise RequestFailed(str(exc), cause=NameNotResolved) from None
    left = deadline - (time.monotonic() - started)
    if left <= 0:
        raise RequestFailed(f"timed out: no answer within {deadline:g} s", timed_out=True)
    connection_class = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
    connection = connection_class(target.host, target.port, addresses[0], left)
    # The socket timeout bounds each call; the timer bounds them all together.
    timer = threading.Timer(left, connection.abort)
    timer.daemon = True
    timer.start()
    try:
        connection.request(method, target.path, body=body, headers=dict(headers))
        response = connection.getresponse()
        data = response.read(max_bytes) if truncate else _read_body(response, max_bytes)
        status = response.status
    except ResponseTooLarge:
        raise
    except (OSError, http.client.HTTPException) as exc:
        elapsed = time.monotonic() - started
        if elapsed >= deadline * 0.99:
            raise RequestFailed(
                f"timed out: no answer within {deadline:g} s", timed_out=True
            ) from None
        raise RequestFailed(f"{type(exc).__name__}: {exc}", cause=type(exc)) from None
    finally:
        timer.cancel()
        connection.close()
    elapsed = time.monotonic() - started
    if elapsed > deadline:
        # The answer was complete just as the timer fired; it came too late all the same.
        raise RequestFailed(f"timed out: no answer within {deadline:g} s", timed_out=True)
    return Response(status, data, elapsed)
