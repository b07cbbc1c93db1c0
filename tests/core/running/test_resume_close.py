"""How few commits a case waits for (docs/architecture.md, "How many commits a case waits
for"): CaseOpened is committed with the first AskSent and before the first call; the closing
batch is queued without being awaited, and a crash that loses it costs nothing: resume
recomputes the same verdict from the committed replies without a call."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from harness.models.sim import SimModel
from harness.running.campaign import parse_campaign
from harness.running.engine import current_call
from harness.running.runner import resume_campaign, run_campaign
from harness.testing import FakeModel
from harness.vocabulary.model import GenerationParams, Message

MODEL = "sim:planted"


def _config(cases: int) -> object:
    return parse_campaign(
        {
            "name": "close",
            "seed": 4,
            "models": [{"name": MODEL, "max_in_flight": 8}],
            "relations": [
                # Without the matched control: the cases stay two-turn (the batches below);
                # MR11: a first step of two asks.
                {"name": "metaquerier.mr1", "cases": cases, "options": {"control": False}},
                {"name": "metafair.mr11", "cases": cases, "options": {"control": False}},
            ],
        }
    )


def committed_first_sim(db: Path, early: list[tuple[str, int]]) -> FakeModel:
    """The simulated model, noting in ``early`` every call that goes out before its case's
    CaseOpened and its own AskSent are committed: it reads the log on its own connection,
    which sees committed rows only."""

    def check(messages: Sequence[Message], params: GenerationParams) -> None:
        ctx = current_call.get()
        assert ctx is not None
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            kinds = {
                (kind, turn)
                for kind, turn in conn.execute(
                    "SELECT kind, turn FROM events WHERE case_id = ?", (ctx.case_id,)
                )
            }
        finally:
            conn.close()
        if ("CaseOpened", None) not in kinds or ("AskSent", ctx.turn) not in kinds:
            early.append((ctx.case_id, ctx.turn))

    return FakeModel(name=MODEL, wraps=SimModel(MODEL), on_call=check)


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(sql).fetchall()
    conn.close()
    return rows


async def test_calls_wait_for_case_opened_and_their_ask(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    early: list[tuple[str, int]] = []
    model = committed_first_sim(db, early)
    summary = await run_campaign(_config(6), db, overrides={MODEL: model})
    assert summary.status == "completed" and summary.cases_closed == 12
    assert model.calls > 0 and early == []
    # MR1's first step is one ask: CaseOpened shares its batch; MR11's has two: CaseOpened
    # is a batch of its own. The verdict and CaseClosed always share one.
    first = _rows(
        db,
        "SELECT o.case_id, count(*) FROM events o JOIN events a ON a.batch = o.batch"
        " WHERE o.kind = 'CaseOpened' GROUP BY o.case_id",
    )
    sizes = {case_id.split("/")[0]: n for case_id, n in first}  # type: ignore[union-attr]
    assert sizes == {"metaquerier.mr1": 2, "metafair.mr11": 1}
    closing = _rows(
        db,
        "SELECT count(*) FROM events v JOIN events c ON c.batch = v.batch"
        " AND c.case_id = v.case_id WHERE v.kind = 'VerdictReached' AND c.kind = 'CaseClosed'",
    )
    assert closing == [(12,)]
    # A two-turn MR1 case: 5 batches, of which 4 were awaited (the close was not).
    per_case = _rows(
        db,
        "SELECT count(DISTINCT batch) FROM events WHERE case_id LIKE 'metaquerier.mr1/%'"
        " GROUP BY case_id",
    )
    assert {n for (n,) in per_case} == {5}


async def test_a_lost_closing_batch_is_recomputed_without_a_call(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    await run_campaign(_config(5), db)  # type: ignore[arg-type]
    before = _rows(db, "SELECT case_id, outcome, reason FROM verdicts ORDER BY case_id")
    assert len(before) == 10
    # A crash before the closing batches of some cases were committed: they never were.
    conn = sqlite3.connect(db)
    lost = [r[0] for r in conn.execute("SELECT DISTINCT case_id FROM events WHERE case_id != ''")]
    lost = lost[::2]
    conn.executemany(
        "DELETE FROM events WHERE case_id = ? AND kind IN ('VerdictReached', 'CaseClosed')",
        [(c,) for c in lost],
    )
    conn.execute("DELETE FROM events WHERE kind = 'CampaignFinished'")
    conn.commit()
    conn.close()
    model = FakeModel(name=MODEL, wraps=SimModel(MODEL))
    summary = await resume_campaign(db, overrides={MODEL: model})
    assert model.calls == 0
    assert summary.status == "completed" and summary.cases_closed == len(lost)
    assert summary.resent_in_flight == 0
    after = _rows(db, "SELECT case_id, outcome, reason FROM verdicts ORDER BY case_id")
    assert after == before
