"""``/api-ext/variant`` and ``/api-ext/theme``: the looks a client's templates offer."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pps.api import bp, current_client, resource, services
from pps.api.schemas import PageArgs
from pps.platform.models import JsonObject
from pps.platform.repository import Page
from pps.variants.catalogue import client_themes, client_variants
from pps.variants.schemas import ThemeList, VariantList

blp = resource("variants", "Variant")


def _page(
    collect: Callable[[Iterable[Mapping[str, Any]]], list[JsonObject]], args: dict[str, Any]
) -> dict[str, Any]:
    """One page of a catalogue gathered over the client's templates (in import order)."""
    templates = services().repository.list_templates(current_client().identifier).items
    items = collect(template.spec for template in templates)
    page, per_page = args["page"], args["perPage"]
    start = (page - 1) * per_page
    listed = Page(
        items=items[start : start + per_page], total=len(items), page=page, per_page=per_page
    )
    return {"data": listed.items, "meta": listed}


@blp.get("/variant")
@blp.query(PageArgs)
@blp.response(200, VariantList)
def list_variants(args: dict[str, Any]) -> dict[str, Any]:
    """List the variants of the client's templates

    A variant is a look of a template (for example a colour variant): it swaps named
    colours and page backgrounds. One entry per variant identifier over all templates;
    a template's own variants are in its `variants`. Choose one for a draft with
    `variant` (its `id` or `identifier`) on create or `PUT /api-ext/draft/{hash}`.
    """
    return _page(client_variants, args)


@blp.get("/theme")
@blp.query(PageArgs)
@blp.response(200, ThemeList)
def list_themes(args: dict[str, Any]) -> dict[str, Any]:
    """List the themes of the client's templates

    A theme is a named set of a template's variants offered together: a draft created
    with `theme` offers only that theme's variants and starts with its first one.
    """
    return _page(client_themes, args)


bp.register_blueprint(blp)  # once, at import: the API blueprint nests this resource
