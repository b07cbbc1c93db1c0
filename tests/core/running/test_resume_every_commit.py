"""A crash after every commit, deterministically: what `tests/core/running/test_resume_kill.py`
samples at 50 random moments, here at every batch boundary of a small campaign.

A kill -9 leaves the log as a prefix of its batches in commit order (a batch commits
atomically, and the writer commits them in queue order, numbering them as it goes). So the
log of an uninterrupted run cut after batch b is exactly what a crash after that commit
leaves. Each cut is resumed with a model that counts calls by the counting vendor's key
(messages and seed): no call whose reply the cut holds is sent again, a call in flight at
the cut is sent at most once, no event the cut holds is lost, and the transcripts equal the
uninterrupted run's. Some resumed logs are cut and resumed again (a crash during a resume).
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

from fixtures.counting_vendor import vendor_key
from fixtures.log_snapshot import snapshot, transcripts

from harness.models.sim import SimModel
from harness.running.campaign import CampaignConfig, parse_campaign
from harness.running.runner import resume_campaign, run_campaign
from harness.testing import FakeModel

MODEL = "sim:planted"


def _config() -> CampaignConfig:
    return parse_campaign(
        {
            "name": "every-commit",
            "seed": 11,
            "models": [{"name": MODEL, "max_in_flight": 3}],
            "relations": [
                {"name": "metaquerier.mr1", "cases": 3},  # two turns, one ask a step
                {"name": "metafair.mr11", "cases": 2},  # a first step of two asks
                {"name": "metafair.mr8", "cases": 2},
            ],
        }
    )


def counting_sim() -> FakeModel:
    """The simulated model, its calls recorded (counted per request by `counts`)."""
    return FakeModel(name=MODEL, wraps=SimModel(MODEL))


def counts(model: FakeModel) -> Counter[str]:
    """Calls per request, keyed as the counting vendor keys them."""
    return Counter(
        vendor_key([m.model_dump() for m in r.messages], r.params.seed) for r in model.requests
    )


def _batches(db: Path) -> list[int]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT DISTINCT batch FROM events ORDER BY batch").fetchall()
    conn.close()
    return [b for (b,) in rows]


def _cut(source: Path, target: Path, after_batch: int) -> None:
    """``source`` as a crash right after the commit of ``after_batch`` would have left it."""
    conn = sqlite3.connect(source)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    shutil.copyfile(source, target)
    conn = sqlite3.connect(target)
    conn.execute("DELETE FROM events WHERE batch > ?", (after_batch,))
    conn.commit()
    conn.close()


def _resume_checked(cut: Path, expected: dict[str, object], where: str) -> None:
    rows, replied, in_flight = snapshot(cut)
    model = counting_sim()
    summary = asyncio.run(resume_campaign(cut, overrides={MODEL: model}))
    assert summary.status == "completed", where
    resent_replied = sorted(k for k in counts(model) if k in replied)
    assert resent_replied == [], f"{where}: calls with a committed reply sent again"
    twice = sorted(k for k, n in counts(model).items() if n > 1)
    assert twice == [], f"{where}: calls sent more than once by one resume"
    assert summary.resent_in_flight == len(in_flight), where
    final_rows, _, still_open = snapshot(cut)
    assert rows <= final_rows, f"{where}: committed events lost"
    assert still_open == [], where
    assert transcripts(cut) == expected, f"{where}: transcripts differ from the uninterrupted run"


def test_a_crash_after_any_commit_resends_no_answered_call(tmp_path: Path) -> None:
    full = tmp_path / "full.db"
    model = counting_sim()
    summary = asyncio.run(run_campaign(_config(), full, overrides={MODEL: model}))
    assert summary.status == "completed" and summary.cases_closed == 7
    assert set(counts(model).values()) == {1}  # every request distinct, sent once
    expected = transcripts(full)
    batches = _batches(full)
    assert len(batches) > 30  # one per case step at least: the cuts below cover them all
    for b in batches[:-1]:
        cut = tmp_path / f"cut-{b}.db"
        _cut(full, cut, b)
        _resume_checked(cut, expected, f"cut after batch {b}")
        cut.unlink()
    for b in (batches[len(batches) // 3], batches[2 * len(batches) // 3]):
        # A crash during a resume: the resumed log cut after each of its own commits.
        cut = tmp_path / f"cut-{b}.db"
        _cut(full, cut, b)
        asyncio.run(resume_campaign(cut, overrides={MODEL: counting_sim()}))
        for c in [x for x in _batches(cut) if x > b][:-1]:
            again = tmp_path / f"cut-{b}-{c}.db"
            _cut(cut, again, c)
            _resume_checked(again, expected, f"cut after batch {b}, resumed, cut after {c}")
            again.unlink()
        cut.unlink()
