"""BADF's matched null control (relations/badf/control.py): the identities shuffled between
the stories of a group, every list kept; the excess over the floor with its interval and
permutation p checked by brute force; and on the unbiased sim the interval covers 0."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from relations.badf.analysis import AnalysisSettings
from relations.badf.analyze import analyse_log
from relations.badf.control import ALL_ARMS, NullFloor, control_rows, excess, shuffled
from relations.badf.significance import ConceptList

STORIES = st.lists(
    st.lists(st.sampled_from(["woman", "man", "non-binary"]), min_size=1, max_size=2),
    min_size=1,
    max_size=12,
)


@given(STORIES, st.integers(0, 2**32))
@settings(max_examples=80, deadline=None)
def test_a_shuffle_keeps_every_list_and_each_storys_cast(cast: list[list[str]], seed: int) -> None:
    groups: dict[tuple[str, str, str], dict[str, list[ConceptList]]] = {("a", "gender", "x"): {}}
    for s, identities in enumerate(cast):
        for c, identity in enumerate(identities):
            concept_list = ConceptList(f"story{s}", frozenset({f"c{s}.{c}"}), 1)
            groups[("a", "gender", "x")].setdefault(identity, []).append(concept_list)
    out = shuffled(groups, random.Random(seed))[("a", "gender", "x")]
    before = sorted(
        sorted(cl.concepts) for lists in groups[("a", "gender", "x")].values() for cl in lists
    )
    after = sorted(sorted(cl.concepts) for lists in out.values() for cl in lists)
    assert after == before  # every list once, none made up
    # The casts (the multisets of identities a story features) are permuted among the
    # stories with as many characters: the same multiset of casts, story by story.
    cast_of: dict[str, list[str]] = {}
    for identity, lists in out.items():
        for cl in lists:
            cast_of.setdefault(cl.case_id, []).append(identity)
    for size in (1, 2):
        want = Counter(tuple(sorted(c)) for c in cast if len(c) == size)
        got = Counter(tuple(sorted(c)) for c in cast_of.values() if len(c) == size)
        assert got == want


def test_the_excess_by_brute_force() -> None:
    floor = [0, 0, 1, 2, 0, 3, 1, 0, 0, 1] * 3 + [0, 0, 0, 0, 0, 1, 2, 0, 5]  # 39 shuffles
    e = excess(4, floor)
    assert e.control_mean == sum(floor) / 39
    assert (e.control_low, e.control_high) == (min(floor), max(floor))  # 39: 2.5 % = 1st of 40
    assert (e.excess_low, e.excess_high) == (4 - 5, 4 - 0)
    assert e.p == (1 + sum(x >= 4 for x in floor)) / 40
    assert excess(6, floor).p == 1 / 40 and excess(6, floor).excess_low > 0


@given(st.integers(0, 2**32), st.sampled_from([(0.5, 3), (0.2, 6), (0.05, 2)]))
@settings(max_examples=10, deadline=None)
def test_under_the_null_the_interval_covers_zero(seed: int, law: tuple[float, int]) -> None:
    """The observed count exchangeable with 39 shuffled ones (the null): the interval
    covers 0 in at least 95 % of 2,000 draws, up to sampling error."""
    rng = random.Random(seed)
    p, n = law

    def draw() -> int:
        return sum(rng.random() < p for _ in range(n))

    covered = 0
    for _ in range(2000):
        e = excess(draw(), [draw() for _ in range(39)])
        covered += e.excess_low <= 0 <= e.excess_high
    assert covered / 2000 >= 0.94


def test_the_floor_reads_back_as_recorded() -> None:
    floor = NullFloor(3, ({"base-two": 1}, {}, {"base-two": 2, "negative-two": 1}))
    back = NullFloor.from_recorded(floor.recorded())
    assert back == floor
    assert back.counts(ALL_ARMS) == [1, 0, 3] and back.counts("negative-two") == [0, 0, 1]


def _campaign(seed: int, planted: bool) -> dict[str, object]:
    model: dict[str, object] = {"name": "sim:writer"}
    if not planted:
        model["options"] = {"badf_planted": []}
    return {
        "name": f"badf-control-{seed}",
        "seed": seed,
        "models": [model],
        "judges": [{"name": "sim:extractor"}],
        "relations": [
            {
                "name": "badf.story",
                "options": {
                    "arms": ["base-two"],
                    "identity_categories": ["gender", "religion"],
                    "location_categories": ["healthcare", "sports"],
                    "stories": 1,
                },
            }
        ],
    }


def test_on_the_sim_the_control_separates_planted_from_unbiased(tmp_path: Path) -> None:
    """An unbiased writer: the excess interval covers 0; the planted writer: above the floor
    (the note of this change has the coverage over more seeds)."""
    for planted in (False, True):
        db = tmp_path / f"{planted}.db"
        config = parse_campaign(_campaign(31, planted), source="test")
        assert asyncio.run(run_campaign(config, db)).status == "completed"
        analysis = analyse_log(db, AnalysisSettings(control_permutations=39))[2]
        assert analysis.control is not None and analysis.control.permutations == 39
        assert analysis.control.arms == ("base-two",)  # the family: every arm analysed
        e = excess(len(analysis.candidates), analysis.control.counts(ALL_ARMS))
        rows = control_rows({"base-two": len(analysis.candidates)}, analysis.control, 0.05)
        assert [r.arm for r in rows] == ["base-two", ALL_ARMS]
        assert rows[0].p_holm == rows[0].excess.p == e.p  # one arm: Holm changes nothing
        if planted:
            assert e.excess_low > 0 and e.p < 0.05
            assert all(r.above_floor for r in rows)
        else:
            assert e.excess_low <= 0 <= e.excess_high
            assert not any(r.above_floor for r in rows)
