"""``GET /editor/<hash>/proof/<n>.png``: a page of the draft's print file with the trim and
the bleed marked, for the editor's proof step (the same images a review shows:
:func:`pps.reviews.proof.proof_page_image`, cached per draft version).

Here rather than in :mod:`pps.editor`: the reviews use the editor's CSRF protection, so the
editor must not import the reviews back (no import cycles between features)."""

from __future__ import annotations

from flask import Response

from pps.editor.web import (
    PROOF_WIDTH,
    _load,
    _policy,
    _problem_json,
    _send_stored,
    _template_problem,
)
from pps.files.rendering import decoded
from pps.platform.errors import NotFound
from pps.render import InvalidValues, RenderError
from pps.reviews.proof import proof_page_image
from pps.web import bp
from pps.web.common import services


@bp.get("/editor/<draft_hash>/proof/<int:page>.png")
def editor_proof_image(draft_hash: str, page: int) -> Response:
    ctx = _load(draft_hash)
    if ctx.spec is None or ctx.template is None or not 0 <= page < ctx.spec.page_count:
        raise NotFound("This design has no such page.")
    template = ctx.template
    try:
        stored = decoded(
            lambda: proof_page_image(
                services().storage, ctx.draft, template, page, PROOF_WIDTH, _policy(ctx)
            )
        )
    except InvalidValues as exc:
        return _problem_json(ctx, exc.problems)
    except RenderError as exc:
        return _problem_json(ctx, _template_problem(exc))
    response = _send_stored(stored)
    # The URL names the draft's version (?v=), so a changed draft gets a new URL.
    response.headers["Cache-Control"] = "private, max-age=600"
    return response
