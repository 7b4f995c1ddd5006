"""What rendering may cost: image sizes in steps, renders per client and login, files that
go with their draft, the sweep of the rest, and templates whose files cannot be decoded.

Real Redis and SQLite for the counters, real file storage (a subclass that counts writes
where the number of renders matters), the real renderer.
"""

from __future__ import annotations

import io
import os
import struct
import time
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import api_support
import pytest
from conftest import ApiClient
from flask import Flask
from flask.testing import FlaskClient
from PIL import Image
from test_editor import SPEC as EDITOR_SPEC
from test_editor import form, log_in, open_editor
from test_files import SPEC, file_url, magento_claims, png_size, sign, stored_keys
from window_support import in_one_window

from app import create_app
from pps.editor.throttle import BURST, BURST_SECONDS
from pps.files.image_sizes import IMAGE_STEPS, stepped
from pps.files.keys import draft_file_key, template_asset_key
from pps.files.render_limits import TooManyRenders, render_budget, renders_key
from pps.files.sweep import sweep
from pps.platform.ephemeral import EphemeralStore
from pps.platform.ephemeral.redis_store import RedisStore
from pps.platform.ephemeral.sqlite_store import SqliteStore
from pps.platform.models import Client, Draft, Template, User
from pps.platform.repository.sql import SqlRepository
from pps.platform.storage.local import LocalStorage

# -- helpers -----------------------------------------------------------------------------


