"""Model text is data in every output: arbitrary replies (Rich markup, terminal escapes, NUL,
bidirectional overrides, 100 kB) go through the text report, ``harness show``, the progress
line, JSON and CSV. Nothing crashes, no human output carries a control character, and the
machine formats keep the exact text."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import Path
from typing import Any, ClassVar

from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from harness.cli import main
from harness.cli.commands._render import render_tables
from harness.cli.progress import RichProgress
from harness.plugins.registry import Family, extra_family
from harness.reporting.report import to_csv, to_json
from harness.reporting.tables import ReportContext, ReportSection, Table
from harness.reporting.terminal_text import has_control, printable
from harness.running.runner import run_campaign
from harness.testing import FakeModel
from harness.vocabulary.relation import Ask, Case, Outcome, RelationBase, Transcript, Verdict

MODEL = "sim:hostile"


class Quote(RelationBase):
    """Asks once; the verdict quotes the reply in its reason and evidence."""

    name: ClassVar[str] = "hostile.quote"
    family: ClassVar[str] = "hostile"
    summary: ClassVar[str] = "quote the reply"

    def case_count(self) -> int | None:
        return 1

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        return {"n": index}

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        if not transcript.turns:
            return [Ask(thread="main", prompt="Say anything.")]
        reply = transcript.turns[-1].reply or ""
        return Verdict(outcome=Outcome.INVALID, reason=reply, evidence={"answer": reply})


def answers(ctx: ReportContext) -> list[Table]:
    rows = [[v.evidence.get("answer", ""), v.reason] for v in ctx.relation_verdicts]
    return [Table("hostile_answers", "Answers", ["answer", "reason"], rows)]


HOSTILE = Family(
    name="hostile",
    summary="replies that look like markup or terminal commands",
    relations=(Quote,),
    report_sections=(ReportSection("hostile_answers", 5, answers),),
)


def _campaign() -> Any:
    from harness.running.campaign import parse_campaign

    return parse_campaign(
        {
            "name": "hostile",
            "seed": 1,
            "models": [{"name": MODEL}],
            "relations": [{"name": "hostile.quote", "cases": 1}],
        },
        source="test",
    )


HOSTILE_TEXT = st.lists(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(
            ["[", "]", "/", "\\", "\x1b", "\x07", "\x00", "\x9b", "\r", "\u202e", "\u200f"]
        ),
        st.sampled_from(["[/bold]", "[bold red]", "[/]", "\x1b[2J", "\x1b]0;title\x07", "[link="]),
    ),
    max_size=30,
).map("".join)


def _human(result: Any) -> str:
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=HOSTILE_TEXT)
@example(text="[/bold] maybe")
@example(text="[bold red]PWNED[/bold red]")
@example(text="\x1b[2J\x1b]0;pwned\x07\x00 done \u202eevil\\")
@example(text="x" * 100_000 + "\x1b[31m")
def test_any_reply_is_shown_never_obeyed(tmp_path_factory: Any, text: str) -> None:
    db = tmp_path_factory.mktemp("hostile") / "h.db"
    with extra_family(HOSTILE):
        summary = asyncio.run(
            run_campaign(_campaign(), db, overrides={MODEL: FakeModel(lambda m: text, name=MODEL)})
        )
        assert summary.cases_closed == 1
        runner = CliRunner()
        report = _human(runner.invoke(main, ["report", str(db)]))
        shown = _human(runner.invoke(main, ["show", str(db), "1"]))
        as_json = runner.invoke(main, ["report", str(db), "--format", "json"])
        as_csv = runner.invoke(main, ["report", str(db), "--format", "csv"])
        exported = runner.invoke(main, ["export", str(db)])
    for human in (report, shown):
        assert not has_control(human), repr(human[:400])
    # Markup is never interpreted: the brackets of the reply reach the reader as text.
    if "[bold red]PWNED" in text:
        assert "[bold red]PWNED" in report and "[bold red]PWNED" in shown
    # Machine formats keep the exact text.
    tables = json.loads(as_json.stdout)
    assert tables["hostile_answers"]["rows"][0]["answer"] == text
    rows = list(csv.reader(io.StringIO(as_csv.stdout, newline="")))
    assert [r[3] for r in rows if r[:1] == ["hostile_answers"] and r[2] == "answer"] == [text]
    conversation = json.loads(exported.stdout.split("\n")[0])
    assert text in set(_strings(conversation))


def _strings(value: Any) -> Any:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


@settings(max_examples=60, deadline=None)
@given(text=HOSTILE_TEXT)
@example(text="[/bold] maybe")
@example(text="\x1b]0;title\x07\x1b[2J")
def test_the_progress_line_and_the_text_report_never_carry_controls(text: str) -> None:
    buf = io.StringIO()
    progress = RichProgress(3, console=Console(file=buf, width=80), label=text)
    progress.set_status_source(lambda: text)
    with progress:
        progress.calls = 1
    render_tables(
        [Table("t", text, [text or "c"], [[text], [None]], note=text)],
        Console(file=buf, width=100),
    )
    assert not has_control(buf.getvalue()), repr(buf.getvalue())
    table = Table("t", "title", ["c"], [[text]])
    assert json.loads(to_json([table]))["t"]["rows"][0]["c"] == text
    assert list(csv.reader(io.StringIO(to_csv([table]), newline="")))[1][3] == text


def test_printable_shows_controls_and_keeps_layout() -> None:
    assert printable("a\x1b[2Jb\x00\u202e") == "a\\x1b[2Jb\\x00\\u202e"
    assert printable("line\n\tnext") == "line\n\tnext"
    assert printable("line\nnext\r", keep_layout=False) == "line\\x0anext\\x0d"


def test_an_error_message_from_the_log_is_printable(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path / "no\x1b]0;x\x07such.db")])
    assert result.exit_code == 2
    assert not has_control(result.output) and "\\x1b" in result.output
