"""Drive one case of a relation to its verdict offline, and replay a recorded one.

What for: a relation author's test wants "this case, these replies, which verdict?" in one
line, without a campaign file, a log or the engine. `drive_case` does what the engine does
for one case (`harness.running.engine`): it asks the relation for its asks, sends each with
its thread's history (`harness.store.fold.messages_for`) to the subject or to a judge, turns
a model failure into a failed turn (``"kind: message"``, as a failure that used up its
retries), and steps again until a verdict. `replay_case` re-derives a recorded case from its
transcript and names every difference, as ``harness replay`` does for a log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from harness.running.plan import case_id_for
from harness.store.fold import messages_for
from harness.testing.fake_model import FakeModel
from harness.vocabulary.errors import ModelError, RelationError
from harness.vocabulary.model import GenerationParams, Model, recordable_reply
from harness.vocabulary.relation import (
    Ask,
    Case,
    Relation,
    Transcript,
    Turn,
    Verdict,
    derive_seed,
)

__all__ = [
    "DEFAULT_MAX_STEPS",
    "case_for",
    "drive_case",
    "drive_case_async",
    "replay_case",
]

# More steps than any built-in relation takes (the longest, Meta-Fair's jury with repairs,
# takes five): a relation that has not decided by then is taken to loop.
DEFAULT_MAX_STEPS = 16


def case_for(
    relation: Relation,
    index: int = 0,
    *,
    seed: int | None = None,
    repeat: int = 0,
    model: str = "fake:model",
    campaign_seed: int = 0,
) -> Case:
    """Case ``index`` of ``relation`` as a campaign with seed ``campaign_seed`` plans it (the
    same id and case seed, unless ``seed`` is given), for ``model`` and ``repeat``."""
    name = type(relation).name
    case_seed = derive_seed(campaign_seed, name, index) if seed is None else seed
    return Case(
        case_id=case_id_for(name, index, repeat, model),
        relation=name,
        model=model,
        index=index,
        repeat=repeat,
        seed=case_seed,
        data=relation.make_case(index, case_seed),
    )


def _as_model(model: Model | Sequence[str] | None) -> Model:
    if model is None:
        return FakeModel([])
    if isinstance(model, str):
        raise TypeError("give a model, or a list of replies (a str is one reply: wrap it in [])")
    if isinstance(model, Sequence):
        return FakeModel(list(model))
    return model


async def drive_case_async(
    relation: Relation,
    case: Case,
    model: Model | Sequence[str] | None = None,
    *,
    judges: Sequence[Model] = (),
    structured: bool = False,
    params: GenerationParams | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> tuple[Transcript, Verdict]:
    """Run ``case`` of ``relation`` to its verdict with ``model`` as the subject (a `Model`,
    or a list of replies for a `FakeModel`) and ``judges`` as the campaign's judges.

    The asks of one step are sent concurrently, as the engine sends them. ``structured``:
    send each ask's answer shape (`GenerationParams.answer_shape`), as a campaign with
    ``answer_format = "structured"`` does. A `ModelError` becomes a failed turn; any other
    exception (the relation's, or a script that ran out) propagates. Raises `RelationError`
    when the relation asks for nothing, or for a judge not given, or takes more than
    ``max_steps`` steps.
    """
    subject = _as_model(model)
    base = params or GenerationParams()
    transcript = Transcript()
    for _ in range(max_steps):
        result = relation.step(case, transcript)
        if isinstance(result, Verdict):
            return transcript, result
        if not result:
            raise RelationError(f"{case.relation} returned no asks and no verdict")
        first = len(transcript.turns)

        async def send(index: int, ask: Ask, before: Transcript) -> Turn:
            target = subject
            if ask.role == "judge":
                if ask.judge >= len(judges):
                    raise RelationError(
                        f"{case.relation} asked for judge {ask.judge}; {len(judges)} given"
                    )
                target = judges[ask.judge]
            updates: dict[str, Any] = {}
            if ask.max_tokens is not None:
                updates["max_tokens"] = ask.max_tokens
            if structured and ask.answer is not None:
                updates["answer_shape"] = ask.answer
            sent = base.model_copy(update=updates) if updates else base
            try:
                reply = await target.complete(messages_for(ask, before), sent)
            except ModelError as exc:
                return Turn(index=index, ask=ask, error=f"{exc.kind}: {exc}")
            # The text as the engine records it (`recordable_reply`: no lone surrogate).
            return Turn(index=index, ask=ask, reply=recordable_reply(reply).text)

        turns = await asyncio.gather(
            *(send(first + i, a, transcript) for i, a in enumerate(result))
        )
        transcript = transcript.extend(turns)
    raise RelationError(f"{case.relation}: no verdict after {max_steps} steps")


def drive_case(
    relation: Relation,
    case: Case,
    model: Model | Sequence[str] | None = None,
    *,
    judges: Sequence[Model] = (),
    structured: bool = False,
    params: GenerationParams | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> tuple[Transcript, Verdict]:
    """`drive_case_async` from synchronous code (a plain test, a hypothesis property).
    Inside a running event loop (an async test), await `drive_case_async` instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("drive_case was called inside an event loop: await drive_case_async")
    return asyncio.run(
        drive_case_async(
            relation,
            case,
            model,
            judges=judges,
            structured=structured,
            params=params,
            max_steps=max_steps,
        )
    )


def replay_case(
    relation: Relation, case: Case, transcript: Transcript, verdict: Verdict
) -> list[str]:
    """The differences between a recorded case and what ``relation`` computes from its
    recorded replies today (empty: it replays identically). Each step is taken on the
    transcript up to that step's turns; its asks must be the recorded ones, and the last
    step's verdict the recorded verdict."""
    differences: list[str] = []
    done = 0
    while True:
        before = Transcript(turns=transcript.turns[:done])
        result = relation.step(case, before)
        if isinstance(result, Verdict):
            if done != len(transcript.turns):
                differences.append(
                    f"verdict after {done} turns, but {len(transcript.turns)} were recorded"
                )
            if result != verdict:
                differences.append(f"verdict {result!r} != recorded {verdict!r}")
            return differences
        recorded = [t.ask for t in transcript.turns[done : done + len(result)]]
        if recorded != result:
            differences.append(f"asks at turn {done}: {result!r} != recorded {recorded!r}")
            return differences
        done += len(result)
        if not result:
            differences.append(f"no asks and no verdict at turn {done}")
            return differences
