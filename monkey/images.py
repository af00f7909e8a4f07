"""Images a person attaches (``@shot.png``, an ACP prompt's image block) or ``file_read`` reads.

An image is known by its first bytes, never by its name: PNG, JPEG, GIF and WebP, the formats
every model API that takes images accepts. Its size and dimensions are read from its header
(no image library: a few fixed offsets per format) so a person sees what was attached and an
image over the limits is refused before anything is sent. :func:`sniff` never raises on any
bytes: a truncated or hostile header is "not an image".
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from pathlib import Path

from monkey.event_base import ToolImage

__all__ = [
    "MAX_IMAGE_BYTES",
    "MAX_DIMENSION",
    "IMAGE_SUFFIXES",
    "ImageError",
    "ImageInfo",
    "sniff",
    "load",
    "describe",
    "info_of",
    "from_bytes",
]

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The most bytes of one image: the Anthropic API's limit, the strictest of the APIs that take images."""
MAX_DIMENSION = 8000
"""The longest side in pixels the APIs accept."""
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
"""The names a person's pasted path or a mention is tried as an image by (the bytes decide)."""
_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}


class ImageError(ValueError):
    """Not an image monkey sends, and why (the format, the size, the dimensions)."""


@dataclass(frozen=True)
class ImageInfo:
    """What an image's header says."""

    media_type: str
    width: int
    height: int
    size: int
    """Bytes of the file."""


def _png(data: bytes) -> tuple[int, int] | None:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR" or len(data) < 24:
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _gif(data: bytes) -> tuple[int, int] | None:
    if data[:6] not in (b"GIF87a", b"GIF89a") or len(data) < 10:
        return None
    width, height = struct.unpack("<HH", data[6:10])
    return width, height


def _webp(data: bytes) -> tuple[int, int] | None:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        return None
    chunk = data[12:16]
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:  # lossless: 14 bits of width - 1, then of height - 1
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if len(data) < 30:
        return None
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":  # lossy: the key frame's start code, then 14-bit sides
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8X":  # extended: the canvas, 24 bits each of width - 1 and height - 1
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None


_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
"""JPEG's start-of-frame markers (not DHT 0xC4, JPG 0xC8, DAC 0xCC), which carry the dimensions."""


def _jpeg(data: bytes) -> tuple[int, int] | None:
    if data[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            i += 2
            continue
        if marker in (0xD9, 0xDA):  # end of image, start of scan: no frame header before it
            return None
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if length < 2:
            return None
        if marker in _SOF:
            if i + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return width, height
        i += 2 + length
    return None


_FORMATS = (("image/png", _png), ("image/jpeg", _jpeg), ("image/gif", _gif), ("image/webp", _webp))


def sniff(data: bytes, size: int | None = None) -> ImageInfo | None:
    """The image ``data`` begins (its first 64 KiB are enough), or None when it is none of the four
    formats or its header is cut or broken; ``size``: the whole file's bytes (default ``len(data)``)."""
    for media_type, read in _FORMATS:
        try:
            sides = read(data)
        except (struct.error, IndexError):
            sides = None
        if sides is not None:
            return ImageInfo(media_type, sides[0], sides[1], len(data) if size is None else size)
    return None


def info_of(path: Path) -> ImageInfo | None:
    """What ``path``'s header says, or None when it is not an image (reads 64 KiB at most)."""
    try:
        with path.open("rb") as f:
            head = f.read(65536)
            size = path.stat().st_size
    except OSError:
        return None
    return sniff(head, size)


def _check(info: ImageInfo) -> None:
    if info.size > MAX_IMAGE_BYTES:
        raise ImageError(f"{info.size:,} bytes, over the {MAX_IMAGE_BYTES:,}-byte limit for an image")
    if not info.width or not info.height:
        raise ImageError("its header says it has no pixels")
    if max(info.width, info.height) > MAX_DIMENSION:
        raise ImageError(f"{info.width}×{info.height} pixels, over the {MAX_DIMENSION}-pixel limit for a side")


def from_bytes(data: bytes) -> tuple[ToolImage, ImageInfo]:
    """``data`` as an image sent to a model, and its header; ImageError when it cannot go
    (not one of the four formats, over :data:`MAX_IMAGE_BYTES`, a side over :data:`MAX_DIMENSION`)."""
    info = sniff(data[:65536], len(data))
    if info is None:
        raise ImageError("not a PNG, JPEG, GIF or WebP image")
    _check(info)
    return ToolImage(media_type=info.media_type, data=base64.b64encode(data).decode("ascii")), info


def load(path: Path) -> tuple[ToolImage, ImageInfo]:
    """The image at ``path`` as sent to a model, and its header (see :func:`from_bytes`); a file over
    the size limit is refused from its header, before it is read. OSError when it cannot be read."""
    info = info_of(path)
    if info is None:
        raise ImageError("not a PNG, JPEG, GIF or WebP image")
    _check(info)
    with path.open("rb") as f:
        data = f.read(MAX_IMAGE_BYTES + 1)
    image, read = from_bytes(data)
    if read != info:
        raise ImageError("it changed while it was read")
    return image, read


def describe(info: ImageInfo) -> str:
    """``PNG image, 12,345 bytes, 640×480``."""
    return f"{_NAMES.get(info.media_type, info.media_type)} image, {info.size:,} bytes, {info.width}×{info.height}"
