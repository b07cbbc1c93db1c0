"""Turn a ``metafair.generate`` log into a test-set file an answer campaign reads.

The kept tests of every generation case, in case order, get ids
``gen-mr<MR>-<dimension>-<attribute>-<k>`` and the generator model as origin; a pair
already exported from an earlier case is dropped as a duplicate. The summary counts the
tests and every drop reason (the cases' own and the duplicates found here).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness.family_api import EventReader, write_output
from relations.metafair.testset import MetaFairTest, write_testset

RELATION = "metafair.generate"


@dataclass
class GeneratedTests:
    tests: list[MetaFairTest] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    invalid_cases: int = 0

    def summary(self) -> str:
        reasons = ", ".join(f"{n} {why}" for why, n in sorted(self.dropped.items()))
        return f"{len(self.tests)} tests; dropped: {reasons or 'none'}" + (
            f"; {self.invalid_cases} generation cases without a valid test"
            if self.invalid_cases
            else ""
        )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def read_generated(db: str | Path, campaign: str | None = None) -> GeneratedTests:
    out = GeneratedTests()
    seen: set[tuple[str, str]] = set()
    with EventReader(db) as log:
        campaign = log.campaign_id(campaign)
        rows = log.connection.execute(
            "SELECT case_id, model, outcome, evidence FROM verdicts WHERE campaign = ?"
            " AND source = 'relation' AND relation = ? ORDER BY case_id, decided_at",
            (campaign, RELATION),
        ).fetchall()
    latest = {case_id: (model, outcome, evidence) for case_id, model, outcome, evidence in rows}
    for model, outcome, evidence_json in latest.values():
        evidence = json.loads(evidence_json or "{}")
        out.dropped.update(evidence.get("dropped", {}))
        if outcome != "HELD":
            out.invalid_cases += 1
        for test in evidence.get("tests", []):
            key = (
                " ".join(test["source"].lower().split()),
                " ".join(test["follow_up"].lower().split()),
            )
            if key in seen:
                out.dropped["duplicate"] += 1
                continue
            seen.add(key)
            test_id = (
                f"gen-mr{test['mr']}-{_slug(test['dimension'])}-{_slug(test['attributes'][0])}"
            )
            out.tests.append(
                MetaFairTest.model_validate(
                    {**{k2: v for k2, v in test.items() if v is not None},
                     "id": f"{test_id}-{len(out.tests) + 1}", "origin": model}
                )
            )  # fmt: skip
    return out


def write_generated(
    tests: list[MetaFairTest], path: Path, *, inputs: list[Path], force: bool
) -> None:
    """Write the test set whole (JSON or CSV by suffix) under the rules of output_files."""
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / f"tests{path.suffix.lower() or '.json'}"
        write_testset(tests, staged)
        with staged.open(encoding="utf-8", newline="") as handle:
            text = handle.read()
    write_output(path, text, inputs=inputs, force=force, option="OUT")
