"""``harness compare`` and ``harness check`` on real sim campaigns: a planted regression between
two sim models is found (and fails the gate, exit 6, with JUnit XML and SARIF), two sampling
seeds of one sim model give nothing flagged (the gate passes), cases that do not pair are
refused (exit 2 naming --unpaired) unless asked, refusals are compared apart, a campaign
with two models compares them, and three logs give a trend."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from harness.cli import main
from harness.cli.exit_codes import ExitCode
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign

RELATIONS = [
    {"name": "metaquerier.mr2", "cases": 200},
    {"name": "metafair.mr8", "cases": 100},
]
# The planted regression: every term outside the planted associations is named 10 times as
# often (MetaQuerierTruth.background, 0.002 by default), in either ask: more answers change
# between the source and the follow-up, so MR2 is violated more.
REGRESSED = {"background": 0.02}


def _model(name: str, seed: int, **options: Any) -> dict[str, Any]:
    return {"name": name, "params": {"seed": seed}, "options": options, "max_in_flight": 16}


def _run(path: Path, models: list[dict[str, Any]], *, seed: int = 3) -> str:
    spec = {"name": path.stem, "seed": seed, "models": models, "relations": RELATIONS}
    summary = asyncio.run(run_campaign(parse_campaign(spec, source="test"), path))
    assert summary.status == "completed"
    return str(path)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("compare")
    return {
        "seed1": _run(tmp / "seed1.db", [_model("sim:planted", 1)]),
        "seed2": _run(tmp / "seed2.db", [_model("sim:planted", 2)]),
        "regressed": _run(tmp / "regressed.db", [_model("sim:planted", 2, **REGRESSED)]),
        "other_cases": _run(tmp / "other.db", [_model("sim:planted", 2)], seed=4),
        "refusing": _run(tmp / "refusing.db", [_model("sim:planted", 2, refusal_rate=0.3)]),
        "two_models": _run(tmp / "two.db", [_model("sim:v1", 1), _model("sim:v2", 1, **REGRESSED)]),
    }


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _rows(result: Result) -> list[tuple[str, dict[str, Any]]]:
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    return [(name, row) for name, t in data.items() for row in t["rows"]]


def _flagged(result: Result) -> list[dict[str, Any]]:
    return [r for _, r in _rows(result) if r.get("flagged") == "yes"]


def test_a_planted_regression_between_two_sim_models_is_found(logs: dict[str, str]) -> None:
    got = _flagged(_cli("compare", logs["seed1"], logs["regressed"], "--format", "json"))
    relations = {(r["relation"], r["measure"]) for r in got}
    assert ("metaquerier.mr2", "violated") in relations
    overall = next(r for r in got if r["relation"] == "metaquerier.mr2" and r["group"] == "(all)")
    assert overall["diff"] > 0 and overall["diff_low"] > 0  # worse, and the interval says so
    assert overall["test"] == "mcnemar-exact" and overall["pairs"] == 200
    # The claim names its unit and the family it was corrected with (the pair of models).
    assert "generated case" in overall["unit"]
    family = overall["hypothesis_family"]["name"]
    assert family.startswith("metaquerier.mr2 (paired comparison") and "->" in family
    # Meta-Fair's MR8 was not touched by the planted option: nothing flagged there.
    assert not [r for r in got if r["relation"] == "metafair.mr8"]


def test_the_comparison_states_its_findings_first(logs: dict[str, str]) -> None:
    """The same findings block as a report: the regression as a sentence against the base
    model on the same cases, with its interval and family, before the tables."""
    result = _cli("compare", logs["seed1"], logs["regressed"], "--format", "json")
    data = json.loads(result.stdout)
    assert next(iter(data)) == "findings"
    stated = [r for r in data["findings"]["rows"] if r["kind"] == "flagged"]
    overall = next(r for r in stated if r["labels"] == "violated")
    assert overall["claim"].startswith("metaquerier.mr2 (paired comparison")
    assert overall["effect"] > 0 and overall["effect_low"] > 0 and overall["n"] == 200
    assert "on the same cases" in overall["control"] and overall["family_size"] >= 1
    text = _cli("compare", logs["seed1"], logs["regressed"]).output
    assert text.startswith("Findings") and "metaquerier.mr2" in text.split("\n")[2]
    assert max(len(line) for line in text.splitlines()) <= 100
    quiet = _cli("compare", logs["seed1"], logs["seed2"], "--format", "json")
    assert not [r for r in json.loads(quiet.stdout)["findings"]["rows"] if r["kind"] == "flagged"]


def test_the_summary_names_the_command_that_prints_the_comparison_whole(
    logs: dict[str, str],
) -> None:
    """Where the summary leaves rows or columns out, it names `harness compare --all` (which
    prints the comparison whole), not `harness report --all` (which prints a report)."""
    text = _cli("compare", logs["seed1"], logs["regressed"]).output
    flat = " ".join(text.split())  # the hint may wrap
    hints = flat.count("every row and column:")
    assert hints and flat.count("every row and column: harness compare --all") == hints
    assert "harness report" not in flat
    whole = _cli("compare", logs["seed1"], logs["regressed"], "--all").output
    assert "every row and column" not in whole


def test_two_seeds_of_one_sim_model_give_nothing_flagged(logs: dict[str, str]) -> None:
    result = _cli("compare", logs["seed1"], logs["seed2"], "--format", "json")
    rows = _rows(result)
    tested = [r for name, r in rows if name.startswith("comparison") and r["p"] is not None]
    assert len(tested) > 10  # compared, per relation and group
    assert not _flagged(result)


def test_cases_that_do_not_pair_are_refused_unless_unpaired_is_asked(
    logs: dict[str, str],
) -> None:
    refused = CliRunner().invoke(main, ["compare", logs["seed1"], logs["other_cases"]])
    assert refused.exit_code == ExitCode.USAGE
    assert "no case in common" in refused.output and "--unpaired" in refused.output
    result = _cli("compare", logs["seed1"], logs["other_cases"], "--unpaired", "--format", "json")
    rows = [r for name, r in _rows(result) if name.startswith("comparison")]
    assert rows and all("UNPAIRED" in r["hypothesis_family"]["name"] for r in rows)
    assert all(r["test"] in ("fisher", "chi2") for r in rows if r["group"] == "(all)")
    assert "UNPAIRED" in result.stderr
    text = _cli("compare", logs["seed1"], logs["other_cases"], "--unpaired").stdout
    assert "UNPAIRED" in text


def test_refusals_are_not_violations_and_are_compared_apart(logs: dict[str, str]) -> None:
    rows = _rows(_cli("compare", logs["seed2"], logs["refusing"], "--format", "json"))
    violated = next(
        r for n, r in rows if n == "comparison" and r["relation"] == "metaquerier.mr2"
        and r["group"] == "(all)"
    )  # fmt: skip
    # A refused case has no valid repeat: left out of the violation test, counted.
    assert violated["excluded"] > 0 and violated["pairs"] + violated["excluded"] == 200
    refused = [
        r for n, r in rows if n == "comparison_refusal" and r["measure"] == "refused"
        and r["group"] == "(all)"
    ]  # fmt: skip
    assert {r["relation"] for r in refused} == {"metaquerier.mr2", "metafair.mr8"}
    assert all(r["flagged"] == "yes" and r["diff"] > 0.15 for r in refused)
    assert all("refusal and INVALID" in r["hypothesis_family"]["name"] for r in refused)


def test_a_campaign_with_two_models_compares_them(logs: dict[str, str]) -> None:
    got = _flagged(_cli("compare", logs["two_models"], "--format", "json"))
    assert {(r["base"], r["new"]) for r in got} == {("sim:v1", "sim:v2")}
    assert any(r["relation"] == "metaquerier.mr2" and r["diff"] > 0 for r in got)


def test_one_model_alone_cannot_be_compared(logs: dict[str, str]) -> None:
    result = CliRunner().invoke(main, ["compare", logs["seed1"]])
    assert result.exit_code == ExitCode.USAGE and "needs two" in result.output


def test_three_logs_give_a_trend_per_relation(logs: dict[str, str]) -> None:
    result = _cli("compare", logs["seed1"], logs["seed2"], logs["regressed"], "--format", "json")
    rows = {r["relation"]: r for name, r in _rows(result) if name == "trend"}
    assert set(rows) == {"metaquerier.mr2", "metafair.mr8"}
    assert rows["metaquerier.mr2"]["test"] == "cochran-armitage"
    assert rows["metaquerier.mr2"]["logs"] == 3 and rows["metaquerier.mr2"]["change"] > 0


def test_the_gate_fails_on_the_regression_with_junit_and_sarif(
    logs: dict[str, str], tmp_path: Path
) -> None:
    junit, sarif = tmp_path / "gate.xml", tmp_path / "gate.sarif"
    result = CliRunner().invoke(
        main,
        ["check", logs["regressed"], "--against", logs["seed1"], "--fail-on", "regression",
         "--junit", str(junit), "--sarif", str(sarif)],
    )  # fmt: skip
    assert result.exit_code == ExitCode.GATE_FAILED, result.output
    assert "FAIL regression" in result.output and "metaquerier.mr2" in result.output
    root = ET.parse(junit).getroot()
    cases = root.findall(".//testcase")
    failures = [c for c in cases if c.find("failure") is not None]
    assert int(root.get("tests", "0")) == len(cases) > 10
    assert int(root.get("failures", "0")) == len(failures) >= 1
    assert all("metaquerier.mr2" in c.get("name", "") for c in failures)
    doc = json.loads(sarif.read_text())
    assert doc["version"] == "2.1.0"
    assert len(doc["runs"][0]["results"]) == len(failures)
    # A threshold above the regression's size passes it.
    high = CliRunner().invoke(
        main, ["check", logs["regressed"], "--against", logs["seed1"], "--fail-on",
               "regression>0.5"],
    )  # fmt: skip
    assert high.exit_code == 0, high.output


def test_the_gate_passes_two_seeds_of_one_model(logs: dict[str, str], tmp_path: Path) -> None:
    junit = tmp_path / "gate.xml"
    result = CliRunner().invoke(
        main,
        ["check", logs["seed2"], "--against", logs["seed1"], "--fail-on", "regression",
         "--fail-on", "excess>0.05", "--junit", str(junit)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    root = ET.parse(junit).getroot()
    assert root.get("failures") == "0" and int(root.get("tests", "0")) > 10


def test_the_gate_refuses_bad_rules(logs: dict[str, str]) -> None:
    bad = CliRunner().invoke(main, ["check", logs["seed1"], "--fail-on", "excess>>1"])
    assert bad.exit_code == ExitCode.USAGE and "--fail-on" in bad.output
    alone = CliRunner().invoke(main, ["check", logs["seed1"], "--fail-on", "regression"])
    assert alone.exit_code == ExitCode.USAGE and "--against" in alone.output


def test_the_comparison_as_an_html_page(logs: dict[str, str], tmp_path: Path) -> None:
    page = tmp_path / "compare.html"
    result = CliRunner().invoke(
        main, ["compare", logs["seed1"], logs["regressed"], "--html", str(page)]
    )
    assert result.exit_code == 0, result.output
    html = page.read_text(encoding="utf-8")
    assert 'id="t-comparison"' in html and "paired comparison" in html
    assert "<svg" in html  # the forest plot of the differences
    again = CliRunner().invoke(
        main, ["compare", logs["seed1"], logs["regressed"], "--html", str(page)]
    )
    assert again.exit_code == ExitCode.USAGE and "--force" in again.output


def test_the_gate_fails_on_the_reports_own_planted_findings(logs: dict[str, str]) -> None:
    # sim:planted plants term-gender associations that MR2's report flags.
    result = CliRunner().invoke(main, ["check", logs["seed1"], "--fail-on", "flagged"])
    assert result.exit_code == ExitCode.GATE_FAILED, result.output
    failed = [line for line in result.output.splitlines() if line.startswith("FAIL flagged")]
    assert failed and all("corrected within" in line for line in failed)
