"""Export: one conversation per line, complete enough to stand without the log."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from harness.cli import main
from harness.store.reader import EventReader

TRANSCRIPT = Path(__file__).resolve().parents[3] / "transcripts" / "smollm2.db"


def test_export_jsonl_one_case_per_line(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    result = CliRunner().invoke(main, ["export", str(TRANSCRIPT), "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = out.read_text(encoding="utf-8").splitlines()
    with EventReader(TRANSCRIPT) as log:
        cases = log.connection.execute(
            "SELECT count(*) FROM events WHERE kind = 'CaseOpened'"
        ).fetchone()[0]
        sent = log.connection.execute(
            "SELECT count(DISTINCT case_id || '#' || turn) FROM events WHERE kind = 'AskSent'"
        ).fetchone()[0]
    items = [json.loads(line) for line in lines]
    print(f"exported {len(items)} conversations with {sum(len(i['turns']) for i in items)} turns")
    assert len(items) == cases
    assert len({i["case_id"] for i in items}) == cases
    assert sum(len(i["turns"]) for i in items) == sent
    for item in items:
        assert item["verdicts"] and item["verdicts"][0]["source"] == "relation"
        for turn in item["turns"]:
            assert turn["messages"][-1] == {"role": "user", "content": turn["prompt"]}
            assert (turn["reply"] is None) != (turn["error"] is None)
