"""The formula escaping of every CSV the platform writes (``agents.cells``, ``annotation.lib.spreadsheet``): which
cells get a leading ``'``, that numbers stay numbers, that reading undoes exactly what writing did (every string of
a small alphabet, apostrophes included), and that a carriage return never splits a row."""

import csv
import io
import itertools

import pytest

from agents.cells import escape_cell, formula_like, may_hold_escaped, unescape_cell
from annotation.lib import spreadsheet


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("=1+1", "'=1+1"),
        ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
        ("+cmd", "'+cmd"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("-", "'-"),
        ("--NO SUBJECT--", "'--NO SUBJECT--"),
        ("'=x", "''=x"),  # an apostrophe already there: one more, so reading gives it back
        ("''@x", "'''@x"),
        # stay as they are: plain numbers, text, an apostrophe before anything harmless
        ("-5", "-5"),
        ("+3.2", "+3.2"),
        ("-.5", "-.5"),
        ("+1e-3", "+1e-3"),
        ("42", "42"),
        ("plain", "plain"),
        ("", ""),
        (" =1", " =1"),
        ("'hello", "'hello"),
        ("'", "'"),
        ("'-5", "'-5"),
        ("a=b", "a=b"),
    ],
)
def test_a_cell_a_spreadsheet_would_run_is_written_with_a_leading_apostrophe(value, written):
    assert escape_cell(value) == written
    assert unescape_cell(written) == value
    assert not formula_like(written)


def test_reading_undoes_exactly_what_writing_did_for_every_short_string():
    alphabet = "'=+-@\t\r5.ea "
    for length in range(5):
        for letters in itertools.product(alphabet, repeat=length):
            value = "".join(letters)
            written = escape_cell(value)
            assert unescape_cell(written) == value, repr(value)
            assert not formula_like(written), repr(value)
            assert written in (value, "'" + value)
            assert may_hold_escaped(written) or written == value, repr(value)


def test_the_writer_escapes_every_kind_of_value_and_keeps_numbers():
    out = io.StringIO(newline="")
    spreadsheet.writer(out, lineterminator="\n").writerows([["=a", -5, 3.25, None, "@b"], ["ok", "+1", "+x", True, 0]])
    assert out.getvalue() == "'=a,-5,3.25,,'@b\nok,+1,'+x,True,0\n"


@pytest.mark.parametrize("options", [{"lineterminator": "\n"}, {}, {"quoting": csv.QUOTE_ALL, "lineterminator": "\n"}])
def test_a_lone_carriage_return_never_splits_a_row(options):
    out = io.StringIO(newline="")
    writer = spreadsheet.writer(out, **options)
    writer.writerow(["a", "b\rc", "-1"])
    writer.writerow(["d", "e", "f"])
    assert list(csv.reader(io.StringIO(out.getvalue(), newline=""))) == [["a", "b\rc", "-1"], ["d", "e", "f"]]


def test_a_file_without_an_escaped_cell_is_read_as_it_is():
    assert not may_hold_escaped("topic,sentence\nweather,It's raining.\n-5,+3\n")
    assert may_hold_escaped("topic\n'=1\n")
    assert spreadsheet.unescape_row(["'=1", "'-5", "''@x", "x"]) == ["=1", "'-5", "'@x", "x"]
