"""What a test needs, as markers (registered in pyproject.toml): ``browser`` (a real headless Chromium), ``processes``
(real server, worker, beat or other child processes), ``s3`` (the SeaweedFS S3 server), ``slow`` (a minute or more
on an idle machine: long work in the test process or a long child run). A fixture that brings one of these is
tagged with ``needs(...)``; the root conftest then marks every test that uses it, directly or through another
fixture, so the markers cannot drift from the fixtures."""

NEEDS = ("browser", "processes", "s3", "slow")


def needs(*marks: str):
    """Tag a fixture function: every test using it gets ``marks``. Put it under ``@pytest.fixture``."""
    unknown = set(marks) - set(NEEDS)
    if unknown:
        raise ValueError(f"unknown markers {sorted(unknown)}; known: {NEEDS}")

    def tag(function):
        function.needs = marks
        return function

    return tag


def marks_from_fixtures(item) -> set[str]:
    """The markers the fixtures ``item`` uses bring (the fixture in effect for each name, as pytest resolves it)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    found = set()
    for name in info.names_closure:
        definitions = info.name2fixturedefs.get(name) or ()
        if definitions:
            found.update(getattr(definitions[-1].func, "needs", ()))
    return found
