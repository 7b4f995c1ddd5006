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
