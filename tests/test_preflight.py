"""Preflight on drafts and customer print PDFs, through the API and the editor.

Drafts are created and read as the PHP SDK does (``src/Client/Draft/Client.php``: create,
show, update; ``src/Client/Draft/Draft.php`` and ``ValidationResult.php`` type
``preflightStatus``, ``validationResults[*].row|page|message|severity``), with the options
of ``src/Builder/DraftBuilder.php`` (``intent``, ``disablePreflight``). Templates are imported
from real files; PDFs are written by reportlab in the test.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pikepdf
import pytest
from api_support import assert_error, snapshot
from conftest import ApiClient
from flask import Flask
from flask.testing import FlaskClient
from PIL import Image
from preflight_support import (
    encrypted as encrypted_pdf,
)
from preflight_support import (
    image_bytes,
    print_pdf,
    with_content_bomb,
    with_form_fan_out,
    with_nested_forms,
    with_restricted_fonts,
    write_template,
)
from pypdf import PdfReader
from test_api_openapi import assert_matches
from test_editor import log_in, open_editor
from test_files import download, fetch, magento_claims, sign

from pps.app import create_app
from pps.files.sweep import delete_draft_files
from pps.files.uploaded import upload_key
from pps.platform.models import (
    PREFLIGHT_ERRORS,
    PREFLIGHT_NOT_CHECKED,
    PREFLIGHT_OK,
    PREFLIGHT_WARNINGS,
    Client,
    Template,
)
from pps.platform.repository.sql import SqlRepository
from pps.render.pdf_budget import MAX_CONTENT_BYTES, MAX_FORM_DRAWS
from pps.render.xobjects import MAX_FORM_DEPTH
from pps.templates.files import import_template, load_template_file

K100 = {"c": 0, "m": 0, "y": 0, "k": 100}
CARD: dict[str, Any] = {
    "name": "Preflight card",
    "identifier": "pfcard",
    "colorSpace": "cmyk",
    "size": {"width": 85, "height": 55},
    "bleed": 3,
    "pages": [
        {
            "background": {"color": {"c": 0, "m": 0, "y": 0, "k": 0}},
            "elements": [
                {"type": "text", "dataKey": "name", "required": True, "size": 12,
                 "box": {"x": 5, "y": 5, "width": 30, "height": 6}, "color": K100},
                {"type": "text", "dataKey": "title", "size": 8, "color": "#ff0000",
                 "box": {"x": 5, "y": 14, "width": 60, "height": 6}},
                # 100 px in 20 mm: 127 dpi, RGB
                {"type": "image", "file": "logo.png",
                 "box": {"x": 50, "y": 30, "width": 20, "height": 20}},
                # 600 px in 20 mm: 762 dpi, CMYK: nothing to say
                {"type": "image", "file": "photo.jpg",
                 "box": {"x": 5, "y": 30, "width": 20, "height": 20}},
            ],
        }
    ],
}  # fmt: skip
UPLOAD: dict[str, Any] = {
    "name": "Upload card",
    "identifier": "pfupload",
    "colorSpace": "cmyk",
    "size": {"width": 85, "height": 55},
    "bleed": 3,
    "pages": [
        {"elements": [{"type": "text", "dataKey": "name", "size": 10, "color": K100,
                       "box": {"x": 5, "y": 40, "width": 70, "height": 8}}]},
        {"elements": []},
    ],
}  # fmt: skip


def imported(app: Flask, repo: SqlRepository, tenant: Client, folder: Path, **kw: Any) -> Template:
    path = write_template(folder, **kw)
    storage = app.extensions["pps"].storage
    return import_template(repo, storage, tenant.identifier, load_template_file(path))


@pytest.fixture
def card(app: Flask, repo: SqlRepository, tenant: Client, tmp_path: Path) -> Template:
    files = {
        "logo.png": image_bytes((100, 100)),
        "photo.jpg": image_bytes((600, 600), mode="CMYK", fmt="JPEG"),
    }
    return imported(app, repo, tenant, tmp_path / "card", document=CARD, files=files)


@pytest.fixture
def upload_template(app: Flask, repo: SqlRepository, tenant: Client, tmp_path: Path) -> Template:
    return imported(app, repo, tenant, tmp_path / "upload", document=UPLOAD, files={})


def new_user(api: ApiClient) -> str:
    response = api.post("/api-ext/user")  # the SDK's user create: no body
    assert response.status_code == 201
    return str(response.get_json()["data"]["identifier"])


def new_draft(api: ApiClient, template: Template, **options: Any) -> dict[str, Any]:
    body = {"templateIdentifier": template.identifier, "user_identifier": new_user(api)}
    response = api.post("/api-ext/draft", json={**body, **options})
    assert response.status_code == 201, response.get_json()
    return sdk_draft(response.get_json()["data"])


def sdk_draft(draft: dict[str, Any]) -> dict[str, Any]:
    """What the SDK's typed Draft and ValidationResult accept."""
    assert type(draft["preflightStatus"]) is int
    assert isinstance(draft["validationResults"], list)
    for result in draft["validationResults"]:
        assert set(result) == {"row", "page", "message", "severity"}
        assert result["row"] is None or type(result["row"]) is int
        assert type(result["page"]) is int and result["page"] >= 1
        assert isinstance(result["message"], str) and result["message"]
        assert result["severity"] in ("error", "warning")
    return draft


