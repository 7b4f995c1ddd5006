"""The reviewer's pages: ``/review/<reviewId>`` for a user logged in through ``/auth``.

* ``GET /review/<id>``: every page of the proof (the print file, bleed included, with the
  trim box and the bleed marked) and, while the review is open, a form to approve or
  reject with a comment.
* ``POST /review/<id>``: the decision (CSRF token required, as in the editor); ``303``
  back to the page, which then shows it. A rejection without a comment is the form
  again with ``422``; a decision on a closed review ``409``; on a proof that changed since
  the page was loaded ``409`` (look again first).
* ``GET /review/<id>/page/<n>.png``: page ``n`` (from 0) of the proof, marked.

Only the review's users: without a login ``401``, a login of someone else ``403``, a
review of another client ``404``, all as HTML pages.

The page speaks the reader's language: ``?locale=en|de`` (kept through the decision's
form and redirect), else the user's locale, else English. Every text comes from the
gettext catalogues (``review.*`` codes), as the editor's do (:mod:`pps.web.i18n`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, Response, current_app, render_template, request, url_for

from pps.auth.web import logged_in_as
from pps.editor.csrf import check_csrf, csrf_token
from pps.editor.inputs import field_label
from pps.files.rendering import TemplateNotRenderable, template_spec
from pps.platform.errors import Forbidden, NotFound, PayloadTooLarge, PpsError, ValidationFailed
from pps.platform.http_headers import PAGE_CSP
from pps.render import RenderError, TemplateSpec
from pps.reviews.model import APPROVE, MAX_COMMENT, REJECT, Review
from pps.reviews.proof import PROOF_WIDTHS, proof_page_image, proof_problems
from pps.reviews.service import DecisionRefused, ReviewContext, Reviews
from pps.web.common import services
from pps.web.i18n import Translator, normalize_locale

__all__ = ["bp"]

bp = Blueprint(
    "review_pages",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/static/review",
)

WIDTH = PROOF_WIDTHS[0]
MAX_FORM_FIELDS = 10


class ReviewLoginRequired(PpsError):
    status = 401
    page = "error.logged_out"
    default_message = (
        "You are not logged in (or your login has expired). Please open the review "
        "from the shop again to log in."
    )


class NotAReviewer(Forbidden):
    default_message = (
        "Only the reviewers of this proof may see it, and you are not one of them. "
        "If you should be, ask the shop to add you to the review."
    )


def _reviews() -> Reviews:
    return current_app.extensions["pps.reviews"]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Visit:
    user: str
    ctx: ReviewContext


def _load(review_id: str) -> Visit:
    """The review, for one of its reviewers; otherwise a 401, 403 or 404 page."""
    identity = logged_in_as()
    if identity is None:
        raise ReviewLoginRequired()
    client, user_id = identity
    client_id = client.identifier
    review = _reviews().store.get(client_id, review_id)
    if review is None:
        raise NotFound("There is no such review.")
    if review.reviewer(user_id) is None:
        raise NotAReviewer()
    return Visit(user_id, _reviews().context(review))


@bp.get("/review/<review_id>")
def review_page(review_id: str) -> Response:
    visit = _load(review_id)
    return _page(visit, comment="", problem=None, status=200)


@bp.get("/review/<review_id>/")
def review_page_slash(review_id: str) -> Response:
    """The Magento module signs ``{base}/review/{id}/`` (``V2::API_REVIEW_EDIT``, with the
    slash): the same page, at its one address; the query goes along."""
    location = url_for("review_pages.review_page", review_id=review_id)
    query = request.query_string.decode("latin-1")
    response = Response(status=308)
    response.headers["Location"] = f"{location}?{query}" if query else location
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.post("/review/<review_id>")
def review_decide(review_id: str) -> Response:
    visit = _load(review_id)
    if len(request.form) > MAX_FORM_FIELDS:
        raise PayloadTooLarge("This form has more fields than the review form ever sends.")
    check_csrf()
    decision = request.form.get("decision", "")
    comment = request.form.get("comment", "")
    version_text = request.form.get("version", "")
    # ASCII digits only: "²" is a digit to isdigit() but not to int(), and "٢" would be 2.
    digits = version_text.isascii() and version_text.isdigit() and len(version_text) < 10
    version = int(version_text) if digits else -1
    review = visit.ctx.review
    try:
        _reviews().decide(
            review.client_identifier,
            review.review_id,
            visit.user,
            decision,
            comment,
            draft_version=version,
        )
    except DecisionRefused as exc:
        t = _translator(visit)
        problem = t(exc.code, **exc.params) if exc.code and t.knows(exc.code) else exc.message
        return _page(visit, comment=comment, problem=problem, status=422)
    except ValidationFailed as exc:
        return _page(visit, comment=comment, problem=exc.message, status=422)
    response = Response(status=303)
    response.headers["Location"] = url_for(
        "review_pages.review_page", review_id=review_id, **_asked_locale()
    )
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/review/<review_id>/page/<int:page>.png")
def review_page_image(review_id: str, page: int) -> Response:
    visit = _load(review_id)
    ctx = visit.ctx
    try:
        page_count = template_spec(ctx.template).page_count
    except TemplateNotRenderable as exc:
        raise NotFound(str(exc)) from None
    if not 0 <= page < page_count:
        raise NotFound("This proof has no such page.")
    reviews = _reviews()
    try:
        stored = proof_page_image(
            services().storage,
            ctx.draft,
            ctx.template,
            page,
            WIDTH,
            reviews.policy(ctx.review.client_identifier),
        )
    except RenderError as exc:
        raise ValidationFailed(f"The proof cannot be shown: {exc}") from exc
    data = services().storage.read(stored.key)
    if data is None:
        raise NotFound("The image is gone; reload the page.")
    response = Response(data, mimetype="image/png")
    # The URL names the draft's version (?v=): a changed draft gets new URLs.
    response.headers["Cache-Control"] = "private, max-age=600"
    response.add_etag()
    response.make_conditional(request)
    return response


# -- the page ----------------------------------------------------------------------------

#: A reviewer's decision -> its message code.
_DECISION_CODES = {
    "approved": "review.decision.approved",
    "rejected": "review.decision.rejected",
    None: "review.decision.none",
}
#: A review's state -> its message code.
_STATE_CODES = {
    "open": "review.state.open",
    "approved": "review.state.approved",
    "rejected": "review.state.rejected",
    "closed": "review.state.closed",
}


def _asked_locale() -> dict[str, Any]:
    """``{"locale": ...}`` when the URL asked for a language this page speaks."""
    asked = normalize_locale(request.args.get("locale"))
    return {"locale": asked} if asked else {}


def _translator(visit: Visit) -> Translator:
    """``?locale=``, else the reviewer's own locale, else English."""
    asked = _asked_locale().get("locale")
    if asked is None:
        user = services().repository.get_user(visit.ctx.review.client_identifier, visit.user)
        asked = normalize_locale(user.locale if user is not None else None)
    return Translator(asked or "en")


