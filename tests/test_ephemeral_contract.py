"""One contract for every ephemeral store: Redis and the embedded SQLite file.

Both run against the real thing (a spawned redis-server, a SQLite file in tmp_path);
the concurrency tests use real threads and real processes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from conftest import free_port
from fault_support import RedisProcess

from pps.platform.ephemeral import (
    EphemeralStore,
    EphemeralUnavailable,
    handoff_key,
    link_key,
    nonce_key,
    open_ephemeral,
)
from pps.platform.ephemeral.redis_store import RedisStore
from pps.platform.ephemeral.sqlite_store import SqliteStore

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(params=["redis", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EphemeralStore]:
    instance: EphemeralStore
    if request.param == "redis":
        instance = RedisStore(request.getfixturevalue("redis_url"))
    else:
        instance = SqliteStore(tmp_path / "ephemeral.sqlite3")
    yield instance
    instance.close()


def unique(name: str) -> str:
    return f"{name}:{uuid.uuid4().hex}"


# -- claim -------------------------------------------------------------------------------


def test_first_claim_wins_and_second_loses(store: EphemeralStore) -> None:
    key = nonce_key("client-a", unique("jti"))
    assert store.claim(key, 60) is True
    assert store.claim(key, 60) is False
    assert store.claim(key, 60) is False


def test_claims_of_different_keys_are_independent(store: EphemeralStore) -> None:
    jti = unique("jti")
    assert store.claim(nonce_key("client-a", jti), 60) is True
    # The same jti from another client is another nonce.
    assert store.claim(nonce_key("client-b", jti), 60) is True
    assert store.claim(nonce_key("client-a", unique("jti")), 60) is True
    assert store.claim(nonce_key("client-a", jti), 60) is False


@pytest.mark.parametrize("ttl", [0, -5])
def test_ttl_below_one_second_is_refused(store: EphemeralStore, ttl: int) -> None:
    with pytest.raises(ValueError, match="at least 1 second"):
        store.claim(unique("k"), ttl)
    with pytest.raises(ValueError, match="at least 1 second"):
        store.put_link(unique("k"), "v", ttl)


def test_twenty_threads_claiming_one_key_yield_exactly_one_winner(
    store: EphemeralStore,
) -> None:
    keys = [unique("race") for _ in range(5)]
    barrier = threading.Barrier(20)
    results: list[list[bool]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker() -> None:
        try:
            barrier.wait(timeout=10)
            won = [store.claim(key, 60) for key in keys]
        except BaseException as exc:
            with lock:
                errors.append(exc)
            return
        with lock:
            results.append(won)

    threads = [threading.Thread(target=worker) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
    assert len(results) == 20
    for index in range(len(keys)):
        assert sum(won[index] for won in results) == 1


def test_claim_while_hands_the_work_to_the_first_caller_only(store: EphemeralStore) -> None:
    key = nonce_key("client-a", unique("jti"))
    assert store.claim_while(key, 60, lambda: "cookie-1") == ("cookie-1",)
    assert store.claim_while(key, 60, lambda: "cookie-2") is None
    assert store.claim(key, 60) is False
    # A work result of None is still a win, told apart from a lost claim.
    assert store.claim_while(nonce_key("client-a", unique("jti")), 60, lambda: None) == (None,)


def test_twenty_threads_claim_while_one_key_one_gets_its_own_work(
    store: EphemeralStore,
) -> None:
    key = unique("race")
    barrier = threading.Barrier(20)
    outcomes: dict[int, tuple[int] | None] = {}
    lock = threading.Lock()

    def worker(number: int) -> None:
        barrier.wait(timeout=10)
        outcome = store.claim_while(key, 60, lambda: number)
        with lock:
            outcomes[number] = outcome

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(outcomes) == 20
    winners = {number: got for number, got in outcomes.items() if got is not None}
    assert len(winners) == 1
    [(number, got)] = winners.items()
    assert got == (number,)


def test_work_that_fails_in_claim_while_fails_the_claim_and_leaves_the_store_usable(
    store: EphemeralStore,
) -> None:
    key = nonce_key("client-a", unique("jti"))

    def broken() -> str:
        raise RuntimeError("cannot sign")

    with pytest.raises(RuntimeError, match="cannot sign"):
        store.claim_while(key, 60, broken)
    link = unique("link")
    store.put_link(link, "value", 60)  # the next command gets its own reply
    assert store.get_link(link) == "value"
    assert store.claim(key, 60) is False  # the nonce was used up all the same


# -- links -------------------------------------------------------------------------------


def test_link_is_returned_until_it_expires(store: EphemeralStore) -> None:
    key = link_key(unique("token"))
    store.put_link(key, "templates/ABCdef12/preview.png", 60)
    assert store.get_link(key) == "templates/ABCdef12/preview.png"


def test_putting_a_link_again_replaces_its_value(store: EphemeralStore) -> None:
    key = link_key(unique("token"))
    store.put_link(key, "old", 60)
    store.put_link(key, "new", 60)
    assert store.get_link(key) == "new"


def test_unknown_link_is_none(store: EphemeralStore) -> None:
    assert store.get_link(link_key(unique("never-stored"))) is None


def test_link_value_round_trips_unicode(store: EphemeralStore) -> None:
    key = link_key(unique("token"))
    store.put_link(key, "drafts/Grüße/…/ünïcode.pdf", 60)
    assert store.get_link(key) == "drafts/Grüße/…/ünïcode.pdf"


# -- claim and put, take (the login handoff) ----------------------------------------------


def test_claim_and_put_stores_the_link_for_the_winner_only(store: EphemeralStore) -> None:
    nonce, first, second = unique("jti"), handoff_key(unique("a")), handoff_key(unique("b"))
    assert store.claim_and_put(nonce, 60, first, '{"user": "ada"}', 60) is True
    assert store.claim_and_put(nonce, 60, second, '{"user": "eve"}', 60) is False
    assert store.take_link(second) is None  # the loser stored nothing
    assert store.claim(nonce, 60) is False  # the nonce is used up like any claim
    assert store.take_link(first) == '{"user": "ada"}'


def test_a_taken_link_is_gone(store: EphemeralStore) -> None:
    key = handoff_key(unique("code"))
    store.put_link(key, "grant", 60)
    assert store.take_link(key) == "grant"
    assert store.take_link(key) is None
    assert store.get_link(key) is None
    assert store.take_link(handoff_key(unique("never-stored"))) is None


def test_twenty_threads_claiming_and_putting_store_exactly_one_link(
    store: EphemeralStore,
) -> None:
    nonce = unique("jti")
    links = [handoff_key(unique(f"code{n}")) for n in range(20)]
    barrier = threading.Barrier(len(links))
    results: dict[str, bool] = {}

    def attempt(link: str) -> None:
        barrier.wait()
        results[link] = store.claim_and_put(nonce, 60, link, link, 60)

    threads = [threading.Thread(target=attempt, args=(link,)) for link in links]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    winners = [link for link, won in results.items() if won]
    assert len(results) == 20 and len(winners) == 1
    assert [store.take_link(link) for link in links] == [
        link if link in winners else None for link in links
    ]


def test_twenty_threads_taking_one_link_get_it_once(store: EphemeralStore) -> None:
    key = handoff_key(unique("code"))
    store.put_link(key, "grant", 60)
    barrier = threading.Barrier(20)
    taken: list[str | None] = []

    def take() -> None:
        barrier.wait()
        taken.append(store.take_link(key))

    threads = [threading.Thread(target=take) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(taken) == 20 and taken.count("grant") == 1 and taken.count(None) == 19


# -- expiry (the only test here that sleeps) ---------------------------------------------


def test_entries_expire_after_their_ttl_and_not_before(store: EphemeralStore) -> None:
    short_nonce, long_nonce = unique("short"), unique("long")
    short_link, long_link = link_key(unique("short")), link_key(unique("long"))
    assert store.claim(short_nonce, 1) is True
    assert store.claim(long_nonce, 60) is True
    store.put_link(short_link, "a", 1)
    store.put_link(long_link, "b", 60)

    time.sleep(1.5)

    assert store.get_link(short_link) is None
    assert store.get_link(long_link) == "b"
    assert store.take_link(short_link) is None  # an expired link cannot be taken either
    # An expired nonce can be claimed again, and then it is taken once more.
    assert store.claim(short_nonce, 60) is True
    assert store.claim(short_nonce, 60) is False
    assert store.claim(long_nonce, 60) is False


# -- several processes -------------------------------------------------------------------

CLAIMING_CHILD = """
import json, sys
from pathlib import Path
from pps.platform.ephemeral import open_ephemeral

