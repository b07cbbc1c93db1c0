"""The gate's rules over corrected tables: a rule fails only on a flagged row (one that
survived the correction) whose effect exceeds its threshold; JUnit XML and SARIF carry one
check per row."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from harness.reporting.excess import COLUMNS as EXCESS_COLUMNS
from harness.reporting.gate import Rule, evaluate, junit_xml, parse_rule, sarif
from harness.reporting.report import apply_fdr
from harness.reporting.tables import Table
from harness.vocabulary.errors import ConfigError


def _excess_row(group: str, excess: float, p: float, pairs: int = 400) -> list[Any]:
    row: dict[str, Any] = dict.fromkeys(EXCESS_COLUMNS)
    row.update(
        model="m", relation="r", group=group, control="repeat", pairs=pairs, unpaired=0,
        excess=excess, excess_low=excess - 0.03, excess_high=excess + 0.03,
        test="mcnemar-exact", p_min=1e-9, p=p,
    )  # fmt: skip
    return [row[c] for c in EXCESS_COLUMNS]


def _tables() -> list[Table]:
    rows = [
        _excess_row("(all)", 0.08, 1e-6),  # survives the correction, above 0.05
        _excess_row("a", 0.03, 1e-5),  # survives, below 0.05
        _excess_row("b", 0.30, 0.2),  # large but not significant: never fails
    ]
    return apply_fdr([Table("control_excess", "excess", EXCESS_COLUMNS, rows, unit="a case")])


@pytest.mark.parametrize(
    ("rule", "failed"),
    [
        ("excess>0.05", ["m / r / (all)"]),
        ("excess", ["m / r / (all)", "m / r / a"]),
        ("excess>0.1", []),
        ("flagged", ["m / r / (all)", "m / r / a"]),
        ("regression", []),  # no comparison table: nothing to check
    ],
)
def test_a_rule_fails_only_on_flagged_rows_above_its_threshold(
    rule: str, failed: list[str]
) -> None:
    checks = evaluate(_tables(), [parse_rule(rule)])
    assert [c.name for c in checks if c.failed] == failed
    if rule != "regression":
        assert len(checks) == 3  # one check per relation and group
    for c in checks:
        if c.failed:
            assert "corrected within 'r'" in c.message and "interval" in c.message


@pytest.mark.parametrize("bad", ["excess>", "excess>>1", "regress", "flagged>0.1", "excess>2"])
def test_bad_rules_name_the_option(bad: str) -> None:
    with pytest.raises(ConfigError, match="--fail-on"):
        parse_rule(bad)


def test_parse_rule() -> None:
    assert parse_rule(" excess > 0.05 ") == Rule("excess", 0.05)
    assert str(parse_rule("regression")) == "regression"


def test_junit_and_sarif_hold_every_check_and_every_failure() -> None:
    checks = evaluate(_tables(), [Rule("excess", 0.05), Rule("flagged")])
    root = ET.fromstring(junit_xml(checks))
    cases = root.findall(".//testcase")
    assert len(cases) == len(checks) == 6
    assert root.get("failures") == "3" == str(sum(c.find("failure") is not None for c in cases))
    assert {s.get("name") for s in root.findall("testsuite")} == {
        "excess>0.05: control_excess",
        "flagged: control_excess",
    }
    doc = json.loads(sarif(checks, "new.db", "1.0"))
    results = doc["runs"][0]["results"]
    assert len(results) == 3 and all(r["level"] == "error" for r in results)
    assert {r["ruleId"] for r in results} == {"excess>0.05", "flagged"}


def test_the_gate_corrects_over_every_family_it_checks() -> None:
    # Ten relations, each its own family of one test: the report flags relation r0's
    # p = 0.04 (alone in its family), but among the ten tests the gate checks it is what
    # noise gives one time in three: the gate passes it. A p of 1e-4 fails it.
    def excess_table(p0: float) -> list[Table]:
        rows = []
        for i in range(10):
            row = _excess_row("(all)", 0.08, p0 if i == 0 else 0.5)
            row[EXCESS_COLUMNS.index("relation")] = f"r{i}"
            rows.append(row)
        return apply_fdr([Table("control_excess", "excess", EXCESS_COLUMNS, rows, unit="a case")])

    weak = evaluate(excess_table(0.04), [Rule("excess")])
    assert "flagged;" in weak[0].message  # the report flagged it
    assert not any(c.failed for c in weak)
    strong = evaluate(excess_table(1e-4), [Rule("excess")])
    assert [c.name for c in strong if c.failed] == ["m / r0 / (all)"]
    assert "gate-wide adjusted p 0.001 over 10 tests" in strong[0].message
