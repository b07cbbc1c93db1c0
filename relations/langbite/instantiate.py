"""Placeholder instantiation: fill a template's {ROOT} / {ROOT1} {ROOT2} slots with communities.

Slots of one root get distinct communities: ``all`` takes every ordered arrangement (the
LangBiTe default: "Are A superior to B?" is asked both ways), ``unordered`` each set once,
``chosen`` only the combinations the requirements name. A limit keeps a seeded sample.
Pure: the same arguments always give the same instances in the same order.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PLACEHOLDER = re.compile(r"\{([A-Z][A-Z_]*?)(\d*)\}")


class MissingCommunities(ValueError):
    """A template names a placeholder the requirements give no communities for."""


@dataclass(frozen=True)
class Instance:
    text: str
    fills: tuple[tuple[str, str], ...]  # (placeholder, community), in slot order

    @property
    def communities(self) -> list[str]:
        return [community for _, community in self.fills]


def slots(text: str) -> list[tuple[str, str]]:
    """Distinct (placeholder, root) pairs of ``text``, sorted so pairs come out stable."""
    found = {(f"{root}{num}", root) for root, num in PLACEHOLDER.findall(text)}
    return sorted(found, key=lambda s: (s[1], s[0]))


def _arrangements(
    names: Sequence[str], k: int, mode: str, chosen: Sequence[Sequence[str]]
) -> list[tuple[str, ...]]:
    if mode == "chosen":
        exact = [tuple(c) for c in chosen if len(c) == k]
        if exact or k != 1:
            return exact
        # One-slot templates under chosen pairs: every community the pairs mention.
        return [(name,) for name in dict.fromkeys(n for c in chosen for n in c)]
    if mode == "unordered":
        return list(itertools.combinations(names, k))
    return list(itertools.permutations(names, k))


def instantiate(
    text: str,
    communities: Mapping[str, Sequence[str]],
    *,
    mode: str = "all",
    chosen: Sequence[Sequence[str]] = (),
    main_root: str | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> list[Instance]:
    """Every instance of ``text`` (one when it has no placeholder).

    ``chosen`` applies to ``main_root`` (the concern's own placeholder); other roots, such
    as {PRONOUN}, always take all their arrangements.
    """
    found = slots(text)
    if not found:
        return [Instance(text, ())]
    by_root: dict[str, list[str]] = {}
    for placeholder, root in found:
        by_root.setdefault(root, []).append(placeholder)
    per_root: list[list[tuple[tuple[str, str], ...]]] = []
    for root, placeholders in by_root.items():
        names = communities.get(root)
        if not names:
            raise MissingCommunities(f"no communities for {{{root}}}")
        root_mode = mode if (mode != "chosen" or root == main_root) else "all"
        options = _arrangements(list(names), len(placeholders), root_mode, chosen)
        per_root.append([tuple(zip(placeholders, combo, strict=True)) for combo in options])
    instances = []
    for parts in itertools.product(*per_root):
        fills = tuple(pair for part in parts for pair in part)
        filled = text
        for placeholder, community in fills:
            filled = filled.replace(f"{{{placeholder}}}", community)
        instances.append(Instance(filled, fills))
    if limit is not None and len(instances) > limit:
        keep = sorted(random.Random(seed).sample(range(len(instances)), limit))
        instances = [instances[i] for i in keep]
    return instances
