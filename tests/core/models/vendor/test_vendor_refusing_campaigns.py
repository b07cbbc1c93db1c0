"""A vendor that refuses everything shows no bias: every family's example campaign, its
subject model a real SDK talking to a fake vendor on 127.0.0.1 that refuses every request
(the vendor's own refusal signal: OpenAI's ``content_filter``, Anthropic's ``refusal`` stop
reason, Gemini's blocked prompt), reports only REFUSED
cases, no violation, no failed LangBiTe requirement and no flagged differential refusal.
Refusals in the reply's text are checked on the simulated model, which answers "I cannot
answer that." (tests/project/test_refusing_model.py)."""

from __future__ import annotations

import asyncio
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from vendor_fakes import FakeVendor
from vendor_support import base_url

from harness.plugins.assembly import build_report
from harness.reporting.report import to_json
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader

ROOT = Path(__file__).resolve().parents[4]
# Every family's fairness relations: LangBiTe, BiasLens's answers, Meta-Fair MR1-MR14,
# BADF's stories, MetaQuerier MR1-MR2 (the demo campaign).
# Each campaign against one vendor's refusal signal, every vendor used (the machine is shared:
# every pairing would repeat the same check three times over).
PAIRS = [
    ("examples/langbite.toml", "openai"),
    ("examples/biaslens_sim.toml", "anthropic"),
    ("examples/metafair_sim.toml", "google"),
    ("examples/badf_sim.toml", "openai"),
    ("harness/running/campaigns/sim.toml", "anthropic"),
]
SUBJECTS = {
    "openai": "openai:gpt-4o-mini",
    "anthropic": "anthropic:claude-haiku-4-5",
    "google": "google:gemini-2.0-flash",
}


def _refused_by(vendor: FakeVendor, scheme: str, path: str) -> dict[str, Any]:
    data = tomllib.loads((ROOT / path).read_text())
    data["models"] = [
        {
            "name": SUBJECTS[scheme],
            "max_in_flight": 16,
            "options": {"base_url": base_url(scheme, vendor), "rpm": 1_000_000},
        }
    ]
    data["repeats"] = 1
    data.pop("budget", None)
    for relation in data["relations"]:
        if isinstance(relation.get("cases"), int):
            relation["cases"] = min(relation["cases"], 4)
    return data


def _check_no_fairness_failure(db: Path) -> None:
    with EventReader(db) as log:
        outcomes = dict(
            log.connection.execute(
                "SELECT outcome, count(*) FROM verdicts WHERE source = 'relation' GROUP BY 1"
            ).fetchall()
        )
        report = json.loads(to_json(build_report(log)))
    assert set(outcomes) == {"REFUSED"}, outcomes
    for row in report["violation_rates"]["rows"]:
        assert row["violated"] == 0 and row["refused"] == row["cases"], row
    for row in report.get("langbite_requirements", {}).get("rows", []):
        assert row["failed"] == 0 and row["met"] != "no", row
    for row in report.get("biaslens_cells", {}).get("rows", []):
        assert row["strict_biased"] == 0 and row["strict_invalid_questions"] == 0, row
    for row in report.get("differential_refusal", {}).get("rows", []):
        assert row["flagged"] == "no", row
    # No finding of bias: nothing flagged in the findings block.
    assert not [f for f in report["findings"]["rows"] if f["kind"] == "flagged"]


@pytest.mark.parametrize(("path", "scheme"), PAIRS)
def test_a_vendor_that_refuses_everything_fails_no_fairness_requirement(
    path: str, scheme: str, tmp_path: Path, vendor: FakeVendor, canary_keys: dict[str, str]
) -> None:
    vendor.chooser = lambda n: "refusal"
    db = tmp_path / "refused.db"
    asyncio.run(run_campaign(parse_campaign(_refused_by(vendor, scheme, path), source=path), db))
    assert vendor.requests, "the fake vendor was never asked"
    _check_no_fairness_failure(db)
