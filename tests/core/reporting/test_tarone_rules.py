"""The stricter Tarone rule (Tarone 1990's iterative family size, as Gilbert 2005 uses it
before Benjamini-Hochberg), checked against brute force and statsmodels; the default rule
is unchanged."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from harness.cli import main
from harness.reporting.stats import fdr_adjust_tarone, tarone_family_size

ALPHA = 0.05
# Smallest attainable p-values as discrete tests give them: 0 (continuous), powers of one
# half (McNemar, sign tests) and arbitrary values above and below alpha.
LOWS = st.one_of(
    st.just(0.0),
    st.integers(1, 12).map(lambda k: min(1.0, 2 * 0.5**k)),
    st.floats(0.0, 1.0, allow_nan=False),
)


def brute_force_k(lows: list[float], alpha: float) -> int:
    """Tarone (1990): the smallest K >= 1 with #{p_min <= alpha / K} <= K, by trying each."""
    for k in range(1, len(lows) + 2):
        if sum(1 for m in lows if m <= alpha / k) <= k:
            return k
    raise AssertionError("unreachable: K = len + 1 always holds")


@settings(max_examples=300, deadline=None)
@given(st.lists(LOWS, max_size=40))
def test_the_family_size_is_tarone_1990s_smallest_k(lows: list[float]) -> None:
    k = tarone_family_size(lows, ALPHA)
    assert k == brute_force_k(lows, ALPHA)
    # Its defining property: at most K tests can reach alpha / K, and K - 1 would not do.
    assert sum(1 for m in lows if m <= ALPHA / k) <= k
    if k > 1:
        assert sum(1 for m in lows if m <= ALPHA / (k - 1)) > k - 1


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(LOWS, st.floats(0.0, 1.0, allow_nan=False), st.booleans()),
        max_size=40,
    )
)
def test_gilbert_is_bh_over_the_tests_that_can_reach_alpha_over_k(
    rows: list[tuple[float, float, bool]],
) -> None:
    # A test's p is at least its smallest attainable p; some tests could not run (NaN).
    lows = [m for m, _, _ in rows]
    ps = [math.nan if missing else max(m, p) for m, p, missing in rows]
    got = fdr_adjust_tarone(ps, lows, ALPHA, rule="gilbert")
    runnable = [m for m, p in zip(lows, ps, strict=True) if not math.isnan(p)]
    k = brute_force_k(runnable, ALPHA)
    keep = [
        i
        for i, (m, p) in enumerate(zip(lows, ps, strict=True))
        if not math.isnan(p) and m <= ALPHA / k
    ]
    assert got.tested == len(keep)
    assert got.dropped == len(runnable) - len(keep)
    expected_flags = [False] * len(ps)
    if keep:
        reject, adjusted, _, _ = multipletests([ps[i] for i in keep], alpha=ALPHA, method="fdr_bh")
        for i, r, q in zip(keep, reject, adjusted, strict=True):
            expected_flags[i] = bool(r)
            assert got.adjusted[i] == pytest.approx(float(q))
    assert got.flagged == expected_flags
    # Stricter than the default: it drops every test the default drops, and maybe more.
    default = fdr_adjust_tarone(ps, lows, ALPHA)
    assert got.dropped >= default.dropped
    assert {i for i in keep} <= {i for i, q in enumerate(default.adjusted) if not math.isnan(q)}


def test_a_worked_family() -> None:
    """Ten discrete tests: 2 can reach 0.001, 3 more 0.01, 5 only 0.04. The default keeps
    all ten (each can reach 0.05) and BH over ten flags two; Tarone 1990 walks K up: 10
    tests can reach 0.05, 5 can reach 0.05 / 2, ..., 5 can reach 0.05 / 5 = 0.01 <= 5, so
    K = 5 and the 5 that can reach 0.01 are kept: BH over five flags three."""
    lows = [0.001] * 2 + [0.01] * 3 + [0.04] * 5
    ps = [0.001, 0.02, 0.01, 0.3, 0.5, 0.04, 0.9, 0.9, 0.9, 0.9]
    assert tarone_family_size(lows, ALPHA) == 5
    got = fdr_adjust_tarone(ps, lows, ALPHA, rule="gilbert")
    assert (got.tested, got.dropped) == (5, 5)
    assert got.flagged == [True, True, True] + [False] * 7
    default = fdr_adjust_tarone(ps, lows, ALPHA)
    assert (default.tested, default.dropped) == (10, 0)
    assert default.flagged == [True, False, True] + [False] * 7


def test_an_unknown_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="gilbert"):
        fdr_adjust_tarone([0.01], [0.0], rule="tarone")


def test_the_report_takes_the_rule_by_name_and_keeps_the_default(tmp_path: Path) -> None:
    db = tmp_path / "sim.db"
    run = CliRunner().invoke(main, ["run", "sim", "--db", str(db)])
    assert run.exit_code == 0, run.output

    def families(*extra: str) -> dict[str, tuple[int, int, str]]:
        out = tmp_path / f"report{'-'.join(extra)}.json"
        result = CliRunner().invoke(
            main, ["report", str(db), "--format", "json", "--out", str(out), *extra]
        )
        assert result.exit_code == 0, result.output
        rows = json.loads(out.read_text())["statistical_tests"]["rows"]
        return {r["family"]: (int(r["tests"]), int(r["dropped"]), str(r["method"])) for r in rows}

    default = families()
    assert families("--tarone", "alpha") == default
    gilbert = families("--tarone", "gilbert")
    assert default.keys() == gilbert.keys()
    for name, (tests, dropped, method) in gilbert.items():
        base_tests, base_dropped, base_method = default[name]
        assert "Gilbert 2005" in method and "Gilbert" not in base_method
        # Margins only: the same tests run; the stricter rule keeps a subset of them.
        assert tests + dropped == base_tests + base_dropped
        assert dropped >= base_dropped
    assert any(gilbert[n][1] > default[n][1] for n in gilbert)
    bad = CliRunner().invoke(main, ["report", str(db), "--tarone", "bonferroni"])
    assert bad.exit_code == 2