def shown(api: ApiClient, draft_hash: str) -> dict[str, Any]:
    response = api.get(f"/api-ext/draft/{draft_hash}")
    assert response.status_code == 200
    return sdk_draft(response.get_json()["data"])


def update(api: ApiClient, draft_hash: str, **body: Any) -> dict[str, Any]:
    response = api.put(f"/api-ext/draft/{draft_hash}", json=body)
    assert response.status_code == 200, response.get_json()
    return sdk_draft(response.get_json()["data"])


def upload(api: ApiClient, draft_hash: str, data: bytes, field: str = "file") -> Any:
    """Multipart as Guzzle sends it (``multipart => [[name, contents, filename]]``)."""
    return api.post(
        f"/api-ext/draft/{draft_hash}/upload",
        data={field: (io.BytesIO(data), "print.pdf", "application/pdf")},
        content_type="multipart/form-data",
    )


def messages(draft: dict[str, Any], severity: str) -> list[str]:
    return [r["message"] for r in draft["validationResults"] if r["severity"] == severity]


def refusal(response: Any) -> list[str]:
    assert response.status_code == 422, response.get_data(as_text=True)
    body = response.get_json()
    assert body["message"] and set(body["errors"]) == {"file"}
    return list(body["errors"]["file"])


# -- intents ---------------------------------------------------------------------------


@pytest.mark.parametrize("intent", ["customize", "personalize", "upload", "upload-and-editor"])
def test_every_intent_the_clients_send_is_accepted(
    api: ApiClient, card: Template, intent: str
) -> None:
    draft = new_draft(api, card, intent=intent)
    assert draft["intent"] == intent
    # New drafts are not checked yet: the SDK's fixtures show -1.
    assert (draft["preflightStatus"], draft["validationResults"]) == (PREFLIGHT_NOT_CHECKED, [])


# -- drafts from a template -------------------------------------------------------------


