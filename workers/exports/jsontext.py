"""JSON files for people to read, written fast: indented down to ``levels`` deep, each value below that on one line.

json's own indented output runs in pure Python, about three times as slow as its C encoder, which only writes
compact JSON; an export's manifest has an entry for every file (tens of thousands) and a Mind2Web trace an entry
for every step. Here the C encoder writes each value below the indented levels. Pure, no Django.
"""

import json
from json.encoder import encode_basestring, encode_basestring_ascii


def indented(value, levels: int = 2, *, sort_keys: bool = False, ensure_ascii: bool = True, allow_nan: bool = True):
    """``value`` as JSON text: dicts and lists in the top ``levels`` levels one entry a line, indented one space a
    level (as ``json.dumps(indent=1)``); anything deeper as ``json.dumps`` writes it on one line."""
    encoder = json.JSONEncoder(sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=allow_nan)
    return Writer(encoder).write(value, levels, 0)


class Writer:
    def __init__(self, encoder: json.JSONEncoder):
        self.encoder = encoder
        self.string = encode_basestring_ascii if encoder.ensure_ascii else encode_basestring

    def write(self, value, levels: int, depth: int) -> str:
        if levels <= 0 or not isinstance(value, dict | list) or not value:
            return self.encoder.encode(value)
        if isinstance(value, dict):
            pairs = sorted(value.items()) if self.encoder.sort_keys else value.items()
            parts = [f"{self.key(key)}: {self.write(item, levels - 1, depth + 1)}" for key, item in pairs]
            opening, closing = "{", "}"
        else:
            parts = [self.write(item, levels - 1, depth + 1) for item in value]
            opening, closing = "[", "]"
        inner = "\n" + " " * (depth + 1)
        return opening + ",".join(inner + part for part in parts) + "\n" + " " * depth + closing

    def key(self, key) -> str:
        """A key as json writes it: a string, or a number, true, false or null turned into one; any other key
        refused as json refuses it (a tuple would otherwise be written as the text of a list)."""
        if isinstance(key, str):
            return self.string(key)
        if key is None or isinstance(key, bool | int | float):
            return self.string(self.encoder.encode(key))
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
