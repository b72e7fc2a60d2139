"""The pages' modules: "forms" means the form-task area only, so no module under ``annotation/views`` is named
``forms.py`` or ``*_forms.py`` (a page's Django form classes live in the view module that uses them, or one named for
what it edits); and every module stays within 500 lines."""

from pathlib import Path

VIEWS = Path(__file__).resolve().parents[2] / "annotation" / "views"
MAX_LINES = 500


def test_no_module_named_forms_under_views():
    named = [str(path.relative_to(VIEWS)) for path in VIEWS.rglob("*.py") if path.stem.endswith("forms")]
    assert named == [], "put the form classes in the view module that uses them"


def test_view_modules_stay_within_500_lines():
    long = {
        str(path.relative_to(VIEWS)): n
        for path in VIEWS.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
