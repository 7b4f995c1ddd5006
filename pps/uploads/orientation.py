"""Photos stored upright: an EXIF orientation applied to the pixels at upload. No Flask.

Cameras and phones store a portrait photo as landscape pixels plus an EXIF ``Orientation``
tag, and browsers turn the picture by that tag: the editor showed the customer an upright
photo and sent a crop measured on it, while the renderer, the crop check and preflight read
the pixels as stored (turned by 90 degrees, and their width for their height). Turning the
pixels once, when the file is accepted, gives every reader the picture the customer saw.
"""

from __future__ import annotations

from io import BytesIO

from PIL import Image, ImageOps

from pps.render.decode import DECODE_ERRORS

__all__ = ["upright"]

#: The EXIF tag, and its values that mean "as stored" (1) or nothing (0, absent).
_ORIENTATION = 0x0112
_AS_STORED = (None, 0, 1)
#: A JPEG turned is encoded anew; at this quality the loss is below what print shows.
JPEG_QUALITY = 95


def upright(data: bytes, kind: str) -> bytes:
    """``data`` with its EXIF orientation applied to the pixels (and the tag removed);
    ``data`` itself when it has none. Only for images that decoded completely already."""
    with Image.open(BytesIO(data)) as image:
        try:
            orientation = image.getexif().get(_ORIENTATION)
        except DECODE_ERRORS:  # an EXIF block that cannot be read names no orientation,
            return data  # as for browsers, which show such a photo as stored
        if orientation in _AS_STORED:
            return data
        icc_profile = image.info.get("icc_profile")
        dpi = image.info.get("dpi")
        turned = ImageOps.exif_transpose(image)
    options: dict[str, object] = {"exif": turned.getexif()}
    if icc_profile:
        options["icc_profile"] = icc_profile
    if dpi:
        options["dpi"] = dpi
    out = BytesIO()
    if kind == "jpeg":
        turned.save(out, "JPEG", quality=JPEG_QUALITY, **options)
    else:
        turned.save(out, "PNG", **options)
    return out.getvalue()
