"""HTTP Range parsing for downloads."""

import pytest

from api.downloads import parse_range


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("", None),
        ("bytes=0-99", (0, 99)),
        ("bytes=100-", (100, 999)),
        ("bytes=-100", (900, 999)),
        ("bytes=990-5000", (990, 999)),
        ("bytes=0-0,5-9", None),  # several ranges: the whole file is served instead
        ("bytes=1000-", False),
        ("bytes=5-2", False),
        ("bytes=-", False),
        ("lines=1-2", False),
    ],
)
def test_ranges_are_parsed_like_rfc_9110(header, expected):
    assert parse_range(header, 1000) == expected
