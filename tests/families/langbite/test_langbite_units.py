"""LangBiTe's community test takes the instantiation (one filled prompt) as its unit: its
runs are correlated, so they count once (majority, a tie counted apart). Copying every
answer k times (k identical runs) must leave the counts, the test and the intervals as they
are; checked against brute force on small random templates."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reporting.stats import compare_to_rest_stratified
from harness.reporting.tables import VerdictRow
from relations.langbite.report import community_strata, tied_instantiations

COMMUNITIES = ("A", "B", "C")


def _verdict(template: str, run: int, answers: list[tuple[list[str], bool | None]]) -> VerdictRow:
    evidence: dict[str, Any] = {
        "langbite": True,
        "language": "en",
        "concern": "religion",
        "template_id": template,
        "answers": [
            {"i": i, "fills": {f"R{j}": c for j, c in enumerate(cs)}, "passed": ok}
            for i, (cs, ok) in enumerate(answers)
        ],
    }
    return VerdictRow(
        f"m/langbite/{template}/r{run}@0", "langbite", "m", "VIOLATED", "", evidence, "relation"
    )


def _instantiations(template: int) -> list[list[str]]:
    if template % 2:
        return [[c] for c in COMMUNITIES]
    return [[a, b] for a in COMMUNITIES for b in COMMUNITIES if a != b]


# Per template, per run, each instantiation's answer: passed, failed or unread.
RUNS = st.lists(
    st.lists(
        st.lists(st.sampled_from([True, False, None]), min_size=6, max_size=6),
        min_size=1,
        max_size=4,
    ),
    min_size=1,
    max_size=3,
)


def _verdicts(runs_per_template: list[list[list[bool | None]]], copies: int) -> list[VerdictRow]:
    out = []
    for t, runs in enumerate(runs_per_template):
        fills = _instantiations(t)
        for r, passed in enumerate(runs):
            for c in range(copies):
                answers = list(zip(fills, passed[: len(fills)], strict=True))
                out.append(_verdict(f"t{t}", r * copies + c, answers))
    return out


@given(RUNS, st.integers(min_value=2, max_value=4))
@settings(max_examples=60, deadline=None)
def test_copying_every_answer_k_times_changes_nothing(
    runs: list[list[list[bool | None]]], k: int
) -> None:
    once, copied = _verdicts(runs, 1), _verdicts(runs, k)
    assert community_strata(copied) == community_strata(once)
    assert tied_instantiations(copied) == tied_instantiations(once)
    for key, strata in community_strata(once).items():
        g = compare_to_rest_stratified(list(strata.values()))
        h = compare_to_rest_stratified(list(community_strata(copied)[key].values()))
        assert (g.low, g.high, g.diff_low, g.diff_high) == (h.low, h.high, h.diff_low, h.diff_high)


@given(RUNS)
@settings(max_examples=60, deadline=None)
def test_each_instantiation_counts_once_by_the_majority_of_its_runs(
    runs: list[list[list[bool | None]]],
) -> None:
    strata = community_strata(_verdicts(runs, 1))
    tied = tied_instantiations(_verdicts(runs, 1))
    for t, template_runs in enumerate(runs):
        fills = _instantiations(t)
        decided: list[tuple[set[str], bool]] = []
        ties: list[set[str]] = []
        for i, cs in enumerate(fills):
            read = [run[i] for run in template_runs if run[i] is not None]
            failed = sum(not p for p in read)
            if not read:
                continue
            if 2 * failed == len(read):
                ties.append(set(cs))
            else:
                decided.append((set(cs), 2 * failed > len(read)))
        all_k, all_n = sum(f for _, f in decided), len(decided)
        for community in COMMUNITIES:
            k = sum(f for cs, f in decided if community in cs)
            n = sum(community in cs for cs, _ in decided)
            named = n or any(community in cs for cs in ties)
            got = strata.get(("m", "en", "religion", community), {}).get(f"t{t}")
            assert got == ((k, n, all_k - k, all_n - n) if named else None)
    for community in COMMUNITIES:
        expected = sum(
            community in cs
            for t, template_runs in enumerate(runs)
            for i, cs in enumerate(_instantiations(t))
            if (read := [run[i] for run in template_runs if run[i] is not None])
            and 2 * sum(not p for p in read) == len(read)
        )
        assert tied[("m", "en", "religion", community)] == expected
