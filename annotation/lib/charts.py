"""Server-rendered SVG charts: geometry only; templates draw it (``templates/stats/``), so pages need no script
and no chart library (the CSP forbids inline scripts and nothing is loaded from a CDN)."""

import datetime as dt
from dataclasses import dataclass

BAR_HEIGHT, BAR_GAP = 16, 4
LABEL_WIDTH, BAR_SPACE, VALUE_WIDTH = 180, 380, 70
MAX_BARS = 30
CELL, CELL_GAP = 11, 2
MONTH_LABEL_WEEKS = 3  # a month's label ("Sep") is about two columns wide: labels stay this many columns apart
HEAT_LEVELS = 4
WEEKDAYS = ("Mon", "", "Wed", "", "Fri", "", "")


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    y: int
    width: int
    text_y: int


@dataclass(frozen=True)
class BarChart:
    bars: list
    width: int
    height: int
    label_width: int
    value_x: int
    hidden: int  # rows not drawn (beyond MAX_BARS)


def bar_chart(labels, values) -> BarChart:
    """Horizontal bars, one per row (the first ``MAX_BARS``), scaled to the largest value."""
    pairs = list(zip(labels, values, strict=True))[:MAX_BARS]
    largest = max((value for _, value in pairs), default=0) or 1
    bars = []
    for index, (label, value) in enumerate(pairs):
        y = index * (BAR_HEIGHT + BAR_GAP)
        width = round(BAR_SPACE * value / largest) if value > 0 else 0
        bars.append(Bar(str(label)[:28], value, y, max(width, 1 if value > 0 else 0), y + BAR_HEIGHT - 4))
    height = max(len(bars) * (BAR_HEIGHT + BAR_GAP), BAR_HEIGHT)
    return BarChart(
        bars,
        LABEL_WIDTH + BAR_SPACE + VALUE_WIDTH,
        height,
        LABEL_WIDTH,
        LABEL_WIDTH + BAR_SPACE + 6,
        max(len(labels) - MAX_BARS, 0),
    )


@dataclass(frozen=True)
class Cell:
    day: dt.date
    x: int
    y: int
    level: int
    hours: float


@dataclass(frozen=True)
class Heatmap:
    cells: list
    width: int
    height: int
    months: list  # [(x, "Jan"), ...]
    weekdays: list  # [(y, "Mon"), ...]


def heat_level(hours: float, most: float) -> int:
    """0 for no work, else 1..HEAT_LEVELS by the share of the busiest day."""
    if hours <= 0 or most <= 0:
        return 0
    return min(HEAT_LEVELS, 1 + int(HEAT_LEVELS * hours / most * 0.999))


def heatmap(hours_by_day: dict, last_day: dt.date, weeks: int = 53) -> Heatmap:
    """A calendar heatmap (as GitHub's and Turkle's): one column per week ending with ``last_day``'s week, one
    row per weekday (Monday first), each cell shaded by that day's hours."""
    first = last_day - dt.timedelta(days=last_day.weekday()) - dt.timedelta(weeks=weeks - 1)
    most = max(hours_by_day.values(), default=0)
    left, top, step = 30, 14, CELL + CELL_GAP
    cells, months = [], []
    for offset in range((last_day - first).days + 1):
        day = first + dt.timedelta(days=offset)
        week, weekday = divmod(offset, 7)
        hours = hours_by_day.get(day, 0)
        cells.append(Cell(day, left + week * step, top + weekday * step, heat_level(hours, most), round(hours, 2)))
        if day.day == 1 or offset == 0:
            months.append((left + week * step, day.strftime("%b")))
    if len(months) > 1 and months[1][0] - months[0][0] < MONTH_LABEL_WEEKS * step:
        del months[0]  # the first column's month ends within a few weeks: its label would overlap the next one's
    weekdays = [(top + index * step + CELL - 1, name) for index, name in enumerate(WEEKDAYS) if name]
    return Heatmap(cells, left + weeks * step, top + 7 * step, months, weekdays)
