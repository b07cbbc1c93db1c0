"""BADF's associations as evidence, over independent simulated campaigns: recall of the
planted associations and the share of kept associations that are false, for the evidence
rule (each identity against the rest, exact test stratified by story, Benjamini-Hochberg
after Tarone's rule) beside the paper's rule (chi-squared, score against the least frequent
identity, raw p < 0.05).

    python bench/badf_evidence.py                 # 20 seeds of examples/badf_sim.toml
    python bench/badf_evidence.py --seeds 5       # quicker
    python bench/badf_evidence.py --null          # nothing planted: every kept one is false

Each seed is a fresh campaign of ``examples/badf_sim.toml`` (its seed replaced), analysed
offline (the example's default embedder) by both rules. The planted associations are those
of `relations.badf.sim.DEFAULT_PLANTED` the campaign covers: (location category, identity,
concept); a kept association is true when its concept's cluster holds the planted concept.
Figures are given twice: before the exclusivity filter, and after it as the simulated judge
answers it (a concept naming its identity, "female" for women, is dropped as exclusive by
definition), which is what the report shows. FDR here is the pooled share of kept
associations that are false over all seeds (and the mean per-seed false share, the
expectation the Benjamini-Hochberg guarantee is about, beside it); recall the pooled share
of planted associations kept, with its 95 % Wilson interval over (seed, association) pairs.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.reporting.stats import wilson_interval  # noqa: E402
from harness.running.campaign import load_campaign  # noqa: E402
from harness.running.runner import run_campaign  # noqa: E402
from relations.badf.analysis import AnalysisSettings  # noqa: E402
from relations.badf.analyze import analyse_log  # noqa: E402
from relations.badf.corpus import identities  # noqa: E402
from relations.badf.relations import Candidate  # noqa: E402
from relations.badf.sim import DEFAULT_PLANTED  # noqa: E402

EXAMPLE = ROOT / "examples" / "badf_sim.toml"
RULES = ("paper", "evidence")


def planted_cells(options: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(location category, identity, concept) of every planted association the campaign
    covers."""
    covered = {i for cat in options["identity_categories"] for i in identities(cat)}
    return {
        (loc, p.identity, p.concept)
        for p in DEFAULT_PLANTED
        for loc in options["location_categories"]
        if p.identity in covered and p.location_category in (None, loc)
    }


def is_true(c: Candidate, planted: set[tuple[str, str, str]]) -> bool:
    concepts = {c.concept, *c.members}
    return any((c.location_category, c.identity, concept) in planted for concept in concepts)


def exclusive(c: Candidate) -> bool:
    """What the simulated exclusivity judge answers YES to: the phrase names the identity."""
    return re.search(rf"\b{re.escape(c.identity.lower())}\b", c.concept.lower()) is not None


@dataclass
class Tally:
    kept: int = 0
    false: int = 0
    planted: int = 0
    recovered: int = 0
    false_shares: list[float] = field(default_factory=list)

    def add(self, kept: list[Candidate], planted: set[tuple[str, str, str]]) -> None:
        false = [c for c in kept if not is_true(c, planted)]
        found = {cell for cell in planted if any(is_true(c, {cell}) for c in kept)}
        self.kept += len(kept)
        self.false += len(false)
        self.planted += len(planted)
        self.recovered += len(found)
        self.false_shares.append(len(false) / len(kept) if kept else 0.0)

    def line(self) -> str:
        recall = self.recovered / self.planted if self.planted else float("nan")
        low, high = wilson_interval(self.recovered, self.planted)
        fdr = self.false / self.kept if self.kept else 0.0
        mean_fdp = sum(self.false_shares) / len(self.false_shares) if self.false_shares else 0.0
        return (
            f"kept {self.kept:4d}, false {self.false:4d} (FDR {fdr:.3f}, mean per seed "
            f"{mean_fdp:.3f}); recall {self.recovered}/{self.planted} = {recall:.3f} "
            f"(95% {low:.3f}-{high:.3f})"
        )


def run_seed(seed: int, workdir: Path, null: bool) -> dict[str, list[Candidate]]:
    config = load_campaign(EXAMPLE)
    update: dict[str, Any] = {"seed": seed}
    if null:
        models = [
            m.model_copy(update={"options": {**m.options, "badf_null": True}})
            for m in config.models
        ]
        judges = [
            j.model_copy(update={"options": {**j.options, "badf_null": True}})
            for j in config.judges
        ]
        update |= {"models": models, "judges": judges}
    config = config.model_copy(update=update)
    db = workdir / f"seed{seed}.db"
    summary = asyncio.run(run_campaign(config, db))
    assert summary.status == "completed", summary
    return {
        rule: analyse_log(db, AnalysisSettings(rule=rule, control_permutations=0))[2].candidates  # type: ignore[arg-type]
        for rule in RULES
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--null", action="store_true", help="plant nothing")
    args = parser.parse_args()
    options = load_campaign(EXAMPLE).relations[0].options
    planted = set() if args.null else planted_cells(options)
    after = {cell for cell in planted if cell[1] != cell[2]}  # "female" for women: exclusive
    tallies = {(rule, stage): Tally() for rule in RULES for stage in ("before", "after")}
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            kept = run_seed(seed, Path(tmp), args.null)
            for rule in RULES:
                tallies[(rule, "before")].add(kept[rule], planted)
                tallies[(rule, "after")].add([c for c in kept[rule] if not exclusive(c)], after)
            print(
                f"seed {seed}: "
                + "; ".join(
                    f"{rule} kept {len(kept[rule])}, false "
                    f"{sum(not is_true(c, planted) for c in kept[rule])}"
                    for rule in RULES
                ),
                flush=True,
            )
    print(
        f"\n{args.seeds} seeds of {EXAMPLE.name}{' (null plan)' if args.null else ''}, "
        f"{len(planted)} planted associations a seed ({len(after)} after the exclusivity "
        f"filter), {time.time() - started:.0f} s"
    )
    for (rule, stage), tally in tallies.items():
        print(f"{rule:8s} {stage:6s} the exclusivity filter: {tally.line()}")


if __name__ == "__main__":
    main()
