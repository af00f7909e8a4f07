"""What ``--since`` accepts, and what it refuses with a message that says what it takes."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monkey.metrics.figures import percentile, weighted_percentile
from monkey.metrics.since import SinceError, parse_since

NOW = 1_795_000_000.0


@given(
    st.integers(min_value=0, max_value=999_999), st.sampled_from([("m", 60), ("h", 3600), ("d", 86400), ("w", 604800)])
)
def test_a_span_goes_back_from_now(n: int, unit: tuple[str, int]) -> None:
    assert parse_since(f"{n}{unit[0]}", now=NOW) == NOW - n * unit[1]
    assert parse_since(f" {n}{unit[0].upper()} ", now=NOW) == NOW - n * unit[1]


@given(st.dates(min_value=dt.date(1971, 1, 2), max_value=dt.date(9999, 12, 30)))
def test_a_date_starts_at_its_local_midnight(day: dt.date) -> None:
    assert parse_since(day.isoformat(), now=NOW) == dt.datetime.combine(day, dt.time()).timestamp()


def test_today_is_local_midnight() -> None:
    midnight = parse_since("today", now=NOW)
    assert dt.datetime.fromtimestamp(midnight).time() == dt.time() and 0 <= NOW - midnight < 86400


@given(st.text(max_size=20).filter(lambda t: t.strip().lower() != "today"))
def test_anything_else_is_refused_or_is_a_span_or_a_date(text: str) -> None:
    try:
        parse_since(text, now=NOW)
    except SinceError as exc:
        assert str(exc).startswith(f"--since {text!r}:")
    else:
        value = text.strip().lower()
        assert value[:-1].isdigit() or len(value) == 10


@pytest.mark.parametrize(
    "text",
    [
        "",
        "7",
        "d",
        "7 d",
        "7days",
        "1y",
        "2026-13-01",
        "2026-02-30",
        "26-11-01",
        "2026/11/01",
        "1234567d",
        "-1d",
        "+1d",
        "٣d",
    ],
)
def test_bad_values(text: str) -> None:
    with pytest.raises(SinceError):
        parse_since(text, now=NOW)


@pytest.mark.parametrize(
    "values, p50, p95",
    [
        ([], None, None),
        ([5.0], 5.0, 5.0),
        ([1.0, 2.0], 1.0, 2.0),
        ([3.0, 1.0, 2.0], 2.0, 3.0),
        ([float(i) for i in range(1, 101)], 50.0, 95.0),
        ([float(i) for i in range(1, 21)], 10.0, 19.0),
    ],
)
def test_percentiles_are_nearest_rank(values: list[float], p50: float | None, p95: float | None) -> None:
    assert (percentile(values, 50), percentile(values, 95)) == (p50, p95)


@given(st.lists(st.floats(min_value=0, max_value=1e7), max_size=60), st.sampled_from([50, 95]))
def test_counted_values_give_the_same_percentile(values: list[float], p: int) -> None:
    counted: dict[float, int] = {}
    for v in values:
        counted[v] = counted.get(v, 0) + 1
    assert weighted_percentile(list(counted.items()), p) == percentile(values, p)
