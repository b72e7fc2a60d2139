"""What is kept of a model's answer (no Django): the endpoint's key masked, the text cut at ``MAX_ANSWER_CHARS``.

``agents.llm.ChatClient`` applies both to every answer before it is returned or cached, so what the ``llm``
solver and ``predict`` use, and what the platform stores and shows, never holds the key nor more than the cap.
"""

from __future__ import annotations

import re

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
    ``Bearer [key]``; a model may glue it to other text). A key shorter than ``LONG_KEY`` is left alone: such keys are
    placeholders a local server ignores (``x``, ``none``, ``1``), and masking them would change the answer the
    solver applies (``'1'`` in a radio call becoming ``'[key]'``)."""
    if len(key) < LONG_KEY:
        return text
    return text.replace(key, "[key]")


def cut_answer(text: str, limit: int = MAX_ANSWER_CHARS) -> str:
    """``text`` when it has at most ``limit`` characters, else its first ``limit`` and a line saying how much was
    cut (a prose line: the llm solver ignores it)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[… {len(text) - limit} more characters cut: an answer is kept up to {limit:,}]"
