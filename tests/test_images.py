"""Images are known by their bytes: the format, size and sides from the header, the limits checked
before anything is read or sent, and no input makes the reader raise."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monkey.images import MAX_IMAGE_BYTES, ImageError, describe, from_bytes, load, sniff
from tests.support import images

KINDS = [
    (images.png(2, 3), "image/png", 2, 3),
    (images.gif(4, 5), "image/gif", 4, 5),
    (images.jpeg(6, 7), "image/jpeg", 6, 7),
    (images.webp_vp8x(9, 10), "image/webp", 9, 10),
    (images.webp_lossy(11, 12), "image/webp", 11, 12),
    (images.webp_lossless(13, 14), "image/webp", 13, 14),
]


@pytest.mark.parametrize(("data", "media_type", "width", "height"), KINDS)
def test_each_format_is_known_with_its_sides(data: bytes, media_type: str, width: int, height: int) -> None:
    info = sniff(data)
    assert info is not None and (info.media_type, info.width, info.height, info.size) == (
        media_type,
        width,
        height,
        len(data),
    )
    image, same = from_bytes(data)
    assert same == info and base64.b64decode(image.data) == data and image.media_type == media_type


@pytest.mark.parametrize(("data", "media_type", "width", "height"), KINDS)
def test_a_cut_header_is_no_image_or_the_same_image(data: bytes, media_type: str, width: int, height: int) -> None:
    for end in range(len(data)):
        info = sniff(data[:end])
        assert info is None or (info.media_type, info.width, info.height) == (media_type, width, height)


@given(st.binary(max_size=200))
def test_no_bytes_make_the_reader_raise(data: bytes) -> None:
    sniff(data)
    for magic in (b"\x89PNG\r\n\x1a\n", b"GIF89a", b"\xff\xd8", b"RIFF"):
        sniff(magic + data)


@given(st.binary(max_size=64))
def test_hostile_jpeg_segments_end_the_walk(data: bytes) -> None:
    info = sniff(b"\xff\xd8" + data)
    assert info is None or info.media_type == "image/jpeg"


def test_the_limits_are_checked_from_the_header(tmp_path: Path) -> None:
    big = tmp_path / "big.png"  # 50 MB, sparse: refused by its size without being read
    big.write_bytes(images.png())
    with big.open("r+b") as f:
        f.truncate(50 * 1024 * 1024)
    with pytest.raises(ImageError, match=f"52,428,800 bytes, over the {MAX_IMAGE_BYTES:,}-byte limit"):
        load(big)
    wide = tmp_path / "wide.gif"
    wide.write_bytes(images.gif(9000, 10))
    with pytest.raises(ImageError, match="9000×10 pixels, over the 8000-pixel limit"):
        load(wide)
    empty = tmp_path / "empty.png"
    empty.write_bytes(images.png(0, 0))
    with pytest.raises(ImageError, match="no pixels"):
        load(empty)
    text = tmp_path / "notes.png"
    text.write_text("not an image\n")
    with pytest.raises(ImageError, match="not a PNG, JPEG, GIF or WebP image"):
        load(text)


def test_a_person_reads_what_was_attached() -> None:
    _, info = from_bytes(images.png(640, 480))
    assert describe(info) == f"PNG image, {len(images.png(640, 480)):,} bytes, 640×480"
