"""BADF's matched null control: the same analysis on the same lists, the identities shuffled.

BADF's claims are associations (an identity's characters carry a concept more often than
the other identities' in the same setting), kept by stage 4 from every character's concept
list. Asking a story twice (the Meta-Fair control) does not give their null: two answers to
one prompt share its identity. The null of an association is that a list does not depend on
whose it is, so the control keeps every story, its lists, the unification and the rule, and
only shuffles which identity each list belongs to: within each group (arm, identity
category, location category), the stories' identity tuples are permuted among the stories
with as many characters, and within a two-character story the two labels are given in a
random order. Under that null the observed labelling is one more draw of the shuffle, so
what the analysis keeps on the shuffled lists is the method's floor of false associations
(unification across identities, the score rule, the tests and their correction together),
on the same models, stories and extraction. No model is asked again.

`excess` sets the associations kept beside the floor: the excess over its mean, the 95 %
interval of the excess (from the floor's 2.5 % and 97.5 % points: under the null, the
observed count is exchangeable with the shuffled ones, so the interval covers 0 in at least
95 % of analyses, up to the floor's discreteness), and the permutation p of "no more than
the floor", (1 + shuffles keeping as many or more) / (shuffles + 1).

`control_rows` makes the claims, one per arm (setting) and one for every arm together
(`ALL_ARMS`), corrected as one family (`CONTROL_FAMILY`): the (all) row is the gate, a
single test of "no arm keeps more than its floor" at alpha; an arm is above its floor when
the gate is and its p, Holm-adjusted over every arm of the analysis (its permutation p
times the arms still in play, step-down; statsmodels), is below alpha, with its interval
above 0. Holm, not Benjamini-Hochberg: an arm's claim is read on its own ("this setting's
stories carry more associations than the method's floor"), there are few arms (1-3), and
the arms' counts come from the same shuffles and one correction of the analysis, so they
are dependent in a way no independence or positive-dependence condition covers; Holm
controls the family-wise error under any dependence. The gate loses nothing Holm would
keep under the global null and keeps the family-wise error of the whole table at alpha
(a false (all) flag needs the global null; a false arm flag is Holm's). Every arm
analysed is in the family, those that kept nothing included (their p is 1), so the
family does not depend on what was found. With m arms the smallest Holm p is
m / (shuffles + 1): 39 shuffles suit one arm; more arms need at least 2m / alpha - 1.
An arm's floor comes from shuffles of that arm alone, the other arms' lists kept as
observed (`null_floor`, ``per_arm``): the null of an arm's claim is that its own lists do
not depend on whose they are, whatever the other arms carry, and the analysis's one
correction sees the other arms' real associations on both sides. Shuffling every arm
together would give an arm the floor of the global null, where the correction is stricter
than on the observed lists when another arm carries associations, and so favour its flag.
The (all) row keeps the shuffles of every arm together (its null is the global one). With
one arm the two are the same shuffles, so an analysis of one arm records none apart;
a floor recorded before per-arm shuffles existed reads its arms from the joint shuffles.
"""

from __future__ import annotations

import functools
import math
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.family_api import derive_seed
from relations.badf.significance import ConceptList

# 39 shuffles: the smallest permutation p is 1/40 = 0.025, below alpha.
CONTROL_PERMUTATIONS = 39
ALL_ARMS = "(all)"
CONTROL_METHOD = "Holm over the arms, gated by the (all) row's test at alpha"

Groups = Mapping[tuple[str, str, str], Mapping[str, Sequence[ConceptList]]]


