"""What a reviewer looks at and what the shop files: proof page images and the proof PDF.

Plain Python, no Flask. Both start from the draft's print PDF as the file endpoints render
and cache it (:func:`pps.files.rendering.render_draft_file`), so a reviewer approves the
very file that goes to print, bleed included:

* a page image is that PDF's page rasterized whole (trim plus bleed) with the marks drawn
  in: the trim box as a solid line, the bleed (cut off after printing) under a light veil,
  the bleed edge as a thin frame. Cached beside the draft's other files, per version;
* the proof PDF is a cover (the review's state and, per reviewer, the decision, the date
  and the comment) followed by the print PDF's pages unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from io import BytesIO

import pikepdf
import pypdfium2 as pdfium
from PIL import Image, ImageDraw
from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import simpleSplit
from reportlab.pdfgen.canvas import Canvas

from pps.files.keys import draft_files_prefix
from pps.files.rendering import (
    RenderPolicy,
    decoded,
    draft_assets,
    draft_spec,
    draft_values,
    render_draft_file,
)
from pps.platform.models import Draft, Template
from pps.platform.storage import FileStorage, StoredFile
from pps.render import RenderError, check_values
from pps.render.fonts import DEFAULT_FONT, load_font
from pps.render.pdf import RENDER_LOCK
from pps.render.problems import Problem
from pps.reviews.model import Review

__all__ = [
    "PROOF_WIDTHS",
    "ProofMissing",
    "print_pdf",
    "proof_page_image",
    "proof_pdf",
    "proof_pdf_key",
    "proof_problems",
]

#: Widths in pixels the proof images come in: a fixed set keeps storage bounded.
PROOF_WIDTHS = (1200,)
#: The marks, in RGB: trim line, bleed edge frame; the veil over the bleed (RGBA).
TRIM_COLOR = (226, 0, 116)
BLEED_EDGE_COLOR = (0, 159, 227)
BLEED_VEIL = (255, 255, 255, 110)


class ProofMissing(RenderError):
    """The print file could not be read back from storage after rendering it."""


def print_pdf(
    storage: FileStorage, draft: Draft, template: Template, policy: RenderPolicy
) -> bytes:
    """The draft's print PDF (rendered once per draft version, then read from storage)."""
    stored = render_draft_file(storage, draft, template, "print", policy=policy)
    data = storage.read(stored.key)
    if data is None:
        raise ProofMissing("the print file vanished from storage; try again")
    return data


def proof_problems(
    storage: FileStorage, draft: Draft, template: Template, *, max_pixels: int
) -> dict[str, list[Problem]]:
    """What keeps the draft's values from making the print file, per DataKey (a required
    value still empty, a text too long for its box): the editor's checks before a save.
    Empty when the proof can be made. A template that cannot render is a RenderError."""
    spec = draft_spec(draft, template)
    assets = draft_assets(storage, draft, template, max_pixels=max_pixels)
    return decoded(lambda: check_values(spec, draft_values(draft), assets))


def proof_image_key(draft: Draft, page: int, width: int) -> str:
    """Beside the draft version's other files: deleted with the draft, swept when old."""
    prefix = draft_files_prefix(draft.client_identifier, draft.draft_hash)
    return f"{prefix}/v{draft.version}/proof-p{page}-{width}.png"


def proof_page_image(
    storage: FileStorage,
    draft: Draft,
    template: Template,
    page: int,
    width: int,
    policy: RenderPolicy,
) -> StoredFile:
    """Page ``page`` (counted from 0) of the print PDF as PNG, ``width`` pixels wide, marked."""
    key = proof_image_key(draft, page, width)
    stored = storage.stat(key)
    if stored is not None:
        return stored
    body = marked_page_png(print_pdf(storage, draft, template, policy), page, width)
    storage.put(key, body)
    return storage.stat(key) or StoredFile(key=key, size=len(body), path=None)


@dataclass(frozen=True)
class _Boxes:
    media: tuple[float, float, float, float]
    trim: tuple[float, float, float, float]


def marked_page_png(pdf: bytes, page: int, width: int) -> bytes:
    """Rasterize ``page`` of ``pdf`` (its MediaBox: trim and bleed) and draw the marks."""
    with RENDER_LOCK:  # pdfium is not thread-safe
        document = pdfium.PdfDocument(pdf)
        try:
            if not 0 <= page < len(document):
                raise RenderError(f"the proof has no page {page + 1}")
            pdf_page = document[page]
            boxes = _Boxes(media=pdf_page.get_mediabox(), trim=pdf_page.get_trimbox())
            media_width = boxes.media[2] - boxes.media[0]
            bitmap = pdf_page.render(
                scale=width / media_width, fill_color=(255, 255, 255, 255), may_draw_forms=False
            )
            image = bitmap.to_pil().convert("RGB")
        finally:
            document.close()
    return _with_marks(image, boxes)


