"""``harness report DB --html OUT.html``: one self-contained page (nothing fetched), every
report table and its plots, every case in the pack, model text never markup, and the
output rules of every report file."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.plugins.assembly import build_report
from harness.plugins.family_parts import report_sections
from harness.plugins.registry import Family, extra_family
from harness.reporting.html import render_html
from harness.reporting.html.cases import CaseIndex
from harness.reporting.html.heatmap import colour
from harness.reporting.html.page import key_columns, row_filter
from harness.reporting.tables import Bars, ReportContext, ReportSection, Table
from harness.running.campaign import parse_campaign, resolve_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.testing import FakeModel
from harness.vocabulary.relation import Ask, Case, Outcome, RelationBase, Transcript, Verdict

HOSTILE_REPLY = (
    '<script>document.title="pwned"</script></div></script><!-- ]]> <img src=x '
    "onerror=alert(1)> &amp; \u2028 \"quoted\" 'single'"
)


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config, _ = resolve_campaign("sim")
    db = tmp_path_factory.mktemp("sim") / "sim.db"
    asyncio.run(run_campaign(config, db))
    return db


@pytest.fixture(scope="module")
def sim_page(sim_log: Path) -> str:
    with EventReader(sim_log) as log:
        return render_html(log, sections=report_sections())


def unpack(page: str) -> dict[str, Any]:
    found = re.search(
        r'<script type="application/octet-stream" id="case-pack">([^<]*)</script>', page
    )
    assert found, "no case pack"
    return json.loads(gzip.decompress(base64.b64decode(found.group(1))))


def test_the_page_fetches_nothing(sim_page: str) -> None:
    # No attribute or style that could load anything: every script and style is inline.
    assert not re.search(r"<(script|img|link|iframe|object|embed|audio|video)[^>]*\ssrc=", sim_page)
    assert not re.search(r"<link\b", sim_page)
    assert not re.search(r"https?://", sim_page)
    assert "@import" not in sim_page and "url(" not in sim_page
    assert "default-src 'none'" in sim_page  # and the page forbids any request itself


def test_every_table_of_the_report_is_a_section_with_its_plots(
    sim_log: Path, sim_page: str
) -> None:
    with EventReader(sim_log) as log:
        tables = build_report(log)
    for table in tables:
        assert f'<section id="t-{table.name}"' in sim_page, table.name
    section = sim_page.split('<section id="t-violation_rates"', 1)[1].split("</section>", 1)[0]
    assert section.count('<svg class="plot" role="img"') == 2  # forest + heatmap
    assert '<section id="t-co_violating_pairs"' in sim_page
    network = sim_page.split('<section id="t-co_violating_pairs"', 1)[1].split("</section>")[0]
    # The network draws only the pairs its test flags: in the sim, terms violate together
    # no more often than independently, so the table lists pairs and the plot draws none.
    assert "<td>yes</td>" not in network and 'class="edge"' not in network
    # FDR flags reach the heatmap of attribution per group (the sim plants profession bias).
    heat = sim_page.split('<section id="t-metaquerier_attribution_by_group"', 1)[1]
    assert 'class="cell flag"' in heat.split("</section>")[0]
    # Every plot carries a title and a description for screen readers.
    assert sim_page.count("<svg ") == sim_page.count("<desc id=")


def test_the_pack_holds_every_case_and_its_conversation(sim_log: Path, sim_page: str) -> None:
    pack = unpack(sim_page)
    with EventReader(sim_log) as log:
        cases = log.connection.execute(
            "SELECT COUNT(*) FROM events WHERE kind = 'CaseOpened'"
        ).fetchone()[0]
        turns = log.connection.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
    assert pack["total"] == len(pack["cases"]) == cases
    assert len(pack["conversations"]) == cases
    assert sum(len(c["turns"]) for c in pack["conversations"]) == turns
    violated = [c for c in pack["cases"] if pack["outcomes"][c[3]] == "VIOLATED"]
    assert violated and all(c[5] >= 0 for c in violated)


def test_a_count_links_to_the_cases_its_row_names(sim_page: str) -> None:
    pack = unpack(sim_page)
    rows = re.findall(r'<tr data-filter="([^"]*)">(.*?)</tr>', sim_page)
    assert rows
    for raw, cells in rows:
        target = json.loads(raw.replace("&quot;", '"').replace("&#x27;", "'").replace("&amp;", "&"))
        assert 'class="drill"' in cells
        assert target.get("model") in (None, *pack["models"])
        assert target.get("relation") in (None, *pack["relations"])
        assert all(t in pack["tags"] for t in target["tags"])
    # A row of a group (MetaQuerier attribution by group) names the group.
    assert any("profession" in raw for raw, _ in rows)


def test_the_case_cap_keeps_violations_first(sim_log: Path) -> None:
    with EventReader(sim_log) as log:
        page = render_html(log, sections=report_sections(), max_cases=50)
    pack = unpack(page)
    embedded = [c for c in pack["cases"] if c[5] >= 0]
    assert len(embedded) == 50 and len(pack["cases"]) == pack["total"] > 50
    assert all(pack["outcomes"][c[3]] == "VIOLATED" for c in embedded)
    assert "Conversations embedded: 50 of" in page


def test_a_capped_pack_carries_each_embedded_case_its_own_verdicts_and_turns(
    sim_log: Path,
) -> None:
    # The index merges three case-ordered streams (cases, verdicts, turns) and skips the
    # cases it does not embed: each embedded conversation must still be its own case's.
    with EventReader(sim_log) as log:
        pack = unpack(render_html(log, sections=report_sections(), max_cases=37))
        conn = log.connection
        for row in pack["cases"]:
            case_id, conversation = row[0], row[5]
            if conversation < 0:
                continue
            stored = pack["conversations"][conversation]
            verdicts = conn.execute(
                "SELECT source, outcome, reason FROM verdicts WHERE case_id = ?"
                " ORDER BY decided_at",
                (case_id,),
            ).fetchall()
            assert [tuple(v[:3]) for v in stored["verdicts"]] == verdicts, case_id
            prompts = conn.execute(
                "SELECT prompt FROM turns WHERE case_id = ? ORDER BY turn, attempt", (case_id,)
            ).fetchall()
            assert [t[3] for t in stored["turns"]] == [p for (p,) in prompts], case_id
            own = [v for v in stored["verdicts"] if v[0] == "relation"]
            assert pack["outcomes"][row[3]] == (own[-1][1] if own else "OPEN")
    assert sum(1 for row in pack["cases"] if row[5] >= 0) == 37


def test_the_heatmap_ink_keeps_contrast() -> None:
    def luminance(hex_colour: str) -> float:
        channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    for step in range(101):
        fill, ink = colour(step / 100)
        lum = luminance(fill)
        ratio = 1.05 / (lum + 0.05) if ink == "ink-light" else (lum + 0.05) / 0.05
        assert ratio >= 4.5, (step, fill, ink, ratio)


# --- model text is data ---------------------------------------------------------------


class Quote(RelationBase):
    """Asks once; the verdict quotes the reply in its reason and evidence."""

    name: ClassVar[str] = "hostile.quote"
    family: ClassVar[str] = "hostile"
    summary: ClassVar[str] = "quote the reply"

    def case_count(self) -> int | None:
        return 1

    def make_case(self, index: int, seed: int) -> dict[str, Any]:
        return {"n": index, "group": "<b>group</b>"}

    def step(self, case: Case, transcript: Transcript) -> list[Ask] | Verdict:
        if not transcript.turns:
            return [Ask(thread="main", prompt="Say anything.")]
        reply = transcript.turns[-1].reply or ""
        return Verdict(outcome=Outcome.VIOLATED, reason=reply, evidence={"answer": reply})


def answers(ctx: ReportContext) -> list[Table]:
    rows = [[v.evidence.get("answer", ""), "<b>group</b>", 1] for v in ctx.relation_verdicts]
    return [
        Table(
            "hostile_answers",
            "Answers </section><script>",
            ["answer", "group", "cases"],
            rows,
            plot=(Bars("cases", ("answer",)),),
        )
    ]


HOSTILE = Family(
    name="hostile",
    summary="replies that look like markup",
    relations=(Quote,),
    report_sections=(ReportSection("hostile_answers", 5, answers),),
)


def hostile_log(directory: Path) -> Path:
    db = directory / "hostile.db"
    with extra_family(HOSTILE):
        config = parse_campaign(
            {
                "name": "hostile </title><script>",
                "seed": 1,
                "models": [{"name": "sim:hostile"}],
                "relations": [{"name": "hostile.quote", "cases": 1}],
            },
            source="test",
        )
        asyncio.run(
            run_campaign(
                config,
                db,
                overrides={"sim:hostile": FakeModel(lambda m: HOSTILE_REPLY, name="sim:hostile")},
            )
        )
    return db


def hostile_page(db: Path) -> str:
    with extra_family(HOSTILE), EventReader(db) as log:
        return render_html(log, sections=report_sections())


def test_model_text_is_never_markup(tmp_path: Path) -> None:
    page = hostile_page(hostile_log(tmp_path))
    # Only the page's own two scripts exist: the pack and the browser.
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "<img" not in page and "<b>" not in page and "</title><script>" not in page
    assert page.count("</section>") == page.count("<section ")
    # The reply is shown as text in the table (escaped) and kept exact in the pack.
    assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;&lt;/div&gt;" in page
    pack = unpack(page)
    conversation = pack["conversations"][0]
    assert conversation["turns"][0][4] == HOSTILE_REPLY
    assert conversation["verdicts"][0][2] == HOSTILE_REPLY
    assert conversation["verdicts"][0][3] == {"answer": HOSTILE_REPLY}


def test_report_html_refuses_to_overwrite_without_force(sim_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text("keep me", encoding="utf-8")
    args = ["report", str(sim_log), "--html", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0 and "--force" in result.output
    assert out.read_text(encoding="utf-8") == "keep me"
    result = CliRunner().invoke(main, [*args, "--force"])
    assert result.exit_code == 0, result.output
    assert f"HTML report: {out}" in result.stderr
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    # The log itself is never a target.
    result = CliRunner().invoke(main, ["report", str(sim_log), "--html", str(sim_log), "--force"])
    assert result.exit_code != 0


def test_report_html_with_a_format_also_writes_it(sim_log: Path, tmp_path: Path) -> None:
    page, js = tmp_path / "r.html", tmp_path / "r.json"
    args = ["report", str(sim_log), "--html", str(page), "--format", "json", "--out", str(js)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert page.exists() and "violation_rates" in json.loads(js.read_text(encoding="utf-8"))


def test_a_row_links_by_its_key_columns_only() -> None:
    """A result after the numbers (a flag "no", a test name) is never a label to filter by,
    even when some case's data holds the same word (a recorded "No" answer)."""
    index = CaseIndex()
    for kind, value in [("models", "m"), ("relations", "r"), ("tags", "profession")]:
        index.code(kind, value)
    index.code("tags", "no")
    index.code("tags", "fisher")
    table = Table(
        "t",
        "T",
        ["model", "relation", "group", "cases", "test", "p", "p_fdr", "flagged"],
        [
            ["m", "r", "Profession", 3, "fisher", 0.5, 1.0, "no"],
            ["m", "(all)", "x", 1, "", None, None, "no"],
        ],
    )
    assert key_columns(table) == 3
    assert row_filter(table, table.rows[0], index) == {
        "model": "m",
        "relation": "r",
        "tags": ["profession"],
    }
    # "(all)" is no relation and "x" no label: the row still opens its model's cases.
    assert row_filter(table, table.rows[1], index) == {"model": "m", "tags": []}


