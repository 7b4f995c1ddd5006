"""What the editor's save adds for images and variants (called from :mod:`pps.editor.web`).

Kept apart so the form's save path gains two calls, not the logic: an image value must
name an image this shop uploaded (and a crop inside it), and ``variant`` must be one of
the variants offered to the draft; a valid variant different from the draft's is stored.
"""

from __future__ import annotations

from typing import Any

from pps.editor.media import saved_problems, variant_problem
from pps.platform.models import Draft, Template
from pps.render import Problem, TemplateSpec
from pps.render.media import image_keys
from pps.variants.options import variant_change
from pps.web.common import services

__all__ = ["media_problems", "submitted_variant"]


def media_problems(
    draft: Draft, spec: TemplateSpec, values: dict[str, str], variant: str | None
) -> dict[str, list[Problem]]:
    svc = services()
    images = {key: values[key] for key in image_keys(spec) if values.get(key)}
    found = saved_problems(spec, images, svc.storage, svc.uploads, draft.client_identifier)
    if variant:
        problem = variant_problem(spec, draft, variant)
        if problem is not None:
            found["variant"] = [problem]
    return found


def submitted_variant(
    template: Template | None, draft: Draft, variant: str | None
) -> dict[str, Any]:
    """``{"variant": ...}`` for the draft update when the form picked another variant."""
    if not variant or variant == draft.variant_identifier or template is None:
        return {}
    change = variant_change(template, draft, variant, None)
    return {} if change is None else {"variant": change.variant}
