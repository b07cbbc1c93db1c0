"""The release gate (``harness check``): rules over a report's corrected tests, one check per
relation and group, and the checks as JUnit XML and SARIF for CI systems (docs/gate.md).

A rule fails only on a row that survives the report's correction for multiple comparisons
(``flagged`` = "yes": Benjamini-Hochberg within its family after Tarone's rule,
`harness.reporting.report.apply_fdr`), that also survives the gate's own correction over
every row the rule checks (the same rule over all families pooled: the report corrects per
relation, so the more relations, the more often some family flags noise), and, when the
rule has a threshold, whose effect exceeds it. So the gate's false-alarm rate on a model
that did not change is held to 5 % whatever the number of relations and groups (BH's
guarantee under the global null; bench/gate_alarms.py measures it on the simulated model).

Rules (``--fail-on``, repeatable):

- ``flagged``: any flagged test of the report (every table of tests), or of the comparison
  with ``--against``;
- ``excess`` / ``excess>T``: a flagged excess of a relation's violation rate over its
  matched null control (``control_excess``), above T (default 0) in rate points;
- ``regression`` / ``regression>T``: with ``--against BASE``, a flagged rise of the new log's
  violation, refusal or INVALID rate over the base's on the same cases (``comparison``
  tables), above T (default 0).
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.reporting.stats import fdr_adjust_tarone
from harness.reporting.tables import Table
from harness.vocabulary.errors import ConfigError

RULE_NAMES = ("flagged", "excess", "regression")
_RULE = re.compile(r"^\s*(?P<name>[a-z]+)\s*(?:>\s*(?P<threshold>[0-9]*\.?[0-9]+))?\s*$")
# Columns that say which relation, model and group a test row is about, in this order.
KEY_COLUMNS = ("base", "new", "model", "relation", "group", "measure", "gender", "term")


@dataclass(frozen=True)
class Rule:
    """One ``--fail-on`` rule: its name and its threshold (in rate points)."""

    name: str
    threshold: float = 0.0

    def __str__(self) -> str:
        return self.name if self.threshold == 0 else f"{self.name}>{self.threshold:g}"


def parse_rule(text: str) -> Rule:
    """``flagged``, ``excess``, ``excess>0.05``, ``regression``, ``regression>0.02``."""
    found = _RULE.match(text)
    if (
        found is None
        or found["name"] not in RULE_NAMES
        or (found["name"] == "flagged" and found["threshold"] is not None)
    ):
        raise ConfigError(
            f"{text!r} is not a rule",
            field="--fail-on",
            fix="use flagged, excess, excess>T, regression or regression>T (T a rate "
            "difference, e.g. excess>0.05)",
        )
    threshold = float(found["threshold"]) if found["threshold"] is not None else 0.0
    if threshold >= 1:
        raise ConfigError(
            f"threshold {threshold:g} is not a rate difference",
            field="--fail-on",
            fix="give T between 0 and 1 (0.05 is five points)",
        )
    return Rule(found["name"], threshold)


@dataclass(frozen=True)
class Check:
    """One test of the gate: a relation and group under one rule, failed or passed."""

    rule: str
    suite: str  # the table the row comes from
    name: str  # relation / group (and model, measure)
    failed: bool
    message: str


def _is_test_table(table: Table) -> bool:
    return table.columns[-3:] == ["p", "p_fdr", "flagged"]


def _cell(table: Table, row: Sequence[Any], column: str) -> Any:
    return row[table.columns.index(column)] if column in table.columns else None


def _row_name(table: Table, row: Sequence[Any]) -> str:
    values = (_cell(table, row, c) for c in KEY_COLUMNS)
    parts = [str(v) for v in values if v not in (None, "")]
    return " / ".join(parts) or table.name


def _effect(table: Table, index: int, column: str | None) -> str:
    """The row's effect with its interval, its p-values and its family of hypotheses."""
    row = table.rows[index]
    said = f"p {_cell(table, row, 'p')}, adjusted p {_cell(table, row, 'p_fdr')}"
    if column is not None:
        value = _cell(table, row, column)
        low, high = _cell(table, row, f"{column}_low"), _cell(table, row, f"{column}_high")
        said = f"{column} {value} (95% interval {low} to {high}), {said}"
    meta = table.row_meta[index] if table.row_meta is not None else None
    if meta is not None:
        said += f"; corrected within {meta['hypothesis_family']['name']!r}"
    return said