def test_api_update_reports_errors_and_warnings_with_row_and_page(
    api: ApiClient, card: Template
) -> None:
    draft = new_draft(api, card)
    long_name = "Bartholomew Maximilian Featherstonehaugh-Cholmondeley"
    updated = update(api, draft["draftHash"], apiDefaultValues={"name": long_name})
    assert updated["preflightStatus"] == PREFLIGHT_ERRORS
    assert all(r["row"] is None and r["page"] == 1 for r in updated["validationResults"])
    errors = messages(updated, "error")
    assert len(errors) == 1 and errors[0].startswith("'name':"), errors
    warnings = messages(updated, "warning")
    assert any("'logo.png' has 127 dpi" in m for m in warnings), warnings
    assert any("RGB" in m and "logo.png" in m for m in warnings), warnings
    assert any("RGB" in m and "#ff0000" in m for m in warnings), warnings
    assert not any("photo.jpg" in m for m in warnings + errors)
    assert len(warnings) == 3
    # GET shows what the update stored.
    assert shown(api, draft["draftHash"]) == updated

    missing = update(api, draft["draftHash"], apiDefaultValues={"name": "  "})
    assert missing["preflightStatus"] == PREFLIGHT_ERRORS
    assert [m for m in messages(missing, "error") if "'name'" in m and "required" in m]

    fine = update(api, draft["draftHash"], apiDefaultValues={"name": "Ada"})
    assert fine["preflightStatus"] == PREFLIGHT_WARNINGS
    assert messages(fine, "error") == [] and len(messages(fine, "warning")) == 3


def test_a_clean_draft_passes(api: ApiClient, upload_template: Template) -> None:
    draft = new_draft(api, upload_template, intent="personalize")
    updated = update(api, draft["draftHash"], apiDefaultValues={"name": "Ada Lovelace"})
    assert (updated["preflightStatus"], updated["validationResults"]) == (PREFLIGHT_OK, [])


def test_disable_preflight_skips_it_until_turned_off(api: ApiClient, card: Template) -> None:
    draft = new_draft(api, card, disablePreflight=True)
    skipped = update(api, draft["draftHash"], apiDefaultValues={"name": ""})
    assert (skipped["preflightStatus"], skipped["validationResults"]) == (PREFLIGHT_NOT_CHECKED, [])
    checked = update(api, draft["draftHash"], disablePreflight=False)
    assert checked["preflightStatus"] == PREFLIGHT_ERRORS


def test_editor_save_and_finish_run_preflight(
    client: FlaskClient, api: ApiClient, repo: SqlRepository, tenant: Client, card: Template
) -> None:
    draft = new_draft(api, card)
    user = repo.get_user(tenant.identifier, draft["userIdentifier"])
    assert user is not None
    log_in(client, tenant, user)
    url = f"/editor/{draft['draftHash']}/edit"
    _, token = open_editor(client, url)
    saved = client.post(url, data={"csrf_token": token, "v:name": "Ada", "action": "save"})
    assert saved.status_code in (200, 303), saved.get_data(as_text=True)[:300]
    after_save = shown(api, draft["draftHash"])
    assert after_save["state"] == "edited"
    assert after_save["preflightStatus"] == PREFLIGHT_WARNINGS
    assert len(messages(after_save, "warning")) == 3

    finished = client.post(
        f"/editor/{draft['draftHash']}/finish", data={"csrf_token": token, "v:name": "Ada"}
    )
    assert finished.status_code == 303
    after_finish = shown(api, draft["draftHash"])
    assert after_finish["state"] == "finished"
    assert after_finish["preflightStatus"] == PREFLIGHT_WARNINGS


# -- the customer's own print PDF -------------------------------------------------------


