"""Uploads as image values of DataKeys: served to the renderer, checked for the API. No Flask.

A bound image element is drawn from ``../uploads/<identifier>`` (see
:mod:`pps.render.media`); :class:`UploadedImages` serves that name from the *draft's own
client's* uploads only, so a value naming another shop's file draws nothing of it. The API
and the editor check values before storing them with :func:`media_problems`: a file that is
unknown to the client, not an image, or a crop outside the image is refused (422).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from io import BytesIO

from PIL import Image

from pps.platform.repository.uploads import SqlUploadStore, Upload
from pps.platform.storage import FileStorage
from pps.render import AssetError, TemplateSpec
from pps.render.assets import AssetLoader
from pps.render.decode import DEFAULT_MAX_IMAGE_PIXELS, image_pixels_problem
from pps.render.media import (
    ImageValue,
    choice_problem,
    crop_problem,
    image_keys,
    parse_image_value,
    upload_identifier,
)
from pps.render.problems import Code, Problem
from pps.render.vector import is_svg, svg_size

__all__ = ["IMAGE_KINDS", "UploadedImages", "image_size", "media_problems"]

#: Upload kinds that can be an image value.
IMAGE_KINDS = frozenset({"png", "jpeg", "svg"})


class UploadedImages:
    """A template's files plus the client's uploaded images under their upload names.

    An upload with more pixels than ``max_pixels`` (``PPS_MAX_IMAGE_PIXELS``) is an
    :class:`AssetError`, judged from its header: one accepted under a higher limit is never
    decoded once the limit is lowered.
    """

    def __init__(
        self,
        storage: FileStorage,
        client: str,
        files: AssetLoader,
        *,
        max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
    ) -> None:
        self.storage = storage
        self.client = client
        self.files = files
        self.max_pixels = max_pixels

    def __call__(self, name: str) -> bytes:
        identifier = upload_identifier(name)
        if identifier is None:
            return self.files(name)
        for kind in sorted(IMAGE_KINDS):
            data = self.storage.read(f"uploads/{self.client}/{identifier}/file.{kind}")
            if data is not None:
                problem = image_pixels_problem(data, self.max_pixels)
                if problem is not None:
                    raise AssetError(f"the uploaded image {identifier!r} {problem}")
                return data
        raise AssetError(f"the uploaded image {identifier!r} is not among this shop's files")


def image_size(data: bytes) -> tuple[float, float] | None:
    """Pixels (an SVG: its user units) of an image, read from its header; None if unreadable."""
    try:
        if is_svg(data):
            return svg_size(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(BytesIO(data)) as image:
                return float(image.width), float(image.height)
    except Exception:  # Pillow's and svglib's many errors: an unreadable image
        return None


def media_problems(
    spec: TemplateSpec,
    values: Mapping[str, object],
    storage: FileStorage,
    records: SqlUploadStore,
    client: str,
) -> dict[str, list[Problem]]:
    """Problems of the image and choice values among ``values`` (other keys are ignored).

    Values may be any JSON (``apiDefaultValues`` as sent) or their text (the editor).
    """
    problems: dict[str, list[Problem]] = {}
    for key in image_keys(spec):
        if key not in values:
            continue
        parsed = parse_image_value(values[key])
        if isinstance(parsed, Problem):
            problems[key] = [parsed]
        elif isinstance(parsed, ImageValue):
            problem = _upload_problem(parsed, storage, records.get(client, parsed.file))
            if problem is not None:
                problems[key] = [problem]
    for choice in spec.choices:
        if choice.key in values:
            found = choice_problem(choice, values[choice.key])
            if found is not None:
                problems[choice.key] = [found]
    return problems


def _upload_problem(
    value: ImageValue, storage: FileStorage, record: Upload | None
) -> Problem | None:
    if record is None or record.kind not in IMAGE_KINDS:
        return Problem(Code.VALUE_IMAGE_UNKNOWN, {"file": value.file})
    if value.crop is None:
        return None
    data = storage.read(record.storage_key)
    size = None if data is None else image_size(data)
    if size is None:
        return Problem(Code.VALUE_IMAGE_UNKNOWN, {"file": value.file})
    return crop_problem(value.crop, (round(size[0]), round(size[1])))
