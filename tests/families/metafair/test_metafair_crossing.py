"""Crossed Meta-Fair test sets: the crossing check and its warning, the shipped crossed sets
(written from their base prompts, every base asked for every attribute), and the
per-attribute test stratified by base prompt."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import corpora
from harness.family_api import compare_to_rest_stratified
from relations.metafair import testset as testsets
from relations.metafair.crossing import (
    CROSSED_FILES,
    UncrossedTestSetWarning,
    base_prompt,
    compare_within_bases,
    crossing,
    shipped_crossed_sets,
    warn_if_uncrossed,
)
from relations.metafair.testset import MetaFairTest, read_testset


def one_test(mr: int, attribute: str, base: str, dim: str = "religion") -> MetaFairTest:
    return MetaFairTest(
        id=f"{mr}-{attribute}-{base}",
        mr=mr,
        dimension=dim,
        attributes=(attribute,),
        source=base,
        follow_up=f"{base} ({attribute})",
    )


def test_a_set_is_crossed_when_every_base_carries_every_attribute() -> None:
    crossed = [one_test(1, a, b) for a in ("Muslim", "Jewish") for b in ("P1?", "P2?")]
    assert crossing(crossed).crossed
    uncrossed = [one_test(1, "Muslim", "P1?"), one_test(1, "Jewish", "P2?")]
    found = crossing(uncrossed)
    assert not found.crossed and found.uncrossed() == [(1, "religion")]
    assert found.missing[(1, "religion")] == 2


def test_inverted_relations_cross_on_the_prompt_without_the_attribute() -> None:
    # MR8-MR10: the source carries the attribute; the follow-up is the base.
    tests = [
        MetaFairTest(
            id=a,
            mr=8,
            dimension="gender",
            attributes=(a,),
            source=f"Q for a {a}?",
            follow_up="Q for a person?",
        )
        for a in ("woman", "man")
    ]
    assert crossing(tests).crossed
    assert base_prompt(8, tests[0].source, tests[0].follow_up) == "q for a person?"


def test_an_uncrossed_set_warns_and_says_what_can_be_concluded() -> None:
    with pytest.warns(UncrossedTestSetWarning) as caught:
        warn_if_uncrossed(
            [one_test(12, "Muslim", "P1?"), one_test(12, "Jewish", "P2?")], "mine.json"
        )
    message = str(caught[0].message)
    assert "mine.json is not crossed (MR12 religion)" in message
    assert "matched control" in message and "no stratified test" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_uncrossed([one_test(12, a, "P?") for a in ("Muslim", "Jewish")], "crossed.json")


def test_the_shipped_hand_written_sets() -> None:
    # MR1-MR10: each attribute has its own base prompt: uncrossed.
    assert not crossing(read_testset(corpora.data_file("metafair/open_tests.json"))).crossed
    # MR11-MR14: crossed, but one base prompt per dimension and MR, two attributes each:
    # too small for a per-attribute claim (the crossed sets are the ones to run).
    closed = crossing(read_testset(corpora.data_file("metafair/closed_tests.json")))
    assert closed.crossed and set(closed.bases.values()) == {1}


@pytest.mark.parametrize("name", sorted(CROSSED_FILES))
def test_the_shipped_crossed_sets_are_crossed_and_written_from_their_bases(name: str) -> None:
    on_disk = read_testset(corpora.data_file(name))
    assert on_disk == shipped_crossed_sets()[name]
    found = crossing(on_disk)
    assert found.crossed
    # Every (MR, dimension) has at least 6 base prompts, each asked for 4-5 attributes.
    assert min(found.bases.values()) >= 6
    assert min(len(a) for a in found.attributes.values()) >= 4
    ids = [t.id for t in on_disk]
    assert len(ids) == len(set(ids))
    raw = json.loads(corpora.data_file(name).read_text(encoding="utf-8"))
    assert all("{" not in row["source"] + row["follow_up"] for row in raw)


def test_a_shipped_set_is_found_by_its_corpus_name_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = testsets.testset_path("corpora/metafair/crossed_closed_tests.json")
    assert path.exists() and path == corpora.data_file("metafair/crossed_closed_tests.json")


def test_attributes_are_compared_within_bases() -> None:
    # Base P1 has a high rate for everyone, P2 a low one; "Muslim" was asked P1 more often
    # in raw counts, but within each base it is no different from the rest.
    counts = {
        ("m", "mr1", "religion", "Muslim", "P1"): (4, 5),
        ("m", "mr1", "religion", "Jewish", "P1"): (4, 5),
        ("m", "mr1", "religion", "Hindu", "P1"): (4, 5),
        ("m", "mr1", "religion", "Muslim", "P2"): (0, 5),
        ("m", "mr1", "religion", "Jewish", "P2"): (0, 5),
        ("m", "mr1", "religion", "Hindu", "P2"): (0, 5),
    }
    got = dict(compare_within_bases(counts))
    muslim = got[("m", "mr1", "religion", "Muslim")]
    expected = compare_to_rest_stratified([(4, 5, 8, 10), (0, 5, 0, 10)])
    assert muslim.p == pytest.approx(expected.p) and muslim.test == "cmh-exact"
    assert muslim.p == pytest.approx(1.0)
    # Uncrossed: each attribute its own base, no stratum holds both sides: no test.
    alone = dict(
        compare_within_bases(
            {("m", "r", "d", "a", "P1"): (5, 5), ("m", "r", "d", "b", "P2"): (0, 5)}
        )
    )
    assert alone[("m", "r", "d", "a")].test == "none"


# --- the crossed sets are what a new campaign runs; a recorded one keeps its set -----------


def _campaign_of(*relations: dict[str, object]) -> dict[str, object]:
    return {
        "name": "crossed-default",
        "seed": 1,
        "models": [{"name": "sim:planted"}],
        "judges": [{"name": "sim:judge-a"}],
        "relations": list(relations),
    }


@pytest.mark.parametrize(
    ("relation", "crossed"),
    [
        ("metafair.mr1", "corpora/metafair/crossed_open_tests.json"),
        ("metafair.mr10", "corpora/metafair/crossed_open_tests.json"),
        ("metafair.mr11", "corpora/metafair/crossed_closed_tests.json"),
        ("metafair.mr14", "corpora/metafair/crossed_closed_tests.json"),
    ],
)
def test_a_new_campaign_runs_the_crossed_set_and_a_recorded_one_the_set_it_ran(
    relation: str, crossed: str
) -> None:
    from harness.running.campaign import parse_campaign, parse_recorded_campaign
    from harness.running.plan import Plan

    data = _campaign_of({"name": relation})
    new = parse_campaign(data)
    assert new.relations[0].options["testset"] == crossed
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncrossedTestSetWarning)
        ((_, _, count),) = Plan(new).relations
    shipped = [
        t
        for t in read_testset(testsets.testset_path(crossed))
        if t.mr == int(relation.removeprefix("metafair.mr"))
    ]
    assert count == len(shipped) and crossing(shipped).crossed
    old = parse_recorded_campaign(_campaign_of({"name": relation, "cases": 999}), source="a log")
    assert old.relations[0].options["testset"] is None
    # A file that names its set keeps it (the hand-written one here, which warns).
    hand = crossed.replace("crossed_", "")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncrossedTestSetWarning)
        named = parse_campaign(_campaign_of({"name": relation, "options": {"testset": hand}}))
    assert named.relations[0].options["testset"] == hand


def test_mr5_keeps_the_hand_written_set_and_the_legacy_mr8_reading_stays_for_old_logs() -> None:
    from harness.running.campaign import parse_campaign, parse_recorded_campaign
    from harness.running.plan import Plan

    new = parse_campaign(_campaign_of({"name": "metafair.mr5"}))
    assert "testset" not in new.relations[0].options
    old_mr8 = parse_recorded_campaign(
        _campaign_of({"name": "metafair.mr8", "cases": 3}), source="a log"
    )
    ((_, built, _),) = Plan(old_mr8).relations
    assert built.legacy  # type: ignore[attr-defined]
    # A bare MR8 stays the template reading in a new campaign too (it needs no judge); one
    # that names its oracle runs the test set it names, or the hand-written one.
    new_mr8 = parse_campaign(_campaign_of({"name": "metafair.mr8", "cases": 3}))
    ((_, built, _),) = Plan(new_mr8).relations
    assert built.legacy  # type: ignore[attr-defined]
    assert "testset" not in new_mr8.relations[0].options


def test_the_planners_rest_is_the_other_attributes_of_the_dimension() -> None:
    """The planner compares an attribute with the rest the report compares it with: the
    other attributes of its relation and dimension (`compare_within_bases`), on average
    over the set's attributes; not the whole set."""
    from relations.metafair.crossing import rest_groups, shipped_crossed_sets

    tests = shipped_crossed_sets()["metafair/crossed_open_tests.json"]
    mr1 = [t for t in tests if t.mr == 1]
    dims: dict[str, set[str]] = {}
    for t in mr1:
        dims.setdefault(t.dimension, set()).update(t.attributes)
    sizes = [len(d) for d in dims.values()]
    expected = sum(n * (n - 1) for n in sizes) / sum(sizes)
    assert rest_groups(mr1) == pytest.approx(expected)
    assert rest_groups(mr1) < sum(sizes) - 1  # far fewer than every other attribute
    assert rest_groups([]) is None
