"""The preflight core without the service: resolution, font licences, page boxes, statuses."""

from __future__ import annotations

import io
from typing import Any

import pikepdf
import pytest
from flask.testing import FlaskClient
from preflight_support import print_pdf
from test_preflight import UPLOAD

from pps.platform.models import PREFLIGHT_ERRORS, PREFLIGHT_OK, PREFLIGHT_WARNINGS
from pps.preflight import MIN_DPI, TOLERANCE_MM, Finding, PdfRefused, accept_pdf, status_of
from pps.preflight.fonts import embedding_restricted, fs_type
from pps.preflight.template import placed_dpi
from pps.render import parse_spec
from pps.render.fonts import BUILTIN_FONTS

SPEC = parse_spec(UPLOAD)


def test_placed_dpi_follows_the_fit() -> None:
    # 1000 x 500 px in a 50 x 50 mm box.
    assert placed_dpi((1000, 500), (50, 50), "contain") == pytest.approx(508)
    assert placed_dpi((1000, 500), (50, 50), "cover") == pytest.approx(254)
    assert placed_dpi((1000, 500), (50, 50), "stretch") == pytest.approx(254)


def test_status_of_the_worst_finding() -> None:
    assert status_of([]) == PREFLIGHT_OK
    assert status_of([Finding(1, "w", "warning")]) == PREFLIGHT_WARNINGS
    assert status_of([Finding(1, "w", "warning"), Finding(2, "e", "error")]) == PREFLIGHT_ERRORS


def test_fs_type_of_a_real_font() -> None:
    vera = BUILTIN_FONTS["Vera"].read_bytes()
    assert fs_type(vera) is not None
    assert not embedding_restricted(vera)
    assert fs_type(b"%PDF-1.7") is None


def _with_boxes(data: bytes, trim_inset_mm: float, media_grow_mm: float = 0) -> bytes:
    pt = 72 / 25.4
    with pikepdf.open(io.BytesIO(data)) as pdf:
        for page in pdf.pages:
            x0, y0, x1, y1 = (float(v) for v in page.mediabox)
            grow = media_grow_mm * pt
            page.obj.MediaBox = pikepdf.Array([x0 - grow, y0 - grow, x1 + grow, y1 + grow])
            inset = trim_inset_mm * pt
            page.obj.TrimBox = pikepdf.Array([x0 + inset, y0 + inset, x1 - inset, y1 - inset])
        out = io.BytesIO()
        pdf.save(out)
    return out.getvalue()


def test_a_trim_box_of_the_template_size_with_enough_bleed_is_kept() -> None:
    # 91 x 61 mm with a TrimBox 3 mm inside: exactly the template.
    accepted = accept_pdf(_with_boxes(print_pdf(2), 3), SPEC)
    with pikepdf.open(io.BytesIO(accepted.data)) as pdf:
        width = float(pdf.pages[0].trimbox[2]) - float(pdf.pages[0].trimbox[0])
    assert width * 25.4 / 72 == pytest.approx(85, abs=0.01)


def test_a_trim_box_without_room_for_the_bleed_is_refused() -> None:
    # 85 x 55 mm media with the trim on its edge: no bleed at all.
    data = _with_boxes(print_pdf(2, width=85, height=55), 0)
    with pytest.raises(PdfRefused) as refused:
        accept_pdf(data, SPEC)
    assert refused.value.problems[0] == (
        "Page 1 has 0.0 mm of bleed; the template needs 3 mm on every side."
    )


@pytest.mark.parametrize("off", [TOLERANCE_MM - 0.2, -(TOLERANCE_MM - 0.2)])
def test_sizes_within_the_tolerance_pass(off: float) -> None:
    accept_pdf(print_pdf(2, width=91 + off, height=61 + off), SPEC)


def test_sizes_beyond_the_tolerance_are_refused() -> None:
    with pytest.raises(PdfRefused):
        accept_pdf(print_pdf(2, width=91 + TOLERANCE_MM + 0.3, height=61), SPEC)


def test_the_reference_documents_statuses_and_limits(client: FlaskClient) -> None:
    spec: dict[str, Any] = client.get("/openapi.json").get_json()
    draft = spec["components"]["schemas"]["DraftOut"]["properties"]
    assert draft["preflightStatus"]["type"] == "integer"
    assert draft["preflightStatus"]["enum"] == [-1, 0, 1, 2]
    text = draft["preflightStatus"]["description"]
    assert f"{MIN_DPI} dpi" in text and f"±{TOLERANCE_MM:g} mm" in text
    assert "/api-ext/draft/{draft_hash}/upload" in spec["paths"]
