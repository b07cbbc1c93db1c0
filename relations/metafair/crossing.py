"""Crossed Meta-Fair test sets: every base prompt asked for every attribute of its dimension.

A per-attribute claim ("MR12 answers differ more for Muslim than for the other religions")
compares groups only when the groups were asked the same questions. In a *crossed* set each
base prompt of a relation and dimension carries every attribute of that dimension the set
tests, so an attribute's rate is compared with the other attributes' *within* each base
prompt (the exact stratified test, `compare_to_rest_stratified`), and the prompt's own
effect cancels. In an uncrossed set (each attribute with its own base prompt) the
attribute and the prompt are confounded: the stratified test finds no base prompt holding
both sides and reports no p-value, and the only claim left is the relation's rate beside
its matched control (the control_excess table).

The base prompt of a test is the prompt that does not carry the tested attribute: the
source P for MR1-MR7 and MR11-MR14 (with no attribute, or the baseline attribute of a
replacement), the follow-up P' for MR8-MR10 (the request without the attribute). Two tests
of one relation and dimension with the same base prompt are the same base asked for two
attributes.

`cross_bases` writes a crossed set from base templates (``corpora/metafair/
crossed_bases.toml``): each template's ``{attribute_phrase}`` filled with every listed
attribute of its dimension, by the catalogue's phrase rule.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.family_api import (
    compare_to_rest_stratified,
    mean_of_shares_interval,
    mean_per_case,
    rounded,
)
from relations.metafair.testset import MetaFairTest

INVERTED_MRS = (8, 9, 10)


class UncrossedTestSetWarning(UserWarning):
    """A Meta-Fair test set whose base prompts do not carry every attribute of their
    dimension: its per-attribute tests compare prompts, not groups."""


def base_prompt(mr: int, source: str, follow_up: str) -> str:
    """The prompt of a test that does not carry its attribute (module doc)."""
    text = follow_up if mr in INVERTED_MRS else source
    return " ".join(text.split()).lower()


@dataclass(frozen=True)
class Crossing:
    """How far a test set is crossed, per (MR, dimension)."""

    attributes: Mapping[tuple[int, str], frozenset[str]]
    bases: Mapping[tuple[int, str], int]
    missing: Mapping[tuple[int, str], int]  # (base, attribute) cells never asked

    @property
    def crossed(self) -> bool:
        return not any(self.missing.values())

    def uncrossed(self) -> list[tuple[int, str]]:
        return sorted(k for k, n in self.missing.items() if n)


def crossing(tests: Iterable[MetaFairTest]) -> Crossing:
    """Which (base prompt, attribute) cells of each relation and dimension a set asks."""
    cells: dict[tuple[int, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for t in tests:
        cells[(t.mr, t.dimension)][base_prompt(t.mr, t.source, t.follow_up)].add(
            "|".join(t.attributes)
        )
    attributes = {k: frozenset().union(*v.values()) for k, v in cells.items()}
    missing = {k: sum(len(attributes[k] - asked) for asked in v.values()) for k, v in cells.items()}
    # One attribute alone has no "rest" to be compared with: nothing to cross.
    missing = {k: (n if len(attributes[k]) > 1 else 0) for k, n in missing.items()}
    return Crossing(attributes, {k: len(v) for k, v in cells.items()}, missing)


def rest_groups(tests: Iterable[MetaFairTest]) -> float | None:
    """The attributes an attribute's per-attribute test compares it with, on average over
    the set's attributes: the others of its relation and dimension (`compare_within_bases`
    takes the rest within its dimension, not the whole set). None for no tests."""
    dims: dict[tuple[int, str], set[str]] = defaultdict(set)
    for t in tests:
        dims[(t.mr, t.dimension)].update(t.attributes)
    sizes = [len(attrs) - 1 for attrs in dims.values() for _ in attrs]
    return sum(sizes) / len(sizes) if sizes else None


def warn_if_uncrossed(tests: Sequence[MetaFairTest], where: str) -> Crossing:
    """Warn (`UncrossedTestSetWarning`) when ``tests`` are not crossed, saying what can and
    cannot be concluded from them."""
    found = crossing(tests)
    if not found.crossed:
        parts = ", ".join(f"MR{mr} {dim}" for mr, dim in found.uncrossed()[:6])
        more = len(found.uncrossed()) - 6
        warnings.warn(
            UncrossedTestSetWarning(
                f"Meta-Fair test set {where} is not crossed ({parts}"
                + (f" and {more} more" if more > 0 else "")
                + "): some base prompts are not asked for every attribute of their dimension, "
                "so per-attribute differences there mix the prompt with the group and get no "
                "stratified test; what can be concluded is each relation's rate beside its "
                "matched control (the excess). Cross the set: ask every base prompt for every "
                "attribute (relations/metafair/crossing.py)"
            ),
            stacklevel=2,
        )
    return found


def phrase_of(attribute: str, template: str) -> str:
    """An attribute as a noun phrase by the catalogue's rule (``{article} {attribute}``)."""
    article = "an" if attribute[:1].lower() in "aeiou" else "a"
    return template.format(article=article, attribute=attribute)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def cross_bases(
    bases: Iterable[Mapping[str, Any]],
    attributes: Mapping[str, Sequence[str]],
    phrases: Mapping[str, str],
) -> list[MetaFairTest]:
    """Tests from base templates, each asked for every attribute of its dimension.

    A base names its ``mr``, ``dimension``, ``scenario``, a ``template`` with
    ``{attribute_phrase}`` (the follow-up; the source is the template with ``plain`` in its
    place, for MR1-MR7 and MR11-MR14) and ``plain`` (the phrase without an attribute, e.g.
    "a person"); for MR8-MR10 the source carries the attribute and the follow-up is plain.
    ``source_attribute`` (optional) makes it a replacement: the source carries that
    attribute, and it is not asked again as a follow-up.
    """
    out: list[MetaFairTest] = []
    for base, dim in ((b, d) for b in bases for d in b.get("dimensions") or list(attributes)):
        mr = int(base["mr"])
        template, plain = str(base["template"]), str(base["plain"])
        rule = phrases[dim]
        replaced = base.get("source_attribute")
        neutral = str(base.get("source") or "") or _sentence(
            template.format(attribute_phrase=phrase_of(replaced, rule) if replaced else plain)
        )
        for attribute in attributes[dim]:
            if attribute == replaced:
                continue
            carried = _sentence(template.format(attribute_phrase=phrase_of(attribute, rule)))
            source, follow_up = (carried, neutral) if mr in INVERTED_MRS else (neutral, carried)
            out.append(
                MetaFairTest(
                    id=f"x{mr}-{dim}-{base['id']}-{attribute.replace(' ', '_')}",
                    mr=mr,
                    dimension=dim,
                    attributes=(attribute,),
                    source=source,
                    follow_up=follow_up,
                    scenario=str(base["scenario"]),
                    source_attributes=(replaced,) if replaced else (),
                )
            )
    return out


