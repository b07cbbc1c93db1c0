"""``harness cache explain``: why a call did (or did not) reuse a recorded answer."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.commands.show import find_case
from harness.cli.log_params import LogFileParam, LogParam
from harness.reporting.terminal_text import printable
from harness.running.cache import explain_case
from harness.store.log import Log


@click.group("cache")
def group() -> None:
    """The answer cache across campaigns (see 'harness run --reuse OLD.db')."""


@group.command("explain")
@click.argument("db", type=LogParam())
@click.argument("case")
@click.option(
    "--from",
    "old",
    multiple=True,
    required=True,
    type=LogFileParam(exists=True),
    help="The earlier log(s) the answers would come from (repeatable).",
)
@click.option("--campaign", help="Campaign id in DB (default: the latest).")
@click.option("--turn", type=int, help="Only this turn.")
def explain(
    db: Log, case: str, old: tuple[Path, ...], campaign: str | None, turn: int | None
) -> None:
    """For each turn of CASE in DB: would it hit the cache built from --from, and if not,
    which of model / params / messages / repeat differ from the closest recorded call."""
    with db.reader() as log:
        campaign = log.campaign_id(campaign)
        case_id = find_case(log, campaign, case)
    click.echo(f"{case_id} against {', '.join(map(str, old))}")
    for item in explain_case(db, campaign, case_id, old):
        if turn is not None and item.turn != turn:
            continue
        served = " (served from the cache in this log)" if item.served_from_cache else ""
        if item.hit:
            click.echo(f"turn {item.turn} [{item.thread}]: HIT from {item.closest}{served}")
            continue
        click.echo(f"turn {item.turn} [{item.thread}]: MISS{served}")
        if item.closest is None:
            click.echo("  the cache is empty: no recorded answer to compare with")
            continue
        click.echo(f"  closest recorded call: {printable(item.closest)}")
        for diff in item.differences:
            # The detail quotes prompts, which hold model text: shown, never obeyed.
            click.echo(f"  {diff.part:<8} {printable(diff.detail)}")
