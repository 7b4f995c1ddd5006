"""Wire shapes of ``/api-ext/variant`` and ``/api-ext/theme`` (the PHP SDK's Variant, Theme).

A variant here has the shape of a template's ``variants`` entries
(:class:`pps.api.schemas.VariantSummaryOut`), so the two never disagree.
"""

from __future__ import annotations

from marshmallow import fields

from pps.api.schemas import Output, VariantSummaryOut, many


class ThemeOut(Output):
    identifier = fields.String(required=True)
    name = fields.String(required=True)


VariantList = many(VariantSummaryOut)
ThemeList = many(ThemeOut)
