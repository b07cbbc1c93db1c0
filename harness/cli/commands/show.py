"""``harness show``: one conversation, turn by turn."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.panel import Panel

from harness.reporting.terminal_text import markup_safe as escape
from harness.reporting.terminal_text import rich_text
from harness.store.fold import fold_case
from harness.store.open import open_reader
from harness.store.reader import EventReader
from harness.vocabulary.errors import StoreError


def find_case(log: EventReader, campaign: str, wanted: str) -> str:
    """A case id given exactly, by its position (1-based) or by a unique substring."""
    ids: list[str] = [  # sqlite3 rows are untyped
        row[0]
        for row in log.connection.execute(
            "SELECT case_id FROM events WHERE campaign = ? AND kind = 'CaseOpened' ORDER BY gseq",
            (campaign,),
        )
    ]
    if wanted in ids:
        return wanted
    if wanted.isdigit() and 1 <= int(wanted) <= len(ids):
        return ids[int(wanted) - 1]
    matches = [i for i in ids if wanted in i]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise StoreError(
            f"no case matches {wanted!r} (the log has {len(ids)} cases, e.g. {ids[:1]})"
        )
    raise StoreError(f"{len(matches)} cases match {wanted!r}, e.g. {matches[:3]}: be more specific")


@click.command("show")
@click.argument("db", type=click.Path(dir_okay=False))
@click.argument("case")
@click.option("--campaign", help="Campaign id (default: the latest in the log).")
def command(db: str, case: str, campaign: str | None) -> None:
    """Print CASE (an id, a unique part of one, or its number) of the log DB."""
    # No highlighting: its regexes take minutes on a long reply, and model text is data.
    console = Console(highlight=False)
    with open_reader(db) as log:
        campaign = log.campaign_id(campaign)
        case_id = find_case(log, campaign, case)
        state = fold_case(log.case_events(campaign, case_id))
    c = state.case
    console.print(
        f"[bold]{escape(c.case_id)}[/]  relation {escape(c.relation)}  model {escape(c.model)}  "
        f"repeat {c.repeat}  seed {c.seed}"
    )
    console.print(f"data: {escape(json.dumps(c.data, ensure_ascii=False))}", highlight=False)
    for turn_no, turn in sorted(state.turns.items()):
        ask = turn.ask
        header = f"turn {turn_no} · thread {escape(ask.thread)}" + (
            f" (fork of {escape(ask.fork_of)})" if ask.fork_of else ""
        )
        header += f" · {ask.role}" + (f" · {len(turn.sent)} attempts" if len(turn.sent) > 1 else "")
        # Prompts and replies hold bracketed lists: escape them or rich eats them as markup.
        body = f"[bold cyan]prompt[/]\n{escape(ask.prompt)}\n"
        for failure in turn.failures:
            body += (
                f"[red]attempt {failure.attempt} failed[/] {escape(failure.error_kind)}: "
                f"{escape(failure.message)} -> {escape(failure.decision)}\n"
            )
        if turn.reply is not None:
            r = turn.reply.reply
            body += f"[bold green]reply[/] ({r.usage.output_tokens} tokens, {r.latency_s:.2f}s)\n"
            body += escape(r.text)
        elif turn.in_flight:
            body += "[yellow]no outcome recorded (in flight when the campaign stopped)[/]"
        console.print(Panel(body, title=header, title_align="left"))
    for source, verdict in state.verdicts:
        console.print(
            f"[bold]verdict[/] ({source}): [bold]{verdict.outcome.value}[/] — "
            f"{escape(verdict.reason)}"
        )
        if verdict.evidence:
            console.print(
                rich_text(json.dumps(verdict.evidence, ensure_ascii=False, indent=2)),
                highlight=False,
            )
    if not state.verdicts:
        console.print("[yellow]no verdict yet[/]")