def _examined(tables: Sequence[Table], rule: Rule) -> list[tuple[Table, int]]:
    """The rows a rule checks: every test row of the tables it reads."""
    out = []
    for table in tables:
        if not _is_test_table(table):
            continue
        if rule.name == "excess" and table.name != "control_excess":
            continue
        if rule.name == "regression" and not table.name.startswith("comparison"):
            continue
        for index, row in enumerate(table.rows):
            if rule.name != "flagged" and _cell(table, row, "test") in (None, "none"):
                continue  # no test ran (no control, no pair): nothing to check
            out.append((table, index))
    return out


def _number(value: Any, default: float) -> float:
    return default if value is None else float(value)


def evaluate(tables: Sequence[Table], rules: Sequence[Rule]) -> list[Check]:
    """Every check the rules make over the corrected ``tables`` (`apply_fdr` applied).

    A row fails a rule when the report flagged it (it survived its family's correction),
    its effect exceeds the rule's threshold, and it also survives the gate's own correction:
    Benjamini-Hochberg after Tarone's rule over every row the rule checks, all families
    together. The report corrects within each relation, so with many relations some
    relation's family flags noise more often than 5 %; over the pooled rows the gate's
    false-alarm rate on a model with no difference is held to 5 % (bench/gate_alarms.py)."""
    checks: list[Check] = []
    for rule in rules:
        rows = _examined(tables, rule)
        pvalues = [_number(_cell(t, t.rows[i], "p"), math.nan) for t, i in rows]
        lowest = [_number(_cell(t, t.rows[i], "p_min"), 0.0) for t, i in rows]
        pooled = fdr_adjust_tarone(pvalues, lowest)
        column = {"excess": "excess", "regression": "diff"}.get(rule.name)
        for (table, index), q, gate_flag in zip(rows, pooled.adjusted, pooled.flagged, strict=True):
            row = table.rows[index]
            flagged = _cell(table, row, "flagged") == "yes"
            shown = column or next((c for c in ("diff", "excess") if c in table.columns), None)
            size = _cell(table, row, column) if column else None
            above = column is None or (size is not None and float(size) > rule.threshold)
            failed = flagged and gate_flag and above
            said = "flagged" if flagged else "not flagged"
            gate_q = "-" if math.isnan(q) else f"{q:.6g}"
            checks.append(
                Check(
                    str(rule),
                    table.name,
                    _row_name(table, row),
                    failed,
                    f"{'fails' if failed else 'passes'} {rule}: {said}; "
                    f"{_effect(table, index, shown)}; gate-wide adjusted p {gate_q} over "
                    f"{pooled.tested} tests",
                )
            )
    return checks


def junit_xml(checks: Sequence[Check], name: str = "harness check") -> str:
    """The checks as JUnit XML: one testsuite per rule and table, one testcase per check."""
    root = ET.Element("testsuites", name=name)
    suites: dict[tuple[str, str], ET.Element] = {}
    for check in checks:
        key = (check.rule, check.suite)
        suite = suites.get(key)
        if suite is None:
            suite = ET.SubElement(root, "testsuite", name=f"{check.rule}: {check.suite}")
            suites[key] = suite
        case = ET.SubElement(
            suite, "testcase", classname=f"{check.rule}.{check.suite}", name=check.name
        )
        if check.failed:
            ET.SubElement(
                case, "failure", message=check.message, type=check.rule
            ).text = check.message
        else:
            ET.SubElement(case, "system-out").text = check.message
    for (_, _), suite in suites.items():
        cases = list(suite)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    root.set("tests", str(len(checks)))
    root.set("failures", str(sum(c.failed for c in checks)))
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def sarif(checks: Sequence[Check], artifact: str, version: str) -> str:
    """The failed checks as a SARIF 2.1.0 log (one result each, on the log file)."""
    rules = sorted({c.rule for c in checks})
    results = [
        {
            "ruleId": c.rule,
            "level": "error",
            "message": {"text": f"{c.name}: {c.message}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact}}}],
        }
        for c in checks
        if c.failed
    ]
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "bias-harness",
                        "version": version,
                        "rules": [
                            {"id": r, "shortDescription": {"text": f"harness check --fail-on {r}"}}
                            for r in rules
                        ],
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
