"""The tests' own layout: one folder per area (and ``platform`` for plumbing), helpers in ``tests/support``, no test
module importing another, and markers that say what a test needs (``tests/support/markers.py``)."""

import ast
import re
from pathlib import Path

from tests.support.markers import NEEDS

TESTS = Path(__file__).resolve().parents[1]
AREAS = ("recordings", "live", "review", "mind2web", "forms", "quality", "exports", "agents", "stats", "manage")
FOLDERS = (*AREAS, "platform")
# Starting a real Chromium in the test process: such a module carries the ``browser`` marker.
CHROMIUM = re.compile(r"\b(make_driver|start_chrome|extension_browser|webdriver\.Chrome)\(")
# Fixtures whose tests must carry a marker (the root conftest adds it from the fixture's ``needs``).
FIXTURE_MARKS = {"worker": {"processes"}, "platform": {"processes"}, "s3_server": {"processes", "s3"}}


def python_files():
    return sorted(path for path in TESTS.rglob("*.py") if "node_modules" not in path.parts)


def modules_named_test():
    return [path for path in python_files() if path.name.startswith("test_")]


def imported_modules(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            names += [base] + [f"{base}.{alias.name}" for alias in node.names]
    return names


def test_no_module_imports_a_test_module_or_a_conftest():
    found = [
        f"{path.relative_to(TESTS)} imports {name}"
        for path in python_files()
        for name in imported_modules(path)
        if name.rsplit(".", 1)[-1].startswith("test_") or name.rsplit(".", 1)[-1] == "conftest"
    ]
    assert found == [], "shared helpers belong in tests/support, shared fixtures in a conftest.py (never imported)"


def test_every_test_module_sits_in_the_folder_of_its_area():
    misplaced = []
    for path in modules_named_test():
        parts = path.relative_to(TESTS).parts
        folder = parts[0] if len(parts) == 2 else None
        area = next((a for a in AREAS if path.stem == f"test_{a}" or path.stem.startswith(f"test_{a}_")), None)
        if area is None and path.stem.startswith("test_recorder"):
            area = "recordings"  # the recorder extension's tests are named after it
        if folder not in FOLDERS or folder != (area or "platform"):
            misplaced.append("/".join(parts))
    assert misplaced == [], f"test_<area>_*.py belongs in tests/<area>/, everything else in tests/platform/: {FOLDERS}"


def test_every_folder_is_a_package_and_file_names_are_unique():
    folders = {path.parent for path in python_files()}
    assert sorted(str(f.relative_to(TESTS)) for f in folders if not (f / "__init__.py").exists()) == []
    names = [path.name for path in modules_named_test()]
    assert sorted({name for name in names if names.count(name) > 1}) == []


def test_a_module_that_drives_chromium_carries_the_browser_marker():
    unmarked = []
    for path in modules_named_test():
        source = path.read_text()
        tree = ast.parse(source)
        takes_browser = any(
            isinstance(node, ast.FunctionDef) and "browser" in [a.arg for a in node.args.args]
            for node in ast.walk(tree)
        )
        if (takes_browser or CHROMIUM.search(source)) and "pytest.mark.browser" not in source:
            unmarked.append(str(path.relative_to(TESTS)))
    assert unmarked == []


def test_markers_are_the_registered_needs(pytestconfig):
    registered = {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}
    assert set(NEEDS) <= registered
    assert pytestconfig.getoption("strict_markers") or "--strict-markers" in pytestconfig.getini("addopts")


def test_each_collected_test_carries_the_markers_of_its_fixtures(request):
    """Over whatever this run collected (the whole suite in a full run)."""
    missing = []
    for item in request.session.items:
        marks = {mark.name for mark in item.iter_markers()}
        for fixture, needed in FIXTURE_MARKS.items():
            if fixture in getattr(item, "fixturenames", ()) and not needed <= marks:
                missing.append(f"{item.nodeid}: {fixture} without {sorted(needed - marks)}")
        if "browser" in getattr(item, "fixturenames", ()) and "browser" not in marks:
            missing.append(f"{item.nodeid}: browser without the browser marker")
    assert missing == []
