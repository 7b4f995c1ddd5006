"""Records to the wire shapes of COMPAT.md. Fields the PHP SDK types are never null."""

from __future__ import annotations

from typing import Any

from pps.models import Client, Draft, Template, User
from pps.repository import Page


def iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def user(record: User) -> dict[str, Any]:
    return {
        "identifier": record.identifier,
        "locale": record.locale,
        "profile": {
            "salutation": record.salutation,
            "title": record.title,
            "firstName": record.first_name,
            "lastName": record.last_name,
            "email": record.email,
        },
        "customAttributes": record.custom_attributes,
    }


def effective_values(record: Draft) -> dict[str, Any]:
    """What the editor shows: the shop's defaults, overridden by what the customer saved."""
    return {**record.api_default_values, **record.values}


def filled_count(record: Draft) -> int:
    return sum(1 for value in effective_values(record).values() if value not in (None, ""))


def draft(record: Draft) -> dict[str, Any]:
    return {
        "draftHash": record.draft_hash,
        "userIdentifier": record.user_identifier,
        "userGroupIdentifier": None,
        "templateIdentifier": record.template_identifier,
        "activeGroupTemplateIdentifier": None,
        "intent": record.intent,
        "state": record.state,
        "setupStatus": "complete",
        "personalizations": {"amount": filled_count(record)},
        "preflightStatus": "none",
        "variant": {"id": 1, "version": record.version},
        "apiDefaultValues": record.api_default_values,
        "customAttributes": record.custom_attributes,
        "validationResults": [],
    }


def template(record: Template, base_url: str) -> dict[str, Any]:
    return {
        "identifier": record.identifier,
        "name": record.name,
        "type": "customizable",
        "intents": ["customize"],
        "pageCount": record.page_count,
        "availTemplate": None,
        "groupMembers": [],
        "correctionTemplate": None,
        "customAttributes": record.custom_attributes,
        "dataKeys": list(record.data_keys),
        "updatedAt": iso(record.updated_at),
        "variants": [],
        "previewUrl": f"{base_url}/api-ext/files/template/{record.identifier}/page-preview-thumb",
    }


def client(record: Client) -> dict[str, Any]:
    return {
        "identifier": record.identifier,
        "name": record.name,
        "createdAt": iso(record.created_at),
    }


def meta(page: Page[Any]) -> dict[str, int]:
    return {
        "currentPage": page.page,
        "lastPage": page.last_page,
        "perPage": page.per_page,
        "total": page.total,
    }
