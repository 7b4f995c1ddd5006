"""The repository contract, run against every backend (SQLite always, PostgreSQL when set).

Tenancy is the point of most of these tests: every query takes the client first, and a
record of another client must be invisible and untouchable, as if it did not exist.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa
from api_support import (
    CLIENT_ID,
    DRAFT_HASH,
    TEMPLATE_ID,
    USER_ID,
    disable,
    make_draft,
    make_template,
    make_user,
    snapshot,
)

from pps.platform import ids
from pps.platform.models import Client, Draft, DraftRef, Template, TemplateRef, User
from pps.platform.repository import DuplicateIdentifier
from pps.platform.repository.sql import SqlRepository


def blank_draft(
    repository: SqlRepository, client: str, user: User, template: Template
) -> Draft | None:
    """``create_draft`` without values or attributes, its answer unchecked."""
    return repository.create_draft(
        client,
        user_identifier=user.identifier,
        template_identifier=template.identifier,
        intent="customize",
        api_default_values={},
        custom_attributes={},
    )


def aware(value: datetime | None) -> bool:
    return value is not None and value.tzinfo is not None and value.utcoffset() is not None


@pytest.fixture
def shop_a(repository: SqlRepository) -> Client:
    return repository.create_client("Shop A")


@pytest.fixture
def shop_b(repository: SqlRepository) -> Client:
    return repository.create_client("Shop B")


# -- clients ------------------------------------------------------------------------------


def test_create_client_draws_identifier_and_key(repository: SqlRepository) -> None:
    client = repository.create_client("Shop", allowed_origins=["https://shop.example"])
    assert CLIENT_ID.match(client.identifier)
    assert len(client.api_key) >= 32
    assert client.name == "Shop"
    assert client.allowed_origins == ("https://shop.example",)
    assert client.active
    assert aware(client.created_at)
    assert repository.get_client(client.identifier) == client
    assert client in repository.list_clients()


def test_create_client_with_identifier_and_key(repository: SqlRepository) -> None:
    identifier = ids.client_identifier()
    key = ids.api_key()
    client = repository.create_client("Shop", identifier=identifier, api_key=key)
    assert client.identifier == identifier
    assert client.api_key == key
    assert repository.find_client_by_api_key(key) == client


def test_duplicate_client_identifier_is_refused(repository: SqlRepository) -> None:
    first = repository.create_client("Shop", identifier=ids.client_identifier())
    before = snapshot(repository)
    with pytest.raises(DuplicateIdentifier):
        repository.create_client("Other", identifier=first.identifier)
    assert snapshot(repository) == before
    assert repository.get_client(first.identifier) == first


def test_duplicate_api_key_is_refused_with_either_identifier(repository: SqlRepository) -> None:
    first = repository.create_client("Shop")
    with pytest.raises(DuplicateIdentifier):
        repository.create_client("Other", api_key=first.api_key)
    with pytest.raises(DuplicateIdentifier):
        repository.create_client("Other", identifier=ids.client_identifier(), api_key=first.api_key)
    assert repository.find_client_by_api_key(first.api_key) == first


def test_find_client_by_api_key_matches_exactly(repository: SqlRepository, shop_a: Client) -> None:
    key = shop_a.api_key
    assert repository.find_client_by_api_key(key) == shop_a
    near_misses = [
        key[:-1],
        key[1:],
        key + "x",
        "x" + key,
        key.upper(),
        key.lower(),
        key.swapcase(),
        f" {key}",
        f"{key} ",
        "",
        key[:16],
    ]
    for candidate in near_misses:
        if candidate != key:
            assert repository.find_client_by_api_key(candidate) is None, candidate


def test_disabled_client_is_not_found_by_key(repository: SqlRepository, shop_a: Client) -> None:
    disable(repository, shop_a)
    assert repository.find_client_by_api_key(shop_a.api_key) is None
    disabled = repository.get_client(shop_a.identifier)
    assert disabled is not None and not disabled.active and aware(disabled.disabled_at)


def test_rotate_api_key_invalidates_the_old_key(
    repository: SqlRepository, shop_a: Client, shop_b: Client
) -> None:
    rotated = repository.rotate_api_key(shop_a.identifier)
    assert rotated is not None
    assert rotated.identifier == shop_a.identifier
    assert rotated.api_key != shop_a.api_key and len(rotated.api_key) >= 32
    assert repository.find_client_by_api_key(shop_a.api_key) is None
    assert repository.find_client_by_api_key(rotated.api_key) == rotated
    assert repository.find_client_by_api_key(shop_b.api_key) == shop_b
    assert repository.rotate_api_key("nobody00") is None


# -- users --------------------------------------------------------------------------------


def test_user_crud(repository: SqlRepository, shop_a: Client) -> None:
    user = repository.create_user(
        shop_a.identifier,
        {
            "first_name": "Ada",
            "last_name": "Lovelace",
            "email": "ada@example.com",
            "locale": "en",
            "custom_attributes": {"tier": "gold"},
            "not_a_field": "ignored",
        },
    )
    assert USER_ID.match(user.identifier)
    assert user.client_identifier == shop_a.identifier
    assert (user.first_name, user.last_name, user.email, user.locale) == (
        "Ada",
        "Lovelace",
        "ada@example.com",
        "en",
    )
    assert user.title is None and user.salutation is None
    assert user.custom_attributes == {"tier": "gold"}
    assert aware(user.created_at) and aware(user.updated_at)
    assert repository.get_user(shop_a.identifier, user.identifier) == user

    updated = repository.update_user(
        shop_a.identifier, user.identifier, {"first_name": "Augusta", "title": "Countess"}
    )
    assert updated is not None
    assert (updated.first_name, updated.title) == ("Augusta", "Countess")
    assert (updated.last_name, updated.email) == ("Lovelace", "ada@example.com")
    assert updated.custom_attributes == {"tier": "gold"}
    assert updated.updated_at is not None and user.updated_at is not None
    assert updated.updated_at >= user.updated_at
    assert repository.get_user(shop_a.identifier, user.identifier) == updated

    assert repository.delete_user(shop_a.identifier, user.identifier) is True
    assert repository.get_user(shop_a.identifier, user.identifier) is None
    assert repository.delete_user(shop_a.identifier, user.identifier) is False
    assert repository.update_user(shop_a.identifier, user.identifier, {"title": "x"}) is None


def test_user_exists_only_for_its_own_client(repository: SqlRepository, shop_a: Client) -> None:
    """The /auth fast path: a yes/no lookup that must honour tenancy like every other."""
    shop_b = repository.create_client("Shop B")
    user = repository.create_user(shop_a.identifier, {})
    assert repository.user_exists(shop_a.identifier, user.identifier)
    assert not repository.user_exists(shop_b.identifier, user.identifier)
    assert not repository.user_exists(shop_a.identifier, user.identifier.upper() + "x")
    assert not repository.user_exists(shop_a.identifier, "a\x00b")
    repository.delete_user(shop_a.identifier, user.identifier)
    assert not repository.user_exists(shop_a.identifier, user.identifier)


def test_draft_ref_only_for_its_own_client(repository: SqlRepository, shop_a: Client) -> None:
    """The file-link fast path: owner and version, honouring tenancy like every other."""
    shop_b = repository.create_client("Shop B")
    draft = make_draft(repository, shop_a)
    ref = repository.get_draft_ref(shop_a.identifier, draft.draft_hash)
    assert ref == DraftRef(
        draft_hash=draft.draft_hash,
        client_identifier=shop_a.identifier,
        user_identifier=draft.user_identifier,
        version=draft.version,
    )
    assert repository.get_draft_ref(shop_b.identifier, draft.draft_hash) is None
    assert repository.get_draft_ref(shop_a.identifier, draft.draft_hash.upper() + "x") is None
    assert repository.get_draft_ref(shop_a.identifier, "a\x00b") is None
    changed = repository.update_draft(shop_a.identifier, draft.draft_hash, state="edited")
    assert changed is not None and changed.version == draft.version + 1
    again = repository.get_draft_ref(shop_a.identifier, draft.draft_hash)
    assert again is not None and again.version == changed.version
    repository.delete_draft(shop_a.identifier, draft.draft_hash)
    assert repository.get_draft_ref(shop_a.identifier, draft.draft_hash) is None


def test_template_ref_is_the_template_without_its_spec(
    repository: SqlRepository, shop_a: Client
) -> None:
    """The preview link's point lookup: pages and preview key, honouring tenancy."""
    shop_b = repository.create_client("Shop B")
    template = make_template(repository, shop_a)
    ref = repository.get_template_ref(shop_a.identifier, template.identifier)
    assert ref == TemplateRef(
        identifier=template.identifier,
        client_identifier=shop_a.identifier,
        page_count=template.page_count,
        preview_key=None,
    )
    assert repository.get_template_ref(shop_b.identifier, template.identifier) is None
    assert repository.get_template_ref(shop_a.identifier, "a\x00b") is None
    with_preview = repository.create_template(
        shop_a.identifier,
        name="Card",
        data_keys=["Name"],
        custom_attributes={},
        page_count=3,
        spec={"pages": 3},
        preview_key="templates/x/preview.png",
    )
    ref = repository.get_template_ref(shop_a.identifier, with_preview.identifier)
    assert ref is not None
    assert (ref.page_count, ref.preview_key) == (3, "templates/x/preview.png")