def test_upload_becomes_the_print_file_and_previews_come_from_it(
    client: FlaskClient, api: ApiClient, tenant: Client, upload_template: Template
) -> None:
    draft = new_draft(api, upload_template, intent="upload")
    token = sign(tenant.api_key, magento_claims(tenant))
    before = client.get(
        f"/api-ext/files/draft/{draft['draftHash']}/print", query_string={"jwt": token}
    )
    assert before.status_code == 422 and "uploaded" in before.get_json()["message"]

    response = upload(api, draft["draftHash"], print_pdf(2, text="Mine"))
    assert response.status_code == 200, response.get_json()
    reference = client.get("/openapi.json").get_json()
    operation = reference["paths"]["/api-ext/draft/{draft_hash}/upload"]["post"]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert_matches(reference, schema, response.get_json(), "POST upload")
    accepted = sdk_draft(response.get_json()["data"])
    assert (accepted["preflightStatus"], accepted["validationResults"]) == (PREFLIGHT_OK, [])
    assert shown(api, draft["draftHash"])["preflightStatus"] == PREFLIGHT_OK

    served = download(client, f"/api-ext/files/draft/{draft['draftHash']}/print", token)
    reader = PdfReader(io.BytesIO(served))
    assert [page.extract_text().strip() for page in reader.pages] == ["Mine 1", "Mine 2"]
    with pikepdf.open(io.BytesIO(served)) as pdf:
        # 91 x 61 mm without a TrimBox: the trim is set 3 mm (8.5 pt) inside.
        trim = [float(v) for v in pdf.pages[0].trimbox]
        assert trim == pytest.approx([8.504, 8.504, 249.449, 164.409], abs=0.01)

    png = download(
        client, f"/api-ext/files/draft/{draft['draftHash']}/image", token, page=2, width=320
    )
    with Image.open(io.BytesIO(png)) as image:
        red, green, blue = image.convert("RGB").getpixel((image.width - 5, 5))
    assert red > 240 and green < 20 and blue < 20  # the upload's red, through pdfium


def test_upload_and_editor_draws_the_fields_over_the_upload(
    client: FlaskClient, api: ApiClient, tenant: Client, upload_template: Template
) -> None:
    draft = new_draft(
        api, upload_template, intent="upload-and-editor", apiDefaultValues={"name": "Ada"}
    )
    assert upload(api, draft["draftHash"], print_pdf(2, text="Art")).status_code == 200
    token = sign(tenant.api_key, magento_claims(tenant))
    served = download(client, f"/api-ext/files/draft/{draft['draftHash']}/print", token)
    texts = [page.extract_text() for page in PdfReader(io.BytesIO(served)).pages]
    assert "Art 1" in texts[0] and "Ada" in texts[0]
    assert texts[1].strip() == "Art 2"


def test_uploads_that_cannot_be_print_files_are_refused_by_name(
    api: ApiClient, upload_template: Template, app: Flask
) -> None:
    draft = new_draft(api, upload_template, intent="upload")
    hash_ = draft["draftHash"]
    # Helvetica is a standard-14 font: reportlab does not embed it.
    assert any(
        "Helvetica" in m and "not embedded" in m
        for m in refusal(upload(api, hash_, print_pdf(2, font="Helvetica")))
    )
    assert any(
        "Page 1 is 210.0 x 297.0 mm" in m and "91 x 61 mm" in m
        for m in refusal(upload(api, hash_, print_pdf(2, width=210, height=297)))
    )
    assert refusal(upload(api, hash_, print_pdf(1))) == [
        "The PDF has 1 page(s); the template has 2."
    ]
    for locked in (encrypted_pdf(print_pdf(2)), encrypted_pdf(print_pdf(2), user_password="")):
        assert any("encrypted" in m for m in refusal(upload(api, hash_, locked)))
    assert any("not a PDF" in m for m in refusal(upload(api, hash_, image_bytes((10, 10)))))
    # The reader's message names its in-memory stream (a repr with a memory address).
    # The last two: a page tree the reader gives up on with an error of another class, and
    # a page whose content does not decompress; both were put down to a file of the
    # template ("import the template again").
    for broken in (
        b"%PDF-1.4\n garbage",
        b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\n",
        b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Kids[3 0 R 4]>>endobj\n"
        b"3 0 obj<</Type/Page>>endobj\n4 0 obj<</Type/Catalog>>endobj\n",
        _with_garbled_content(print_pdf(2)),
    ):
        (unread,) = refusal(upload(api, hash_, broken))
        assert unread.startswith("The PDF cannot be read: "), unread
        assert "BytesIO" not in unread and " at 0x" not in unread, unread
        assert "template" not in unread, unread
    missing = upload(api, hash_, print_pdf(2), field="pdf")
    assert missing.status_code == 422 and "file" in missing.get_json()["errors"]
    raw = api.post(
        f"/api-ext/draft/{hash_}/upload", data=print_pdf(2), content_type="application/pdf"
    )
    assert raw.status_code == 415 and raw.get_json()["message"]
    # Nothing was stored by any of them.
    assert shown(api, hash_)["preflightStatus"] == PREFLIGHT_NOT_CHECKED
    assert not list(app.extensions["pps"].storage.root.rglob(f"drafts/*/{hash_}/upload/*"))


