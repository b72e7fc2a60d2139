"""Attack: readable JSON (``workers.exports.jsontext``, quality.json) refuses what ``json.dumps`` refuses: keys that
are not str, int, float, bool or None at any level, NaN in quality.json; hostile text reads back as itself."""

import json
import math

import pytest

from workers.exports.jsontext import indented
from workers.exports.quality import QUALITY_FILE, write_quality_report


@pytest.mark.parametrize("key", [(1, 2), ("train", "valid"), frozenset({1})])
@pytest.mark.parametrize("levels", [1, 2, 99])
def test_a_key_json_refuses_is_refused_at_the_indented_levels_too(key, levels):
    value = {"totals": {key: 1}}
    with pytest.raises(TypeError):
        json.dumps(value)
    with pytest.raises(TypeError):
        indented(value, levels)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("where", ["item", "total", "key"])
def test_quality_json_never_holds_nan_or_infinity(tmp_path, bad, where):
    item = {"id": "d1", "kind": "demo", "status": "validated"}
    extra = {}
    if where == "item":
        item["score"] = bad
    elif where == "total":
        extra["agreement"] = bad
    else:
        extra["per_score"] = {bad: 1}
    with pytest.raises(ValueError, match="JSON compliant|Out of range"):
        write_quality_report(tmp_path, "weblinx", "alpha", [item], extra)


def test_hostile_free_text_reads_back_as_itself(tmp_path):
    text = '=HYPERLINK("http://x")\u2028</script><b>\u2029\x00' + "\ud7ff" * 10 + "x" * 100_000
    item = {"id": text, "kind": "demo", "status": "validated", "note": {text: [text]}}
    write_quality_report(tmp_path, "weblinx", text, [item])
    report = json.loads((tmp_path / QUALITY_FILE).read_text(encoding="utf-8"))
    assert report["project"] == text
    assert report["items"] == [item]