class CountingStorage(LocalStorage):
    """The real local storage, remembering every key written: one write per render."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.puts: list[str] = []

    def put(self, key: str, data: bytes) -> None:
        self.puts.append(key)
        super().put(key, data)


@pytest.fixture
def storage(app: Flask) -> CountingStorage:
    services = app.extensions["pps"]
    counting = CountingStorage(services.storage.root)
    services.storage = counting
    return counting


def poster(repo: SqlRepository, tenant: Client, spec: dict[str, Any] = SPEC) -> Template:
    return repo.create_template(
        tenant.identifier,
        name="Poster",
        data_keys=["title"],
        custom_attributes={},
        page_count=len(spec["pages"]),
        spec=spec,
    )


def new_draft(repo: SqlRepository, tenant: Client, user: User, template: Template) -> Draft:
    return api_support.make_draft(
        repo, tenant, user, template, api_default_values={"title": "Ada"}, custom_attributes={}
    )


def image_status(client: FlaskClient, tenant: Client, draft: Draft, **query: Any) -> Any:
    token = sign(tenant.api_key, magento_claims(tenant))
    return client.get(file_url(draft, "image"), query_string={"jwt": token, **query})


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.effect_noise((width, height), 40).convert("RGB").save(out, "PNG")
    return out.getvalue()


def truncated_png() -> bytes:
    """A PNG whose chunks are intact (CRCs right) but whose pixel data stops halfway."""
    data = png(200, 100)
    out, pos = [data[:8]], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IDAT":
            body = body[: len(body) // 2]
        out.append(struct.pack(">I", len(body)) + kind + body)
        out.append(struct.pack(">I", zlib.crc32(kind + body)))
        pos += 12 + length
    return b"".join(out)


# -- sizes in steps ----------------------------------------------------------------------


def test_stepped_sizes_name_the_longer_side_rounded_up() -> None:
    assert IMAGE_STEPS == (160, 320, 480, 640, 960, 1280, 1600, 2048)
    assert stepped((1, 1)) == (160, None)
    assert stepped((300, 150)) == (320, None)
    assert stepped((161, 80)) == (320, None)
    assert stepped((50, 100)) == (None, 160)
    assert stepped((320, 160)) == (320, None)
    assert stepped((4000, 2000)) == (2048, None)


def test_every_width_renders_one_of_a_few_sizes(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User, app: Flask
) -> None:
    draft = new_draft(repo, tenant, user, poster(repo, tenant))
    for width in (1, 2, 3, 50, 159, 160, 161, 200, 300, 319, 320):
        response = image_status(client, tenant, draft, width=width)
        assert response.status_code == 302, response.get_data(as_text=True)
    for height in (10, 80, 81, 150):
        assert image_status(client, tenant, draft, height=height).status_code == 302
    keys = stored_keys(app, f"drafts/{tenant.identifier}/{draft.draft_hash}")
    assert [key.rsplit("/", 1)[1] for key in keys] == [
        "image-p0-160x80.png",
        "image-p0-320x160.png",
    ]


# -- renders per client ------------------------------------------------------------------


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return {**app_config, "max_image_pixels": 1_000_000}


@pytest.fixture
def limited_app(app: Flask, app_config: dict[str, Any]) -> Iterator[Flask]:
    """A second app on the same database and Redis, with 3 renders per client and minute."""
    limited = create_app({**app_config, "renders_per_minute": 3})
    yield limited
    limited.extensions["pps"].close()


def test_renders_past_the_clients_budget_are_429_and_cached_files_still_served(
    limited_app: Flask, repo: SqlRepository, tenant: Client, other_tenant: Client, user: User
) -> None:
    client = limited_app.test_client()
    services = limited_app.extensions["pps"]

    def renders() -> tuple[Draft, CountingStorage, list[Any]]:
        storage = services.storage = CountingStorage(services.storage.root)
        draft = new_draft(repo, tenant, user, poster(repo, tenant))
        answers = [image_status(client, tenant, draft, width=w) for w in (160, 320, 480, 640)]
        return draft, storage, answers

    # Renders are counted per minute of the clock: the budget and the refused one in one.
    draft, storage, answers = in_one_window(60, renders, needed=20)
    *rendered, refused = answers
    assert [answer.status_code for answer in rendered] == [302] * 3
    api_support.assert_error(refused, 429)
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "rendered" in refused.get_json()["message"]
    assert len(storage.puts) == 3  # nothing rendered for the refused request
    # A file rendered before costs nothing and is still handed out.
    assert image_status(client, tenant, draft, width=300).status_code == 302
    # Another client has a budget of its own.
    other_user = repo.create_user(other_tenant.identifier, {})
    other = new_draft(repo, other_tenant, other_user, poster(repo, other_tenant))
    assert image_status(client, other_tenant, other, width=160).status_code == 302


def test_render_budget_counts_per_client_and_window(redis_url: str) -> None:
    store = RedisStore(redis_url)
    now = [6_000_000.0]  # the start of a minute; the client is new, so is its counter
    client = f"c-{uuid.uuid4().hex[:8]}"
    spend = render_budget(store, client, 2, clock=lambda: now[0])
    spend()
    spend()
    with pytest.raises(TooManyRenders) as refused:
        spend()
    assert refused.value.status == 429
    assert refused.value.headers["Retry-After"] == "60"
    now[0] += 60  # the next minute starts afresh
    spend()
    render_budget(store, client, 0, clock=lambda: now[0])()  # 0: no limit at all
    store.close()


@pytest.fixture(params=["redis", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EphemeralStore]:
    instance: EphemeralStore
    if request.param == "redis":
        instance = RedisStore(request.getfixturevalue("redis_url"))
    else:
        instance = SqliteStore(tmp_path / "ephemeral.sqlite3")
    yield instance
    instance.close()


def test_count_counts_up_and_starts_again_after_its_ttl(store: EphemeralStore) -> None:
    key = renders_key(uuid.uuid4().hex, 1)
    assert [store.count(key, 1) for _ in range(3)] == [1, 2, 3]
    assert store.count(renders_key(uuid.uuid4().hex, 1), 1) == 1  # keys are independent
    time.sleep(2.1)  # Redis expires keys with a resolution of one millisecond to a second
    assert store.count(key, 1) == 1
    with pytest.raises(ValueError, match="at least 1 second"):
        store.count(key, 0)


# -- files go with their draft -----------------------------------------------------------


def test_deleting_a_draft_deletes_its_rendered_files(
    app: Flask,
    client: FlaskClient,
    api: ApiClient,
    repo: SqlRepository,
    tenant: Client,
    user: User,
) -> None:
    draft = new_draft(repo, tenant, user, poster(repo, tenant))
    keep = new_draft(repo, tenant, user, poster(repo, tenant))
    token = sign(tenant.api_key, magento_claims(tenant))
    for kind in ("print", "image"):
        for target in (draft, keep):
            response = client.get(file_url(target, kind), query_string={"jwt": token})
            assert response.status_code == 302
    prefix = f"drafts/{tenant.identifier}/{draft.draft_hash}"
    assert len(stored_keys(app, prefix)) == 2
    assert api.delete(f"/api-ext/draft/{draft.draft_hash}").status_code == 204
    root = app.extensions["pps"].storage.root
    assert not (root / prefix).exists()  # files and folder
    assert len(stored_keys(app, f"drafts/{tenant.identifier}/{keep.draft_hash}")) == 2


def test_sweep_deletes_orphans_and_outdated_files_only(
    app: Flask, repo: SqlRepository, tenant: Client, user: User
) -> None:
    storage: LocalStorage = app.extensions["pps"].storage
    template = poster(repo, tenant)
    live = new_draft(repo, tenant, user, template)
    gone = new_draft(repo, tenant, user, template)
    old_version = live.version
    repo.update_draft(tenant.identifier, live.draft_hash, values={"title": "Changed"})
    current = live.version + 1

    def key(draft: Draft, version: int, kind: str = "print") -> str:
        return draft_file_key(tenant.identifier, draft.draft_hash, version, kind)

    hour_ago = time.time() - 3600
    files = {
        key(live, old_version): hour_ago,  # outdated and old enough: goes
        key(live, old_version, "low-res"): time.time(),  # outdated but fresh: a link may use it
        key(live, current): hour_ago,  # current: stays
        key(gone, 1): time.time(),  # deleted draft: goes at once
        f"templates/{tenant.identifier}/Vanished/assets/logo.png": hour_ago,
        f"templates/{tenant.identifier}/{template.identifier}/rendered/"
        "preview-p0-320x160-0123456789abcdef.png": hour_ago,  # made from another template
        template_asset_key(tenant.identifier, template.identifier, "logo.png"): hour_ago,
    }
    for name, modified in files.items():
        storage.put(name, b"data")
        os.utime(storage.path_for(name), (modified, modified))
    assert repo.delete_draft(tenant.identifier, gone.draft_hash)
    # The current preview of the template, rendered through the file endpoint's code.
    from pps.files.rendering import render_template_preview

    preview = render_template_preview(storage, template, width=320)
    os.utime(storage.path_for(preview.key), (hour_ago, hour_ago))

    dry = sweep(repo, storage, min_age=600, dry_run=True)
    assert dry.total == 4 and all(storage.stat(name) for name in files)

    result = app.test_cli_runner().invoke(args=["pps", "files", "sweep", "--min-age", "600"])
    assert result.exit_code == 0, result.output
    assert "Deleted 4 file(s)" in result.output
    left = {name for name in files if storage.stat(name) is not None}
    assert left == {
        key(live, old_version, "low-res"),
        key(live, current),
        template_asset_key(tenant.identifier, template.identifier, "logo.png"),
    }
    assert storage.stat(preview.key) is not None


def test_sweep_timer_unit_runs_the_sweep() -> None:
    deploy = Path(__file__).resolve().parent.parent / "deploy"
    service = (deploy / "pps-sweep.service").read_text()
    timer = (deploy / "pps-sweep.timer").read_text()
    assert "ExecStart=/opt/pps/.venv/bin/pps files sweep" in service
    assert "Type=oneshot" in service
    assert "OnCalendar=hourly" in timer


# -- templates whose files cannot be decoded ---------------------------------------------

IMAGE_SPEC: dict[str, Any] = {
    "name": "With logo",
    "size": {"width": 100, "height": 50},
    "pages": [
        {
            "elements": [
                {
                    "type": "image",
                    "file": "logo.png",
                    "box": {"x": 5, "y": 5, "width": 20, "height": 10},
                },
                {
                    "type": "text",
                    "dataKey": "title",
                    "box": {"x": 5, "y": 20, "width": 90, "height": 20},
                },
            ]
        }
    ],
}


@pytest.mark.parametrize(
    ("logo", "words"),
    [(truncated_png(), "cannot be decoded"), (png(1200, 1000), "megapixels")],
    ids=["truncated", "too-many-pixels"],
)
def test_a_template_file_that_cannot_be_decoded_is_a_clean_422(
    app: Flask,
    client: FlaskClient,
    repo: SqlRepository,
    tenant: Client,
    user: User,
    logo: bytes,
    words: str,
) -> None:
    # Imported before imports decoded every file: the bytes are in storage as they were.
    template = poster(repo, tenant, IMAGE_SPEC)
    storage = app.extensions["pps"].storage
    storage.put(template_asset_key(tenant.identifier, template.identifier, "logo.png"), logo)
    draft = new_draft(repo, tenant, user, template)
    token = sign(tenant.api_key, magento_claims(tenant))
    for kind in ("image", "print", "low-res"):
        response = client.get(file_url(draft, kind), query_string={"jwt": token})
        body = api_support.assert_error(response, 422, "template")
        assert words in body["message"]
    preview = client.get(
        f"/api-ext/files/template/{template.identifier}/page-preview-thumb",
        query_string={"jwt": token},
    )
    assert words in api_support.assert_error(preview, 422, "template")["message"]

    log_in(client, tenant, user)
    for method in ("GET", "POST"):
        _, csrf = open_editor(client, f"/editor/{draft.draft_hash}/edit")
        page = client.open(
            f"/editor/{draft.draft_hash}/page/0.png?width=960",
            method=method,
            data=form(csrf, title="Typed") if method == "POST" else None,
        )
        assert page.status_code == 422, page.get_data(as_text=True)
        assert any(words in message for message in page.get_json()["general"])


# -- the editor's previews ---------------------------------------------------------------


def editor_draft(repo: SqlRepository, tenant: Client, user: User, **values: Any) -> Draft:
    template = repo.create_template(
        tenant.identifier,
        name="Flyer",
        data_keys=["headline", "<b>tagline</b>", "phone"],
        custom_attributes={},
        page_count=2,
        spec=EDITOR_SPEC,
    )
    return api_support.make_draft(
        repo, tenant, user, template, api_default_values=values, custom_attributes={}
    )


@pytest.mark.parametrize("width", [960, 1600])
def test_a_number_in_api_default_values_renders_each_page_once(
    client: FlaskClient,
    repo: SqlRepository,
    tenant: Client,
    user: User,
    storage: CountingStorage,
    width: int,
) -> None:
    draft = editor_draft(repo, tenant, user, headline="Hi", phone=12345)
    log_in(client, tenant, user)
    images = []
    for _ in range(3):
        for page in (0, 1):
            response = client.get(f"/editor/{draft.draft_hash}/page/{page}.png?width={width}&v=1")
            assert response.status_code == 200, response.get_data(as_text=True)
            images.append(response.data)
    assert len(storage.puts) == 2  # one render per page, then storage lookups
    assert images[0:2] == images[2:4] == images[4:6]
    assert png_size(images[0])[0] == width


def test_live_preview_limit_counts_per_login_over_all_drafts(
    client: FlaskClient, repo: SqlRepository, tenant: Client, user: User
) -> None:
    drafts = [editor_draft(repo, tenant, user, headline="Hi") for _ in range(8)]
    log_in(client, tenant, user)
    _, csrf = open_editor(client, f"/editor/{drafts[0].draft_hash}/edit")

    def burst() -> list[int]:
        statuses = []
        # Round robin over the drafts and pages: each draft alone stays far below the burst.
        for index in range(BURST + 1):
            draft = drafts[index % len(drafts)]
            # A headline too long: a fast 422 that still counts as a preview.
            response = client.post(
                f"/editor/{draft.draft_hash}/page/{index % 2}.png?width=960",
                data=form(csrf, headline="x" * 41),
            )
            statuses.append(response.status_code)
        return statuses

    # The burst is counted in windows of BURST_SECONDS of the clock: all in one. The
    # login's burst was spent over all the drafts.
    statuses = in_one_window(BURST_SECONDS, burst)
    assert statuses == [422] * BURST + [429], statuses
    assert len(statuses) // len(drafts) < BURST
