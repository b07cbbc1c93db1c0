"""``harness check``: the release gate; exit 6 when a corrected finding meets a rule
(docs/gate.md)."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

import click

from harness.cli.commands.compare import comparison
from harness.cli.exit_codes import ExitCode
from harness.cli.log_params import LogParam
from harness.plugins.assembly import build_report
from harness.reporting.campaign_status import campaign_status
from harness.reporting.gate import evaluate, junit_xml, parse_rule, sarif
from harness.reporting.output_files import check_output, write_output
from harness.reporting.tables import Table
from harness.reporting.terminal_text import printable
from harness.store.log import Log
from harness.vocabulary.errors import ConfigError

EVERY_ROW = 2**31  # the report's --top for the gate: no table keeps only its top rows


def _version() -> str:
    try:
        return version("bias-harness")
    except PackageNotFoundError:  # a checkout run without installing: no version to give
        return "unknown"


@click.command("check")
@click.argument("db", type=LogParam())
@click.option(
    "--against",
    type=LogParam(),
    help="The base log: compare DB with it on the cases both ran (rule 'regression').",
)
@click.option(
    "--fail-on",
    "rules",
    multiple=True,
    required=True,
    metavar="RULE",
    help="flagged | excess | excess>T | regression | regression>T (repeatable): fail on a "
    "finding that survives the correction and exceeds T (a rate difference).",
)
@click.option("--campaign", help="Campaign id of DB (default: the latest in the log).")
@click.option("--pair", "pairs", multiple=True, metavar="BASE=NEW", help="As in harness compare.")
@click.option(
    "--unpaired", is_flag=True, help="As in harness compare: independent samples, said so."
)
@click.option("--junit", type=click.Path(dir_okay=False), help="Write the checks as JUnit XML.")
@click.option(
    "--sarif", "sarif_out", type=click.Path(dir_okay=False), help="Write failures as SARIF."
)
@click.option("--force", is_flag=True, help="Replace the --junit / --sarif file if it exists.")
def command(
    db: Log,
    against: Log | None,
    rules: tuple[str, ...],
    campaign: str | None,
    pairs: tuple[str, ...],
    unpaired: bool,
    junit: str | None,
    sarif_out: str | None,
    force: bool,
) -> None:
    """Fail (exit 6) when a finding that survives the correction for multiple comparisons
    meets a --fail-on rule; one check per relation and group, also as JUnit XML or SARIF."""
    parsed = [parse_rule(r) for r in rules]
    inputs = [db] + ([against] if against is not None else [])
    for path, option in ((junit, "--junit"), (sarif_out, "--sarif")):
        if path is not None:
            check_output(path, inputs=inputs, force=force, option=option)
    wants_report = any(r.name in ("flagged", "excess") for r in parsed)
    if any(r.name == "regression" for r in parsed) and against is None:
        raise ConfigError(
            "the rule 'regression' compares with a base log",
            field="--fail-on",
            fix="add --against BASE.db (the log of the release to compare with)",
        )
    tables: list[Table] = []
    if wants_report:
        with db.reader() as log:
            status = campaign_status(log, campaign)
            # Every row, not the top rows a report shows: a flagged term ranked below the
            # report's --top is a finding too.
            tables += build_report(log, status.campaign, top=EVERY_ROW)
        if status.status != "completed":
            click.echo(
                f"warning: campaign {status.campaign} is {status.status}; checked "
                f"{status.cases} cases",
                err=True,
            )
    if against is not None:
        if unpaired:
            click.echo("warning: UNPAIRED comparison (--unpaired): cases are not matched", err=True)
        tables += comparison((against, db), pairs, unpaired)
    checks = evaluate(tables, parsed)
    failed = [c for c in checks if c.failed]
    for c in failed:
        click.echo(printable(f"FAIL {c.rule} [{c.suite}] {c.name}: {c.message}"))
    click.echo(
        f"{len(checks)} checks, {len(failed)} failed "
        f"({', '.join(str(r) for r in parsed)}; only findings that survive the correction)"
    )
    if junit is not None:
        write_output(junit, junit_xml(checks), inputs=inputs, force=force, option="--junit")
    if sarif_out is not None:
        write_output(
            sarif_out, sarif(checks, str(db), _version()), inputs=inputs, force=force,
            option="--sarif",
        )  # fmt: skip
    if failed:
        sys.exit(ExitCode.GATE_FAILED)