store = open_ephemeral(sys.argv[1], instance_path=Path("."))
keys = json.loads(sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()
print(json.dumps([store.claim(key, 60) for key in keys]), flush=True)
store.close()
"""


@pytest.mark.parametrize("backend", ["redis", "sqlite"])
def test_processes_claiming_the_same_keys_yield_exactly_one_winner_each(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """What gunicorn does: several worker processes share one store."""
    if backend == "redis":
        url = str(request.getfixturevalue("redis_url"))
    else:
        url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
        SqliteStore(tmp_path / "shared.sqlite3").close()  # create it before the race
    keys = [unique("proc") for _ in range(25)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMING_CHILD, url, json.dumps(keys)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
        )
        for _ in range(6)
    ]
    try:
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
        for child in children:  # release them together
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        results = []
        for child in children:
            out, _ = child.communicate(timeout=60)
            assert child.returncode == 0
            results.append(json.loads(out))
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    for index in range(len(keys)):
        assert sum(won[index] for won in results) == 1, keys[index]


# -- failing closed ----------------------------------------------------------------------


def test_redis_that_cannot_be_reached_raises_unavailable() -> None:
    # free_port(): bound and released at once, so nothing listens on it.
    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0", timeout=1.0)
    started = time.monotonic()
    with pytest.raises(EphemeralUnavailable):
        store.claim(nonce_key("client-a", "jti"), 60)
    with pytest.raises(EphemeralUnavailable):
        store.put_link(link_key("token"), "value", 60)
    with pytest.raises(EphemeralUnavailable):
        store.get_link(link_key("token"))
    assert store.ping() is False
    assert time.monotonic() - started < 10  # a few short retries, not minutes
    store.close()


def test_sqlite_locked_beyond_the_busy_timeout_raises_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "ephemeral.sqlite3"
    store = SqliteStore(path, timeout=0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(EphemeralUnavailable):
            store.claim(unique("k"), 60)
        with pytest.raises(EphemeralUnavailable):
            store.put_link(unique("k"), "v", 60)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.claim(unique("k"), 60) is True
    store.close()


def test_sqlite_file_that_is_not_a_database_raises_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "ephemeral.sqlite3"
    path.write_bytes(b"this is not a database file, it is text" * 100)
    with pytest.raises(EphemeralUnavailable):
        SqliteStore(path)


# -- implementation details worth guarding -----------------------------------------------


def test_sqlite_treats_expired_rows_as_absent_and_purges_them(tmp_path: Path) -> None:
    path = tmp_path / "ephemeral.sqlite3"
    store = SqliteStore(path)
    raw = sqlite3.connect(path, isolation_level=None)

    def add_expired(*keys: str) -> None:
        past = time.time() - 10
        raw.executemany(
            "INSERT INTO entries (key, value, expires_at) VALUES (?, 'v', ?)",
            [(key, past) for key in keys],
        )

    def stored_keys() -> set[str]:
        return {row[0] for row in raw.execute("SELECT key FROM entries")}

    try:
        add_expired("old-nonce", "old-link", "other")
        assert store.get_link("old-link") is None  # invisible, though still a row
        assert stored_keys() == {"old-nonce", "old-link", "other"}
        # The first write of a process purges; the claim itself takes over its expired row.
        assert store.claim("old-nonce", 60) is True
        assert store.claim("old-nonce", 60) is False
        assert stored_keys() == {"old-nonce"}
        # Later writes within PURGE_INTERVAL leave expired rows alone...
        add_expired("stale")
        store.put_link("fresh", "v", 60)
        assert stored_keys() == {"old-nonce", "stale", "fresh"}
        # ...until the next purge.
        assert store.purge_expired() == 1
        assert stored_keys() == {"old-nonce", "fresh"}
    finally:
        raw.close()
        store.close()


def test_sqlite_uses_wal_so_readers_do_not_block_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "ephemeral.sqlite3"
    SqliteStore(path).close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    raw.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_sqlite_opens_a_new_connection_after_fork(tmp_path: Path) -> None:
    """gunicorn may build the app in the master and fork workers from it."""
    store = SqliteStore(tmp_path / "ephemeral.sqlite3")
    assert store.claim("before-fork", 60) is True
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code only
        code = 1
        try:
            fresh = store._connection()
            ok = (
                store.claim("before-fork", 60) is False
                and store.claim("in-child", 60) is True
                and fresh is store._connection()
            )
            code = 0 if ok else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert store.claim("in-child", 60) is False
    store.close()


def test_redis_prefix_separates_stores(redis_url: str) -> None:
    first, second = RedisStore(redis_url, prefix="a:"), RedisStore(redis_url, prefix="b:")
    key = unique("jti")
    assert first.claim(key, 60) is True
    assert second.claim(key, 60) is True
    second.put_link("link", "from-b", 60)
    assert first.get_link("link") is None
    assert second.get_link("link") == "from-b"
    assert first.ping() is True
    first.close()
    second.close()


def test_redis_error_reply_is_raised_and_the_store_stays_in_step(redis_url: str) -> None:
    store = RedisStore(redis_url, prefix=unique("err") + ":")
    store.put_link("before", "one", 60)
    with pytest.raises(redis.exceptions.ResponseError, match=r"(?i)unknown command"):
        store.client.execute_command("NO-SUCH-COMMAND", "x")
    with pytest.raises(redis.exceptions.ResponseError, match=r"(?i)wrongtype|syntax|integer"):
        store.client.execute_command("SET", "k", "v", "EX", "soon")
    assert store.get_link("before") == "one"  # the next reply is this command's own
    store.close()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisProcess]:
    """A redis-server of this test alone: its clients can be counted, killed and stopped."""
    server = RedisProcess(tmp_path)
    try:
        yield server
    finally:
        server.close()


def connections_made(observer: redis.Redis) -> int:
    """Connections the server has accepted so far (the observer's own included)."""
    return int(observer.info("stats")["total_connections_received"])


def test_a_connection_that_redis_closed_is_replaced(
    own_redis: RedisProcess,
) -> None:
    url = own_redis.url
    store = RedisStore(url)
    store.put_link("a", "1", 60)  # this thread now holds a connection
    store.client.ping()  # and the pool has an idle one
    killer = redis.Redis.from_url(url)
    assert killer.client_kill_filter(_type="normal", skipme=True) >= 1
    killer.close()
    assert store.get_link("a") == "1"  # on a new connection
    assert store.claim(unique("after-kill"), 60) is True
    assert store.ping() is True
    store.close()


def test_each_thread_keeps_its_own_connection_between_calls(
    own_redis: RedisProcess,
) -> None:
    """Four live threads calling one after the other: four connections, each made once,
    however many calls (a pool would hand the one idle connection from thread to thread)."""
    url = own_redis.url
    observer = redis.Redis.from_url(url)
    store = RedisStore(url)
    before = connections_made(observer)
    turns = [threading.Event() for _ in range(5)]
    done = threading.Event()
    failures: list[BaseException] = []

    def caller(index: int) -> None:
        try:
            turns[index].wait(10)
            for n in range(25):
                assert store.claim(unique(f"t{index}-{n}"), 60) is True
                store.put_link(f"t{index}", str(n), 60)
                assert store.get_link(f"t{index}") == str(n)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)
        finally:
            turns[index + 1].set()
            done.wait(10)  # alive, with its connection, until every thread had its turn

    threads = [threading.Thread(target=caller, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    turns[0].set()
    assert turns[4].wait(20)
    made = connections_made(observer) - before
    done.set()
    for thread in threads:
        thread.join()
    assert not failures
    assert made == 4
    store.close()
    observer.close()


def test_closing_the_store_disconnects_the_held_connections(
    own_redis: RedisProcess,
) -> None:
    url = own_redis.url
    observer = redis.Redis.from_url(url)
    store = RedisStore(url)
    store.put_link("a", "1", 60)
    assert int(observer.info("clients")["connected_clients"]) == 2  # the store's, ours
    store.close()
    deadline = time.monotonic() + 5
    while int(observer.info("clients")["connected_clients"]) > 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert int(observer.info("clients")["connected_clients"]) == 1
    assert store.get_link("a") == "1"  # later calls connect again
    store.close()
    observer.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_never_shares_the_parents_connection(
    own_redis: RedisProcess,
) -> None:
    """gunicorn may build the app in the master and fork workers from it: the child gets a
    connection of its own, so parent and child, both busy, each read their own replies."""
    url = own_redis.url
    store = RedisStore(url)
    store.put_link("parent", "p", 60)
    store.put_link("child", "c", 60)
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code only
        code = 1
        try:
            ok = all(
                store.get_link("child") == "c" and store.claim(unique("child"), 60)
                for _ in range(300)
            )
            code = 0 if ok else 2
        finally:
            os._exit(code)
    parent_ok = all(
        store.get_link("parent") == "p" and store.claim(unique("parent"), 60) for _ in range(300)
    )
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert parent_ok
    store.close()


def test_a_hung_redis_fails_a_call_within_the_one_timeout(
    own_redis: RedisProcess,
) -> None:
    """SIGSTOP: connections are accepted by the kernel, nothing answers. Two waits of 45 %
    of the timeout each, no nested retries of connects or health checks. (A timeout of 2 s:
    two waits and a third are 0.9 s apart, room for a loaded machine's late wake-ups.)"""
    url = own_redis.url
    store = RedisStore(url, timeout=2.0)
    try:
        store.put_link("warm", "1", 60)  # a held connection to go silent under it
        own_redis.freeze()
        for call in (
            lambda: store.claim(unique("jti"), 60),
            lambda: store.get_link("warm"),
            lambda: store.put_link("x", "y", 60),
        ):
            started = time.monotonic()
            with pytest.raises(EphemeralUnavailable, match="did not answer"):
                call()
            assert 1.75 < time.monotonic() - started < 2.55  # a third wait: 2.7
        own_redis.thaw()
        assert store.get_link("warm") == "1"
    finally:
        own_redis.thaw()
        store.close()


# -- choosing a store by URL -------------------------------------------------------------


def test_open_ephemeral_chooses_by_scheme(tmp_path: Path) -> None:
    default = open_ephemeral("", instance_path=tmp_path / "instance")
    assert isinstance(default, SqliteStore)
    assert default.path == tmp_path / "instance" / "ephemeral.sqlite3"
    assert default.path.exists()
    default.close()

    explicit = open_ephemeral(f"sqlite:///{tmp_path / 'x.sqlite3'}", instance_path=tmp_path)
    assert isinstance(explicit, SqliteStore)
    assert explicit.path == tmp_path / "x.sqlite3"
    explicit.close()

    for url in ("redis://127.0.0.1:1/0", "rediss://127.0.0.1:1/0", "unix:///tmp/x.sock"):
        store = open_ephemeral(url, instance_path=tmp_path)
        assert isinstance(store, RedisStore)  # building it does not connect yet
        store.close()


@pytest.mark.parametrize(
    "url", ["memcached://localhost", "sqlite://", "sqlite:///:memory:", "localhost:6379"]
)
def test_open_ephemeral_refuses_other_urls(url: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ephemeral store URL"):
        open_ephemeral(url, instance_path=tmp_path)
