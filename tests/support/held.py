"""Stand-ins for the tests of a pack's blobs kept in memory (``PackWriter``'s ``hold``, ``write_archive``'s
``arriving``), and calls made from threads of their own, each given a few seconds (a hang is "still waiting")."""

import os
import threading

PATIENCE = 10  # seconds a waiter is given: every fetch in these tests ends in well under that


class Room:
    """A ``hold`` for ``PackWriter``: ``limit`` bytes; what is reserved now, the lowest it ever was (never below 0
    unless room was given back twice), every call seen."""

    def __init__(self, limit: int = 10**9):
        self.limit, self.used, self.lowest, self.calls = limit, 0, 0, []

    def __call__(self, size: int) -> bool:
        self.calls.append(size)
        if size < 0 or self.used + size <= self.limit:
            self.used += size
            self.lowest = min(self.lowest, self.used)
            return size >= 0
        return False


class Arriving:
    """``write_archive``'s ``arriving`` with some planned files kept in memory (``held``, by basename): every call
    noted; a file taken after it was given back, or given back twice, fails the test."""

    def __init__(self, held: dict):
        self.held, self.calls, self.given_back = held, [], set()

    def wait(self, file: str) -> None:
        self.calls.append(("wait", os.path.basename(file)))

    def taken(self, file: str):
        name = os.path.basename(file)
        assert name not in self.given_back, f"{name} taken after it was given back"
        self.calls.append(("taken", name))
        data = self.held.get(name)
        return None if data is None else (data, name)

    def release(self, file: str) -> None:
        name = os.path.basename(file)
        assert name not in self.given_back, f"{name} given back twice"
        self.calls.append(("release", name))
        self.given_back.add(name)
        self.held.pop(name)

    @property
    def released(self) -> list:
        return [name for call, name in self.calls if call == "release"]


def in_threads(call, items) -> list:
    """``call(item)`` for each from a thread of its own: its result, its error's name, or "still waiting"."""
    outcomes = {}

    def one(item):
        try:
            outcomes[item] = call(item)
        except BaseException as error:  # noqa: BLE001 (what the caller saw)
            outcomes[item] = type(error).__name__

    threads = [threading.Thread(target=one, args=(item,), daemon=True) for item in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(PATIENCE)
    return [outcomes.get(item, "still waiting") for item in items]
