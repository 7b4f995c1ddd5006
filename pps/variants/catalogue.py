"""Variants and themes as the API shows them, and which one a draft gets. No Flask here.

The looks themselves are part of the template format (:mod:`pps.render.variants`): a
variant swaps named colours (swatches) and page backgrounds, a theme is a named set of a
template's variants offered together. Here:

- :func:`client_variants` / :func:`client_themes` are a client's catalogue over its
  templates (``GET /api-ext/variant``, ``GET /api-ext/theme``), one entry per identifier;
- :func:`choose` resolves the draft options ``variant``, ``version``, ``availableVariants``,
  ``availableVariantVersions`` and ``theme`` against a template, or names what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pps.platform.errors import ValidationFailed
from pps.platform.models import DraftVariant, JsonObject
from pps.render.model import TemplateSpec, Theme, Variant
from pps.render.variants import theme_summaries, variant_summaries

__all__ = [
    "Choice",
    "choose",
    "client_themes",
    "client_variants",
]

VariantRef = int | str


def _unique(items: Iterable[JsonObject]) -> list[JsonObject]:
    seen: dict[str, JsonObject] = {}
    for item in items:
        seen.setdefault(str(item["identifier"]), item)
    return list(seen.values())


def client_variants(specs: Iterable[Mapping[str, Any]]) -> list[JsonObject]:
    """Every variant of the templates, the first template's entry for an identifier."""
    return _unique(item for spec in specs for item in variant_summaries(spec))


def client_themes(specs: Iterable[Mapping[str, Any]]) -> list[JsonObject]:
    return _unique(item for spec in specs for item in theme_summaries(spec))


@dataclass(frozen=True)
class Choice:
    """What a draft stores: its variant, the variants offered to it, its theme."""

    variant: DraftVariant | None
    available: tuple[str, ...] | None
    theme: str | None


def _described(variants: Sequence[Variant]) -> str:
    return ", ".join(f"{item.id} ({item.identifier})" for item in variants) or "none"


def _find(spec: TemplateSpec, ref: VariantRef) -> Variant | None:
    """By id (an int, as the SDK sends it, or its digits) or by identifier."""
    for item in spec.variants:
        if ref == item.identifier or (not isinstance(ref, bool) and str(ref) == str(item.id)):
            return item
    return None


def _by_version(
    spec: TemplateSpec,
    pool: Sequence[Variant],
    version: int,
    current: str | None,
    errors: dict[str, list[str]],
) -> Variant | None:
    """The offered variant of ``version``: ``current`` if it has it, else the first one
    offered (pps does not require versions to differ between variants); None with an
    error naming ``version`` when no offered variant has it."""
    matching = [item for item in pool if item.version == version]
    for item in matching:
        if item.identifier == current:
            return item
    if matching:
        return matching[0]
    if any(item.version == version for item in spec.variants):
        errors["version"] = [
            f"No variant offered to this draft has version {version}; offered: "
            f"{_described_versions(pool)}."
        ]
    else:
        errors["version"] = [
            f"The template has no variant of version {version}; its variants: "
            f"{_described_versions(spec.variants)}."
        ]
    return None


def _described_versions(variants: Sequence[Variant]) -> str:
    return ", ".join(f"{item.identifier} (version {item.version})" for item in variants) or "none"


def _draft_variant(variant: Variant) -> DraftVariant:
    return DraftVariant(id=variant.id, identifier=variant.identifier, version=variant.version)


def choose(
    spec: TemplateSpec,
    *,
    variant: VariantRef | None = None,
    version: int | None = None,
    available: Sequence[VariantRef] | None = None,
    available_versions: Sequence[VariantRef] | None = None,
    theme: str | None = None,
    offered: Sequence[str] | None = None,
    current: str | None = None,
) -> Choice:
    """Resolve the variant options of a new draft (or of a ``PUT`` with ``offered``, the
    draft's stored offer); raise :class:`ValidationFailed` naming each bad field.

    Rules: ``theme`` offers that theme's variants; ``availableVariants`` narrows the offer
    further, and ``availableVariantVersions`` to the variants of those versions (the
    Magento module's colours of a product; each must be the version of a variant offered
    so far); ``variant`` must be offered; when the offer is narrowed and no variant is
    given, the first one offered is chosen, else the draft keeps the template's own look.
    A variant has one version in pps (its ``version`` in the template): with ``variant``,
    ``version`` must be its version; without it, ``version`` chooses the offered variant
    of that version (``current``, the draft's variant, when it has it, else the first
    one), as the Magento module's ``updateColorVariant`` switches colours. A template
    without variants takes ``availableVariantVersions`` and changes nothing.
    """
    errors: dict[str, list[str]] = {}
    known = _described(spec.variants)
    pool: list[Variant] = list(spec.variants)
    if offered is not None:
        pool = [item for item in pool if item.identifier in offered]
    narrowed = offered is not None
    chosen_theme: Theme | None = None
    if theme is not None:
        chosen_theme = spec.find_theme(theme)
        if chosen_theme is None:
            names = ", ".join(item.identifier for item in spec.themes) or "none"
            errors["theme"] = [f"The template has no theme {theme!r}; its themes: {names}."]
        else:
            pool = [item for item in pool if item.identifier in chosen_theme.variants]
            narrowed = True
    if available is not None:
        wanted: list[Variant] = []
        for ref in available:
            found = _find(spec, ref)
            if found is None:
                errors.setdefault("availableVariants", []).append(
                    f"The template has no variant {ref!r}; its variants: {known}."
                )
            elif found in pool and found not in wanted:
                wanted.append(found)
        pool = wanted
        narrowed = True
    if available_versions and spec.variants:
        wanted_versions = {str(ref) for ref in available_versions}
        versions = {str(item.version) for item in pool}
        for ref in available_versions:
            if str(ref) not in versions:
                errors.setdefault("availableVariantVersions", []).append(
                    f"No offered variant has version {ref!r}; their versions: "
                    f"{', '.join(sorted(versions, key=int)) or 'none'}."
                )
        pool = [item for item in pool if str(item.version) in wanted_versions]
        narrowed = True
    chosen: Variant | None = None
    if variant is not None:
        chosen = _find(spec, variant)
        if chosen is None:
            errors["variant"] = [f"The template has no variant {variant!r}; its variants: {known}."]
        elif narrowed and chosen not in pool:
            offer = _described(pool)
            errors["variant"] = [
                f"Variant {variant!r} is not offered to this draft; offered: {offer}."
            ]
        elif version is not None and version != chosen.version:
            errors["version"] = [
                f"Variant {chosen.identifier!r} has no version {version!r}; "
                f"its version is {chosen.version}."
            ]
    elif version is not None:
        chosen = _by_version(spec, pool, version, current, errors)
    elif narrowed and pool and offered is None:
        chosen = pool[0]
    if errors:
        raise ValidationFailed(errors=errors)
    return Choice(
        variant=None if chosen is None else _draft_variant(chosen),
        available=tuple(item.identifier for item in pool) if narrowed else None,
        theme=None if chosen_theme is None else chosen_theme.identifier,
    )
