"""The activity heatmap's month labels never overlap: whatever day the calendar ends on, labels stay at least three
columns apart (a label is about two wide), each at the column where its month starts (or the first column)."""

import datetime as dt

from annotation.lib import charts


def test_month_labels_stay_apart_for_every_last_day_of_a_year():
    step = charts.CELL + charts.CELL_GAP
    for offset in range(366):
        last_day = dt.date(2026, 1, 1) + dt.timedelta(days=offset)
        heatmap = charts.heatmap({last_day: 2.0}, last_day)
        xs = [x for x, _ in heatmap.months]
        assert all(b - a >= charts.MONTH_LABEL_WEEKS * step for a, b in zip(xs, xs[1:], strict=False)), last_day
        assert len(heatmap.months) >= 12, last_day
        by_x = {}
        for cell in heatmap.cells:
            by_x.setdefault(cell.x, []).append(cell.day)
        for x, label in heatmap.months:
            assert label in {day.strftime("%b") for day in by_x[x]}, (last_day, x, label)


def test_the_first_columns_month_is_labelled_when_it_has_room():
    roomy = charts.heatmap({}, dt.date(2026, 11, 4))  # starts 2025-11-03: December four columns later
    assert roomy.months[:2] == [(30, "Nov"), (30 + 4 * 13, "Dec")]
    crowded = charts.heatmap({}, dt.date(2026, 11, 19))  # starts 2025-11-17: December two columns later
    assert crowded.months[0] == (30 + 2 * 13, "Dec")
