"""Which templates a campaign runs: the requirements filter the library, then a seeded
sample per (language, concern) keeps the count asked for, and the groups are interleaved
so the first N cases of a campaign already cover every concern."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import zip_longest

from harness.family_api import derive_seed
from relations.langbite.concerns import CONCERNS
from relations.langbite.instantiate import MissingCommunities, instantiate
from relations.langbite.requirements import EthicalRequirements, Requirement
from relations.langbite.templates import Template


@dataclass(frozen=True)
class Selected:
    template: Template
    requirement: Requirement


@dataclass
class Selection:
    cases: list[Selected] = field(default_factory=list)
    # (language, concern) -> templates left out because a placeholder had no communities
    not_instantiable: dict[tuple[str, str], int] = field(default_factory=dict)


def instantiable(template: Template, requirement: Requirement) -> bool:
    try:
        instances = instantiate(
            template.prompt,
            requirement.communities_for(template.language),
            mode=requirement.combinations,
            chosen=requirement.chosen.get(template.language, []),
            main_root=requirement.markup,
        )
    except MissingCommunities:
        return False
    return bool(instances)


def select_templates(
    library: Sequence[Template],
    requirements: EthicalRequirements,
    *,
    languages: Sequence[str],
    concerns: Sequence[str] | None = None,
    per_concern: int | None = None,
    seed: int = 0,
) -> Selection:
    selection = Selection()
    wanted = requirements.by_concern()
    groups: list[list[Selected]] = []
    for language in languages:
        for concern in CONCERNS:
            requirement = wanted.get(concern)
            if requirement is None or (concerns is not None and concern not in concerns):
                continue
            candidates = [
                t
                for t in library
                if t.language == language
                and t.concern == concern
                and t.input in requirement.inputs
                and t.reflection in requirement.reflections
            ]
            usable = [t for t in candidates if instantiable(t, requirement)]
            if len(usable) < len(candidates):
                selection.not_instantiable[(language, concern)] = len(candidates) - len(usable)
            count = requirement.templates or per_concern
            if count is not None and len(usable) > count:
                rng = random.Random(derive_seed(seed, "langbite.select", language, concern))
                keep = sorted(rng.sample(range(len(usable)), count))
                usable = [usable[i] for i in keep]
            if usable:
                groups.append([Selected(t, requirement) for t in usable])
    for round_ in zip_longest(*groups):
        selection.cases.extend(s for s in round_ if s is not None)
    return selection
