"""Answer cache across campaigns: reuse recorded replies instead of paying for them again.

A reply is reused when model, sampling parameters, the full message history, the thread the
ask names and the repeat index all match a reply recorded in an earlier log (``harness run
CAMPAIGN --reuse OLD.db``). The thread keeps two asks of one case with the same request
apart: a matched control (docs/controls.md) asks the source prompt again in its own thread,
and serving it the source's recorded reply would make the control agree with its test.

The per-turn sampling seed the engine derives from (campaign seed, case id, turn) when a
model sets none is left out of the key: it exists only to make repeats differ while the
campaign stays reproducible, and the repeat index in the key already does that job. Keeping
it would make every entry miss as soon as the campaign seed or a case id changes, although
the request the vendor sees differs only in that seed. A seed set explicitly in the
campaign (model params or ``defaults``) is part of the key.

`explain` says why a call missed: which of model / params / messages (the first differing
message) / repeat differ from the closest recorded candidate.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.store.log import LogLike
from harness.store.open import open_reader
from harness.vocabulary.events import AskSent, CampaignStarted, CaseOpened, ReplyReceived
from harness.vocabulary.model import GenerationParams, Message, Reply, request_key


def cache_key(
    model: str,
    messages: Sequence[Message],
    params: GenerationParams,
    *,
    seed_derived: bool,
    thread: str | None = None,
) -> str:
    """The request key, without the sampling seed when the engine derived it, and with the
    thread the ask names: two threads of one case that send the same request (a matched
    control asks the source prompt again) are two draws, never one reply served twice."""
    if seed_derived:
        params = params.model_copy(update={"seed": None})
    key = request_key(model, messages, params)
    return key if thread is None else f"{key}\x1f{thread}"


def derived_seed_models(config: dict[str, Any]) -> set[str]:
    """Models of a recorded campaign config whose calls carry the engine's derived seed."""
    if (config.get("defaults") or {}).get("seed") is not None:
        return set()
    specs = [*(config.get("models") or []), *(config.get("judges") or [])]
    return {s["name"] for s in specs if (s.get("params") or {}).get("seed") is None}


@dataclass(frozen=True)
class RecordedCall:
    """One answered call of a log, with what its cache key is made of."""

    source: str  # "<db>:<case id>#<turn>"
    model: str
    params: dict[str, Any]  # as keyed: derived seed removed
    messages: tuple[Message, ...]
    repeat: int
    reply: Reply
    key: str


def recorded_calls(db: LogLike) -> Iterator[RecordedCall]:
    """Every answered call of every campaign in ``db`` (cached answers included)."""
    with open_reader(db) as log:
        for campaign, started in log.campaigns():
            derived = derived_seed_models(started.config)
            for case_id, events in log.cases(campaign):
                repeat = 0
                sent: dict[tuple[int, int], AskSent] = {}
                for stored in events:
                    ev = stored.event
                    if isinstance(ev, CaseOpened):
                        repeat = ev.case.repeat
                    elif isinstance(ev, AskSent):
                        sent[(ev.turn, ev.attempt)] = ev
                    elif isinstance(ev, ReplyReceived) and (ev.turn, ev.attempt) in sent:
                        ask = sent[(ev.turn, ev.attempt)]
                        is_derived = ask.model in derived
                        params = ask.params
                        if is_derived:
                            params = params.model_copy(update={"seed": None})
                        yield RecordedCall(
                            source=f"{db}:{case_id}#{ev.turn}",
                            model=ask.model,
                            params=params.model_dump(exclude_none=True),
                            messages=tuple(ask.messages),
                            repeat=repeat,
                            reply=ev.reply,
                            key=cache_key(
                                ask.model,
                                ask.messages,
                                ask.params,
                                seed_derived=is_derived,
                                thread=ask.ask.thread,
                            ),
                        )


@dataclass
class LogAnswerCache:
    """An `harness.running.engine.AnswerCache` over earlier logs, indexed in memory by key."""

    sources: list[str]
    entries: dict[tuple[str, int], Reply] = field(default_factory=dict)
    lookups: int = 0
    hits: int = 0

    @classmethod
    def from_logs(cls, paths: Iterable[str | Path]) -> LogAnswerCache:
        cache = cls(sources=[str(p) for p in paths])
        for path in cache.sources:
            for call in recorded_calls(path):
                cache.entries.setdefault((call.key, call.repeat), call.reply)
        return cache

    def lookup(self, key: str, repeat: int) -> Reply | None:
        self.lookups += 1
        reply = self.entries.get((key, repeat))
        if reply is not None:
            self.hits += 1
        return reply


# --- explaining misses -----------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    part: str  # model | params | messages | repeat
    detail: str


@dataclass(frozen=True)
class Explanation:
    turn: int
    thread: str
    hit: bool
    served_from_cache: bool  # the call in DB was answered by the cache at the time
    closest: str | None  # source of the closest recorded call
    differences: list[Difference]


