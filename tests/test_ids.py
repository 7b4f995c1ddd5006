"""Identifiers, tags and secrets: formats the clients expect, unique across threads and forks."""

from __future__ import annotations

import base64
import os
import re
import threading
from collections.abc import Callable

from pps.platform import ids


def test_identifiers_have_the_formats_clients_expect() -> None:
    assert re.fullmatch(r"[A-Za-z0-9]{8}", ids.client_identifier())
    assert re.fullmatch(r"[A-Za-z0-9]{8}", ids.user_identifier())
    assert re.fullmatch(r"[a-z0-9]{32}", ids.draft_hash())
    assert len(ids.api_key()) >= 32
    assert re.fullmatch(r"[0-9a-f]{32}", ids.processing_id())


def _drawn_in_threads(draw: Callable[[], str], *, threads: int = 8, each: int = 5000) -> list[str]:
    """Everything ``threads`` threads drew at once, ``each`` values per thread."""
    drawn: list[list[str]] = [[] for _ in range(threads)]

    def run(into: list[str]) -> None:
        into.extend(draw() for _ in range(each))

    workers = [threading.Thread(target=run, args=(into,)) for into in drawn]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return [value for into in drawn for value in into]


def test_unique_tags_never_repeat_across_threads() -> None:
    drawn = _drawn_in_threads(ids.unique_tag)
    assert len(set(drawn)) == len(drawn) == 40_000
    # One length, so that answers carrying a request id differ in nothing else.
    assert all(re.fullmatch(r"[0-9a-f]{28}", tag) for tag in drawn)


def _drawn_in_forked_child(draw: Callable[[], str]) -> str:
    """What ``draw()`` returns in a forked child of this process (as gunicorn forks)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it drew and leave without running teardown
        try:
            os.write(write_end, draw().encode())
        finally:
            os._exit(0)
    os.close(write_end)
    drawn = os.read(read_end, 1000).decode()
    os.close(read_end)
    os.waitpid(pid, 0)
    return drawn


def test_a_forked_child_draws_tags_of_its_own() -> None:
    """gunicorn forks its workers: a child must not repeat the tags of its parent."""
    before = ids.unique_tag()
    child_tag = _drawn_in_forked_child(ids.unique_tag)
    after = ids.unique_tag()
    assert child_tag and child_tag[:16] != before[:16]  # another random prefix
    assert after[:16] == before[:16]  # the parent keeps its own


def test_secret_tokens_have_the_format_of_secrets_token_urlsafe() -> None:
    for nbytes, length in ((24, 32), (32, 43)):
        token = ids.secret_token(nbytes)
        assert re.fullmatch(rf"[A-Za-z0-9_-]{{{length}}}", token)
        assert len(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))) == nbytes
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", ids.link_token())


def test_secret_tokens_never_repeat_across_threads() -> None:
    tokens = _drawn_in_threads(lambda: ids.secret_token(16))
    assert len(set(tokens)) == len(tokens) == 40_000


def test_a_forked_child_draws_secrets_of_its_own() -> None:
    """The generator's state is copied by fork: parent and child must still draw apart."""

    def four() -> str:
        return "".join(ids.secret_token(32) for _ in range(4))

    ids.secret_token(32)  # the parent's generator is in use before the fork
    child = _drawn_in_forked_child(four)
    parent = four()
    assert len(child) == len(parent) == 4 * 43
    assert child != parent