def _with_marks(image: Image.Image, boxes: _Boxes) -> bytes:
    left, bottom, right, top = boxes.media
    scale_x = image.width / (right - left)
    scale_y = image.height / (top - bottom)
    # PDF y grows upwards, image y downwards.
    trim = (
        round((boxes.trim[0] - left) * scale_x),
        round((top - boxes.trim[3]) * scale_y),
        round((boxes.trim[2] - left) * scale_x) - 1,
        round((top - boxes.trim[1]) * scale_y) - 1,
    )
    veil = Image.new("RGBA", image.size, BLEED_VEIL)
    ImageDraw.Draw(veil).rectangle(trim, fill=(0, 0, 0, 0))
    marked = Image.alpha_composite(image.convert("RGBA"), veil).convert("RGB")
    draw = ImageDraw.Draw(marked)
    line = max(1, round(image.width / 600))
    if trim != (0, 0, image.width - 1, image.height - 1):  # a template with bleed
        draw.rectangle((0, 0, image.width - 1, image.height - 1), outline=BLEED_EDGE_COLOR)
    draw.rectangle(trim, outline=TRIM_COLOR, width=line)
    out = BytesIO()
    marked.save(out, "PNG", compress_level=3)
    return out.getvalue()


# -- the proof PDF -----------------------------------------------------------------------

MARGIN = 56.0  # points
LINE = 14.0


def proof_pdf_key(review: Review, number: int) -> str:
    """``drafts/<client>/<draftHash>/reviews/<reviewId>/proof-<n>.pdf``: a new file each
    time, so a link handed out for an earlier one stays valid; deleted with the draft."""
    prefix = draft_files_prefix(review.client_identifier, review.draft_hash)
    return f"{prefix}/reviews/{review.review_id}/proof-{number}.pdf"


def proof_pdf(
    review: Review,
    *,
    template_name: str,
    draft_version: int,
    names: Mapping[str, str],
    print_file: bytes,
) -> bytes:
    """The cover (state, reviewers, decisions, comments) followed by the print pages.

    ``names``: user identifier -> a name to show beside it (may be missing).
    """
    cover = _cover(review, template_name, draft_version, names)
    with pikepdf.open(BytesIO(cover)) as out, pikepdf.open(BytesIO(print_file)) as proof:
        out.pages.extend(proof.pages)
        buffer = BytesIO()
        out.save(buffer, deterministic_id=True)
    return buffer.getvalue()


def _cover(
    review: Review, template_name: str, draft_version: int, names: Mapping[str, str]
) -> bytes:
    buffer = BytesIO()
    with RENDER_LOCK:  # reportlab's font registry is shared
        font = load_font(DEFAULT_FONT, None).fontName
        bold = load_font(f"{DEFAULT_FONT}-Bold", None).fontName
        canvas = Canvas(buffer, pagesize=A4, invariant=True)
        canvas.setTitle(f"Proof review {review.review_id}")
        writer = _Writer(canvas, font, bold)
        writer.heading("Proof review")
        writer.pairs(
            [
                ("Review", review.review_id),
                ("Design", f"{template_name} (draft {review.draft_hash}, version {draft_version})"),
                ("State", review.state),
                ("Closed", _when(review.closed_at) or "not yet"),
            ]
        )
        writer.gap()
        writer.heading("Reviewers, decisions and comments")
        if not review.reviewers:
            writer.text("No reviewers.")
        for reviewer in review.reviewers:
            name = names.get(reviewer.user_identifier)
            who = f"{name} ({reviewer.user_identifier})" if name else reviewer.user_identifier
            decision = reviewer.decision or "no decision yet"
            when = _when(reviewer.decided_at)
            writer.bold(f"{who}: {decision}" + (f", {when}" if when else ""))
            if reviewer.draft_version is not None and reviewer.draft_version != draft_version:
                writer.text(f"(decided on version {reviewer.draft_version} of the draft)")
            writer.text(f"Comment: {reviewer.comment}" if reviewer.comment else "No comment.")
            writer.gap()
        writer.text("The pages that follow are the print file as reviewed.")
        canvas.showPage()
        canvas.save()
    return buffer.getvalue()


def _when(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.strftime("%Y-%m-%d %H:%M UTC")


class _Writer:
    """Lines down an A4 page, wrapped to the margins, onto new pages as needed."""

    def __init__(self, canvas: Canvas, font: str, bold: str) -> None:
        self.canvas = canvas
        self.font = font
        self.bold_font = bold
        self.width = A4[0] - 2 * MARGIN
        self.y = A4[1] - MARGIN

    def _line(self, text: str, font: str, size: float) -> None:
        for part in simpleSplit(text, font, size, self.width) or [""]:
            if self.y < MARGIN:
                self.canvas.showPage()
                self.y = A4[1] - MARGIN
            self.canvas.setFont(font, size)
            self.canvas.drawString(MARGIN, self.y, part)
            self.y -= size * 1.4

    def heading(self, text: str) -> None:
        self._line(text, self.bold_font, 16)
        self.y -= 4

    def bold(self, text: str) -> None:
        self._line(text, self.bold_font, 11)

    def text(self, text: str) -> None:
        for paragraph in text.splitlines() or [""]:
            self._line(paragraph, self.font, 11)

    def pairs(self, rows: Sequence[tuple[str, str]]) -> None:
        for label, value in rows:
            self._line(f"{label}: {value}", self.font, 11)

    def gap(self) -> None:
        self.y -= LINE / 2
