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
"""

from __future__ import annotations

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

Groups = Mapping[tuple[str, str, str], Mapping[str, Sequence[ConceptList]]]


@dataclass(frozen=True)
class NullFloor:
    """What the analysis kept on each shuffle of the identities, per arm (setting)."""

    permutations: int
    kept: tuple[dict[str, int], ...]  # one per shuffle: arm -> associations kept

    def counts(self, arm: str) -> list[int]:
        """Associations kept in ``arm`` (or every arm: `ALL_ARMS`) on each shuffle."""
        if arm == ALL_ARMS:
            return [sum(k.values()) for k in self.kept]
        return [k.get(arm, 0) for k in self.kept]

    def recorded(self) -> dict[str, Any]:
        """As recorded with the analysis (JSON), read back by `from_recorded`."""
        return {"permutations": self.permutations, "kept": [dict(k) for k in self.kept]}

    @classmethod
    def from_recorded(cls, data: Mapping[str, Any]) -> NullFloor:
        kept = tuple({str(a): int(n) for a, n in k.items()} for k in data.get("kept", []))
        return cls(int(data.get("permutations", len(kept))), kept)


def shuffled(
    groups: Groups, rng: random.Random
) -> dict[tuple[str, str, str], dict[str, list[ConceptList]]]:
    """``groups`` with each story's identity labels drawn by the shuffle (module docstring)."""
    out: dict[tuple[str, str, str], dict[str, list[ConceptList]]] = {}
    for key in sorted(groups):
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
    ``arm``) on ``permutations`` shuffles of ``groups``; seeded, so an analysis repeats."""
    kept = []
    for r in range(permutations):
        rng = random.Random(derive_seed("badf.control", r))
        kept.append(dict(Counter(str(c.arm) for c in keep(shuffled(groups, rng)))))
    return NullFloor(permutations, tuple(kept))


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