def _image_url(review_id: str, page: int) -> str:
    return url_for("review_pages.review_page_image", review_id=review_id, page=page)


def _unprintable(ctx: ReviewContext, spec: TemplateSpec, t: Translator) -> list[str]:
    """Why the proof cannot be made, one line per problem in the reader's language
    ("<field>: <problem>", each field named as ``spec``, the template's, names it), shown
    instead of page images that would only be broken; empty when it can be made. A
    template that cannot render is left to the images' own answer."""
    svc = services()
    try:
        found = proof_problems(
            svc.storage, ctx.draft, ctx.template, max_pixels=svc.settings.max_image_pixels
        )
    except RenderError:
        return []
    return [
        f"{field_label(spec.field(key), key, t.locale)}: {t.problem(problem)}"
        for key, problems in found.items()
        for problem in problems
    ]


@dataclass(frozen=True)
class PageView:
    number: int
    src: str
    alt: str


def _page(visit: Visit, *, comment: str, problem: str | None, status: int) -> Response:
    ctx = visit.ctx
    review: Review = ctx.review
    spec: TemplateSpec | None
    try:
        spec = template_spec(ctx.template)
        page_count, size = spec.page_count, (spec.width, spec.height, spec.bleed)
    except TemplateNotRenderable:
        spec, page_count, size = None, 0, None
    t = _translator(visit)
    unprintable = _unprintable(ctx, spec, t) if spec is not None and page_count else []
    query = urlencode({"v": ctx.draft.version})
    pages = [
        PageView(
            number=page + 1,
            src=f"{_image_url(review.review_id, page)}?{query}",
            alt=t("review.page_alt", number=page + 1, count=page_count),
        )
        for page in range(page_count)
    ]
    mine = review.reviewer(visit.user)
    state_code = _STATE_CODES.get(review.state)
    body = render_template(
        "review.html",
        t=t,
        locale=t.locale,
        review=review,
        template_name=ctx.template.name,
        draft=ctx.draft,
        size=size,
        pages=pages,
        unprintable=unprintable,
        state_label=t(state_code) if state_code else review.state,
        decision_labels={key: t(code) for key, code in _DECISION_CODES.items()},
        mine=mine,
        comment=comment,
        problem=problem,
        max_comment=MAX_COMMENT,
        approve=APPROVE,
        reject=REJECT,
        csrf_token=csrf_token(),
        action=url_for("review_pages.review_decide", review_id=review.review_id, **_asked_locale()),
    )
    response = Response(body, status=status, mimetype="text/html")
    response.headers["Content-Security-Policy"] = PAGE_CSP
    response.headers["Cache-Control"] = "no-store"
    return response