def _with_garbled_content(data: bytes) -> bytes:
    """``data`` with its first page's content a FlateDecode stream that is not deflated."""
    with pikepdf.open(io.BytesIO(data)) as pdf:
        pdf.pages[0].obj.Contents = pdf.make_stream(
            b"not deflated", Filter=pikepdf.Name("/FlateDecode")
        )
        out = io.BytesIO()
        pdf.save(out)
    return out.getvalue()


def _with_entry(data: bytes, key: str, value: Any) -> bytes:
    """``data`` with ``key`` of its first page set to ``value``, as a broken writer makes it."""
    with pikepdf.open(io.BytesIO(data)) as pdf:
        pdf.pages[0].obj[key] = value
        out = io.BytesIO()
        pdf.save(out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("/Rotate", pikepdf.Name("/Ninety"), "Page 1 has a /Rotate that is not a number"),
        ("/Rotate", pikepdf.String("90"), "Page 1 has a /Rotate that is not a number"),
        ("/Rotate", pikepdf.Array([90]), "Page 1 has a /Rotate that is not a number"),
        ("/TrimBox", pikepdf.Name("/Trim"), "Page 1 has a /TrimBox that is not four numbers"),
        ("/TrimBox", pikepdf.Array([0, 0]), "Page 1 has a /TrimBox that is not four numbers"),
        (
            "/BleedBox",
            pikepdf.Array([0, 0, pikepdf.Name("/W"), 10]),
            "Page 1 has a /BleedBox that is not four numbers",
        ),
    ],
)
def test_a_page_rotation_or_box_that_is_not_a_number_is_refused_by_name(
    api: ApiClient, upload_template: Template, app: Flask, key: str, value: Any, words: str
) -> None:
    """A 500 before; a box the reader could not unpack blamed the template's files."""
    hash_ = new_draft(api, upload_template, intent="upload")["draftHash"]
    data = print_pdf(2)
    if key == "/BleedBox":  # read only beside a TrimBox
        inset = 3 * 72 / 25.4
        with pikepdf.open(io.BytesIO(data)) as pdf:
            x0, y0, x1, y1 = (float(v) for v in pdf.pages[0].mediabox)
        data = _with_entry(data, "/TrimBox", [x0 + inset, y0 + inset, x1 - inset, y1 - inset])
    assert refusal(upload(api, hash_, _with_entry(data, key, value))) == [f"{words}."]
    assert shown(api, hash_)["preflightStatus"] == PREFLIGHT_NOT_CHECKED
    assert not list(app.extensions["pps"].storage.root.rglob(f"drafts/*/{hash_}/upload/*"))


def test_upload_only_for_upload_intents(api: ApiClient, upload_template: Template) -> None:
    draft = new_draft(api, upload_template, intent="customize")
    response = upload(api, draft["draftHash"], print_pdf(2))
    assert response.status_code == 422 and set(response.get_json()["errors"]) == {"intent"}
    assert api.post("/api-ext/draft/" + "0" * 32 + "/upload").status_code == 404


