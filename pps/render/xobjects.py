"""How the XObjects of a PDF page nest, found without recursion. Plain Python, no Flask.

A Form XObject draws with resources of its own, which may list further forms: a file can
nest them a thousand deep (a few hundred kilobytes) or in cycles. Walking that recursively
exhausts Python's recursion limit, and the libraries that copy or draw such a page recurse
as deep. :func:`survey_xobjects` walks the forms iteratively, each form once, and measures
the longest chain of nested forms; artwork nested deeper than :data:`MAX_FORM_DEPTH` is
refused by the upload check (:mod:`pps.preflight.pdf`) and by the renderer alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pikepdf

__all__ = ["MAX_FORM_DEPTH", "XObjectSurvey", "survey_xobjects"]

#: The most Form XObjects nested in one another that a page may have. Real artwork nests a
#: handful (a placed PDF within a placed PDF); this is far below any library's own limit.
MAX_FORM_DEPTH = 100

_Key = tuple[int, int]


@dataclass(frozen=True)
class XObjectSurvey:
    """What a page's resources draw through XObjects."""

    has_images: bool
    """Whether an image XObject is listed, at any depth."""
    depth: int
    """The longest chain of forms nested in one another (0: no forms)."""


@dataclass
class _Frame:
    """A form on the current path of the walk and what remains to look at below it."""

    key: _Key | None  # None for the page's own resources
    pending: Iterator[pikepdf.Stream]
    below: int = 0  # the longest chain of forms found under it so far


def survey_xobjects(resources: object) -> XObjectSurvey:
    """Images and form depth below ``resources`` (a page's or form's ``/Resources``).

    Depth first with an explicit stack: a form seen before adds its known depth instead of
    being walked again, so shared forms cost nothing twice and a deep chain is measured
    wherever it is entered; a form that lists itself (a cycle) is not followed again.
    """
    has_images = False
    depths: dict[_Key, int] = {}  # finished forms: the longest chain each one starts
    on_path: set[_Key] = set()
    path = [_Frame(None, _streams(resources))]
    while True:
        frame = path[-1]
        xobject = next(frame.pending, None)
        if xobject is None:
            path.pop()
            if frame.key is None:
                return XObjectSurvey(has_images=has_images, depth=frame.below)
            depths[frame.key] = frame.below + 1
            on_path.discard(frame.key)
            path[-1].below = max(path[-1].below, frame.below + 1)
            continue
        if xobject.get("/Subtype") == pikepdf.Name.Image:
            has_images = True
        else:  # a form; any other stream is walked too, in case a reader draws it as one
            key = xobject.objgen
            if key in depths:
                frame.below = max(frame.below, depths[key])
            elif key not in on_path:
                on_path.add(key)
                path.append(_Frame(key, _streams(xobject.get("/Resources"))))


def _streams(resources: object) -> Iterator[pikepdf.Stream]:
    """The XObject streams a resource dictionary lists; malformed entries are skipped."""
    if not isinstance(resources, pikepdf.Dictionary):
        return iter(())
    xobjects = resources.get("/XObject")
    if not isinstance(xobjects, pikepdf.Dictionary):
        return iter(())
    found = (xobjects[name] for name in list(xobjects.keys()))
    return iter([xobject for xobject in found if isinstance(xobject, pikepdf.Stream)])
