"""A claim stays a win when it is resent after a lost reply.

pps resends a command once after a timeout (see ``pps.platform.redis_client``). If the first attempt
reached Redis and only its reply was lost, a plain ``SET NX`` retry answers "already set"
and a first login looks like a replay. These tests reproduce that on a real network path:
a small TCP proxy on loopback in front of the real redis-server forwards the first
``SET ... NX`` and then swallows its reply, so the client times out and retries on a fresh
connection.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import redis
from conftest import missing_service
from redis.backoff import NoBackoff
from redis.retry import Retry

from pps.platform.ephemeral import EphemeralUnavailable
from pps.platform.ephemeral.redis_store import RedisStore


class LoseFirstSetNxReply:
    """TCP proxy to Redis that loses the reply to the first ``SET ... NX`` it forwards.

    Only that one connection goes silent; every later connection is passed through, unless
    ``every_connection`` is set: then each connection goes silent at its first ``SET NX``.
    """

    def __init__(
        self,
        upstream: tuple[str, int],
        *,
        every_connection: bool = False,
        scripts_too: bool = False,
    ) -> None:
        self.upstream = upstream
        self.every_connection = every_connection
        # Also lose the reply to the first EVALSHA (the claim-and-put script claims with it).
        self.scripts_too = scripts_too
        self.set_nx_seen = 0
        self.replies_lost = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self.upstream)
            with self._lock:
                self._sockets += [client, upstream]
            silenced = threading.Event()
            threading.Thread(
                target=self._to_redis, args=(client, upstream, silenced), daemon=True
            ).start()
            threading.Thread(
                target=self._to_client, args=(upstream, client, silenced), daemon=True
            ).start()

    def _to_redis(self, src: socket.socket, dst: socket.socket, silenced: threading.Event) -> None:
        while data := self._recv(src):
            upper = data.upper()
            set_nx = b"\r\nSET\r\n" in upper and b"\r\nNX\r\n" in upper
            if set_nx or (self.scripts_too and b"\r\nEVALSHA\r\n" in upper):
                with self._lock:
                    self.set_nx_seen += 1
                    if not self.replies_lost or self.every_connection:
                        # Decided before forwarding, so the reply cannot slip through.
                        self.replies_lost = True
                        silenced.set()
            try:
                dst.sendall(data)
            except OSError:
                break
        self._shut(dst)

    def _to_client(self, src: socket.socket, dst: socket.socket, silenced: threading.Event) -> None:
        while data := self._recv(src):
            if silenced.is_set():
                continue  # lost on the way back
            try:
                dst.sendall(data)
            except OSError:
                break
        self._shut(dst)

    @staticmethod
    def _recv(sock: socket.socket) -> bytes:
        try:
            return sock.recv(65536)
        except OSError:
            return b""

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                sock.close()


def _redis_address(redis_url: str) -> tuple[str, int]:
    parts = urlsplit(redis_url)
    if parts.scheme != "redis" or parts.hostname is None:
        # PPS_TEST_REDIS_URL named a unix socket or TLS: the retry safety would go untested.
        missing_service("the fault-injecting proxy needs Redis over plain TCP")
    return parts.hostname, parts.port or 6379


@pytest.fixture
def proxy(redis_url: str) -> Iterator[LoseFirstSetNxReply]:
    lossy = LoseFirstSetNxReply(_redis_address(redis_url))
    yield lossy
    lossy.close()


@pytest.fixture
def script_proxy(redis_url: str) -> Iterator[LoseFirstSetNxReply]:
    lossy = LoseFirstSetNxReply(_redis_address(redis_url), scripts_too=True)
    yield lossy
    lossy.close()


@pytest.fixture
def silent_proxy(redis_url: str) -> Iterator[LoseFirstSetNxReply]:
    lossy = LoseFirstSetNxReply(_redis_address(redis_url), every_connection=True)
    yield lossy
    lossy.close()


def test_retried_claim_whose_first_attempt_succeeded_still_wins(
    proxy: LoseFirstSetNxReply, redis_url: str
) -> None:
    key = f"pps:jti:client-a:{uuid.uuid4().hex}"
    through_proxy = RedisStore(proxy.url, timeout=1.0)
    direct = RedisStore(redis_url)
    try:
        assert through_proxy.claim(key, 60) is True
        # The reply really was lost and the command really was sent twice.
        assert proxy.replies_lost
        assert proxy.set_nx_seen == 2
        # And the nonce is taken for everyone else.
        assert direct.claim(key, 60) is False
        assert through_proxy.claim(key, 60) is False
    finally:
        through_proxy.close()
        direct.close()


def test_claim_while_whose_reply_was_lost_still_wins_with_its_work(
    proxy: LoseFirstSetNxReply, redis_url: str
) -> None:
    """The work runs once, while the first attempt is out; the resend reads our own token."""
    key = f"pps:jti:client-a:{uuid.uuid4().hex}"
    through_proxy = RedisStore(proxy.url, timeout=1.0)
    runs: list[str] = []

    def work() -> str:
        runs.append("signed")
        return "cookie"

    try:
        assert through_proxy.claim_while(key, 60, work) == ("cookie",)
        assert proxy.replies_lost and proxy.set_nx_seen == 2
        assert runs == ["signed"]
        assert RedisStore(redis_url).claim(key, 60) is False
    finally:
        through_proxy.close()


def test_claim_while_against_a_silent_redis_hands_out_nothing(
    silent_proxy: LoseFirstSetNxReply,
) -> None:
    store = RedisStore(silent_proxy.url, timeout=0.6)
    try:
        with pytest.raises(EphemeralUnavailable, match="did not answer"):
            store.claim_while(f"pps:jti:client-a:{uuid.uuid4().hex}", 60, lambda: "cookie")
    finally:
        store.close()


def test_claim_against_a_redis_that_stops_answering_fails_closed_in_time(
    silent_proxy: LoseFirstSetNxReply,
) -> None:
    """The timeout bounds the whole call: two waits of 45 % of it (one resend), then
    unavailable. (A timeout of 2 s: two waits and a third are 0.9 s apart, room for a loaded
    machine's late wake-ups between them; at 1 s, 1.21 s was seen for two waits of 0.45.)"""
    store = RedisStore(silent_proxy.url, timeout=2.0)
    outcome: list[BaseException | bool] = []

    def claim() -> None:
        try:
            outcome.append(store.claim(f"pps:jti:client-a:{uuid.uuid4().hex}", 60))
        except Exception as exc:
            outcome.append(exc)

    try:
        started = time.monotonic()
        worker = threading.Thread(target=claim, daemon=True)  # a hang must fail, not block
        worker.start()
        worker.join(timeout=10)
        elapsed = time.monotonic() - started
        assert not worker.is_alive(), "the claim hangs on a Redis that does not answer"
        assert len(outcome) == 1 and isinstance(outcome[0], EphemeralUnavailable)
        assert "did not answer" in str(outcome[0])
        assert silent_proxy.set_nx_seen == 2  # sent, timed out, resent once, timed out
        assert elapsed > 1.75  # two timeouts of 0.9 s each
        # Nothing else waits: a third wait would make it 2.7 (and set_nx_seen 3). The
        # margin is for a loaded machine.
        assert elapsed < 2.55
    finally:
        store.close()


def test_plain_set_nx_under_the_same_fault_reports_a_false_replay(
    proxy: LoseFirstSetNxReply,
) -> None:
    """The hazard itself, so the test above is known to exercise it."""
    client = redis.Redis.from_url(
        proxy.url, socket_timeout=0.5, retry=Retry(NoBackoff(), retries=2)
    )
    try:
        assert client.set(f"naive:{uuid.uuid4().hex}", "1", nx=True, ex=60) is None
        assert proxy.set_nx_seen == 2
    finally:
        client.close()


def won() -> bool:
    return True


def test_same_token_twice_counts_as_a_win_and_another_token_does_not(redis_url: str) -> None:
    """The command level: what a retry sends is the same token again."""
    store = RedisStore(redis_url)
    key = f"pps:jti:client-a:{uuid.uuid4().hex}"
    try:
        assert store._claim_with_token(key, 60, "token-1", won) == (True,)
        assert store._claim_with_token(key, 60, "token-1", won) == (True,)  # our own retry
        assert store._claim_with_token(key, 60, "token-2", won) is None  # someone else
        assert store.claim(key, 60) is False
    finally:
        store.close()


def test_claim_does_not_overwrite_the_winner_or_extend_its_ttl(redis_url: str) -> None:
    store = RedisStore(redis_url)
    raw = redis.Redis.from_url(redis_url)
    key = f"pps:jti:client-a:{uuid.uuid4().hex}"
    try:
        assert store._claim_with_token(key, 30, "winner", won) == (True,)
        assert store.claim(key, 3600) is False
        assert raw.get(key) == b"winner"
        ttl = raw.ttl(key)
        assert isinstance(ttl, int)
        assert 0 < ttl <= 30
    finally:
        store.close()
        raw.close()


def test_claim_and_put_whose_reply_was_lost_still_wins_and_stores_its_link(
    script_proxy: LoseFirstSetNxReply, redis_url: str
) -> None:
    """The login handoff: the resent script finds its own claim token and keeps the link."""
    direct = RedisStore(redis_url)
    # Load the script into Redis first, so that the first EVALSHA through the proxy runs it.
    assert direct.claim_and_put(f"pps:jti:warm:{uuid.uuid4().hex}", 60, "pps:warm", "x", 60)
    key, link = f"pps:jti:client-a:{uuid.uuid4().hex}", f"pps:handoff:{uuid.uuid4().hex}"
    through_proxy = RedisStore(script_proxy.url, timeout=1.0)
    try:
        assert through_proxy.claim_and_put(key, 60, link, "grant", 60) is True
        assert script_proxy.replies_lost and script_proxy.set_nx_seen == 2
        assert direct.claim(key, 60) is False
        assert direct.take_link(link) == "grant"
    finally:
        through_proxy.close()
        direct.close()