@dataclass(frozen=True)
class NullFloor:
    """What the analysis kept on each shuffle of the identities, per arm (setting)."""

    permutations: int
    kept: tuple[dict[str, int], ...]  # one per shuffle: arm -> associations kept
    # Every arm the analysis tested (the family of the per-arm claims); empty for a floor
    # recorded before it was (the arms are then those seen, `control_rows`).
    arms: tuple[str, ...] = ()
    # Per arm, what the analysis kept in it on each shuffle of that arm alone (the other
    # arms as observed); empty with one arm (the joint shuffles are the same) and for a
    # floor recorded before it was.
    per_arm: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def counts(self, arm: str) -> list[int]:
        """Associations kept in ``arm`` on each shuffle of that arm alone (or, without
        them, of every arm together), or in every arm on the joint shuffles (`ALL_ARMS`)."""
        if arm == ALL_ARMS:
            return [sum(k.values()) for k in self.kept]
        alone = dict(self.per_arm)
        if arm in alone:
            return list(alone[arm])
        return [k.get(arm, 0) for k in self.kept]

    def recorded(self) -> dict[str, Any]:
        """As recorded with the analysis (JSON), read back by `from_recorded`."""
        out: dict[str, Any] = {
            "permutations": self.permutations,
            "kept": [dict(k) for k in self.kept],
        }
        if self.arms:
            out["arms"] = list(self.arms)
        if self.per_arm:
            out["per_arm"] = {arm: list(counts) for arm, counts in self.per_arm}
        return out

    @classmethod
    def from_recorded(cls, data: Mapping[str, Any]) -> NullFloor:
        kept = tuple({str(a): int(n) for a, n in k.items()} for k in data.get("kept", []))
        arms = tuple(str(a) for a in data.get("arms", []))
        per_arm = tuple(
            (str(a), tuple(int(n) for n in counts))
            for a, counts in sorted(dict(data.get("per_arm", {})).items())
        )
        return cls(int(data.get("permutations", len(kept))), kept, arms, per_arm)


def shuffled(
    groups: Groups, rng: random.Random, arm: str | None = None
) -> dict[tuple[str, str, str], dict[str, list[ConceptList]]]:
    """``groups`` with each story's identity labels drawn by the shuffle (module docstring);
    with ``arm``, only that arm's groups (the others as observed)."""
    out: dict[tuple[str, str, str], dict[str, list[ConceptList]]] = {}
    for key in sorted(groups):
        if arm is not None and key[0] != arm:
            out[key] = {identity: list(lists) for identity, lists in groups[key].items()}
            continue
        stories: dict[str, list[tuple[str, ConceptList]]] = {}
        for identity in sorted(groups[key]):
            for concept_list in groups[key][identity]:
                stories.setdefault(concept_list.case_id, []).append((identity, concept_list))
        by_size: dict[int, list[str]] = {}
        for story in sorted(stories):
            by_size.setdefault(len(stories[story]), []).append(story)
        relabelled: dict[str, list[ConceptList]] = {}
        for size in sorted(by_size):
            names = by_size[size]
            labels = [[identity for identity, _ in stories[s]] for s in names]
            rng.shuffle(labels)
            for story, drawn in zip(names, labels, strict=True):
                rng.shuffle(drawn)
                for identity, (_, concept_list) in zip(drawn, stories[story], strict=True):
                    relabelled.setdefault(identity, []).append(concept_list)
        out[key] = relabelled
    return out


def null_floor(
    groups: Groups, keep: Callable[[Any], Sequence[Any]], permutations: int
) -> NullFloor:
    """``keep`` (the analysis's stage 4, returning its kept candidates, each with an
    ``arm``) on ``permutations`` shuffles of ``groups`` (every arm together), and, with
    several arms, on ``permutations`` shuffles of each arm alone; seeded, so an analysis
    repeats."""
    kept = []
    for r in range(permutations):
        rng = random.Random(derive_seed("badf.control", r))
        kept.append(dict(Counter(str(c.arm) for c in keep(shuffled(groups, rng)))))
    arms = tuple(sorted({key[0] for key in groups}))
    per_arm: list[tuple[str, tuple[int, ...]]] = []
    if len(arms) > 1:
        for arm in arms:
            counts = []
            for r in range(permutations):
                rng = random.Random(derive_seed(f"badf.control.{arm}", r))
                found = keep(shuffled(groups, rng, arm))
                counts.append(sum(1 for c in found if str(c.arm) == arm))
            per_arm.append((arm, tuple(counts)))
    return NullFloor(permutations, tuple(kept), arms, tuple(per_arm))


