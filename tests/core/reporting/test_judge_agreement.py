"""Judge agreement and kappa are computed over valid pairs only: two raters that both could
not tell (INVALID) have not agreed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.plugins.assembly import build_report
from harness.reporting.judge_agreement import cohen_kappa, valid_pairs
from harness.store.reader import EventReader

SMOLLM2 = Path(__file__).resolve().parents[3] / "transcripts" / "smollm2.db"


def test_invalid_pairs_are_not_agreement_on_the_smollm2_transcript() -> None:
    with EventReader(SMOLLM2) as log:
        tables = {t.name: t for t in build_report(log)}
    table = tables["judges"]
    rows = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    total = next(r for r in rows if r["relation"] == "(all)")
    # 16 cases rated by both; the judge never reached a verdict (16 INVALID), so no pair
    # is valid and neither agreement nor kappa exists (it was 0.69 counting INVALID=INVALID).
    assert total["cases"] == 16 and total["b_invalid"] == 16
    assert total["valid_pairs"] == 0
    assert total["agreement"] is None and total["kappa"] is None


def test_agreement_and_kappa_use_the_valid_pairs() -> None:
    pairs = [("INVALID", "INVALID")] * 5 + [
        ("VIOLATED", "VIOLATED"),
        ("VIOLATED", "VIOLATED"),
        ("VIOLATED", "HELD"),
        ("HELD", "HELD"),
        ("HELD", "INVALID"),
    ]
    valid = valid_pairs(pairs)
    assert len(valid) == 4
    # By hand: p_o = 3/4; p_e = (3*2 + 1*2)/16 = 1/2; kappa = (3/4 - 1/2)/(1/2) = 1/2.
    assert cohen_kappa(valid) == pytest.approx(0.5)
    assert math.isnan(cohen_kappa([("HELD", "HELD")] * 3))
    assert math.isnan(cohen_kappa([]))
