"""On PostgreSQL a reply holding U+0000 (which a ``text`` column cannot hold) is stored
escaped in its JSON payload, read back exactly, and the report of the whole campaign works
(its SQL reads the payloads as JSON, where the escape must not fail the query)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from click.testing import CliRunner

from harness.cli import main
from harness.models.sim import SimModel
from harness.running.campaign import parse_campaign
from harness.running.runner import run_campaign
from harness.store.open import open_reader
from harness.vocabulary.events import ReplyReceived
from harness.vocabulary.model import GenerationParams, Message, Reply

NUL_TEXT = "before\x00after \\u0000 literal"  # a NUL, and the six characters \u0000


class NulModel(SimModel):
    """The simulated model, with a NUL inside every answer's first term (so verdicts'
    evidence holds it too) and a whole line of them in its first answer."""

    sent_nul = False

    async def complete(self, messages: Sequence[Message], params: GenerationParams) -> Reply:
        reply = await super().complete(messages, params)
        text = reply.text.replace("e", "e\x00", 1)
        if not NulModel.sent_nul:
            NulModel.sent_nul = True
            text = NUL_TEXT + "\n" + text
        return reply.model_copy(update={"text": text})


def test_a_nul_in_a_reply_round_trips_and_the_report_works(pg_url: str) -> None:
    config = parse_campaign(
        {
            "name": "nul",
            "models": [{"name": "sim:planted", "max_in_flight": 1}],
            "relations": [{"name": "metaquerier.mr1", "cases": 3}],
        }
    )
    NulModel.sent_nul = False
    summary = asyncio.run(
        run_campaign(config, pg_url, overrides={"sim:planted": NulModel("sim:planted")})
    )
    assert summary.status == "completed" and NulModel.sent_nul
    with open_reader(pg_url) as log:
        texts = [
            e.event.reply.text
            for e in log.events(log.latest_campaign(), kinds=("ReplyReceived",))
            if isinstance(e.event, ReplyReceived)
        ]
    assert any(t.startswith(NUL_TEXT) for t in texts)  # exactly as the model said it
    for argv in (["report", pg_url], ["export", pg_url], ["replay", pg_url, "--verify"]):
        result = CliRunner().invoke(main, argv)
        assert result.exit_code == 0, (argv, result.output)