def test_uploaded_pdf_preflight_low_dpi_rgb_images_and_restricted_fonts(
    api: ApiClient, upload_template: Template
) -> None:
    draft = new_draft(api, upload_template, intent="upload")
    low = Image.new("RGB", (60, 60), (0, 90, 200))  # 60 px in 20 mm: 76 dpi
    response = upload(api, draft["draftHash"], print_pdf(2, image=low))
    assert response.status_code == 200, response.get_json()
    warned = sdk_draft(response.get_json()["data"])
    assert warned["preflightStatus"] == PREFLIGHT_WARNINGS
    assert {r["page"] for r in warned["validationResults"]} == {1, 2}
    warnings = messages(warned, "warning")
    assert sum("76 dpi" in m for m in warnings) == 2
    assert sum("RGB" in m for m in warnings) == 2

    restricted = upload(api, draft["draftHash"], with_restricted_fonts(print_pdf(2)))
    assert restricted.status_code == 200
    flagged = sdk_draft(restricted.get_json()["data"])
    assert flagged["preflightStatus"] == PREFLIGHT_ERRORS
    assert any("fsType" in m for m in messages(flagged, "error"))


def test_upload_beyond_the_body_limit_and_up_to_the_upload_limit(
    app_config: dict[str, Any], tmp_path: Path
) -> None:
    small = create_app({**app_config, "max_body_bytes": 20_000, "max_upload_bytes": 200_000})
    try:
        repo = small.extensions["pps"].repository
        tenant = repo.create_client("Upload shop")
        api = ApiClient(small.test_client(), tenant.api_key)
        template = imported(small, repo, tenant, tmp_path / "small", document=UPLOAD, files={})
        draft = new_draft(api, template, intent="upload")
        padded = print_pdf(2) + b"%" + b"x" * 50_000  # over the body limit, under the upload's
        assert upload(api, draft["draftHash"], padded).status_code == 200
        too_large = upload(api, draft["draftHash"], padded + b"x" * 200_000)
        assert too_large.status_code == 413 and too_large.get_json()["message"]
        # Other bodies keep their limit.
        big_json = {"customAttributes": {"note": "x" * 30_000}}
        assert api.put(f"/api-ext/draft/{draft['draftHash']}", json=big_json).status_code == 413
    finally:
        small.extensions["pps"].close()


def test_a_pdf_of_exactly_the_upload_limit_is_taken_by_both_upload_endpoints(
    app_config: dict[str, Any], tmp_path: Path
) -> None:
    """The limit is the file's, not the body's: the multipart framing around a file of
    exactly ``PPS_MAX_UPLOAD_BYTES`` is allowed for, and one byte more is a 413 on both."""
    pdf = print_pdf(2)
    small = create_app({**app_config, "max_upload_bytes": len(pdf)})
    try:
        repo = small.extensions["pps"].repository
        tenant = repo.create_client("Upload shop")
        api = ApiClient(small.test_client(), tenant.api_key)
        template = imported(small, repo, tenant, tmp_path / "exact", document=UPLOAD, files={})
        draft = new_draft(api, template, intent="upload")

        def to_file(data: bytes) -> Any:
            body = {"file": (io.BytesIO(data), "print.pdf", "application/pdf")}
            return api.post("/api-ext/file", data=body, content_type="multipart/form-data")

        assert to_file(pdf).status_code == 201
        assert upload(api, draft["draftHash"], pdf).status_code == 200
        assert_error(to_file(pdf + b"%"), 413)
        assert_error(upload(api, draft["draftHash"], pdf + b"%"), 413)
    finally:
        small.extensions["pps"].close()


def test_upload_draft_replicates_with_its_own_upload(
    client: FlaskClient, api: ApiClient, tenant: Client, upload_template: Template
) -> None:
    draft = new_draft(api, upload_template, intent="upload")
    assert upload(api, draft["draftHash"], print_pdf(2, text="Copy me")).status_code == 200
    copy = api.post(f"/api-ext/draft/{draft['draftHash']}/replicate", json={})
    assert copy.status_code == 200
    copy_hash = copy.get_json()["data"]["draftHash"]
    assert api.delete(f"/api-ext/draft/{draft['draftHash']}").status_code == 204
    token = sign(tenant.api_key, magento_claims(tenant))
    served = download(client, f"/api-ext/files/draft/{copy_hash}/print", token)
    assert PdfReader(io.BytesIO(served)).pages[0].extract_text().strip() == "Copy me 1"


