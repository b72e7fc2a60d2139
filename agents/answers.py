"""What is kept of a model's answer (no Django): the endpoint's key masked, the text cut at ``MAX_ANSWER_CHARS``.

``agents.llm.ChatClient`` applies both to every answer before it is returned or cached, so what the ``llm``
solver and ``predict`` use, and what the platform stores and shows, never holds the key nor more than the cap.
"""

from __future__ import annotations

import functools
import re
import unicodedata

MAX_ANSWER_CHARS = 250_000  # the most of an answer's text kept: used, cached and stored; above AGENT_TEXT_MAX_CHARS
LONG_KEY = 8  # a key this long is masked wherever it occurs in an answer, even inside a word; shorter, nowhere


def redact_token(text: str, key: str) -> str:
    """``text`` with every whole-token occurrence of ``key`` masked (a short key is not masked inside other words:
    the key ``k`` leaves "refused the key" readable, and still masks ``/v1/k/`` or ``?api_key=k``)."""
    if not key:
        return text
    return re.sub(rf"(?<![\w-]){re.escape(key)}(?![\w-])", "[key]", text)


def redact_answer(text: str, key: str) -> str:
    """A model's answer with the endpoint's key masked wherever it stands (``Bearer <key>`` becomes
    ``Bearer [key]``; a model may glue it to other text), also disguised: in another case, with whitespace or
    zero-width/format characters (Unicode ``Cf``) between its characters, or written as literal ``\\uXXXX``
    escapes. A key split over two answers is not found. A key shorter than ``LONG_KEY`` is left alone: such keys
    are placeholders a local server ignores (``x``, ``none``, ``1``), and masking them would change the answer the
    solver applies (``'1'`` in a radio call becoming ``'[key]'``)."""
    if len(key) < LONG_KEY:
        return text
    pattern = _key_pattern(key)
    return pattern.sub("[key]", text) if pattern is not None else text


@functools.lru_cache(maxsize=64)
def _key_pattern(key: str) -> re.Pattern | None:
    """The key's characters (separators in it dropped), each in any case or as a ``\\uXXXX`` escape, with any
    run of separators between them (possessive: the next character is never one, so a long run is scanned once)."""
    chars = [c for c in key if not _is_separator(c)]
    if not chars:
        return None
    between = f"[{_separator_class()}]*+"
    return re.compile(between.join(_char_pattern(c) for c in chars), re.IGNORECASE)


def _char_pattern(c: str) -> str:
    escapes = sorted({rf"\\u{ord(v):04x}" for v in {c, c.lower(), c.upper()} if len(v) == 1 and ord(v) <= 0xFFFF})
    return "(?:" + "|".join([re.escape(c), *escapes]) + ")"


def _is_separator(c: str) -> bool:
    return c.isspace() or unicodedata.category(c) == "Cf"


@functools.cache
def _separator_class() -> str:
    """A regex class body: whitespace and every ``Cf`` (format: zero-width space, joiners, bidi marks, ...)."""
    cf = "".join(re.escape(chr(n)) for n in range(0x110000) if unicodedata.category(chr(n)) == "Cf")
    return r"\s" + cf


def cut_answer(text: str, limit: int = MAX_ANSWER_CHARS) -> str:
    """``text`` when it has at most ``limit`` characters, else its first ``limit`` and a line saying how much was
    cut (a prose line: the llm solver ignores it)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[… {len(text) - limit} more characters cut: an answer is kept up to {limit:,}]"
