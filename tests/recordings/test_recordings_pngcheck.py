"""The PNG check of the ingest hot path (``annotation/lib/pngcheck.py``): it accepts every PNG Pillow decodes, in every
color type and bit depth, and refuses every broken one Pillow refuses (and some Pillow lets through), without
decoding pixels. Broken PNGs are made by hand, with valid CRCs where the point is what lies inside."""

import io
import struct
import zlib

import pytest
from PIL import Image

from annotation.lib.pngcheck import SIGNATURE, BrokenPNG, check_png

MODES = ["1", "L", "LA", "P", "RGB", "RGBA", "I;16"]


def encoded(mode: str, size=(37, 23), **options) -> bytes:
    image = Image.linear_gradient("L").resize(size).convert(mode if mode != "I;16" else "I").convert(mode)
    out = io.BytesIO()
    image.save(out, "PNG", **options)
    return out.getvalue()


def decodes(data: bytes) -> bool:
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    except Exception:
        return False
    return True


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_of(width, height, depth, color, rows: bytes, extra=b"", raw_idat=None, interlace=0) -> bytes:
    """A PNG from raw filtered rows (each starting with its filter type byte), with valid CRCs."""
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, interlace)
    idat = raw_idat if raw_idat is not None else zlib.compress(rows)
    return SIGNATURE + chunk(b"IHDR", ihdr) + extra + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [(1, 1), (37, 23), (300, 7)])
def test_every_png_pillow_decodes_is_accepted_with_its_size(mode, size):
    data = encoded(mode, size)
    assert decodes(data)
    assert check_png(data) == size


def test_interlaced_animated_and_paletteless_pngs_are_left_to_pillow():
    rows = b"".join(b"\x00" + bytes(12) for _ in range(4))
    assert check_png(png_of(4, 4, 8, 2, rows)) == (4, 4)
    assert check_png(png_of(4, 4, 8, 2, rows, interlace=1)) is None  # Adam7: rows of seven passes
    animated = chunk(b"acTL", struct.pack(">II", 1, 0))
    assert check_png(png_of(4, 4, 8, 2, rows, extra=animated)) is None
    assert check_png(png_of(4, 4, 8, 3, b"".join(b"\x00" + bytes(4) for _ in range(4)))) is None  # no PLTE


def test_the_size_check_runs_before_inflating():
    seen = []

    def refuse(width, height):
        seen.append((width, height))
        raise ValueError("too many pixels")

    # A tiny file declaring 100,000 x 100,000 pixels: refused from its header, nothing inflated.
    bomb = png_of(100_000, 100_000, 8, 2, b"", raw_idat=zlib.compress(b"\0" * 1000))
    with pytest.raises(ValueError, match="too many pixels"):
        check_png(bomb, refuse)
    assert seen == [(100_000, 100_000)]


def broken_pngs():
    good = encoded("RGB", (40, 30))
    rows = b"".join(b"\x00" + bytes(range(120)) for _ in range(30))
    yield "truncated in the middle", good[: len(good) // 2]
    yield "truncated before IEND", good[:-12]
    yield "no signature end", good[:5]
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0xFF
    yield "a flipped byte (CRC)", bytes(flipped)
    yield "a bad filter type", png_of(40, 30, 8, 2, rows[:121] + b"\x07" + rows[122:])
    yield "rows missing", png_of(40, 30, 8, 2, rows[:-121])
    yield "rows too many", png_of(40, 30, 8, 2, rows + rows[:121])
    yield "corrupt zlib with valid CRCs", png_of(40, 30, 8, 2, b"", raw_idat=b"\x78\x9c" + b"\xff" * 50)
    yield "zlib stream cut short", png_of(40, 30, 8, 2, b"", raw_idat=zlib.compress(rows)[:-20])
    yield "invalid bit depth", png_of(40, 30, 3, 2, rows)
    yield "zero width", png_of(0, 30, 8, 2, rows)
    yield "no IDAT", SIGNATURE + good[8:33] + chunk(b"IEND", b"")


@pytest.mark.parametrize(("what", "data"), list(broken_pngs()), ids=[what for what, _ in broken_pngs()])
def test_a_broken_png_is_refused_with_a_reason(what, data):
    with pytest.raises(BrokenPNG) as refused:
        check_png(data)
    assert str(refused.value)


def test_the_check_is_stricter_than_decoding_with_pillow():
    """Pillow refuses the other broken PNGs too, but decodes these (missing rows come out black, extra ones are
    dropped, a missing IEND is not noticed); the check refuses them all (test above)."""
    assert [what for what, data in broken_pngs() if decodes(data)] == [
        "truncated before IEND",
        "rows missing",
        "rows too many",
    ]
