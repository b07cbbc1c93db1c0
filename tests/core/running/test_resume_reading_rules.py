"""Resume across the reading rules: a case opened before cases recorded their reading rules
(an old log) continues with the rules it was opened with, so a refusal in it stays INVALID
as it would have been, and the resumed log still verifies offline."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from harness.cli import main
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.verifying.replay import verify_log
from tests.postgres_server import raw_sql

OLD = "metaquerier.mr1/1/r0@sim:test"


def test_an_old_open_case_resumes_with_its_own_reading_rules(
    tmp_path: Path, make_campaign: Any
) -> None:
    db = tmp_path / "old.db"
    config = make_campaign(("metaquerier.mr1", 3, {}))
    spec = config.models[0].model_copy(update={"options": {"refusal_rate": 1.0}})
    config = config.model_copy(update={"models": [spec]})
    assert asyncio.run(run_campaign(config, db)).cases_closed == 3
    # Made to look like a log written before reading rules: the case's data has no
    # "reading", and it was interrupted after its reply, before its verdict.
    raw_sql(
        str(db),
        "UPDATE events SET payload = json_remove(payload, '$.case.data.reading') "
        "WHERE case_id = ? AND kind = 'CaseOpened'",
        OLD,
    )
    raw_sql(
        str(db),
        "DELETE FROM events WHERE case_id = ? AND kind IN ('VerdictReached', 'CaseClosed')",
        OLD,
    )
    # A log written before reading rules was written before digest chains too (and a real
    # interruption rolls a chain back with its events): the hand-made one keeps none.
    raw_sql(str(db), "DELETE FROM case_digests WHERE case_id = ?", OLD)
    result = CliRunner().invoke(main, ["resume", str(db), "--no-report"])
    assert result.exit_code == 0, result.output
    with EventReader(db) as log:
        outcomes = dict(
            log.connection.execute(
                "SELECT case_id, outcome FROM verdicts WHERE source = 'relation'"
            ).fetchall()
        )
    assert outcomes[OLD] == "INVALID"  # the first rules: a refusal was unreadable
    assert {o for c, o in outcomes.items() if c != OLD} == {"REFUSED"}
    assert verify_log(db).differences == []
