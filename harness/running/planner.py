"""What a campaign will cost and what it can detect, before any call (``harness plan``).

The one home of the planner: ``harness plan`` prints it, ``harness run`` prints its cost
part before the first vendor call. Calls come from each relation's declared
`harness.vocabulary.relation.PlannedCalls` for every planned case (expected: every reply
reads; most: every repair turn taken); the minimum detectable effect comes from
`harness.reporting.power` with the relation's planned groups (``planned_groups``, default
2) as its BH family, each group against the rest it is compared with (``planned_rest_groups``
groups' cases, default all the others; a case gives ``planned_units_per_case`` units,
default 1), and, when the relation runs its matched control,
the control's excess rows in the same family (one per group and one for the relation, as
the report corrects them; `harness.reporting.power.family_powers`). A relation whose
claims are per term (``planned_terms() -> (terms, terms at risk per case)``: MetaQuerier)
is planned per term instead
(`harness.reporting.power.term_plan`): a typical term is at risk in cases x per case /
terms cases, tested by the report's own test against the other terms, BH over the terms
Tarone's rule keeps.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.models.providers import estimate_cost, format_estimate
from harness.reporting.power import (
    DEFAULT_BASELINE,
    DEFAULT_POWER,
    DEFAULT_TARGET,
    TermPlan,
    cases_to_detect,
    cases_to_detect_terms,
    minimum_detectable_effect,
    term_plan,
)
from harness.running.plan import Plan

DEFAULT_GROUPS = 2


@dataclass(frozen=True)
class RelationPower:
    """One relation's line of the plan: its cases per model, groups and MDE."""

    relation: str
    cases: int  # cases per model (the unit; repeats are summarised per case)
    groups: int
    mde: float
    cases_needed: int | None  # cases for an MDE of at most the target; None: out of reach
    terms: TermPlan | None = None  # a relation tested per term: its term-level plan


def runs_control(relation: object) -> bool:
    """Whether a relation runs its matched null control (its ``control`` option)."""
    return bool(getattr(getattr(relation, "options", None), "control", False))


def relation_power(
    plan: Plan,
    *,
    target: float = DEFAULT_TARGET,
    power: float = DEFAULT_POWER,
    baseline: float = DEFAULT_BASELINE,
    gaps: int = 1,
) -> list[RelationPower]:
    """Per relation: the group-vs-rest MDE at the planned cases, and the cases it needs;
    ``gaps``: the groups expected to differ (at most all but one of the relation's), BH's
    level for them (`harness.reporting.power.bh_level`)."""
    out = []
    for name, relation, count in plan.relations:
        planned_terms = getattr(relation, "planned_terms", None)
        if planned_terms is not None:
            vocabulary, per_case = planned_terms()
            terms = term_plan(
                count, vocabulary, per_case, power=power, baseline=baseline, gaps=gaps
            )
            needed_terms = (
                None
                if terms.mde <= target
                else cases_to_detect_terms(
                    target, vocabulary, per_case, power=power, baseline=baseline, gaps=gaps
                )
            )
            out.append(RelationPower(name, count, vocabulary, terms.mde, needed_terms, terms))
            continue
        groups = max(2, int(getattr(relation, "planned_groups", DEFAULT_GROUPS)))
        real = max(1, min(gaps, groups - 1))
        # A relation whose cases each give several units of its test (LangBiTe: a template's
        # instantiations, each counted for every community it names) plans those units.
        per_case = float(getattr(relation, "planned_units_per_case", 1.0))
        units = round(count * per_case)
        n_group = units // groups
        rest_groups = getattr(relation, "planned_rest_groups", None)
        n_rest = units - n_group if rest_groups is None else round(n_group * rest_groups)
        # A relation that runs its matched control puts the control's excess rows (one per
        # group and one for the relation, a pair a case and repeat) in its BH family.
        repeats = plan.config.repeats if runs_control(relation) else 0
        mde = minimum_detectable_effect(
            n_group, n_rest, groups, power=power, baseline=baseline, gaps=real,
            control_pairs=n_group * repeats,
        ).mde  # fmt: skip
        needed = cases_to_detect(
            target, groups, power=power, baseline=baseline, gaps=real, repeats=repeats,
            rest_groups=rest_groups, units_per_case=per_case,
        )  # fmt: skip
        out.append(RelationPower(name, count, groups, mde, needed))
    return out


def format_plan(
    plan: Plan,
    *,
    target: float = DEFAULT_TARGET,
    power: float = DEFAULT_POWER,
    baseline: float = DEFAULT_BASELINE,
    gaps: int = 1,
) -> str:
    """The plan as the CLI prints it: calls per relation, cost per model, MDE per relation."""
    config = plan.config
    lines = [
        f"campaign {config.name!r}: {plan.total_cases} cases "
        f"({len(config.models)} model(s) x {config.repeats} repeat(s))",
        "",
        f"{'relation':<28} {'cases':>7} {'subject calls':>14} {'judge calls':>12} {'at most':>10}",
    ]
    models = len(config.models)
    for row in plan.calls():
        expected = (row.subject, sum(row.judges))
        most = row.subject_most + sum(row.judges_most)
        lines.append(
            f"{row.relation:<28} {row.cases * models:>7} {expected[0] * models:>14} "
            f"{expected[1] * models:>12} {most * models:>10}"
            + ("" if row.declared else "  (not declared: 2 subject calls assumed)")
        )
    subject, per_judge = plan.call_totals()
    subject_most, per_judge_most = plan.call_totals(most=True)
    lines.append(
        f"{'all calls':<28} {plan.total_cases:>7} {subject * models:>14} "
        f"{sum(per_judge):>12} {subject_most * models + sum(per_judge_most):>10}"
    )
    lines += ["", "cost (every reply at its max_tokens; at most: every repair turn taken):"]
    lines.append(format_estimate(estimate_cost(config, plan)))
    most_usd = [e.usd for e in estimate_cost(config, plan, most=True)]
    known = sum(u for u in most_usd if u is not None)
    unknown = " +unknown" if None in most_usd else ""
    lines.append(f"{'total, every repair turn taken':<36} {known:>43.2f}{unknown}")
    lines += [
        "",
        f"minimum detectable effect (group vs rest, per-case rates, BH within the relation, "
        f"alpha 0.05, power {power:.0%}, baseline rate {baseline:.0%}"
        + (f", {gaps} groups differing" if gaps > 1 else "")
        + "):",
    ]
    for p in relation_power(plan, target=target, power=power, baseline=baseline, gaps=gaps):
        mde = "none" if p.mde == float("inf") else f"{p.mde * 100:.1f} points"
        line = f"{p.relation:<28} {p.cases:>7} cases, {p.groups} groups: MDE {mde}"
        if p.terms is not None:
            line = (
                f"{p.relation:<28} {p.cases:>7} cases, {p.groups} terms tested per term "
                f"(a term at risk in {p.terms.at_risk:.1f} cases, {p.terms.testable:.0%} "
                f"testable): MDE {mde} for a typical term"
            )
        if p.mde > target:
            line += (
                f"; raise cases to {p.cases_needed} to detect {target * 100:.0f} points"
                if p.cases_needed is not None
                else f"; {target * 100:.0f} points is out of reach"
            )
        lines.append(line)
    return "\n".join(lines)
