"""A PNG checked whole without decoding its pixels: every chunk's CRC, the header, and the image data inflated
(with ISA-L, about twice as fast as zlib) to exactly the size the header implies, with a valid filter type on
every row. Pure: no Django.

Inflating is most of what decoding a PNG costs; unfiltering rows into an image is the rest, and does not find
anything this misses (a truncated or corrupt stream, a wrong length and an unknown filter type are what make
Pillow's ``load()`` fail). Screenshots arrive by the thousand (``docs/ingest.md``), so this is the check on the
ingest hot path. Interlaced images and animated PNGs are not handled here (``None``: decode them with Pillow).
"""

import struct
import zlib

from isal import isal_zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# color type → (channels, allowed bit depths)
COLOR_TYPES = {0: (1, (1, 2, 4, 8, 16)), 2: (3, (8, 16)), 3: (1, (1, 2, 4, 8)), 4: (2, (8, 16)), 6: (4, (8, 16))}
MAX_FILTER = 4  # None, Sub, Up, Average, Paeth
OUT_CHUNK = 1 << 20  # inflate in pieces of this size: memory stays bounded whatever the image's size


class BrokenPNG(ValueError):
    """Why the bytes are not a whole, valid PNG."""


def chunks(data):
    """``(type, body)`` of every chunk, each checked against its CRC; the rest after IEND is ignored."""
    view, pos = memoryview(data), len(SIGNATURE)
    while True:
        if pos + 8 > len(data):
            raise BrokenPNG("truncated: no IEND chunk")
        length, kind = struct.unpack_from(">I4s", data, pos)
        end = pos + 8 + length
        if end + 4 > len(data):
            raise BrokenPNG(f"truncated inside the {kind.decode('latin-1')!r} chunk")
        body = view[pos + 8 : end]
        if zlib.crc32(body, zlib.crc32(kind)) != struct.unpack_from(">I", data, end)[0]:
            raise BrokenPNG(f"CRC mismatch in the {kind.decode('latin-1')!r} chunk")
        yield kind, body
        if kind == b"IEND":
            return
        pos = end + 4


def header(body) -> tuple[int, int, int, int, int]:
    """IHDR → (width, height, bit depth, color type, interlace)."""
    if len(body) != 13:
        raise BrokenPNG("IHDR is not 13 bytes")
    width, height, depth, color, compression, filtering, interlace = struct.unpack(">IIBBBBB", body)
    if not (0 < width < 2**31 and 0 < height < 2**31):
        raise BrokenPNG(f"invalid size {width} x {height}")
    if color not in COLOR_TYPES or depth not in COLOR_TYPES[color][1]:
        raise BrokenPNG(f"invalid bit depth {depth} for color type {color}")
    if compression or filtering or interlace not in (0, 1):
        raise BrokenPNG("unknown compression, filter or interlace method")
    return width, height, depth, color, interlace


def check_png(data, check_size=None) -> tuple[int, int] | None:
    """``(width, height)`` of a whole PNG, or None when it must be decoded instead (interlaced, animated, or a
    palette image without a palette); raise ``BrokenPNG``. ``check_size(width, height)`` runs before inflating
    (the pixel limit: a small file may declare a huge canvas)."""
    if bytes(data[:8]) != SIGNATURE:
        raise BrokenPNG("not a PNG signature")
    found = chunks(data)
    kind, body = next(found)
    if kind != b"IHDR":
        raise BrokenPNG("the first chunk is not IHDR")
    width, height, depth, color, interlace = header(body)
    if check_size is not None:
        check_size(width, height)
    idat, kinds = [], set()
    for kind, body in found:
        kinds.add(kind)
        if kind == b"IDAT":
            idat.append(body)
    if interlace or b"acTL" in kinds or (color == 3 and b"PLTE" not in kinds):
        return None
    if not idat:
        raise BrokenPNG("no image data (IDAT)")
    row = 1 + (width * COLOR_TYPES[color][0] * depth + 7) // 8  # the filter type byte, then the row's bytes
    inflate_rows(b"".join(idat), row, row * height)
    return width, height


def inflate_rows(stream: bytes, row: int, expected: int) -> None:
    """Inflate the image data in bounded pieces: exactly ``expected`` bytes, each row starting with a filter type
    of at most 4."""
    inflater, pending, done = isal_zlib.decompressobj(), stream, 0
    try:
        while True:
            out = inflater.decompress(pending, OUT_CHUNK)
            pending = inflater.unconsumed_tail
            filters = out[(-done) % row :: row]
            if filters and max(filters) > MAX_FILTER:
                raise BrokenPNG(f"unknown filter type {max(filters)} in a row")
            done += len(out)
            if done > expected:
                raise BrokenPNG(f"more image data than {expected} bytes")
            if inflater.eof or not (out or pending):
                break
    except isal_zlib.error as error:
        raise BrokenPNG(f"corrupt image data: {error}") from None
    if not inflater.eof or done != expected:
        raise BrokenPNG(f"truncated image data: {done} of {expected} bytes")
