"""Shared by the variable-data, upload and page-info tests: the business card as a template
of a tenant, a draft on it, and multipart bodies as the PHP SDK's Guzzle sends them."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from api_support import make_user

from pps.platform.models import Client, Draft, Template
from pps.platform.repository.sql import SqlRepository

ROOT = Path(__file__).resolve().parent.parent
BUSINESS_CARD: dict[str, Any] = json.loads(
    (ROOT / "examples" / "templates" / "business-card" / "template.json").read_text()
)


def card_template(repo: SqlRepository, tenant: Client) -> Template:
    return repo.create_template(
        tenant.identifier,
        name=BUSINESS_CARD["name"],
        data_keys=BUSINESS_CARD["dataKeys"],
        custom_attributes={},
        page_count=1,
        spec=BUSINESS_CARD,
        identifier="business-card",
    )


def card_draft(repo: SqlRepository, tenant: Client, template: Template) -> Draft:
    user = make_user(repo, tenant)
    draft = repo.create_draft(
        tenant.identifier,
        user_identifier=user.identifier,
        template_identifier=template.identifier,
        intent="personalize",
        api_default_values={"title": "Print Buyer"},
        custom_attributes={},
    )
    assert draft is not None
    return draft


def multipart(name: str, data: bytes, **fields: str) -> dict[str, Any]:
    """What Guzzle's ``multipart`` option sends: a file part and plain text parts."""
    return {"file": (io.BytesIO(data), name), **fields}


def csv_bytes(rows: list[list[str]], delimiter: str = ",") -> bytes:
    import csv

    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\r\n")
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_OFFICE_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_TYPES = "application/vnd.openxmlformats-officedocument.spreadsheetml"


def xlsx_by_hand(
    rows: str,
    shared: list[str] | None = None,
    dimension: str | None = None,
    sheet: str = "xl/worksheets/sheet1.xml",
    extra: dict[str, bytes] | None = None,
) -> bytes:
    """A minimal XLSX written with zipfile: ``rows`` is the ``<sheetData>`` content as it
    stands in the file, so a test can hold cells no spreadsheet program would write.
    ``sheet`` names the worksheet's part (under ``xl/``), ``extra`` adds parts as they are."""
    import zipfile

    overrides = (
        f'<Override PartName="/xl/workbook.xml" ContentType="{_TYPES}.sheet.main+xml"/>'
        f'<Override PartName="/{sheet}" ContentType="{_TYPES}.worksheet+xml"/>'
    )
    if shared is not None:
        overrides += (
            f'<Override PartName="/xl/sharedStrings.xml" ContentType="{_TYPES}.sharedStrings+xml"/>'
        )
    parts = {
        "[Content_Types].xml": (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            f'<Default Extension="xml" ContentType="application/xml"/>{overrides}</Types>'
        ),
        "_rels/.rels": (
            f'<Relationships xmlns="{_RELS}"><Relationship Id="rId1" '
            f'Type="{_OFFICE_RELS}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
        ),
        "xl/workbook.xml": (
            f'<workbook xmlns="{_MAIN}" xmlns:r="{_OFFICE_RELS}"><sheets>'
            '<sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": (
            f'<Relationships xmlns="{_RELS}"><Relationship Id="rId1" '
            f'Type="{_OFFICE_RELS}/worksheet" Target="{sheet.removeprefix("xl/")}"/>'
            "</Relationships>"
        ),
        sheet: (
            f'<worksheet xmlns="{_MAIN}">'
            + (f'<dimension ref="{dimension}"/>' if dimension else "")
            + f"<sheetData>{rows}</sheetData></worksheet>"
        ),
    }
    if shared is not None:
        items = "".join(f"<si><t>{text}</t></si>" for text in shared)
        parts["xl/sharedStrings.xml"] = f'<sst xmlns="{_MAIN}">{items}</sst>'
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in parts.items():
            archive.writestr(name, text)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return out.getvalue()
