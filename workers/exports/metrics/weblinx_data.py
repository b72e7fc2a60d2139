"""A WebLINX export's splits and replays as the metrics read them: DatasetError naming the file otherwise."""

import json
from pathlib import Path

from annotation.lib.weblinx_turns import DEFAULT_TURN_SET, turn_indices

from . import DatasetError


def split_names(data_dir: Path, split: str) -> list[str]:
    """The demo names of ``split`` in ``data_dir/splits.json``; DatasetError if absent."""
    path = Path(data_dir) / "splits.json"
    splits = read_json(path)
    if not isinstance(splits, dict):
        raise DatasetError(f"{path}: expected an object of split name -> demo names")
    if split not in splits:
        raise DatasetError(f"unknown split {split!r}; {path} has: {', '.join(sorted(splits)) or 'none'}")
    return list(splits[split])


def load_replay(demo_dir: Path) -> dict:
    """A demonstration's ``replay.json`` (an object)."""
    path = Path(demo_dir) / "replay.json"
    replay = read_json(path)
    if not isinstance(replay, dict):
        raise DatasetError(f"{path}: expected an object with a 'data' list of turns")
    return replay


def read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DatasetError(f"{path} does not exist") from exc
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: not readable JSON ({exc})") from exc


def split_turns(data_dir: Path, split: str, turns: str = DEFAULT_TURN_SET) -> list[tuple[str, int]]:
    """``(demo_name, turn_index)`` of every turn of the split in the turn set ``turns``, in order."""
    demos_dir = Path(data_dir) / "demonstrations"
    found = []
    for name in split_names(data_dir, split):
        replay_turns = load_replay(demos_dir / name).get("data")
        if not isinstance(replay_turns, list):
            raise DatasetError(f"replay of {name!r} has no 'data' list of turn objects")
        found += [(name, index) for index in turn_indices(replay_turns, turns)]
    return found