def test_create_user_without_fields(repository: SqlRepository, shop_a: Client) -> None:
    user = repository.create_user(shop_a.identifier, {})
    assert user.custom_attributes == {}
    assert (user.first_name, user.last_name, user.email, user.locale) == (None,) * 4


def test_delete_user_deletes_the_users_drafts(repository: SqlRepository, shop_a: Client) -> None:
    user = make_user(repository, shop_a)
    keep = make_user(repository, shop_a)
    template = make_template(repository, shop_a)
    gone = [make_draft(repository, shop_a, user, template) for _ in range(3)]
    kept = make_draft(repository, shop_a, keep, template)
    assert repository.delete_user(shop_a.identifier, user.identifier)
    for record in gone:
        assert repository.get_draft(shop_a.identifier, record.draft_hash) is None
    assert repository.get_draft(shop_a.identifier, kept.draft_hash) == kept
    assert repository.get_user(shop_a.identifier, keep.identifier) == keep


def test_merge_moves_drafts_and_deletes_the_source(
    repository: SqlRepository, shop_a: Client
) -> None:
    target = make_user(repository, shop_a)
    source = make_user(repository, shop_a)
    template = make_template(repository, shop_a)
    own = make_draft(repository, shop_a, target, template)
    moved = [make_draft(repository, shop_a, source, template) for _ in range(2)]

    assert repository.merge_users(shop_a.identifier, target.identifier, source.identifier)

    assert repository.get_user(shop_a.identifier, source.identifier) is None
    assert repository.get_user(shop_a.identifier, target.identifier) == target
    for record in [own, *moved]:
        now = repository.get_draft(shop_a.identifier, record.draft_hash)
        assert now is not None
        assert now.user_identifier == target.identifier
        assert now.api_default_values == record.api_default_values
    listed = repository.list_drafts(shop_a.identifier, user_identifier=target.identifier)
    assert listed.total == 3