def _shorten(text: str, at: int, width: int = 60) -> str:
    start = max(0, at - width // 3)
    piece = text[start : start + width].replace("\n", "\\n")
    return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")


def _message_difference(new: Sequence[Message], old: Sequence[Message]) -> Difference | None:
    for i, (a, b) in enumerate(zip(new, old, strict=False)):
        if a == b:
            continue
        if a.role != b.role:
            return Difference("messages", f"message {i + 1}: role {a.role!r} vs {b.role!r}")
        matcher = difflib.SequenceMatcher(None, a.content, b.content, autojunk=False)
        first = next((op for op in matcher.get_opcodes() if op[0] != "equal"), None)
        at = first[1] if first else 0
        return Difference(
            "messages",
            f"message {i + 1} of {len(new)} ({a.role}) differs at character {at + 1}: "
            f"new {_shorten(a.content, at)!r} vs recorded "
            f"{_shorten(b.content, first[3] if first else 0)!r}",
        )
    if len(new) != len(old):
        return Difference(
            "messages", f"{len(new)} messages vs {len(old)} recorded (one is a prefix of the other)"
        )
    return None


def compare(
    model: str, params: dict[str, Any], messages: Sequence[Message], repeat: int, old: RecordedCall
) -> list[Difference]:
    out: list[Difference] = []
    if model != old.model:
        out.append(Difference("model", f"{model} vs recorded {old.model}"))
    if params != old.params:
        keys = sorted(set(params) | set(old.params))
        changed = [
            f"{k} {params.get(k)!r} vs recorded {old.params.get(k)!r}"
            for k in keys
            if params.get(k) != old.params.get(k)
        ]
        out.append(Difference("params", "; ".join(changed)))
    diff = _message_difference(messages, old.messages)
    if diff is not None:
        out.append(diff)
    if repeat != old.repeat:
        out.append(Difference("repeat", f"repeat {repeat} vs recorded {old.repeat}"))
    return out


def _common_prefix(a: Sequence[Message], b: Sequence[Message]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def explain_case(
    db: LogLike, campaign: str, case_id: str, old_dbs: Sequence[str | Path]
) -> list[Explanation]:
    """For each turn of ``case_id`` in ``db``: would it hit the cache over ``old_dbs``, and if
    not, how does it differ from the closest recorded call."""
    candidates = [c for path in old_dbs for c in recorded_calls(path)]
    by_key = {(c.key, c.repeat): c for c in reversed(candidates)}
    with open_reader(db) as log:
        started = next((s for cid, s in log.campaigns() if cid == campaign), None)
        assert isinstance(started, CampaignStarted)
        derived = derived_seed_models(started.config)
        repeat = 0
        last_sent: dict[int, AskSent] = {}
        cached_turns: set[int] = set()
        for stored in log.case_events(campaign, case_id):
            ev = stored.event
            if isinstance(ev, CaseOpened):
                repeat = ev.case.repeat
            elif isinstance(ev, AskSent):
                last_sent[ev.turn] = ev
            elif isinstance(ev, ReplyReceived) and ev.cached:
                cached_turns.add(ev.turn)
    out: list[Explanation] = []
    for turn, ask in sorted(last_sent.items()):
        is_derived = ask.model in derived
        key = cache_key(
            ask.model, ask.messages, ask.params, seed_derived=is_derived, thread=ask.ask.thread
        )
        params = (
            ask.params.model_copy(update={"seed": None}) if is_derived else ask.params
        ).model_dump(exclude_none=True)
        hit = by_key.get((key, repeat))
        if hit is not None:
            out.append(
                Explanation(turn, ask.ask.thread, True, turn in cached_turns, hit.source, [])
            )
            continue

        def closeness(
            c: RecordedCall, ask: AskSent = ask, params: dict[str, Any] = params
        ) -> tuple[int, int, int, int, float]:
            prefix = _common_prefix(ask.messages, c.messages)
            nxt = 0.0
            if prefix < min(len(ask.messages), len(c.messages)):
                nxt = difflib.SequenceMatcher(
                    None, ask.messages[prefix].content, c.messages[prefix].content
                ).quick_ratio()
            return (
                prefix,
                int(c.model == ask.model),
                int(c.repeat == repeat),
                int(c.params == params),
                nxt,
            )

        best = max(candidates, key=closeness, default=None)
        diffs = compare(ask.model, params, ask.messages, repeat, best) if best else []
        out.append(
            Explanation(
                turn,
                ask.ask.thread,
                False,
                turn in cached_turns,
                best.source if best else None,
                diffs,
            )
        )
    return out


def open_cache(paths: Sequence[str | Path]) -> LogAnswerCache | None:
    """The cache for ``--reuse`` options; None (no reuse) when none are given."""
    if not paths:
        return None
    import click

    cache = LogAnswerCache.from_logs(paths)
    click.echo(
        f"answer cache: {len(cache.entries)} recorded answers from {', '.join(cache.sources)}",
        err=True,
    )
    return cache
