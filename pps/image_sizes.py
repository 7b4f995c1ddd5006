"""The few pixel sizes the file endpoints render images in. Plain Python, no Flask.

Every rendered image is kept in file storage for its draft version or template, so a size
per request would let one reusable file token fill the disk (``width=1``, ``width=2``, ...).
Requests are therefore answered with the next size up from a short list: at most
``len(IMAGE_STEPS)`` images per page and draft version (plus the default 150 dpi one).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["IMAGE_STEPS", "stepped"]

#: Pixel lengths of an image's longer side, as the README's Files section lists them.
IMAGE_STEPS: tuple[int, ...] = (160, 320, 480, 640, 960, 1280, 1600, 2048)


def stepped(size: tuple[int, int], steps: Sequence[int] = IMAGE_STEPS) -> tuple[int, int]:
    """``size`` scaled so its longer side is the next of ``steps`` up (the last at most).

    The aspect ratio is kept; the shorter side is rounded to whole pixels, at least 1.
    """
    width, height = size
    longer = max(width, height)
    target = next((step for step in steps if step >= longer), steps[-1])
    if target == longer:
        return size
    scale = target / longer
    return max(1, round(width * scale)), max(1, round(height * scale))
