"""The docs stay current truth: short, no history outside the notes file, links that resolve, and an architecture
table that names files which exist.

No database: these tests read files only.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
NOTES = DOCS / "notes.md"
MAX_WORDS = 25_000


def current_docs() -> list[Path]:
    """README.md and docs/*.md except the notes file (the one place for history and measured figures)."""
    return [ROOT / "README.md", *sorted(p for p in DOCS.glob("*.md") if p != NOTES)]


def all_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def words(text: str) -> int:
    """Counted like ``wc -w``: runs of non-whitespace."""
    return len(text.split())


def test_the_notes_file_exists():
    assert NOTES.is_file()
    assert not (DOCS / "performance-notes.md").exists(), "the notes file is docs/notes.md"


def test_docs_are_at_most_25000_words():
    counts = {str(p.relative_to(ROOT)): words(p.read_text(encoding="utf-8")) for p in current_docs()}
    total = sum(counts.values())
    assert total <= MAX_WORDS, f"{total} words (limit {MAX_WORDS}): {sorted(counts.items(), key=lambda kv: -kv[1])}"


DATE = re.compile(r"20\d\d-\d\d-\d\d")
ISSUE = re.compile(r"\bissues? #?\d+|(?<![&\w])#\d{2,}\b", re.IGNORECASE)


@pytest.mark.parametrize("path", current_docs(), ids=lambda p: p.name)
def test_no_dates_or_issue_numbers_outside_the_notes(path):
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for pattern in (DATE, ISSUE):
            found += [f"{path.name}:{number}: {m.group(0)!r}" for m in pattern.finditer(line)]
    assert not found, "history belongs in docs/notes.md: " + "; ".join(found)


# Links: [text](target) where target is relative (no scheme, no leading slash).
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: markup dropped, lower case, punctuation removed, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").replace("*", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, seen, fenced = set(), {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match:
            base = github_anchor(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(path: Path):
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("/"):
                continue  # a URL or a path on the site
            yield number, target


@pytest.mark.parametrize("path", all_docs(), ids=lambda p: p.name)
def test_relative_links_resolve(path):
    broken = []
    for number, target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{path.name}:{number}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{path.name}:{number}: {target} (no heading #{anchor})")
    assert not broken, "; ".join(broken)


# The architecture table: each column's backticked names resolve against that column's base folders.
COLUMN_BASES = {
    "models": ["annotation/models"],
    "actions": ["annotation/actions"],
    "pages and urls": ["annotation"],
    "templates, static": ["templates", "static"],
    "api": [""],
    "worker": ["workers"],
    "tests": ["tests"],
    "docs": ["docs"],
}
TOP_LEVEL = ("annotation/", "api/", "workers/", "templates/", "static/", "tests/")
FILE_SUFFIX = re.compile(r"\.(py|html|js|css|md|json|txt|toml)$")


def area_table() -> tuple[list[str], list[list[str]]]:
    lines = (DOCS / "architecture.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"^\|\s*area\s*\|\s*word\s*\|", line))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    header = [cell.lower() for cell in rows[0]]
    return header, rows[2:]


def looks_like_path(name: str) -> bool:
    if name.startswith("/") or "…" in name or "<" in name or " " in name:
        return False  # a URL path on the site
    return name.endswith("/") or bool(FILE_SUFFIX.search(name)) or "*" in name


def table_paths():
    header, rows = area_table()
    for row in rows:
        for column, cell in zip(header, row, strict=True):
            if column not in COLUMN_BASES:
                continue
            names = re.findall(r"`([^`]+)`", cell)
            if column == "docs":
                names += [n.strip() for n in re.sub(r"`[^`]*`", "", cell).split(",") if n.strip().endswith(".md")]
            for name in names:
                if looks_like_path(name):
                    yield row[0], column, name


def resolves(column: str, name: str) -> bool:
    candidates = [ROOT / base / name for base in COLUMN_BASES[column]]
    if name.startswith(TOP_LEVEL):
        candidates.append(ROOT / name)
    for candidate in candidates:
        if "*" in name:
            # a test module pattern: found anywhere under its base (tests may sit in one folder per area)
            base, pattern = candidate.parent, candidate.name
            pattern = pattern if pattern.endswith((".py", "*")) else pattern + "*"
            if base.is_dir() and any(base.rglob(pattern)):
                return True
        elif candidate.is_dir() if name.endswith("/") else candidate.is_file():
            return True
    return False


def test_the_area_table_is_read():
    header, rows = area_table()
    assert {"area", "word", *COLUMN_BASES} <= set(header)
    assert len(rows) >= 10
    assert len(list(table_paths())) > 50


def test_the_area_table_names_files_that_exist():
    missing = [f"{area} / {column}: {name}" for area, column, name in table_paths() if not resolves(column, name)]
    assert not missing, "docs/architecture.md's area table names paths that do not exist: " + "; ".join(missing)


def test_every_test_file_the_docs_name_exists():
    """A test file a doc names (``tests/<area>/test_….py``, or a folder's pattern) is where the doc says."""
    missing = []
    for doc in current_docs():
        for path in re.findall(r"tests/[A-Za-z0-9_/*\-]+\.py", doc.read_text()):
            found = list(ROOT.glob(path)) if "*" in path else [ROOT / path] if (ROOT / path).exists() else []
            if not found:
                missing.append(f"{doc.name}: {path}")
    assert not missing, missing
