"""Batch mode end to end against the fakes of the three vendors' batch APIs: a multi-turn
MetaQuerier relation and a judged Meta-Fair relation, run through each vendor's SDK in
batch mode, give the transcripts and verdicts of the same campaign run directly against the
direct fake (same seeds); replay verifies the batch log with 0 differences; no request is
paid twice; and the cost in the log and in the report equals the fake's billing at the
vendor's batch price."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from batch_fakes import FakeBatchVendor
from fixtures.log_snapshot import transcripts
from vendor_fakes import FakeVendor
from vendor_support import IDENTIFIERS, base_url

from harness.models.providers import batch_price_for
from harness.reporting.batch_replies import batch_replies
from harness.reporting.tables import ReportContext
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from harness.verifying.replay import verify_log
from harness.vocabulary.errors import CampaignAbortedError
from harness.vocabulary.events import ReplyReceived

CORPUS = Path(__file__).resolve().parents[4] / "corpora" / "metafair" / "crossed_open_tests.json"
BATCH_VENDORS = ("openai", "anthropic", "google")
# The judge is another model of the same vendor (a model never grades its own answers).
JUDGES = {
    "openai": "gpt-4.1-nano",
    "anthropic": "claude-3-5-haiku",
    "google": "gemini-2.0-flash-lite",
}


def campaign(scheme: str, url: str, mode: str, **faults: Any) -> dict[str, Any]:
    name = f"{scheme}:{IDENTIFIERS[scheme]}"
    options = {"base_url": url + ("/v1" if scheme == "openai" else "")}
    relations: list[dict[str, Any]] = [{"name": "metaquerier.mr1", "cases": 8}]
    if CORPUS.exists():
        relations.append(
            {"name": "metafair.mr1", "cases": 4, "options": {"jury": 1, "testset": str(CORPUS)}}
        )
    return {
        "name": "vendor-batch-e2e",
        "seed": 5,
        "models": [{"name": name, "mode": mode, "options": options}],
        "judges": [
            {
                "name": f"{scheme}:{JUDGES[scheme]}",
                "mode": mode,
                "answer_format": "structured",
                "params": {"temperature": 0.0, "seed": 0},
                "options": options,
            }
        ],
        "relations": relations,
        "batch": {"wave_size": 200, "wave_age_s": 0.05, "poll_s": 0.02, "poll_max_s": 0.05},
        "limits": {"max_attempts": 4},
    }


def run(data: dict[str, Any], db: Path) -> None:
    summary = asyncio.run(run_campaign(parse_campaign(data), db))
    assert summary.status == "completed" and not summary.retryable, summary.reason


def replies(db: Path) -> list[ReplyReceived]:
    with EventReader(db) as log:
        return [
            e.event
            for e in log.events(kinds=("ReplyReceived",))
            if isinstance(e.event, ReplyReceived)
        ]


@pytest.mark.parametrize("scheme", BATCH_VENDORS)
def test_a_batch_campaign_equals_the_direct_one_at_the_batch_price(
    scheme: str, vendor: FakeVendor, canary_keys: dict[str, str], tmp_path: Path
) -> None:
    run(campaign(scheme, base_url(scheme, vendor).removesuffix("/v1"), "direct"), tmp_path / "d.db")
    fake = FakeBatchVendor(polls=2).start()
    try:
        run(campaign(scheme, fake.url, "batch"), tmp_path / "b.db")
        stats = fake.stats()
    finally:
        fake.stop()

    direct, batched = transcripts(tmp_path / "d.db"), transcripts(tmp_path / "b.db")
    assert len(batched) == (12 if CORPUS.exists() else 8)
    assert direct == batched  # every turn's text and every verdict
    verified = verify_log(tmp_path / "b.db")
    assert verified.cases == len(batched) and not verified.differences

    got = replies(tmp_path / "b.db")
    assert got and all(r.batch for r in got)
    # Billed once per recorded reply, none twice.
    assert stats["billed_twice"] == [] and stats["billed_requests"] == len(got)
    # The cost recorded equals the fake's billed tokens at the batch price.
    billed_usd = 0.0
    for model, (tokens_in, tokens_out) in stats["tokens_by_model"].items():
        assert model in (IDENTIFIERS[scheme], JUDGES[scheme]), model
        price = batch_price_for(scheme, model, None, None)
        assert price is not None
        billed_usd += (tokens_in * price.in_per_mtok + tokens_out * price.out_per_mtok) / 1e6
    assert billed_usd > 0
    assert sum(r.reply.cost_usd or 0.0 for r in got) == pytest.approx(billed_usd)
    with EventReader(tmp_path / "b.db") as log:
        assert log.recorded_spend(log.campaign_id(None)) == pytest.approx(billed_usd)
        (table,) = batch_replies(ReportContext(log, log.campaign_id(None)))
    assert sum(row[1] for row in table.rows) == len(got)
    assert sum(row[3] for row in table.rows) == pytest.approx(billed_usd)


def test_failed_and_expired_requests_are_resent_and_paid_once(
    vendor: FakeVendor, canary_keys: dict[str, str], tmp_path: Path
) -> None:
    run(campaign("openai", vendor.url, "direct"), tmp_path / "d.db")
    faults = ("expire", "500", "ok", "429", "ok")
    fake = FakeBatchVendor(
        polls=2, transient=True, chooser=lambda _id, index: faults[index % len(faults)]
    ).start()
    try:
        run(campaign("openai", fake.url, "batch"), tmp_path / "b.db")
        stats = fake.stats()
    finally:
        fake.stop()
    assert transcripts(tmp_path / "d.db") == transcripts(tmp_path / "b.db")
    assert stats["billed_twice"] == [] and stats["billed_requests"] == len(
        replies(tmp_path / "b.db")
    )
    assert stats["requests_sent"] > stats["billed_requests"]  # the faults were met and resent


def test_the_estimate_of_a_batch_model_is_at_the_batch_price() -> None:
    from harness.models.providers import estimate_cost
    from harness.running.plan import Plan

    def estimate(mode: str, **options: Any) -> float | None:
        data = campaign("openai", "http://127.0.0.1:1", mode)
        data["models"][0]["options"].update(options)
        data["judges"] = []
        data["relations"] = data["relations"][:1]
        config = parse_campaign(data)
        return estimate_cost(config, Plan(config))[0].usd

    direct, batched = estimate("direct"), estimate("batch")
    assert direct is not None and batched == pytest.approx(direct / 2)
    priced = estimate("batch", batch_price_in_per_mtok=0.0, batch_price_out_per_mtok=0.0)
    assert priced == 0.0


def test_batches_in_flight_keep_to_the_enqueued_token_limit(
    vendor: FakeVendor, canary_keys: dict[str, str], tmp_path: Path
) -> None:
    """With ``batch_enqueued_tokens`` set to the fake's own limit, waves are cut and held so
    the fake never refuses a batch; the verdicts are still the direct run's."""
    run(campaign("openai", vendor.url, "direct"), tmp_path / "d.db")
    limit = 1500  # a handful of requests' worst case (input + max_tokens)
    fake = FakeBatchVendor(polls=2, enqueued_token_limit=limit).start()
    try:
        data = campaign("openai", fake.url, "batch")
        for model in (*data["models"], *data["judges"]):
            model["options"]["batch_enqueued_tokens"] = limit
        run(data, tmp_path / "b.db")
        stats = fake.stats()
    finally:
        fake.stop()
    assert stats["rejected"] == 0 and 0 < stats["peak_enqueued"] <= limit
    assert stats["billed_twice"] == []
    assert stats["billed_requests"] == len(replies(tmp_path / "b.db"))
    assert transcripts(tmp_path / "d.db") == transcripts(tmp_path / "b.db")
    # Without the option the same waves go whole, and the fake refuses some of them (its
    # refusals may go on until the run stops as a vendor outage, resumable).
    fake = FakeBatchVendor(polls=2, enqueued_token_limit=limit).start()
    try:
        with contextlib.suppress(CampaignAbortedError):
            config = parse_campaign(campaign("openai", fake.url, "batch"))
            asyncio.run(run_campaign(config, tmp_path / "u.db"))
        unbounded = fake.stats()
    finally:
        fake.stop()
    assert unbounded["rejected"] > 0