@pytest.mark.parametrize("log", ["tests/fixtures/events_v1.db", "transcripts/smollm2.db"])
def test_recorded_logs_render(log: str) -> None:
    """Logs written by earlier versions (and the recorded SmolLM2 transcript) render."""
    path = Path(__file__).resolve().parents[3] / log
    with EventReader(path) as reader:
        page = render_html(reader, sections=report_sections())
        cases = reader.connection.execute(
            "SELECT COUNT(*) FROM events WHERE kind = 'CaseOpened' AND campaign = ?",
            (reader.campaign_id(None),),
        ).fetchone()[0]
    assert unpack(page)["total"] == cases > 0
    assert '<section id="t-violation_rates"' in page


def test_a_table_says_its_unit_once_in_html_and_text() -> None:
    """The unit line is shown above the rows, escaped like every model-derived text."""
    from io import StringIO

    from rich.console import Console

    from harness.cli.commands._render import render_tables
    from harness.reporting.html.page import section_html

    table = Table("t", "T", ["group", "rate"], [["a", 0.5]], unit="a case <b>")
    html = section_html(table, None)
    assert html.count('<p class="unit">unit: a case &lt;b&gt;</p>') == 1
    out = StringIO()
    render_tables([table], Console(file=out, width=120))
    assert out.getvalue().count("unit: a case <b>") == 1