def test_merge_with_a_missing_user_changes_nothing(
    repository: SqlRepository, shop_a: Client
) -> None:
    target = make_user(repository, shop_a)
    source = make_user(repository, shop_a)
    make_draft(repository, shop_a, source)
    before = snapshot(repository)
    assert not repository.merge_users(shop_a.identifier, target.identifier, "missing1")
    assert not repository.merge_users(shop_a.identifier, "missing1", source.identifier)
    assert snapshot(repository) == before


def test_merge_into_itself_changes_nothing(repository: SqlRepository, shop_a: Client) -> None:
    user = make_user(repository, shop_a)
    make_draft(repository, shop_a, user)
    before = snapshot(repository)
    repository.merge_users(shop_a.identifier, user.identifier, user.identifier)
    assert snapshot(repository) == before


def run_at_once(calls: list[Callable[[], object]]) -> list[object]:
    """Each call in its own thread, all let go at once; what each returned or raised."""
    start = threading.Barrier(len(calls))
    outcomes: list[object] = []

    def run(call: Callable[[], object]) -> None:
        start.wait()
        try:
            outcomes.append(call())
        except Exception as exc:  # the test reports whatever escaped
            outcomes.append(exc)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_concurrent_merges_of_a_pair_merge_once(repository: SqlRepository, shop_a: Client) -> None:
    """A into B and B into A, several times each, at once: exactly one merge happens and
    says so; the others find a user gone (False), none raises, and one user is left owning
    both drafts. On SQLite the checks ran before the write lock was taken, so a merge could
    find both users and then fail on the foreign key, or delete nothing and report success."""
    template = make_template(repository, shop_a)
    for _ in range(8):
        a, b = make_user(repository, shop_a), make_user(repository, shop_a)
        drafts = [make_draft(repository, shop_a, user, template) for user in (a, b)]
        merges = [
            functools.partial(repository.merge_users, shop_a.identifier, t.identifier, s.identifier)
            for t, s in [(a, b), (b, a)] * 4
        ]
        outcomes = run_at_once(merges)
        assert sorted(map(repr, outcomes)) == ["False"] * 7 + ["True"], outcomes
        left = [u for u in (a, b) if repository.get_user(shop_a.identifier, u.identifier)]
        assert len(left) == 1
        for draft in drafts:
            found = repository.get_draft(shop_a.identifier, draft.draft_hash)
            assert found is not None and found.user_identifier == left[0].identifier


