"""No JavaScript file of ours is over 500 lines (the recorder extension with its tests, the pages' scripts): a longer
one is split by what its parts do, as the Python modules are. Vendored libraries and node_modules are not ours."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 500
NOT_OURS = (ROOT / "static" / "vendor",)


def our_scripts() -> list[Path]:
    found = []
    for folder in (ROOT / "recorder_extension", ROOT / "static"):
        for path in folder.rglob("*.js"):
            if "node_modules" in path.parts or any(path.is_relative_to(vendored) for vendored in NOT_OURS):
                continue
            found.append(path)
    return sorted(found)


def test_every_script_of_ours_is_at_most_500_lines():
    scripts = our_scripts()
    names = {path.relative_to(ROOT).as_posix() for path in scripts}
    assert {"recorder_extension/content/capture.js", "static/review/review.js"} <= names
    assert not any(name.startswith("static/vendor/") for name in names)
    lengths = {path.relative_to(ROOT).as_posix(): len(path.read_text().splitlines()) for path in scripts}
    assert {name: lines for name, lines in lengths.items() if lines > LIMIT} == {}