def test_a_bad_batch_enqueued_tokens_exits_2_naming_the_field(
    canary_keys: dict[str, str], tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from harness.cli.main import main

    toml = tmp_path / "c.toml"
    toml.write_text(
        'name = "bad"\n[[models]]\nname = "openai:gpt-4o-mini"\nmode = "batch"\n'
        'options = { base_url = "http://127.0.0.1:1/v1", batch_enqueued_tokens = 0 }\n'
        '[[relations]]\nname = "metaquerier.mr1"\ncases = 1\n'
    )
    db = tmp_path / "bad.db"
    result = CliRunner().invoke(main, ["run", str(toml), "--db", str(db)])
    assert result.exit_code == 2, result.output
    assert "batch_enqueued_tokens" in result.output and not db.exists()


def test_a_gemini_campaign_through_input_files_equals_the_direct_one(
    vendor: FakeVendor, canary_keys: dict[str, str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Every wave over the inline size (made 0 here) goes as a JSONL file through the Files
    API and is read back from its responses file: same transcripts, paid once."""
    from harness.models.providers._google_batch import GeminiBatchClient

    monkeypatch.setattr(GeminiBatchClient, "inline_bytes", 0)
    run(campaign("google", vendor.url, "direct"), tmp_path / "d.db")
    fake = FakeBatchVendor(polls=2).start()
    try:
        run(campaign("google", fake.url, "batch"), tmp_path / "b.db")
        stats = fake.stats()
        inputs = [name for name in fake.files if name.startswith("files/in-")]
        batches = list(fake.batches.values())
    finally:
        fake.stop()
    assert transcripts(tmp_path / "d.db") == transcripts(tmp_path / "b.db")
    assert batches and all(b.input_file_id in inputs and b.output_file_id for b in batches)
    assert stats["billed_twice"] == []
    assert stats["billed_requests"] == len(replies(tmp_path / "b.db"))
    assert not verify_log(tmp_path / "b.db").differences
