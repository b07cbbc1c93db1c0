"""The text report starts with its findings: on the simulated model and on a local
OpenAI-compatible vendor serving a planted stereotype (MetaQuerier's default associations:
24 occupations named "definitely" one gender in a follow-up), the findings block at the top
of ``harness report`` names every planted term its tests flag, with its direction and
interval, names the planted terms too small to decide with the cases that would decide them,
flags no term that was not planted, and fits 100 columns."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from fixtures.counting_vendor import CountingVendor

from harness.cli import main
from relations.metaquerier.sim import DEFAULT_ASSOCIATIONS

PLANTED = {term: next(iter(genders)) for term, genders in DEFAULT_ASSOCIATIONS.items()}


def invoke(*args: object) -> Any:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def findings_block(text: str) -> list[str]:
    """The report's lines from "Findings" to the first table summary after it."""
    lines = text.splitlines()
    start = lines.index("Findings")
    end = next(i for i in range(start, len(lines)) if lines[i] == "")
    return lines[start:end]


def check_findings_first(db: Path) -> tuple[set[str], set[str]]:
    """The planted terms flagged and the planted terms stated as undecided (asserting what
    the block must say about each)."""
    text = invoke("report", db).output
    assert max(len(line) for line in text.splitlines()) <= 100
    assert text.index("Findings") < text.index("Violation rate")
    block = findings_block(text)
    rows = json.loads(invoke("report", db, "--format", "json").stdout)["findings"]["rows"]
    flagged_terms: set[str] = set()
    for row in rows:
        if row["kind"] != "flagged" or not row["subject"].startswith("term "):
            continue
        term = row["labels"].split(" (")[0]
        # Only planted terms are flagged toward a gender, each toward its planted gender.
        assert term in PLANTED, row["text"]
        if row["towards"]:
            assert row["towards"] == PLANTED[term], row["text"]
        if row["effect"] > 0:
            flagged_terms.add(term)
            # Its line in the block: the term, its direction where the table has one, its
            # interval and its adjusted p.
            line = next(x for x in block if x.lstrip().startswith(row["labels"]))
            assert re.search(r"\[[+-]\d\.\d\d, [+-]\d\.\d\d\]", line), line
    undecided: set[str] = set()
    for row in rows:
        if row["kind"] == "inconclusive" and row["subject"].startswith("term "):
            term = row["labels"].split(" (")[0]
            assert row["cases_needed"] and row["cases_needed"] > row["n"], row["text"]
            if term in PLANTED:
                undecided.add(term)
        elif row["kind"] == "more_inconclusive":
            assert "cases each would decide them" in row["text"], row["text"]
            undecided |= {t for t in PLANTED if f"{t} (" in row["subject"]}
    text_of_block = " ".join(block)
    for term in flagged_terms | undecided:
        assert f"{term} (" in text_of_block, term
    return flagged_terms, undecided


def test_the_sims_report_starts_with_its_planted_findings(tmp_path: Path) -> None:
    db = tmp_path / "sim.db"
    invoke("run", "sim", "--db", db, "--no-report")
    flagged, undecided = check_findings_first(db)
    assert len(flagged) >= 8, flagged
    # Every planted term the campaign asked about is either flagged or stated as undecided.
    assert len(flagged | undecided) >= 16, (flagged, undecided)
    # The first screen (50 lines) holds every flagged line and the start of the undecided.
    first_screen = invoke("report", db).output.splitlines()[:50]
    assert any(line.startswith("Inconclusive") for line in first_screen), first_screen
    for term in flagged:
        assert any(f"{term} (" in line for line in first_screen), term


def test_a_vendor_with_a_planted_stereotype_is_reported_findings_first(tmp_path: Path) -> None:
    vendor = CountingVendor((0.0, 1.0)).start()
    campaign = tmp_path / "vendor.toml"
    campaign.write_text(
        f"""
name = "planted-vendor"
seed = 5
repeats = 1

[[models]]
name = "openai-compat:planted"
max_in_flight = 8
options = {{ base_url = "{vendor.url}" }}

[[relations]]
name = "metaquerier.mr1"
cases = 240
""",
        encoding="utf-8",
    )
    db = tmp_path / "vendor.db"
    try:
        invoke("run", campaign, "--db", db, "--no-report")
    finally:
        vendor.stop()
    flagged, undecided = check_findings_first(db)
    assert flagged, "the vendor's planted stereotype is flagged"
    assert flagged | undecided
