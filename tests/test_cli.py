"""The operator CLI: ``flask --app app pps ...`` through the test runner, and the real ``pps``."""

from __future__ import annotations

import base64
import io
import json
import os
import secrets
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from click.testing import Result
from conftest import complete_login
from flask import Flask
from flask.testing import FlaskCliRunner
from PIL import Image
from server_support import pps_script

from pps.auth.tokens import verify_token
from pps.platform.repository.sql import SqlRepository
from pps.render import parse_spec, validate_values
from pps.templates.files import PNG_SIGNATURE, preview_key


def _small_png() -> bytes:
    """A real PNG: the import decodes every file it copies, the preview included."""
    out = io.BytesIO()
    Image.new("RGB", (8, 4), (0, 128, 255)).save(out, "PNG")
    return out.getvalue()


PNG = _small_png()
assert PNG.startswith(PNG_SIGNATURE)


@pytest.fixture
def runner(app: Flask) -> FlaskCliRunner:
    return app.test_cli_runner()


@pytest.fixture
def shop_a() -> str:
    """A fresh client identifier: the PostgreSQL test database is shared by the whole run."""
    return f"ShopA{secrets.token_hex(3)}"


@pytest.fixture
def shop_b() -> str:
    return f"ShopB{secrets.token_hex(3)}"


def client_count(repo: SqlRepository) -> int:
    return len(repo.list_clients())


def pps(runner: FlaskCliRunner, *args: str) -> Result:
    return runner.invoke(args=["pps", *args])


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# -- db ----------------------------------------------------------------------------------


def test_db_upgrade_is_idempotent(runner: FlaskCliRunner) -> None:
    result = pps(runner, "db", "upgrade")
    assert result.exit_code == 0, result.output
    assert "(head)." in result.stdout


def test_commands_on_an_unmigrated_database_say_what_to_do(tmp_path: Path) -> None:
    from app import create_app

    app = create_app(
        {
            "instance_path": tmp_path / "instance",
            "database_url": f"sqlite:///{tmp_path / 'empty.sqlite3'}",
            "secret_key": "test-secret-key-0123456789abcdef",
        }
    )
    try:
        result = app.test_cli_runner().invoke(args=["pps", "client", "list"])
    finally:
        app.extensions["pps"].close()
    assert result.exit_code == 1
    assert "run 'pps db upgrade'" in result.stderr


# -- clients -----------------------------------------------------------------------------


def test_client_create_prints_identifier_and_key(
    runner: FlaskCliRunner, repo: SqlRepository
) -> None:
    result = pps(runner, "client", "create", "--name", "Shop A")
    assert result.exit_code == 0, result.output
    identifier = result.stdout.split("identifier: ")[1].split()[0]
    client = repo.get_client(identifier)
    assert client is not None
    assert client.name == "Shop A"
    assert f"identifier: {client.identifier}" in result.stdout
    assert f"API key:    {client.api_key}" in result.stdout
    assert len(client.api_key) >= 32


def test_client_create_json(runner: FlaskCliRunner, repo: SqlRepository, shop_a: str) -> None:
    out = ok_json(
        pps(
            runner,
            "client",
            "create",
            "--name",
            "Shop A",
            "--identifier",
            shop_a,
            "--allow-origin",
            "HTTPS://Shop.Example:443/",
            "--allow-origin",
            "http://localhost:3000",
            "--allow-origin",
            "https://shop.example",
            "--json",
        )
    )
    assert set(out) == {"identifier", "apiKey"}
    assert out["identifier"] == shop_a
    client = repo.get_client(shop_a)
    assert client is not None
    assert client.api_key == out["apiKey"]
    assert client.allowed_origins == ("https://shop.example", "http://localhost:3000")


