"""The control's claims corrected as one family (relations/badf/control.py `control_rows`):
Holm over every arm analysed, gated by the (all) row; checked by brute force, against a
floor recorded before the arms were, in the report's table and JSON, and for the
family-wise error under the null."""

from __future__ import annotations

import itertools
import json
import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.family_api import Table
from harness.reporting.report import to_json
from relations.badf.control import (
    ALL_ARMS,
    CONTROL_METHOD,
    NullFloor,
    control_rows,
    holm_adjusted,
    shuffles_for_arms,
)
from relations.badf.report import _control

ALPHA = 0.05


def brute_holm(pvalues: list[float]) -> list[float]:
    """Holm by its definition: reject H_i at level a when, for every j ranked at or before
    it, p_j <= a / (m - rank_j); the adjusted p is the smallest such a (capped at 1)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


@given(st.lists(st.floats(0, 1), min_size=1, max_size=6))
@settings(max_examples=30, deadline=None)
def test_holm_by_brute_force(pvalues: list[float]) -> None:
    for got, want in zip(holm_adjusted(pvalues), brute_holm(pvalues), strict=True):
        assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-15)


def brute_rows(
    kept: dict[str, int], floor: list[dict[str, int]], arms: list[str]
) -> dict[str, tuple[float, float, bool]]:
    """(p, p_holm, above_floor) per arm and (all), from the definitions."""
    r = len(floor)

    def p_of(k: int, counts: list[int]) -> float:
        return (1 + sum(c >= k for c in counts)) / (r + 1)

    def low_of(k: int, counts: list[int]) -> int:
        ordered = sorted(counts)
        return k - ordered[min(r - 1, math.ceil(0.975 * (r + 1)) - 1)]

    total = sum(kept.values())
    totals = [sum(s.values()) for s in floor]
    gate = p_of(total, totals) < ALPHA and low_of(total, totals) > 0
    ps = [p_of(kept.get(a, 0), [s.get(a, 0) for s in floor]) for a in arms]
    holm = brute_holm(ps)
    out = {
        a: (p, q, gate and q < ALPHA and low_of(kept.get(a, 0), [s.get(a, 0) for s in floor]) > 0)
        for a, p, q in zip(arms, ps, holm, strict=True)
    }
    out[ALL_ARMS] = (p_of(total, totals), p_of(total, totals), gate)
    return out


ARMS = ["base-two", "negative-two", "balanced-two"]


@given(
    st.integers(1, 3),
    st.sampled_from([39, 79, 119]),
    st.integers(0, 2**32),
    st.integers(0, 3),
)
@settings(max_examples=60, deadline=None)
def test_the_rows_by_brute_force(arms: int, shuffles: int, seed: int, lift: int) -> None:
    rng = random.Random(seed)
    names = sorted(ARMS[:arms])
    floor = [{a: rng.choice([0, 0, 0, 1, 2]) for a in names} for _ in range(shuffles)]
    floor = [{a: n for a, n in s.items() if n} for s in floor]  # as recorded: zeros left out
    kept = {a: rng.choice([0, 1, 2]) + lift * rng.randint(0, 2) for a in names}
    kept = {a: n for a, n in kept.items() if n}  # as the report counts them: arms found
    rows = control_rows(kept, NullFloor(shuffles, tuple(floor), tuple(names)), ALPHA)
    want = brute_rows(kept, floor, names)
    assert [r.arm for r in rows] == [*names, ALL_ARMS]  # every arm, those that kept nothing too
    for r in rows:
        p, q, above = want[r.arm]
        assert math.isclose(r.excess.p, p) and math.isclose(r.p_holm, q)
        assert r.above_floor == above


def test_an_arm_that_kept_nothing_still_counts_in_the_family() -> None:
    floor = NullFloor(79, tuple({} for _ in range(79)), ("base-two", "negative-two"))
    rows = {r.arm: r for r in control_rows({"base-two": 3}, floor, ALPHA)}
    assert rows["base-two"].excess.p == 1 / 80
    assert rows["base-two"].p_holm == 2 / 80  # two arms, though one kept nothing
    assert rows["negative-two"].p_holm == 1.0 and not rows["negative-two"].above_floor
    assert rows["base-two"].above_floor and rows[ALL_ARMS].above_floor
    # with 39 shuffles two arms can never be above their floor: 2 / 40 is not below 0.05
    floor39 = NullFloor(39, tuple({} for _ in range(39)), ("base-two", "negative-two"))
    rows39 = {r.arm: r for r in control_rows({"base-two": 3}, floor39, ALPHA)}
    assert rows39["base-two"].p_holm == 2 / 40 and not rows39["base-two"].above_floor
    assert rows39[ALL_ARMS].above_floor  # the gate itself is one test
    assert shuffles_for_arms(1, ALPHA) == 39 and shuffles_for_arms(2, ALPHA) == 79
    assert all(m / (shuffles_for_arms(m, ALPHA) + 1) < ALPHA for m in range(1, 6))


def test_an_arm_is_never_above_its_floor_when_the_gate_is_not() -> None:
    # the arm alone beats its floor; (all) does not, as the other arm's floor is high
    floor = tuple({"negative-two": 6} for _ in range(79))
    rows = {
        r.arm: r
        for r in control_rows(
            {"base-two": 2, "negative-two": 1},
            NullFloor(79, floor, ("base-two", "negative-two")),
            ALPHA,
        )
    }
    assert rows["base-two"].p_holm < ALPHA and rows["base-two"].excess.excess_low > 0
    assert not rows[ALL_ARMS].above_floor and not rows["base-two"].above_floor


def test_a_floor_recorded_without_its_arms_reads_as_before() -> None:
    """Analyses recorded before the family: no "arms" key; the arms are those seen."""
    recorded = {"permutations": 3, "kept": [{"base-two": 1}, {}, {"negative-two": 1}]}
    floor = NullFloor.from_recorded(recorded)
    assert floor == NullFloor(3, ({"base-two": 1}, {}, {"negative-two": 1}))
    assert floor.recorded() == recorded  # written back the same: nothing new in old logs
    rows = control_rows({"base-two": 2}, floor, ALPHA)
    assert [r.arm for r in rows] == ["base-two", "negative-two", ALL_ARMS]
    new = NullFloor(3, floor.kept, ("base-two", "negative-two"))
    assert NullFloor.from_recorded(new.recorded()) == new


def _found(arms: dict[str, int]) -> list[tuple[dict[str, object], str]]:
    return [({"arm": arm, "concept": f"c{i}"}, "HELD") for arm, n in arms.items() for i in range(n)]


def test_the_report_table_names_unit_control_effect_and_family() -> None:
    floor = NullFloor(79, tuple({} for _ in range(79)), ("base-two", "negative-two"))
    table = _control(_found({"base-two": 3}), {"alpha": ALPHA, "control": floor.recorded()})
    assert isinstance(table, Table)
    rows = {row[0]: dict(zip(table.columns, row, strict=True)) for row in table.rows}
    assert list(rows) == ["base-two", "negative-two", ALL_ARMS]
    assert rows["base-two"]["p_holm"] == 2 / 80 and rows["base-two"]["above_floor"] == "yes"
    assert rows["negative-two"]["above_floor"] == "no"
    assert "Holm" in table.note and table.row_meta is not None
    for meta in table.row_meta:
        assert meta is not None
        assert meta["unit"] and meta["control"]
        assert {"excess", "low", "high"} <= set(meta["effect"])
        family = meta["hypothesis_family"]
        assert family["size"] == 2 and family["method"] == CONTROL_METHOD
        assert family["alpha"] == ALPHA
    assert table.row_meta[-1]["hypothesis_family"]["role"] == "gate"
    written = json.loads(to_json([table]))["badf_control"]["rows"]
    assert written[0]["arm"] == "base-two" and written[0]["above_floor"] == "yes"
    assert written[0]["hypothesis_family"]["method"] == CONTROL_METHOD
    assert written[0]["effect"]["low"] == rows["base-two"]["excess_low"]
    assert written[0]["control"] and written[0]["unit"]


def test_an_analysis_without_a_control_is_said_so() -> None:
    table = _control(_found({"base-two": 2}), {"alpha": ALPHA})
    assert [row[-1] for row in table.rows] == ["no control", "no control"]
    assert table.row_meta == [None, None]


def test_the_family_wise_error_under_the_null() -> None:
    """Two arms, each arm's observed count exchangeable with its 79 shuffled ones (the
    global null), dependent through a shared term: some row above its floor in at most
    alpha of 500 analyses, up to sampling error (3 standard errors)."""
    rng = random.Random(7)

    def draw() -> dict[str, int]:
        shared = rng.random() < 0.3
        return {a: sum(rng.random() < 0.2 for _ in range(4)) + shared for a in ARMS[:2]}

    false = 0
    for _ in range(500):
        draws = [draw() for _ in range(80)]
        kept = draws[0]
        rows = control_rows(kept, NullFloor(79, tuple(draws[1:]), tuple(ARMS[:2])), ALPHA)
        false += any(r.above_floor for r in rows)
    assert false / 500 <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / 500)


def test_every_order_of_the_arms_gives_the_same_claims() -> None:
    floor = [{"base-two": 1}, {}, {"negative-two": 2}] * 26 + [{}]
    kept = {"base-two": 3, "negative-two": 1}
    want = None
    for order in itertools.permutations(["base-two", "negative-two"]):
        rows = control_rows(kept, NullFloor(79, tuple(floor), tuple(order)), ALPHA)
        got = sorted((r.arm, r.p_holm, r.above_floor) for r in rows)
        assert want is None or got == want
        want = got