def test_merge_is_atomic(repository: SqlRepository, shop_a: Client) -> None:
    """If deleting the source fails, the drafts it had are not left moved."""
    target = make_user(repository, shop_a)
    source = make_user(repository, shop_a)
    make_draft(repository, shop_a, source)
    before = snapshot(repository)

    def fail_on_user_delete(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("DELETE FROM USERS"):
            raise RuntimeError("simulated failure")

    sa.event.listen(repository.engine, "before_cursor_execute", fail_on_user_delete)
    try:
        with pytest.raises(RuntimeError, match="simulated failure"):
            repository.merge_users(shop_a.identifier, target.identifier, source.identifier)
    finally:
        sa.event.remove(repository.engine, "before_cursor_execute", fail_on_user_delete)
    assert snapshot(repository) == before


# -- tenancy ------------------------------------------------------------------------------


@pytest.fixture
def world(repository: SqlRepository, shop_a: Client, shop_b: Client) -> dict[str, Any]:
    """A user, template and draft for each of two clients."""
    a_user = make_user(repository, shop_a, first_name="A")
    b_user = make_user(repository, shop_b, first_name="B")
    a_template = make_template(repository, shop_a)
    b_template = make_template(repository, shop_b)
    return {
        "a_user": a_user,
        "b_user": b_user,
        "a_template": a_template,
        "b_template": b_template,
        "a_draft": make_draft(repository, shop_a, a_user, a_template),
        "b_draft": make_draft(repository, shop_b, b_user, b_template),
    }


def test_other_clients_records_are_invisible(
    repository: SqlRepository, shop_a: Client, world: dict[str, Any]
) -> None:
    a = shop_a.identifier
    b_user, b_template, b_draft = world["b_user"], world["b_template"], world["b_draft"]
    assert repository.get_user(a, b_user.identifier) is None
    assert repository.get_template(a, b_template.identifier) is None
    assert repository.get_draft(a, b_draft.draft_hash) is None
    drafts = repository.list_drafts(a, per_page=100)
    assert [d.draft_hash for d in drafts.items] == [world["a_draft"].draft_hash]
    assert drafts.total == 1
    assert repository.list_drafts(a, user_identifier=b_user.identifier).total == 0
    templates = repository.list_templates(a)
    assert [t.identifier for t in templates.items] == [world["a_template"].identifier]


def test_other_clients_records_cannot_be_changed(
    repository: SqlRepository, shop_a: Client, world: dict[str, Any]
) -> None:
    a = shop_a.identifier
    a_user, a_template = world["a_user"], world["a_template"]
    b_user, b_template, b_draft = world["b_user"], world["b_template"], world["b_draft"]
    before = snapshot(repository)

    assert repository.update_user(a, b_user.identifier, {"first_name": "X"}) is None
    assert repository.delete_user(a, b_user.identifier) is False
    assert repository.merge_users(a, a_user.identifier, b_user.identifier) is False
    assert repository.merge_users(a, b_user.identifier, a_user.identifier) is False
    assert repository.update_draft(a, b_draft.draft_hash, custom_attributes={"x": 1}) is None
    assert repository.update_draft(a, b_draft.draft_hash, state="finished") is None
    assert repository.delete_draft(a, b_draft.draft_hash) is False
    assert repository.replicate_draft(a, b_draft.draft_hash) is None
    for dry_run in (True, False):
        assert repository.claim_drafts(a, a_user.identifier, [b_draft.draft_hash], dry_run) == {
            b_draft.draft_hash: False
        }
    assert repository.claim_drafts(a, b_user.identifier, [b_draft.draft_hash], False) is None
    for user, template in ((b_user, a_template), (a_user, b_template), (b_user, b_template)):
        assert blank_draft(repository, a, user, template) is None

    assert snapshot(repository) == before


def test_identifiers_that_cannot_exist_are_not_found(
    repository: SqlRepository, shop_a: Client, world: dict[str, Any]
) -> None:
    """A NUL (from a URL or a JWT claim) is "not found" on every backend, never an error."""
    a = shop_a.identifier
    bad = "ab\x00cd"
    before = snapshot(repository)
    assert repository.get_client(bad) is None
    assert repository.rotate_api_key(bad) is None
    assert repository.find_client_by_api_key(bad) is None
    assert repository.get_user(a, bad) is None
    assert repository.get_user(bad, world["a_user"].identifier) is None
    assert repository.update_user(a, bad, {"title": "x"}) is None
    assert repository.delete_user(a, bad) is False
    assert repository.merge_users(a, world["a_user"].identifier, bad) is False
    assert repository.get_template(a, bad) is None
    assert repository.get_draft(a, bad) is None
    assert repository.update_draft(a, bad, state="edited") is None
    assert repository.delete_draft(a, bad) is False
    assert repository.replicate_draft(a, bad) is None
    assert repository.list_drafts(a, user_identifier=bad).total == 0
    assert repository.claim_drafts(a, bad, [], False) is None
    claimed = repository.claim_drafts(a, world["a_user"].identifier, [bad], False)
    assert claimed == {bad: False}
    assert snapshot(repository) == before


# -- templates ----------------------------------------------------------------------------


def test_template_identifier_is_unique_per_client_only(
    repository: SqlRepository, shop_a: Client, shop_b: Client
) -> None:
    a = make_template(repository, shop_a, "TPL00001", name="A's card")
    b = make_template(repository, shop_b, "TPL00001", name="B's card")
    assert (a.identifier, b.identifier) == ("TPL00001", "TPL00001")
    before = snapshot(repository)
    with pytest.raises(DuplicateIdentifier):
        make_template(repository, shop_a, "TPL00001", name="again")
    assert snapshot(repository) == before
    found_a = repository.get_template(shop_a.identifier, "TPL00001")
    found_b = repository.get_template(shop_b.identifier, "TPL00001")
    assert found_a is not None and found_a.name == "A's card"
    assert found_b is not None and found_b.name == "B's card"


def test_template_fields_and_timestamps(repository: SqlRepository, shop_a: Client) -> None:
    template = make_template(repository, shop_a, custom_attributes={"sku": "X", "n": 2})
    assert TEMPLATE_ID.match(template.identifier)
    assert template.client_identifier == shop_a.identifier
    assert template.data_keys == ("Name", "City")
    assert template.custom_attributes == {"sku": "X", "n": 2}
    assert template.page_count == 2
    assert template.spec == {"pages": 2}
    assert aware(template.created_at) and aware(template.updated_at)
    assert repository.get_template(shop_a.identifier, template.identifier) == template


def test_list_templates_pages_or_returns_all(repository: SqlRepository, shop_a: Client) -> None:
    made = [make_template(repository, shop_a, name=f"T{i}").identifier for i in range(7)]
    everything = repository.list_templates(shop_a.identifier)
    assert sorted(t.identifier for t in everything.items) == sorted(made)
    assert (everything.total, everything.page, everything.last_page) == (7, 1, 1)
    seen: list[str] = []
    for number in (1, 2, 3):
        page = repository.list_templates(shop_a.identifier, number, 3)
        assert (page.total, page.page, page.per_page, page.last_page) == (7, number, 3, 3)
        seen += [t.identifier for t in page.items]
    assert sorted(seen) == sorted(made)
    assert len(seen) == 7
    assert repository.list_templates(shop_a.identifier, 4, 3).items == []
    every_client = repository.list_templates(None)
    assert set(made) <= {t.identifier for t in every_client.items}


# -- drafts -------------------------------------------------------------------------------


def test_create_draft(repository: SqlRepository, shop_a: Client) -> None:
    user = make_user(repository, shop_a)
    template = make_template(repository, shop_a)
    draft = repository.create_draft(
        shop_a.identifier,
        user_identifier=user.identifier,
        template_identifier=template.identifier,
        intent="upload",
        api_default_values={"Name": "Ada", "Zip": 1234},
        custom_attributes={"order": {"line": 3}},
    )
    assert draft is not None
    assert DRAFT_HASH.match(draft.draft_hash)
    assert draft.client_identifier == shop_a.identifier
    assert (draft.user_identifier, draft.template_identifier) == (
        user.identifier,
        template.identifier,
    )
    assert (draft.intent, draft.state, draft.version) == ("upload", "init", 1)
    assert draft.values == {}
    assert draft.api_default_values == {"Name": "Ada", "Zip": 1234}
    assert draft.custom_attributes == {"order": {"line": 3}}
    assert aware(draft.created_at) and aware(draft.updated_at)
    assert repository.get_draft(shop_a.identifier, draft.draft_hash) == draft


def test_create_draft_for_a_user_that_vanished(
    repository: SqlRepository, shop_a: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user is deleted between the check and the insert: None, not an error."""
    user = make_user(repository, shop_a)
    template = make_template(repository, shop_a)
    repository.delete_user(shop_a.identifier, user.identifier)
    monkeypatch.setattr(repository, "get_user", lambda client, identifier: user)
    before = snapshot(repository)
    assert blank_draft(repository, shop_a.identifier, user, template) is None
    assert snapshot(repository) == before


def test_a_colliding_draft_hash_is_drawn_again(
    repository: SqlRepository, shop_a: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    existing = make_draft(repository, shop_a)
    fresh = "z" * 32
    draws = iter([existing.draft_hash, fresh])
    monkeypatch.setattr(ids, "draft_hash", lambda: next(draws))
    copy = repository.replicate_draft(shop_a.identifier, existing.draft_hash)
    assert copy is not None and copy.draft_hash == fresh


def test_list_drafts_paginates(repository: SqlRepository, shop_a: Client) -> None:
    user = make_user(repository, shop_a)
    other = make_user(repository, shop_a)
    template = make_template(repository, shop_a)
    made = [make_draft(repository, shop_a, user, template).draft_hash for _ in range(7)]
    make_draft(repository, shop_a, other, template)

    first = repository.list_drafts(shop_a.identifier, 1, 3)
    assert (first.total, first.page, first.per_page, first.last_page) == (8, 1, 3, 3)
    assert len(first.items) == 3
    default = repository.list_drafts(shop_a.identifier)
    assert (default.per_page, default.total, default.last_page, len(default.items)) == (25, 8, 1, 8)

    seen: list[str] = []
    for number in (1, 2, 3):
        page = repository.list_drafts(shop_a.identifier, number, 3, user_identifier=user.identifier)
        assert (page.total, page.last_page) == (7, 3)
        seen += [d.draft_hash for d in page.items]
    assert sorted(seen) == sorted(made) and len(seen) == 7
    beyond = repository.list_drafts(shop_a.identifier, 9, 3)
    assert beyond.items == [] and beyond.total == 8


def test_list_drafts_of_a_client_without_drafts(repository: SqlRepository, shop_a: Client) -> None:
    page = repository.list_drafts(shop_a.identifier)
    assert (page.items, page.total, page.page, page.last_page) == ([], 0, 1, 1)


def test_update_draft_bumps_version(repository: SqlRepository, shop_a: Client) -> None:
    draft = make_draft(repository, shop_a)
    first = repository.update_draft(
        shop_a.identifier, draft.draft_hash, api_default_values={"Name": "Grace"}
    )
    assert first is not None
    assert first.version == draft.version + 1
    assert first.api_default_values == {"Name": "Grace"}
    assert first.custom_attributes == draft.custom_attributes
    assert first.updated_at >= draft.updated_at
    second = repository.update_draft(
        shop_a.identifier, draft.draft_hash, values={"City": "Paris"}, state="edited"
    )
    assert second is not None
    assert (second.version, second.state, second.values) == (
        draft.version + 2,
        "edited",
        {"City": "Paris"},
    )
    assert second.api_default_values == {"Name": "Grace"}
    assert repository.update_draft(shop_a.identifier, "0" * 32, state="edited") is None


def test_replace_upload_tells_the_key_it_replaced(
    repository: SqlRepository, shop_a: Client, shop_b: Client
) -> None:
    draft = make_draft(repository, shop_a)
    first = repository.replace_upload(shop_a.identifier, draft.draft_hash, "k/first.pdf", 10)
    assert first is not None and first.previous_key is None
    assert (first.draft.upload_key, first.draft.upload_size) == ("k/first.pdf", 10)
    assert first.draft.version == draft.version + 1
    second = repository.replace_upload(shop_a.identifier, draft.draft_hash, "k/second.pdf", 20)
    assert second is not None and second.previous_key == "k/first.pdf"
    assert second.draft == repository.get_draft(shop_a.identifier, draft.draft_hash)
    assert repository.replace_upload(shop_b.identifier, draft.draft_hash, "k/x.pdf", 1) is None
    assert repository.replace_upload(shop_a.identifier, "0" * 32, "k/x.pdf", 1) is None
    assert repository.get_draft(shop_a.identifier, draft.draft_hash) == second.draft


def test_replace_upload_at_once_tells_each_key_to_one_upload(
    repository: SqlRepository, shop_a: Client
) -> None:
    """Each key is replaced once, by one of the uploads, and the last one is the draft's:
    deleting what each was told leaves exactly the draft's file."""
    draft = make_draft(repository, shop_a)
    assert repository.replace_upload(shop_a.identifier, draft.draft_hash, "k/start.pdf", 1)
    count = 8
    start = threading.Barrier(count)
    told: list[str | None] = [None] * count

    def record(index: int) -> None:
        start.wait()
        replaced = repository.replace_upload(
            shop_a.identifier, draft.draft_hash, f"k/{index}.pdf", index + 1
        )
        assert replaced is not None
        told[index] = replaced.previous_key

    threads = [threading.Thread(target=record, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = repository.get_draft(shop_a.identifier, draft.draft_hash)
    assert final is not None and final.upload_key is not None
    assert final.version == draft.version + 1 + count
    keys = {"k/start.pdf", *(f"k/{i}.pdf" for i in range(count))}
    assert sorted(str(key) for key in told) == sorted(keys - {final.upload_key})
    assert final.upload_size == int(final.upload_key.removeprefix("k/").split(".")[0]) + 1


def test_delete_draft(repository: SqlRepository, shop_a: Client) -> None:
    draft = make_draft(repository, shop_a)
    assert repository.delete_draft(shop_a.identifier, draft.draft_hash) is True
    assert repository.get_draft(shop_a.identifier, draft.draft_hash) is None
    assert repository.delete_draft(shop_a.identifier, draft.draft_hash) is False


def test_replicate_draft(repository: SqlRepository, shop_a: Client) -> None:
    draft = make_draft(repository, shop_a, api_default_values={"Name": "Ada"})
    edited = repository.update_draft(
        shop_a.identifier, draft.draft_hash, values={"City": "London"}, state="edited"
    )
    assert edited is not None
    copy = repository.replicate_draft(shop_a.identifier, draft.draft_hash)
    assert copy is not None
    assert copy.draft_hash != draft.draft_hash and DRAFT_HASH.match(copy.draft_hash)
    for name in (
        "client_identifier",
        "user_identifier",
        "template_identifier",
        "intent",
        "values",
        "api_default_values",
        "custom_attributes",
    ):
        assert getattr(copy, name) == getattr(edited, name), name
    assert repository.get_draft(shop_a.identifier, draft.draft_hash) == edited
    assert repository.replicate_draft(shop_a.identifier, "0" * 32) is None


def test_a_claim_racing_the_claimers_deletion_claims_all_or_nothing(
    repository: SqlRepository, shop_a: Client
) -> None:
    """The claimer deleted while its claims run: each claim finds the user and moves the
    drafts, or finds no user (None); none raises, and no draft is left without its owner."""
    template = make_template(repository, shop_a)
    for _ in range(8):
        owner, claimer = make_user(repository, shop_a), make_user(repository, shop_a)
        hashes = [make_draft(repository, shop_a, owner, template).draft_hash for _ in range(3)]
        claim = functools.partial(
            repository.claim_drafts, shop_a.identifier, claimer.identifier, hashes, False
        )
        delete = functools.partial(repository.delete_user, shop_a.identifier, claimer.identifier)
        outcomes = run_at_once([delete, *[claim] * 5])
        assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
        for draft_hash in hashes:  # with the claimer gone, its drafts went with it
            found = repository.get_draft(shop_a.identifier, draft_hash)
            assert found is None or found.user_identifier == owner.identifier


def test_claim_drafts(repository: SqlRepository, shop_a: Client) -> None:
    owner = make_user(repository, shop_a)
    claimer = make_user(repository, shop_a)
    template = make_template(repository, shop_a)
    one = make_draft(repository, shop_a, owner, template)
    two = make_draft(repository, shop_a, owner, template)
    hashes = [one.draft_hash, two.draft_hash, one.draft_hash, "missing"]

    before = snapshot(repository)
    expected = {one.draft_hash: True, two.draft_hash: True, "missing": False}
    assert repository.claim_drafts(shop_a.identifier, claimer.identifier, hashes, True) == expected
    assert snapshot(repository) == before

    assert repository.claim_drafts(shop_a.identifier, claimer.identifier, hashes, False) == expected
    for record in (one, two):
        now = repository.get_draft(shop_a.identifier, record.draft_hash)
        assert now is not None and now.user_identifier == claimer.identifier
    assert repository.claim_drafts(shop_a.identifier, claimer.identifier, [], False) == {}
    assert repository.claim_drafts(shop_a.identifier, "missing1", [one.draft_hash], False) is None