@pytest.mark.parametrize(
    "origin",
    [
        "https://shop.example/path",
        "https://shop.example/?q=1",
        "https://shop.example#top",
        "ftp://shop.example",
        "shop.example",
        "https://user@shop.example",
        "https://shop.example:99999",
        "https://",
    ],
)
def test_client_create_refuses_bad_origin(
    runner: FlaskCliRunner, repo: SqlRepository, origin: str
) -> None:
    before = client_count(repo)
    result = pps(runner, "client", "create", "--name", "Shop", "--allow-origin", origin)
    assert result.exit_code != 0
    assert "--allow-origin" in result.stderr
    assert client_count(repo) == before


@pytest.mark.parametrize(
    "args",
    [
        ["client", "create", "--name", "a\udcedb"],  # bytes ED A0 80 on the command line
        ["client", "rotate-key", "\udcff"],
        ["template", "list", "--client", "\udcff"],
        ["client", "allow-host", "shop", "a\udcffb"],
    ],
)
def test_arguments_that_are_not_utf8_are_a_usage_error(
    runner: FlaskCliRunner, repo: SqlRepository, args: list[str]
) -> None:
    """Not UTF-8 on the command line arrives as lone surrogates: a clear refusal, before
    any command stores or prints one (a traceback before)."""
    before = client_count(repo)
    result = pps(runner, *args)
    assert result.exit_code == 2, result.output
    assert "not valid UTF-8" in result.stderr
    assert "Traceback" not in result.output
    assert client_count(repo) == before


@pytest.mark.parametrize(
    "host", ["*", "a:b", "a\x01b", "shop..example", "-", "a" * 64 + ".example"]
)
def test_allow_host_refuses_what_is_no_host(
    runner: FlaskCliRunner, repo: SqlRepository, shop_a: str, host: str
) -> None:
    repo.create_client("Shop", identifier=shop_a)
    result = pps(runner, "client", "allow-host", shop_a, host)
    assert result.exit_code == 2, result.output
    assert "is not a host name or an IP address" in result.stderr
    listed = pps(runner, "client", "allow-host", shop_a, "--json")
    assert json.loads(listed.stdout) == []


