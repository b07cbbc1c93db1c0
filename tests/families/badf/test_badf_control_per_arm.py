"""The BADF control's per-arm floor: each arm shuffled alone, the other arms as observed, so
an arm's claim is tested against its own null whatever the other arms carry."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from relations.badf.control import ALL_ARMS, NullFloor, control_rows, null_floor
from relations.badf.significance import ConceptList


@dataclass(frozen=True)
class Kept:
    arm: str


def lists(prefix: str, n: int, concept: str) -> list[ConceptList]:
    return [ConceptList(f"{prefix}-{i}", frozenset({concept}), 1) for i in range(n)]


# Two arms, one identity category, one location: in "a" identity X's lists all carry
# "brave" (a real association), in "b" nobody's differ.
GROUPS = {
    ("a", "gender", "home"): {
        "X": lists("a-x", 6, "brave"),
        "Y": lists("a-y", 6, "calm"),
    },
    ("b", "gender", "home"): {
        "X": lists("b-x", 6, "calm"),
        "Y": lists("b-y", 6, "calm"),
    },
}


def observed(groups: Any, arm: str) -> bool:
    """Whether ``arm``'s labelling is the observed one (X holds exactly its own lists)."""
    key = (arm, "gender", "home")
    return sorted(c.case_id for c in groups[key]["X"]) == sorted(
        c.case_id for c in GROUPS[key]["X"]
    )


def test_each_arm_is_shuffled_alone_with_the_others_as_observed() -> None:
    seen: list[tuple[bool, bool]] = []

    def keep(groups: Any) -> Sequence[Kept]:
        seen.append((observed(groups, "a"), observed(groups, "b")))
        # "a" keeps its association when its labels are the observed ones.
        return [Kept("a")] if observed(groups, "a") else []

    floor = null_floor(GROUPS, keep, 19)
    assert floor.arms == ("a", "b")
    assert len(seen) == 19 * 3  # joint shuffles, then each arm alone
    alone_a, alone_b = seen[19:38], seen[38:]
    assert all(b for _, b in alone_a)  # shuffling "a" alone keeps "b" as observed
    assert all(a for a, _ in alone_b)  # and the other way round
    per_arm = dict(floor.per_arm)
    # "b" shuffled alone: "a" still keeps its real association on every shuffle, but it
    # is not "b"'s: b's own floor counts only b's.
    assert per_arm["b"] == (0,) * 19
    assert floor.counts("b") == [0] * 19
    assert floor.counts(ALL_ARMS) == [sum(k.values()) for k in floor.kept]


def test_one_arm_records_no_floor_apart_and_reads_the_joint_shuffles() -> None:
    one = {k: v for k, v in GROUPS.items() if k[0] == "a"}
    calls = []

    def keep(groups: Any) -> Sequence[Kept]:
        calls.append(1)
        return [Kept("a")] if observed(groups, "a") else []

    floor = null_floor(one, keep, 9)
    assert len(calls) == 9 and floor.per_arm == ()
    assert floor.counts("a") == [k.get("a", 0) for k in floor.kept]
    assert "per_arm" not in floor.recorded()


def test_the_per_arm_floor_is_recorded_and_read_back() -> None:
    floor = NullFloor(3, ({"a": 1}, {}, {"b": 2}), ("a", "b"), (("a", (0, 1, 0)), ("b", (2, 0, 0))))
    recorded = floor.recorded()
    assert recorded["per_arm"] == {"a": [0, 1, 0], "b": [2, 0, 0]}
    assert NullFloor.from_recorded(recorded) == floor
    assert floor.counts("a") == [0, 1, 0] and floor.counts("b") == [2, 0, 0]
    # A floor recorded before per-arm shuffles reads its arms from the joint shuffles.
    old = {k: v for k, v in recorded.items() if k != "per_arm"}
    assert NullFloor.from_recorded(old).counts("b") == [0, 0, 2]


def test_the_claims_use_each_arms_own_floor() -> None:
    # Joint shuffles where "b" often keeps 3 (its floor under the global null) against per-arm
    # shuffles where it never keeps any: b's 1 kept is below the first, above the second.
    joint = tuple({"b": 3} for _ in range(79))
    alone = (("a", (0,) * 79), ("b", (0,) * 79))
    with_alone = control_rows({"a": 0, "b": 1}, NullFloor(79, joint, ("a", "b"), alone), 0.05)
    without = control_rows({"a": 0, "b": 1}, NullFloor(79, joint, ("a", "b")), 0.05)
    b_alone = next(r for r in with_alone if r.arm == "b")
    b_joint = next(r for r in without if r.arm == "b")
    assert b_alone.excess.p == 1 / 80 and b_joint.excess.p == 1.0
