"""Export transcripts: one conversation (case) per line, streamed from the log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

from harness.store.fold import CaseState, TurnState, fold_or_raise
from harness.store.log import LogLike
from harness.store.open import open_reader


def _turn(t: TurnState) -> dict[str, Any]:
    last = t.sent[-1] if t.sent else None
    out: dict[str, Any] = {
        "turn": t.turn,
        "thread": t.ask.thread,
        "role": t.ask.role,
        "model": last.model if last else None,
        "prompt": t.ask.prompt,
        "messages": [m.model_dump() for m in last.messages] if last else [],
        "params": last.params.model_dump(exclude_none=True) if last else {},
        "attempts": len(t.sent),
        "reply": None,
        "error": None,
    }
    if t.reply is not None:
        r = t.reply.reply
        out.update(
            reply=r.text,
            usage=r.usage.model_dump(),
            latency_s=r.latency_s,
            finish_reason=r.finish_reason,
            cost_usd=r.cost_usd,
            cached=t.reply.cached,
        )
    elif t.failures:
        out["error"] = f"{t.failures[-1].error_kind}: {t.failures[-1].message}"
    else:
        out["error"] = "no outcome recorded (in flight when the campaign stopped)"
    return out


def conversation(campaign: str, state: CaseState) -> dict[str, Any]:
    c = state.case
    return {
        "campaign": campaign,
        "case_id": c.case_id,
        "relation": c.relation,
        "model": c.model,
        "index": c.index,
        "repeat": c.repeat,
        "seed": c.seed,
        "data": c.data,
        "closed": state.closed,
        "turns": [_turn(t) for _, t in sorted(state.turns.items())],
        "verdicts": [
            {"source": source, **v.model_dump(mode="json")} for source, v in state.verdicts
        ],
    }


def conversations(db: LogLike, campaign: str | None = None) -> Iterator[dict[str, Any]]:
    with open_reader(db) as log:
        campaign = log.campaign_id(campaign)
        for case_id, events in log.cases(campaign):
            yield conversation(campaign, fold_or_raise(case_id, events))


def write_jsonl(db: LogLike, out: TextIO, campaign: str | None = None) -> int:
    n = 0
    for item in conversations(db, campaign):
        out.write(json.dumps(item, ensure_ascii=False, sort_keys=False) + "\n")
        n += 1
    return n