def test_allow_host_takes_names_and_ip_literals(
    runner: FlaskCliRunner, repo: SqlRepository, shop_a: str
) -> None:
    repo.create_client("Shop", identifier=shop_a)
    result = pps(
        runner,
        "client",
        "allow-host",
        shop_a,
        "Intranet.Example.",
        "10.0.0.7",
        "[fd00::1]",
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == sorted(["intranet.example", "10.0.0.7", "fd00::1"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name", "  "], "--name"),
        (["--name", "Shop", "--identifier", "has space"], "--identifier"),
        (["--name", "Shop", "--identifier", "../x"], "--identifier"),
        (["--name", "Evil\nshopB  2026-01-01 00:00 UTC  -"], "line breaks"),
        (["--name", "Shop\u2028B"], "line breaks"),
        (["--name", "Shop\x1b[2J"], "control characters"),
    ],
)
def test_client_create_refuses_bad_values(
    runner: FlaskCliRunner, repo: SqlRepository, args: list[str], message: str
) -> None:
    before = client_count(repo)
    result = pps(runner, "client", "create", *args)
    assert result.exit_code != 0
    assert message in result.stderr
    assert client_count(repo) == before


def test_client_create_keeps_joiners_in_names(runner: FlaskCliRunner) -> None:
    name = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 shop"  # ZWNJ in Persian
    assert ok_json(pps(runner, "client", "create", "--name", name, "--json"))["identifier"]


def test_client_create_duplicate_identifier(
    runner: FlaskCliRunner, repo: SqlRepository, shop_a: str
) -> None:
    repo.create_client("First", identifier=shop_a)
    result = pps(runner, "client", "create", "--name", "Second", "--identifier", shop_a)
    assert result.exit_code == 1
    assert f"a client with identifier '{shop_a}' exists already" in result.stderr
    assert repo.get_client(shop_a).name == "First"  # type: ignore[union-attr]


def test_client_list(runner: FlaskCliRunner, repo: SqlRepository, shop_a: str, shop_b: str) -> None:
    created = [
        repo.create_client("Shop A", identifier=shop_a, allowed_origins=["https://a.example"]),
        repo.create_client("Shop B", identifier=shop_b),
    ]
    result = pps(runner, "client", "list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["IDENTIFIER", "NAME", "CREATED", "ALLOWED", "ORIGINS"]
    [line_a] = [line for line in lines if line.startswith(shop_a)]
    [line_b] = [line for line in lines if line.startswith(shop_b)]
    assert line_a.endswith("https://a.example") and "Shop A" in line_a
    assert line_b.endswith("-")
    # No API key is ever listed (other tests' clients may share the database: check ours).
    assert not any(client.api_key in result.stdout for client in created)
    assert "key" not in lines[0].lower()

    out = ok_json(pps(runner, "client", "list", "--json"))
    mine = [c for c in out if c["identifier"] in (shop_a, shop_b)]
    assert [c["identifier"] for c in mine] == [shop_a, shop_b]
    assert mine[0]["allowedOrigins"] == ["https://a.example"]
    assert mine[0]["createdAt"].endswith("Z")
    assert all("apiKey" not in c for c in out)


def test_client_rotate_key(runner: FlaskCliRunner, repo: SqlRepository, shop_a: str) -> None:
    old = repo.create_client("Shop", identifier=shop_a)
    out = ok_json(pps(runner, "client", "rotate-key", shop_a, "--json"))
    assert out["identifier"] == shop_a
    assert out["apiKey"] != old.api_key and len(out["apiKey"]) >= 32
    assert repo.find_client_by_api_key(old.api_key) is None
    assert repo.find_client_by_api_key(out["apiKey"]) is not None

    result = pps(runner, "client", "rotate-key", shop_a)
    assert result.exit_code == 0
    new_key = repo.get_client(shop_a).api_key  # type: ignore[union-attr]
    assert new_key in result.stdout


def test_client_rotate_key_unknown(runner: FlaskCliRunner) -> None:
    result = pps(runner, "client", "rotate-key", "nobody")
    assert result.exit_code == 1
    assert "no client 'nobody'" in result.stderr


# -- templates ---------------------------------------------------------------------------


def write_template(directory: Path, document: dict[str, Any]) -> Path:
    (directory / "card.png").write_bytes(PNG)
    path = directory / "card.json"
    path.write_text(json.dumps(document))
    return path


def test_template_import(
    runner: FlaskCliRunner, app: Flask, repo: SqlRepository, tmp_path: Path, shop_a: str
) -> None:
    repo.create_client("Shop", identifier=shop_a)
    path = write_template(
        tmp_path,
        {"name": "Card", "identifier": "Card1", "dataKeys": ["a"], "preview": "card.png"},
    )
    out = ok_json(pps(runner, "template", "import", str(path), "--client", shop_a, "--json"))
    assert out == {"identifier": "Card1"}
    template = repo.get_template(shop_a, "Card1")
    assert template is not None
    assert template.preview_key == preview_key(shop_a, "Card1")
    assert app.extensions["pps"].storage.read(template.preview_key) == PNG

    result = pps(runner, "template", "import", str(path), "--client", shop_a)
    assert result.exit_code == 1
    assert "template identifier 'Card1' is taken" in result.stderr


def test_template_import_reports_every_error_and_imports_nothing(
    runner: FlaskCliRunner, repo: SqlRepository, tmp_path: Path, shop_a: str
) -> None:
    repo.create_client("Shop", identifier=shop_a)
    path = write_template(
        tmp_path, {"dataKeys": ["a", "a", ""], "pageCount": 0, "preview": "../card.png"}
    )
    result = pps(runner, "template", "import", str(path), "--client", shop_a)
    assert result.exit_code == 1
    assert result.stdout == ""
    for line in [
        "name: is required",
        "dataKeys[1]: duplicates dataKeys[0] ('a')",
        'dataKeys[2]: must be a non-empty string, got ""',
        "pageCount: must be a whole number of at least 1, got 0",
        "preview: '../card.png' lies outside the template file's directory",
    ]:
        assert f"  {line}\n" in result.stderr
    assert repo.list_templates(shop_a).items == []


def test_template_import_unknown_client(
    runner: FlaskCliRunner, app: Flask, repo: SqlRepository, tmp_path: Path
) -> None:
    path = write_template(tmp_path, {"name": "Card", "preview": "card.png"})
    before = repo.list_templates(None).total
    result = pps(runner, "template", "import", str(path), "--client", "nobody")
    assert result.exit_code == 1
    assert "no client 'nobody'" in result.stderr
    assert repo.list_templates(None).total == before
    assert not (app.extensions["pps"].settings.resolved_files_dir / "templates" / "nobody").exists()


def test_template_list(
    runner: FlaskCliRunner, repo: SqlRepository, shop_a: str, shop_b: str
) -> None:
    for client in (shop_a, shop_b):
        repo.create_client(client, identifier=client)
        repo.create_template(
            client,
            name=f"Card of {client}",
            data_keys=["a", "b"],
            custom_attributes={},
            page_count=2,
            spec={},
            identifier="Card1",
        )
    out = ok_json(pps(runner, "template", "list", "--json"))
    assert [(t["client"], t["identifier"]) for t in out if t["client"] in (shop_a, shop_b)] == [
        (shop_a, "Card1"),
        (shop_b, "Card1"),
    ]
    out = ok_json(pps(runner, "template", "list", "--client", shop_b, "--json"))
    assert [t["name"] for t in out] == [f"Card of {shop_b}"]
    assert out[0]["dataKeys"] == ["a", "b"] and out[0]["pageCount"] == 2

    result = pps(runner, "template", "list", "--client", shop_a)
    assert result.exit_code == 0
    assert result.stdout.splitlines()[1].split() == [
        shop_a,
        "Card1",
        "Card",
        "of",
        shop_a,
        "2",
        "a,",
        "b",
    ]

    result = pps(runner, "template", "list", "--client", "nobody")
    assert result.exit_code == 1


# -- demo --------------------------------------------------------------------------------


def test_demo_is_idempotent_and_prints_a_fresh_login_each_time(
    runner: FlaskCliRunner, app: Flask, repo: SqlRepository
) -> None:
    first = ok_json(pps(runner, "demo", "--json"))
    second = ok_json(pps(runner, "demo", "--json"))
    for key in ("client", "apiKey", "template", "user", "draft"):
        assert first[key] == second[key]
    assert first["loginUrl"] != second["loginUrl"]
    assert [c.identifier for c in repo.list_clients() if c.name == "Demo shop"] == ["DemoShop"]
    # The examples, each imported once; the demo draft is on the business card among them.
    assert first["template"] == "business-card"
    assert sorted(t.identifier for t in repo.list_templates("DemoShop").items) == [
        "business-card",
        "postcard-a6",
    ]
    drafts = repo.list_drafts("DemoShop", per_page=100).items
    assert [d.draft_hash for d in drafts if d.template_identifier == "business-card"] == [
        first["draft"]
    ]

    client = repo.get_client("DemoShop")
    assert client is not None and client.name == "Demo shop"
    assert client.allowed_origins == ("http://localhost",)  # the origin of base_url
    draft = repo.get_draft("DemoShop", first["draft"])
    assert draft is not None and draft.user_identifier == first["user"]
    assert draft.custom_attributes == {"demo": True}
    assert draft.api_default_values == {
        "name": "Ada Lovelace",
        "title": "Analyst Programmer",
        "phone": "+44 20 7946 0000",
        "email": "ada@example.com",
        "url": "https://example.com/ada",
    }
    # The values fit the card, so the editor opens without errors.
    card = Path(__file__).resolve().parent.parent / "examples/templates/business-card"
    spec = parse_spec(json.loads((card / "template.json").read_text()), card)
    assert validate_values(spec, draft.api_default_values) == {}

    url = urlsplit(second["loginUrl"])
    assert f"{url.scheme}://{url.netloc}{url.path}" == "http://localhost/auth"
    token = parse_qs(url.query)["jwt"][0]
    assert jwt.get_unverified_header(token)["jti"]
    verified = verify_token(token, lambda _client: first["apiKey"])
    assert verified.client == "DemoShop"
    assert verified.user == first["user"]
    editor = urlsplit(verified.redirect or "")
    assert editor.path == f"/editor/{first['draft']}/edit"
    callbacks = {k: base64.b64decode(v[0]).decode() for k, v in parse_qs(editor.query).items()}
    assert callbacks == {
        "callback": "http://localhost/?returned=finished",
        "callback_cancel": "http://localhost/?returned=cancelled",
    }
    assert verified.exp is not None and 86000 < verified.exp - time.time() <= 86400


def test_demo_login_url_logs_in_once(runner: FlaskCliRunner, app: Flask) -> None:
    out = ok_json(pps(runner, "demo", "--json"))
    url = urlsplit(out["loginUrl"])
    browser = app.test_client()
    response = browser.get(f"{url.path}?{url.query}")
    assert response.status_code == 302
    assert urlsplit(response.headers["Location"]).path == f"/editor/{out['draft']}/edit"
    again = app.test_client().get(f"{url.path}?{url.query}")
    assert again.status_code != 302

    # The editor exchanges the login's handoff code, then opens on the business card,
    # filled in with the demo values.
    editor = browser.get(complete_login(browser, response).headers["Location"])
    assert editor.status_code == 200
    page = editor.get_data(as_text=True)
    assert 'value="Ada Lovelace"' in page and 'value="ada@example.com"' in page
    assert "not available" not in page  # Finish and Cancel lead back to the home page

    # Finishing lands on the home page, which says so.
    finished = browser.get("/?returned=finished")
    assert "the design is finished" in finished.get_data(as_text=True)


def test_demo_moves_an_old_democard_demo_to_the_business_card(
    runner: FlaskCliRunner, repo: SqlRepository
) -> None:
    # PostgreSQL's database is shared by the run: start without demo drafts.
    if repo.get_client("DemoShop") is not None:
        for draft in repo.list_drafts("DemoShop", per_page=100).items:
            if draft.custom_attributes.get("demo") is True:
                repo.delete_user("DemoShop", draft.user_identifier)
    # What 'pps demo' made before it used the business card: a draft on DemoCard.
    demo_card = Path(__file__).resolve().parent.parent / "examples/templates/demo-card.json"
    old = ok_json(pps(runner, "demo", "--template", str(demo_card), "--json"))
    assert old["template"] == "DemoCard"

    new = ok_json(pps(runner, "demo", "--json"))
    assert new["template"] == "business-card"
    assert new["user"] == old["user"]  # the demo user is reused
    assert new["draft"] != old["draft"]
    draft = repo.get_draft("DemoShop", new["draft"])
    assert draft is not None and draft.template_identifier == "business-card"
    assert draft.api_default_values["name"] == "Ada Lovelace"
    old_draft = repo.get_draft("DemoShop", old["draft"])
    assert old_draft is not None and old_draft.template_identifier == "DemoCard"  # kept

    again = ok_json(pps(runner, "demo", "--json"))
    assert (again["user"], again["draft"]) == (new["user"], new["draft"])
    demo_drafts = [
        d.draft_hash
        for d in repo.list_drafts("DemoShop", per_page=100).items
        if d.custom_attributes.get("demo") is True
    ]
    assert sorted(demo_drafts) == sorted([old["draft"], new["draft"]])


def test_demo_human_output(runner: FlaskCliRunner) -> None:
    result = pps(runner, "demo")
    assert result.exit_code == 0, result.output
    assert "client    DemoShop (Demo shop)" in result.stdout
    assert "template  business-card (Business card)" in result.stdout
    assert "http://localhost/auth?jwt=" in result.stdout
    assert "works ONCE" in result.stdout
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Example templates of"))
    # "imported now" on the first run in this database (PostgreSQL's is shared by the run).
    assert [line.split()[:5] for line in lines[start + 1 : start + 3]] == [
        ["business-card", "Business", "card", "1", "page"],
        ["postcard-a6", "Postcard", "A6", "2", "pages"],
    ]
    again = pps(runner, "demo")
    assert "  business-card  Business card  1 page\n" in again.stdout  # not imported again
    assert "imported now" not in again.stdout


def test_demo_imports_examples_with_their_files(
    runner: FlaskCliRunner, app: Flask, repo: SqlRepository
) -> None:
    out = ok_json(pps(runner, "demo", "--json"))
    assert [(e["identifier"], e["pageCount"]) for e in out["examples"]] == [
        ("business-card", 1),
        ("postcard-a6", 2),
    ]
    storage = app.extensions["pps"].storage
    artwork = Path(__file__).resolve().parent.parent / "examples/templates/postcard/artwork.pdf"
    if out["examples"][1]["new"]:  # PostgreSQL's database is shared by the run, files are not
        assert storage.read("templates/DemoShop/postcard-a6/assets/artwork.pdf") == (
            artwork.read_bytes()
        )
    postcard = repo.get_template("DemoShop", "postcard-a6")
    assert postcard is not None and postcard.data_keys[0] == "headline"
    again = ok_json(pps(runner, "demo", "--json"))
    assert [e["new"] for e in again["examples"]] == [False, False]


def test_demo_examples_folder_skips_broken_files_and_names_the_nameless(
    runner: FlaskCliRunner, repo: SqlRepository, tmp_path: Path
) -> None:
    (tmp_path / "flyer").mkdir()
    (tmp_path / "flyer" / "template.json").write_text(json.dumps({"name": "Flyer"}))
    (tmp_path / "broken").mkdir()
    broken = {"name": "Broken", "size": {"width": 0, "height": 10}, "pages": [{}]}
    (tmp_path / "broken" / "template.json").write_text(json.dumps(broken))
    result = pps(runner, "demo", "--examples", str(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    assert [e["identifier"] for e in json.loads(result.stdout)["examples"]] == ["flyer"]
    assert "broken/template.json was not imported" in result.stderr
    assert "  size.width: must be greater than 0\n" in result.stderr
    again = pps(runner, "demo", "--examples", str(tmp_path), "--json")
    assert json.loads(again.stdout)["examples"][0]["new"] is False
    identifiers = {t.identifier for t in repo.list_templates("DemoShop").items}
    assert "flyer" in identifiers and "broken" not in identifiers


@pytest.mark.parametrize("folder", ["missing", "empty", "file"])
def test_demo_examples_folder_without_examples_is_a_usage_error(
    runner: FlaskCliRunner, repo: SqlRepository, tmp_path: Path, folder: str
) -> None:
    """A mistyped ``--examples`` imported nothing and said nothing (exit 0)."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("{}")
    before = repo.get_client("DemoShop")  # PostgreSQL's database is shared by the run
    result = pps(runner, "demo", "--examples", str(tmp_path / folder))
    assert result.exit_code == 2, result.output
    assert "'--examples'" in result.stderr
    assert ("template.json" in result.stderr) is (folder != "file")  # click names a file
    assert repo.get_client("DemoShop") == before  # refused before anything was seeded


# -- the console script ------------------------------------------------------------------


@pytest.mark.slow
def test_console_script_end_to_end(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PPS_")}
    env.update(
        PPS_INSTANCE_PATH=str(tmp_path / "instance"),
        PPS_DEVELOPMENT="1",
        PPS_BASE_URL="http://127.0.0.1:8123",
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [pps_script(), *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )

    upgraded = run("db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    # Development mode generated a secret key into the instance folder.
    assert (tmp_path / "instance" / "secret_key").exists()

    created = run("client", "create", "--name", "Shop", "--json")
    assert created.returncode == 0, created.stderr
    assert len(json.loads(created.stdout)["apiKey"]) >= 32

    refused = run("client", "create", "--name", "Shop", "--allow-origin", "https://x.example/a")
    assert refused.returncode != 0
    assert "--allow-origin" in refused.stderr

    demo = run("demo")
    assert demo.returncode == 0, demo.stderr
    assert "http://127.0.0.1:8123/auth?jwt=" in demo.stdout
    assert "postcard-a6" in demo.stdout

    listed = run("client", "list", "--json")
    assert sorted(c["name"] for c in json.loads(listed.stdout)) == ["Demo shop", "Shop"]


@pytest.mark.parametrize(
    ("element", "expected"),
    [
        ("./card.png", "must not contain '.' parts; write 'card.png'"),
        ("logo\ud800.png", "contains a lone UTF-16 surrogate"),
        ("truncated.png", "cannot be decoded as an image"),
    ],
)
def test_template_import_of_bad_files_is_a_clean_error(
    runner: FlaskCliRunner,
    app: Flask,
    repo: SqlRepository,
    tmp_path: Path,
    shop_a: str,
    element: str,
    expected: str,
) -> None:
    repo.create_client("Shop", identifier=shop_a)
    good = PNG
    # Chunks intact, pixel data cut: what once imported and then failed every render.
    (tmp_path / "truncated.png").write_bytes(good[:33] + _cut_idat(good[33:]))
    path = write_template(
        tmp_path,
        {
            "name": "Card",
            "size": {"width": 85, "height": 55},
            "pages": [
                {
                    "elements": [
                        {
                            "type": "image",
                            "file": element,
                            "box": {"x": 0, "y": 0, "width": 10, "height": 10},
                        }
                    ]
                }
            ],
        },
    )
    result = pps(runner, "template", "import", str(path), "--client", shop_a)
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)  # a message, not a crash
    assert "Traceback" not in result.output
    assert expected in result.stderr
    assert "nothing was imported" in result.stderr
    assert repo.list_templates(shop_a).items == []


def test_template_import_of_a_number_beyond_any_float_is_a_clean_error(
    runner: FlaskCliRunner, repo: SqlRepository, tmp_path: Path, shop_a: str
) -> None:
    """JSON integers have no size limit: 10**400 is out of range, not a crash."""
    repo.create_client("Shop", identifier=shop_a)
    path = write_template(
        tmp_path, {"name": "Card", "size": {"width": 10**400, "height": 55}, "pages": [{}]}
    )
    result = pps(runner, "template", "import", str(path), "--client", shop_a)
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # a message, not a crash
    assert "size.width: must be at most 5000" in result.stderr
    assert repo.list_templates(shop_a).items == []


def test_template_import_of_an_element_type_that_is_an_object_is_a_clean_error(
    runner: FlaskCliRunner, repo: SqlRepository, tmp_path: Path, shop_a: str
) -> None:
    """An element's ``type`` that is a JSON object or list was a crash (a traceback)."""
    repo.create_client("Shop", identifier=shop_a)
    box = {"x": 0, "y": 0, "width": 10, "height": 10}
    elements = [{"type": {"text": True}, "box": box}, {"type": ["qr"], "box": box}]
    path = write_template(
        tmp_path,
        {"name": "Card", "size": {"width": 85, "height": 55}, "pages": [{"elements": elements}]},
    )
    result = pps(runner, "template", "import", str(path), "--client", shop_a)
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # a message, not a crash
    assert "pages[0].elements[0].type: must be one of text, qr" in result.stderr
    assert "pages[0].elements[1].type: must be one of text, qr" in result.stderr
    assert repo.list_templates(shop_a).items == []


def _cut_idat(chunks: bytes) -> bytes:
    """The PNG chunks after IHDR with IDAT's data halved and its CRC made right again."""
    import struct
    import zlib

    out, pos = [], 0
    while pos < len(chunks):
        (length,) = struct.unpack(">I", chunks[pos : pos + 4])
        kind, body = chunks[pos + 4 : pos + 8], chunks[pos + 8 : pos + 8 + length]
        if kind == b"IDAT":
            body = body[: max(1, len(body) // 2)]
        out.append(struct.pack(">I", len(body)) + kind + body)
        out.append(struct.pack(">I", zlib.crc32(kind + body)))
        pos += 12 + length
    return b"".join(out)


@pytest.mark.parametrize("revision", ["nonexistent", "", "+1"])
def test_db_upgrade_to_a_revision_that_is_none_is_a_usage_error(
    runner: FlaskCliRunner, revision: str
) -> None:
    result = pps(runner, "db", "upgrade", revision)
    assert result.exit_code == 2, result.output
    assert "Invalid value for REVISION" in result.stderr
    assert "Traceback" not in result.output


def test_db_upgrade_says_the_revision_the_database_is_at(runner: FlaskCliRunner) -> None:
    # Upgrading to an older revision changes nothing; it used to say "is at revision base".
    result = pps(runner, "db", "upgrade", "base")
    assert result.exit_code == 0, result.output
    assert "is at revision base" not in result.stdout
    assert "(head)." in result.stdout


def test_acl_url_and_webhook_secret_commands_print_json_too(
    runner: FlaskCliRunner, repo: SqlRepository, shop_a: str
) -> None:
    repo.create_client("Shop", identifier=shop_a)
    url = "https://shop.example/acl"
    assert ok_json(pps(runner, "client", "set-acl-url", shop_a, url, "--json")) == {
        "identifier": shop_a,
        "aclUrl": url,
    }
    cleared = ok_json(pps(runner, "client", "set-acl-url", shop_a, "--clear", "--json"))
    assert cleared == {"identifier": shop_a, "aclUrl": None}
    rotated = ok_json(pps(runner, "client", "rotate-webhook-secret", shop_a, "--json"))
    assert rotated["identifier"] == shop_a
    assert rotated["webhookSecret"].startswith("whsec_")


def test_proof_approval_refuses_both_required_and_optional(
    runner: FlaskCliRunner, repo: SqlRepository, shop_a: str
) -> None:
    repo.create_client("Shop", identifier=shop_a)
    both = pps(runner, "client", "proof-approval", shop_a, "--required", "--optional")
    assert both.exit_code == 2, both.output
    assert "not both" in both.stderr
    shown = ok_json(pps(runner, "client", "proof-approval", shop_a, "--json"))
    assert shown == {"identifier": shop_a, "proofRequired": False}  # unchanged
    assert ok_json(pps(runner, "client", "proof-approval", shop_a, "--required", "--json"))[
        "proofRequired"
    ]
    assert not ok_json(pps(runner, "client", "proof-approval", shop_a, "--optional", "--json"))[
        "proofRequired"
    ]


def _cli_on(tmp_path: Path, database: Path, *args: str) -> Result:
    from app import create_app

    app = create_app(
        {
            "instance_path": tmp_path / "instance",
            "database_url": f"sqlite:///{database}",
            "secret_key": "test-secret-key-0123456789abcdef",
        }
    )
    try:
        return app.test_cli_runner().invoke(args=["pps", *args])
    finally:
        app.extensions["pps"].close()


def test_a_database_file_that_is_no_database_is_one_line(tmp_path: Path) -> None:
    database = tmp_path / "pps.sqlite3"
    database.write_text("not a database, and long enough to be read as one " * 4)
    for args in (("db", "upgrade"), ("client", "list")):
        result = _cli_on(tmp_path, database, *args)
        assert result.exit_code == 1, result.output
        assert "database error: file is not a database" in result.stderr
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_db_upgrade_of_a_database_a_newer_pps_migrated_blames_the_database(
    tmp_path: Path,
) -> None:
    import sqlalchemy as sa

    from pps.platform.repository.sql import upgrade_database

    database = tmp_path / "pps.sqlite3"
    upgrade_database(f"sqlite:///{database}")
    engine = sa.create_engine(f"sqlite:///{database}")
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0999'"))
    engine.dispose()
    result = _cli_on(tmp_path, database, "db", "upgrade")
    assert result.exit_code == 1, result.output
    assert "cannot upgrade the database: Can't locate revision identified by '0999'" in (
        result.stderr
    )
    assert "REVISION" not in result.stderr
