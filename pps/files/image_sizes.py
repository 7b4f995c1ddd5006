"""The few pixel sizes the file endpoints render images in. Plain Python, no Flask.

Every rendered image is kept in file storage for its draft version or template, so a size
per request would let one reusable file token fill the disk (``width=1``, ``width=2``, ...).
Requests are therefore answered with the next size up from a short list: at most
``len(IMAGE_STEPS)`` images per page and draft version (plus the default 150 dpi one).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["IMAGE_STEPS", "stepped"]

#: Pixel lengths of an image's longer side, as docs/files.md lists them.
IMAGE_STEPS: tuple[int, ...] = (160, 320, 480, 640, 960, 1280, 1600, 2048)


def stepped(
    size: tuple[int, int], steps: Sequence[int] = IMAGE_STEPS
) -> tuple[int | None, int | None]:
    """The ``(width, height)`` to render instead of ``size``: only its longer side, rounded
    up to the next of ``steps`` (the last at most), the other left to the aspect ratio.

    Naming one side only means the other follows the page itself, not ``size``'s rounded
    shape, so each page has exactly one image per step.
    """
    width, height = size
    target = next((step for step in steps if step >= max(width, height)), steps[-1])
    return (target, None) if width >= height else (None, target)
