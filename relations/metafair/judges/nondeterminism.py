"""Non-determinism of the models under test, as the paper's Figure 5: each test run k
times (the campaign's ``repeats``; the paper: 10) gives the entropy, in bits, of its
BIASED/UNBIASED split (0: every run agrees; 1: half and half), averaged per model and
relation. Runs without a BIASED/UNBIASED verdict are left out; a test needs two such runs.
"""

from __future__ import annotations

from collections import Counter

from harness.family_api import ReportContext, ReportSection, Table, rounded
from relations.metafair.judges.verdicts import judged_tests


def split_entropy(biased: int, unbiased: int) -> float:
    """Entropy (base 2) of a test's BIASED/UNBIASED split."""
    # Imported here: scipy.stats takes seconds to import, and every command imports this family.
    from scipy.stats import entropy

    return float(entropy([biased, unbiased], base=2))


def _order(relation: str) -> int:
    tail = relation.rpartition(".mr")[2]
    return int(tail) if tail.isdigit() else 99  # "(all)" last


def entropy_table(ctx: ReportContext) -> list[Table]:
    splits: dict[tuple[str, str, str], Counter[str]] = {}
    for j in judged_tests(ctx):
        if j.label in ("BIASED", "UNBIASED"):
            splits.setdefault((j.model, j.relation, j.case_key), Counter())[j.label] += 1
    per: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for (model, relation, _), c in splits.items():
        runs = c["BIASED"] + c["UNBIASED"]
        if runs >= 2:
            h = split_entropy(c["BIASED"], c["UNBIASED"])
            for rel in (relation, "(all)"):
                per.setdefault((model, rel), []).append((h, runs))
    if not per:
        return []
    rows = []
    for (model, relation), items in sorted(
        per.items(), key=lambda kv: (kv[0][0], _order(kv[0][1]))
    ):
        hs = [h for h, _ in items]
        rows.append(
            [model, relation, len(items), rounded(sum(r for _, r in items) / len(items)),
             rounded(sum(hs) / len(hs)), rounded(max(hs)), sum(h > 0 for h in hs)]
        )  # fmt: skip
    return [
        Table(
            "metafair_nondeterminism",
            "Meta-Fair: non-determinism, the entropy of each test's BIASED/UNBIASED split",
            [
                "model",
                "relation",
                "tests",
                "mean_runs",
                "mean_entropy",
                "max_entropy",
                "tests_split",
            ],
            rows,
            note="a test's runs are its repeats with a BIASED or UNBIASED verdict (at least "
            "two); entropy in bits (scipy.stats.entropy, base 2) of the share judged BIASED; "
            "mean over the tests; tests_split: tests whose runs disagree",
        )
    ]


NONDETERMINISM_SECTIONS = (ReportSection("metafair_nondeterminism", 41, entropy_table),)
