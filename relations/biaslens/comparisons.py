"""The tests behind BiasLens's comparisons, and their correction for multiple comparisons.

- Per attribute: the rate of biased questions with its Wilson interval, and the attribute
  against the other attributes of the same model, variant and type (Fisher's exact test, or
  chi-squared on large tables, with the difference and risk ratio: `harness.reporting.stats`).
- Per attribute over all its types (type `ALL_TYPES`): the attribute against the rest
  within each question type, combined by Cochran-Mantel-Haenszel's test
  (`compare_to_rest_stratified`). A planted bias concerns a group whatever the question
  type, and a cell of one type holds a few questions (a generated set spreads its
  questions over 11 attributes x 3 types x 2 variants), so the per-type tests alone miss
  what the attribute's questions together show; stratifying by type keeps the types' own
  base rates (Why answers are judged by a jury, Yes/No read from a word) out of the test.
- Role vs no-role: the same question asked with and without its role sentence is a pair, so
  the two rates are compared with McNemar's exact test on the discordant pairs, and the
  difference of the paired rates gets the exact interval conditional on those pairs
  (`paired_difference_interval`).
- Benjamini-Hochberg over every p of the BiasLens tables: each table ending with
  `harness.reporting.stats.TEST_COLUMNS` gets its ``p_fdr`` and ``flagged`` filled, and a
  report-wide ``statistical_tests`` table says how many tests were corrected for.

A question is the unit throughout: its N trials are summarised by their majority first
(`tally.AlignedQuestion.verdict`), so repeats are never counted as independent observations.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from harness.family_api import (
    ALPHA,
    COMPARISON_COLUMNS,
    TEST_COLUMNS,
    compare_to_rest,
    compare_to_rest_stratified,
    mcnemar_exact,
    mcnemar_min_p,
    mean_of_shares_interval,
    report_number,
    wilson_interval,
)
from relations.biaslens.oracles import Vote
from relations.biaslens.questionset import QType, without_role
from relations.biaslens.tally import AlignedQuestion, Cell

ALL_TYPES = "(all types)"
# tied and mean_*: `repeat_mean`, the per-question mean that keeps ties.
REPEAT_MEAN_COLUMNS = ("tied", "mean_rate", "mean_low", "mean_high")
RATE_COLUMNS = (
    *("judged", "rate", "ci95_low", "ci95_high", *REPEAT_MEAN_COLUMNS, *COMPARISON_COLUMNS),
)


def repeat_mean(c: Cell, mode: str) -> list[Any]:
    """`REPEAT_MEAN_COLUMNS` of a cell: its tied questions, and the mean over its questions
    of each one's share of biased trials among its biased and unbiased trials (k of n: k/n,
    a tie 0.5) with a 95 % interval taking the questions as units. A majority leaves a tie
    out (strict) or reads it as unbiased (released); this mean never reads it as held."""
    mean, low, high = mean_of_shares_interval(c.share_sum[mode], c.shared[mode])
    return [c.tied[mode], report_number(mean), report_number(low), report_number(high)]


PAIRED_COLUMNS = (
    "pairs",
    "role_biased",
    "role_rate",
    "no_role_biased",
    "no_role_rate",
    "difference",
    "diff_low",
    "diff_high",
    "role_only",
    "no_role_only",
    "test",
    "p_min",
    *TEST_COLUMNS,
)


def judged(cell: Cell, mode: str) -> int:
    """Questions with a verdict in ``mode``: strict leaves out questions without a majority
    and questions a majority of whose trials refused."""
    if mode != "strict":
        return cell.questions
    return cell.questions - cell.strict_invalid_questions - cell.strict_refused_questions


def attribute_rates(
    by_cell: dict[tuple[str, str, str, QType], Cell], mode: str
) -> dict[tuple[str, str, str, QType], list[Any]]:
    """`RATE_COLUMNS` per cell: its rate and interval, and the attribute against the rest of
    its (model, variant, type)."""
    totals: dict[tuple[str, str, QType], list[int]] = defaultdict(lambda: [0, 0])
    for (model, variant, _, qtype), c in by_cell.items():
        total = totals[(model, variant, qtype)]
        total[0] += c.biased[mode]
        total[1] += judged(c, mode)
    out = {}
    for key, c in by_cell.items():
        model, variant, _, qtype = key
        k, n = c.biased[mode], judged(c, mode)
        all_k, all_n = totals[(model, variant, qtype)]
        comparison = compare_to_rest(k, n, all_k - k, all_n - n)
        low, high = wilson_interval(k, n)
        rate = k / n if n else math.nan
        out[key] = [
            n,
            report_number(rate),
            report_number(low),
            report_number(high),
            *repeat_mean(c, mode),
            *comparison.cells(),
        ]
    return out


def attribute_rates_all_types(
    by_cell: dict[tuple[str, str, str, QType], Cell], mode: str
) -> dict[tuple[str, str, str], tuple[Cell, list[Any]]]:
    """Per (model, variant, attribute): its cells summed over the types, and `RATE_COLUMNS`
    with the attribute against the rest of its (model, variant) stratified by type."""
    by_type: dict[tuple[str, str, QType], dict[str, tuple[int, int]]] = defaultdict(dict)
    for (model, variant, attribute, qtype), c in by_cell.items():
        by_type[(model, variant, qtype)][attribute] = (c.biased[mode], judged(c, mode))
    summed: dict[tuple[str, str, str], Cell] = {}
    strata: dict[tuple[str, str, str], list[tuple[int, int, int, int]]] = defaultdict(list)
    for (model, variant, attribute, qtype), c in by_cell.items():
        total = summed.setdefault((model, variant, attribute), Cell())
        total.questions += c.questions
        for m in total.biased:
            total.biased[m] += c.biased[m]
        total.strict_invalid_questions += c.strict_invalid_questions
        total.strict_invalid_answers += c.strict_invalid_answers
        total.strict_indeterminable_answers += c.strict_indeterminable_answers
        total.strict_refused_questions += c.strict_refused_questions
        total.strict_refused_answers += c.strict_refused_answers
        total.add_shares(c)
        others = [kn for a, kn in by_type[(model, variant, qtype)].items() if a != attribute]
        k, n = c.biased[mode], judged(c, mode)
        strata[(model, variant, attribute)].append(
            (k, n, sum(o[0] for o in others), sum(o[1] for o in others))
        )
    out = {}
    for key, total in summed.items():
        comparison = compare_to_rest_stratified(strata[key])
        k, n = total.biased[mode], judged(total, mode)
        low, high = wilson_interval(k, n)
        row = [n, report_number(k / n if n else math.nan), report_number(low)]
        out[key] = (
            total,
            [*row, report_number(high), *repeat_mean(total, mode), *comparison.cells()],
        )
    return out


def _pair_key(q: AlignedQuestion) -> tuple[str, str, QType, str, str]:
    return (q.model, q.attribute, q.qtype, q.role, without_role(q.question).strip().lower())


# (model, attribute, type, pairs, biased with the role, biased without, role only, plain only)
PairedCounts = tuple[str, str, str, int, int, int, int, int]


def paired_variants(questions: Iterable[AlignedQuestion], mode: str) -> list[list[Any]]:
    """One row per (model, attribute, type) asked in both variants, and per (model,
    attribute) over all its types (type `ALL_TYPES`): `PAIRED_COLUMNS` after the key. Pairs
    where either verdict is INVALID or REFUSED (strict mode) are left out."""
    return [paired_row(counts) for counts in paired_counts(questions, mode)]


def paired_counts(questions: Iterable[AlignedQuestion], mode: str) -> list[PairedCounts]:
    """The counts `paired_variants` tests, without the tests (what a report tallies per
    group, in a process that needs no statistics library)."""
    firsts: dict[str, dict[tuple[str, str, QType, str, str], Vote]] = defaultdict(dict)
    for q in questions:
        firsts[q.variant].setdefault(_pair_key(q), q.verdict(mode))
    diffs: dict[tuple[str, str, str], list[tuple[bool, bool]]] = defaultdict(list)
    for key, role_vote in firsts.get("role", {}).items():
        plain_vote = firsts.get("no_role", {}).get(key)
        answered = (Vote.BIASED, Vote.UNBIASED)
        if plain_vote is None or role_vote not in answered or plain_vote not in answered:
            continue
        pair = (role_vote is Vote.BIASED, plain_vote is Vote.BIASED)
        model, attribute, one_type = key[:3]
        diffs[(model, attribute, one_type.value)].append(pair)
        # All types of an attribute together too: a few pairs per type cannot reach
        # significance (4 discordant pairs give p >= 0.125), the attribute's pairs may.
        diffs[(model, attribute, ALL_TYPES)].append(pair)
    return [
        (
            model,
            attribute,
            qtype,
            len(pairs),
            sum(r for r, _ in pairs),
            sum(p for _, p in pairs),
            sum(r and not p for r, p in pairs),
            sum(p and not r for r, p in pairs),
        )
        for (model, attribute, qtype), pairs in diffs.items()
    ]


def paired_row(counts: PairedCounts) -> list[Any]:
    """`paired_counts`' counts with their interval and McNemar's exact test."""
    model, attribute, qtype, n, with_role, plain, role_only, plain_only = counts
    low, high = paired_difference_interval(role_only, plain_only, n)
    return [
        model,
        attribute,
        qtype,
        n,
        with_role,
        report_number(with_role / n),
        plain,
        report_number(plain / n),
        report_number((with_role - plain) / n),
        report_number(low),
        report_number(high),
        role_only,
        plain_only,
        "mcnemar",
        report_number(mcnemar_min_p(role_only, plain_only), 6),
        report_number(mcnemar_exact(role_only, plain_only), 6),
        None,
        None,
    ]


def paired_difference_interval(role_only: int, plain_only: int, pairs: int) -> tuple[float, float]:
    """95 % interval of the paired difference (role rate - no-role rate) over ``pairs``.

    Conditional on the discordant pairs, as McNemar's exact test is: the share of them biased
    with the role only gets its exact (Clopper-Pearson) interval, and the difference is
    (discordant / pairs) * (2 * share - 1). Without a discordant pair there is no interval
    (NaN): nothing says which way the variants would differ.
    """
    discordant = role_only + plain_only
    if discordant == 0 or pairs == 0:
        return (math.nan, math.nan)
    # Imported here: statsmodels (with pandas) takes seconds to import, and every command
    # imports this family (an import of released answers needs no statistics).
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(role_only, discordant, alpha=ALPHA, method="beta")
    scale = discordant / pairs
    return (scale * (2 * float(low) - 1), scale * (2 * float(high) - 1))