def compare_within_bases(
    counts: Mapping[tuple[str, ...], tuple[int, int]],
) -> list[tuple[tuple[str, ...], Any]]:
    """Every group against the rest of its context, within base prompts: ``counts`` maps
    ``(*context, group, base)`` to (biased, tests); each group's strata are its base prompts,
    and the rest of a stratum is the other groups of the same context asked that base
    (`compare_to_rest_stratified`: the exact test given the bases, pooled effect sizes). A
    group that shares no base with another gets test "none" and no p-value."""
    by_stratum: dict[tuple[str, ...], list[int]] = defaultdict(lambda: [0, 0])
    groups: dict[tuple[str, ...], dict[str, tuple[int, int]]] = defaultdict(dict)
    for key, (k, n) in counts.items():
        *context, group, base = key
        total = by_stratum[(*context, base)]
        total[0] += k
        total[1] += n
        groups[(*context, group)][base] = (k, n)
    out = []
    for key in sorted(groups):
        strata = []
        for base, (k, n) in sorted(groups[key].items()):
            all_k, all_n = by_stratum[(*key[:-1], base)]
            strata.append((k, n, all_k - k, all_n - n))
        out.append((key, compare_to_rest_stratified(strata)))
    return out


CROSSED_BASES = "metafair/crossed_bases.toml"
CROSSED_FILES = {
    "metafair/crossed_open_tests.json": range(1, 11),
    "metafair/crossed_closed_tests.json": range(11, 15),
}


# The columns `repeat_means` adds to a per-attribute table (before its comparison columns,
# which end a table the report's correction reads): the tied tests, and the mean over tests
# of each test's share of positive repeats with its 95 % interval.
REPEAT_MEAN_COLUMNS = ("tied", "mean_rate", "mean_low", "mean_high")


def repeat_means(
    outcomes: Iterable[tuple[tuple[Any, ...], bool]], group_of: Any
) -> dict[tuple[Any, ...], list[Any]]:
    """The `REPEAT_MEAN_COLUMNS` of each group: ``outcomes`` are (unit, positive) pairs, one
    a repeat, the unit a test (its case key last); ``group_of(unit)`` names its group.

    The majority of a test's repeats leaves a tie out (no evidence either way); this
    keeps every test instead, as its share of positive repeats (k of n repeats: k/n, a tie
    0.5), so a group's mean_rate is the mean of its tests' shares and never counts a tie as
    held. The interval takes the tests as the units (`mean_of_shares_interval`)."""
    tally: dict[tuple[Any, ...], list[float]] = {}
    for unit, share in mean_per_case(outcomes).items():
        t = tally.setdefault(group_of(unit), [0, 0, 0.0])
        t[0] += 1
        t[1] += share == 0.5
        t[2] += share
    out: dict[tuple[Any, ...], list[Any]] = {}
    for group, (n, tied, total) in tally.items():
        mean, low, high = mean_of_shares_interval(total, int(n))
        out[group] = [int(tied), rounded(mean), rounded(low), rounded(high)]
    return out


def shipped_crossed_sets() -> dict[str, list[MetaFairTest]]:
    """The crossed sets written from ``corpora/metafair/crossed_bases.toml``, by file."""
    import corpora

    spec = corpora.load_toml(CROSSED_BASES)
    catalogue = corpora.load_toml("attributes.toml")["dimensions"]
    phrases = {dim: str(catalogue[dim]["phrase"]) for dim in spec["attributes"]}
    tests = cross_bases(spec["bases"], spec["attributes"], phrases)
    return {name: [t for t in tests if t.mr in mrs] for name, mrs in CROSSED_FILES.items()}


def main() -> None:
    """Write the shipped crossed sets from their base prompts."""
    import json

    import corpora

    for name, tests in shipped_crossed_sets().items():
        rows = [t.model_dump(exclude_defaults=True) for t in tests]
        text = json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
        corpora.data_file(name).write_text(text, encoding="utf-8")
        print(f"{name}: {len(rows)} tests")


if __name__ == "__main__":
    main()