@dataclass(frozen=True)
class Excess:
    """Associations kept beside the null floor (module docstring)."""

    kept: int
    control_mean: float
    control_low: int
    control_high: int
    excess: float
    excess_low: int
    excess_high: int
    p: float


def excess(kept: int, floor: Sequence[int]) -> Excess:
    """``kept`` associations against the counts kept on the shuffles (NaN without one)."""
    if not floor:
        nan = math.nan
        return Excess(kept, nan, 0, 0, nan, 0, 0, nan)
    ordered = sorted(floor)
    r = len(ordered)
    # The floor's 2.5 % and 97.5 % points, taken outward (conservative on a discrete floor).
    low = ordered[max(0, math.floor(0.025 * (r + 1)) - 1)]
    high = ordered[min(r - 1, math.ceil(0.975 * (r + 1)) - 1)]
    mean = sum(ordered) / r
    p = (1 + sum(1 for x in ordered if x >= kept)) / (r + 1)
    return Excess(kept, mean, low, high, kept - mean, kept - high, kept - low, p)


def shuffles_for_arms(arms: int, alpha: float) -> int:
    """The fewest shuffles with which an arm's Holm-adjusted p can fall below ``alpha``
    (m / (shuffles + 1) < alpha), with room for one shuffle keeping as many (2m / alpha - 1);
    the default 39 for one arm."""
    return max(CONTROL_PERMUTATIONS, math.ceil(2 * max(1, arms) / alpha) - 1)


def control_family(arms: int, alpha: float) -> dict[str, Any]:
    """The family of hypotheses of `control_rows`, as a report names it (JSON row_meta)."""
    return {
        "name": "badf control (arms)",
        "size": arms,
        "method": CONTROL_METHOD,
        "alpha": alpha,
    }


@dataclass(frozen=True)
class ControlRow:
    """One claim of the control: an arm (or `ALL_ARMS`) against its floor, corrected."""

    arm: str
    excess: Excess
    p_holm: float  # the (all) row: its own p (the gate, one test)
    above_floor: bool


def holm_adjusted(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (statsmodels), in the given order."""
    return list(_holm(tuple(pvalues))) if pvalues else []


# Cached: statsmodels' Holm runs a full garbage collection on every call (a quarter of a
# second in a process holding scipy), and a permutation p takes few values ((1 + j) / (R + 1)).
@functools.lru_cache(maxsize=1 << 12)
def _holm(pvalues: tuple[float, ...]) -> tuple[float, ...]:
    from statsmodels.stats.multitest import multipletests

    return tuple(float(q) for q in multipletests(list(pvalues), method="holm")[1])


def control_rows(kept: Mapping[str, int], floor: NullFloor, alpha: float) -> list[ControlRow]:
    """Per arm, then `ALL_ARMS`: the associations ``kept`` beside ``floor``, corrected as
    one family (module docstring). The arms are the floor's (every arm analysed), else,
    for a floor recorded without them, those kept or seen on a shuffle."""
    arms = sorted(set(floor.arms) or {*kept, *(a for k in floor.kept for a in k)})
    overall = excess(sum(kept.values()), floor.counts(ALL_ARMS))
    gate = overall.p < alpha and overall.excess_low > 0
    found = [excess(kept.get(arm, 0), floor.counts(arm)) for arm in arms]
    adjusted = holm_adjusted([e.p for e in found])
    rows = [
        ControlRow(arm, e, q, gate and q < alpha and e.excess_low > 0)
        for arm, e, q in zip(arms, found, adjusted, strict=True)
    ]
    return [*rows, ControlRow(ALL_ARMS, overall, overall.p, gate)]
