"""The gold schedule and the keyed order of the work queue, for batches that serve gold tasks: which of a worker's
positions in a batch are gold, and in which order the tasks of each kind come to them. Unpredictable to the worker
(keyed by a secret they never see), reproducible for the platform (the same key gives the same answers). Pure: the
caller passes the key (``annotation.actions.forms.gold`` derives one per batch and worker from the site's secret).

**Schedule.** A worker's tasks in a batch are numbered by position from 0. Positions are cut into windows of
``window_size(rate)`` (at least ``MIN_WINDOW``, and at least ⌈1/rate⌉ so a window holds one gold position or more);
in each window exactly ``gold_count(rate)`` positions (round(rate · size), half up) are gold, chosen by ranking the
window's positions by a keyed hash of (window, position). So no position is always gold (not the first, not the
last), the positions differ from worker to worker and from window to window, and every complete window holds the
rate to within half a task.

**Order.** ``KeyedOrder`` is a keyed permutation of task indices 0 … n − 1 (a four-round Feistel network over the
smallest even-bit domain holding n, walked back into range), with its inverse: ``at(place)`` is the index served at
``place``, ``place(index)`` the place of an index. It can be read from the front without computing it whole, so a
million-task batch costs the same as a small one.
"""

import hashlib
import math
from functools import lru_cache

MIN_WINDOW = 20
ROUNDS = 4


def mac(key: bytes, *parts) -> int:
    """A keyed 64-bit hash of ``parts`` (BLAKE2b in its keyed mode, a MAC)."""
    message = ":".join(str(part) for part in parts).encode()
    return int.from_bytes(hashlib.blake2b(message, key=key[:64], digest_size=8).digest(), "big")


def window_size(rate: float) -> int:
    """How many positions one window of the schedule holds at ``rate`` (0 < rate ≤ 1)."""
    return max(MIN_WINDOW, math.ceil(1 / rate - 1e-9))


def gold_count(rate: float) -> int:
    """How many positions of each window are gold: round(rate · size), halves up (never 0 for a rate above 0)."""
    return max(1, math.floor(rate * window_size(rate) + 0.5))


@lru_cache(maxsize=1024)
def gold_positions(key: bytes, window: int, rate: float) -> frozenset:
    """The gold positions (offsets 0 … size − 1) of window number ``window``."""
    size = window_size(rate)
    ranked = sorted(range(size), key=lambda offset: mac(key, "gold", window, offset))
    return frozenset(ranked[: gold_count(rate)])


def is_gold_position(key: bytes, position: int, rate: float) -> bool:
    """Whether the worker's task at ``position`` (0-based) should be a gold one."""
    size = window_size(rate)
    return position % size in gold_positions(key, position // size, rate)


class KeyedOrder:
    """A keyed permutation of 0 … n − 1 and its inverse (see the module)."""

    def __init__(self, key: bytes, n: int):
        self.key, self.n = key, n
        bits = max(2, (max(n, 1) - 1).bit_length())
        self.half = (bits + 1) // 2
        self.mask = (1 << self.half) - 1

    def round_value(self, number: int, value: int) -> int:
        return mac(self.key, "order", number, value) & self.mask

    def encrypt(self, value: int) -> int:
        left, right = value >> self.half, value & self.mask
        for number in range(ROUNDS):
            left, right = right, left ^ self.round_value(number, right)
        return (left << self.half) | right

    def decrypt(self, value: int) -> int:
        left, right = value >> self.half, value & self.mask
        for number in reversed(range(ROUNDS)):
            left, right = right ^ self.round_value(number, left), left
        return (left << self.half) | right

    def at(self, place: int) -> int:
        """The index at ``place`` (0 ≤ place < n; any other place is its own index)."""
        if not 0 <= place < self.n:
            return place
        value = self.encrypt(place)
        while value >= self.n:  # walk the cycle back into 0 … n − 1 (fewer than 4 steps on average)
            value = self.encrypt(value)
        return value

    def place(self, index: int) -> int:
        """The place of ``index`` (0 ≤ index < n): ``at(place(i)) == i``; an index out of range keeps its number."""
        if not 0 <= index < self.n:
            return index
        value = self.decrypt(index)
        while value >= self.n:
            value = self.decrypt(value)
        return value