def test_an_upload_draft_deleted_while_it_is_copied_is_404_and_leaves_no_copy(
    app: Flask,
    api: ApiClient,
    repo: SqlRepository,
    tenant: Client,
    upload_template: Template,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``DELETE`` of the source (its row, then its files) lands after the copy's row is
    made: the copy would have no upload and so no print file."""
    draft = new_draft(api, upload_template, intent="upload")
    assert upload(api, draft["draftHash"], print_pdf(2, text="Copy me")).status_code == 200
    replicate = repo.replicate_draft

    def then_deleted(client: str, draft_hash: str, **kwargs: Any) -> Any:
        copy = replicate(client, draft_hash, **kwargs)
        assert repo.delete_draft(client, draft_hash)
        delete_draft_files(app.extensions["pps"].storage, client, draft_hash)
        return copy

    monkeypatch.setattr(repo, "replicate_draft", then_deleted)
    response = api.post(f"/api-ext/draft/{draft['draftHash']}/replicate", json={})
    assert_error(response, 404)
    assert repo.list_drafts(tenant.identifier, 1, 100).total == 0


#: The files of a draft that renders from its upload, as the shop asks for them.
_UPLOAD_FILES = ("low-res", "image", "print")


@pytest.mark.parametrize("depth", [MAX_FORM_DEPTH + 1, 1000])
def test_upload_with_forms_nested_too_deep_is_refused_and_nothing_is_stored(
    app: Flask, api: ApiClient, repo: SqlRepository, upload_template: Template, depth: int
) -> None:
    """Copying or drawing a page recurses once per level of nested form XObjects: an upload
    nesting them deeper than MAX_FORM_DEPTH is a 422 naming the file, and nothing changes."""
    draft = new_draft(api, upload_template, intent="upload-and-editor")
    hash_ = draft["draftHash"]
    before = snapshot(repo)
    response = upload(api, hash_, with_nested_forms(print_pdf(2), depth))
    error = assert_error(response, 422, "file")
    assert error["errors"]["file"] == [
        f"Page 1 nests form XObjects {depth} levels deep; at most {MAX_FORM_DEPTH} are "
        "accepted (flatten the artwork)."
    ]
    assert snapshot(repo) == before
    assert shown(api, hash_)["preflightStatus"] == PREFLIGHT_NOT_CHECKED
    assert not list(app.extensions["pps"].storage.root.rglob(f"drafts/*/{hash_}/upload/*"))


def test_upload_with_forms_nested_up_to_the_limit_renders(
    client: FlaskClient, api: ApiClient, tenant: Client, upload_template: Template
) -> None:
    draft = new_draft(
        api, upload_template, intent="upload-and-editor", apiDefaultValues={"name": "Ada"}
    )
    nested = with_nested_forms(print_pdf(2, text="Art"), MAX_FORM_DEPTH, page=1)
    assert upload(api, draft["draftHash"], nested).status_code == 200
    token = sign(tenant.api_key, magento_claims(tenant))
    for kind in _UPLOAD_FILES:
        download(client, f"/api-ext/files/draft/{draft['draftHash']}/{kind}", token)


def test_a_stored_upload_with_forms_nested_too_deep_is_a_render_error(
    app: Flask, client: FlaskClient, api: ApiClient, tenant: Client, upload_template: Template
) -> None:
    """A PDF stored before uploads were checked for nesting: every file of the draft is the
    422 of a template file that cannot be drawn (as for an upload missing from storage),
    never a 500, and nothing is stored."""
    draft = new_draft(api, upload_template, intent="upload-and-editor")
    hash_ = draft["draftHash"]
    data = with_nested_forms(print_pdf(2), 1000)
    key = upload_key(tenant.identifier, hash_, data)
    app.extensions["pps"].storage.put(key, data)
    assert app.extensions["pps"].repository.update_draft(tenant.identifier, hash_, upload_key=key)
    stored = sorted(app.extensions["pps"].storage.root.rglob("*"))
    token = sign(tenant.api_key, magento_claims(tenant))
    for kind in _UPLOAD_FILES:
        response = fetch(client, f"/api-ext/files/draft/{hash_}/{kind}", token)
        error = assert_error(response, 422, "template")
        assert "nests form XObjects 1000 levels deep" in error["message"], (kind, error)
    assert sorted(app.extensions["pps"].storage.root.rglob("*")) == stored


#: 111,110 forms drawn from two kilobytes (pdfium parses each anew: 200 MB; one level
#: more, 2 GB); 40 MB of path operators in 60 KB of Flate.
_DRAWING_BOMBS = [
    (lambda data: with_form_fan_out(data, 5), f"more than {MAX_FORM_DRAWS} times"),
    (
        lambda data: with_content_bomb(data, 40),
        f"decompresses to more than {MAX_CONTENT_BYTES // 2**20} MB",
    ),
]


@pytest.mark.parametrize(("bomb", "words"), _DRAWING_BOMBS)
def test_upload_that_draws_too_much_is_refused_and_nothing_is_stored(
    app: Flask,
    api: ApiClient,
    repo: SqlRepository,
    upload_template: Template,
    bomb: Any,
    words: str,
) -> None:
    """Forms drawing forms ten times each, or content that inflates a thousandfold: refused
    before pdfium or qpdf read it whole, a 422 naming the file, and nothing changes."""
    draft = new_draft(api, upload_template, intent="upload-and-editor")
    hash_ = draft["draftHash"]
    before = snapshot(repo)
    error = assert_error(upload(api, hash_, bomb(print_pdf(2))), 422, "file")
    assert error["errors"]["file"][0].startswith("Page 1 cannot be drawn: "), error
    assert words in error["message"], error
    assert snapshot(repo) == before
    assert not list(app.extensions["pps"].storage.root.rglob(f"drafts/*/{hash_}/upload/*"))


def test_upload_drawing_forms_within_the_limits_renders(
    client: FlaskClient, api: ApiClient, tenant: Client, upload_template: Template
) -> None:
    draft = new_draft(
        api, upload_template, intent="upload-and-editor", apiDefaultValues={"name": "Ada"}
    )
    data = with_form_fan_out(print_pdf(2, text="Art"), 4)  # 11,110 forms drawn
    assert upload(api, draft["draftHash"], data).status_code == 200
    token = sign(tenant.api_key, magento_claims(tenant))
    for kind in _UPLOAD_FILES:
        download(client, f"/api-ext/files/draft/{draft['draftHash']}/{kind}", token)


@pytest.mark.parametrize(("bomb", "words"), _DRAWING_BOMBS)
def test_a_stored_upload_that_draws_too_much_is_a_render_error(
    app: Flask,
    client: FlaskClient,
    api: ApiClient,
    tenant: Client,
    upload_template: Template,
    bomb: Any,
    words: str,
) -> None:
    """Stored before uploads were measured: every file of the draft is a 422, the preflight
    an error, never a 500 nor pdfium parsing all of it."""
    draft = new_draft(api, upload_template, intent="upload-and-editor")
    hash_ = draft["draftHash"]
    data = bomb(print_pdf(2))
    key = upload_key(tenant.identifier, hash_, data)
    app.extensions["pps"].storage.put(key, data)
    assert app.extensions["pps"].repository.update_draft(tenant.identifier, hash_, upload_key=key)
    token = sign(tenant.api_key, magento_claims(tenant))
    for kind in _UPLOAD_FILES:
        response = fetch(client, f"/api-ext/files/draft/{hash_}/{kind}", token)
        error = assert_error(response, 422, "template")
        assert words in error["message"], (kind, error)
    checked = api.put(f"/api-ext/draft/{hash_}", json={"apiDefaultValues": {"name": "Bo"}})
    assert checked.status_code == 200, checked.get_data(as_text=True)
    results = checked.get_json()["data"]["validationResults"]
    assert any(words in result["message"] for result in results), results
