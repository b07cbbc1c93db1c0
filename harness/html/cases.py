"""The cases behind an HTML report: an index of every case (model, relation, outcome and
the labels its data carries) and each case's conversation turn by turn, read from the
log's SQL views (``turns``, ``verdicts``) and packed as gzip-compressed JSON in base64.

Base64 holds no ``<``, ``&`` or quote: model text inside it can never close the script
element that carries it nor be read as markup; the page decodes it and shows every string
with ``textContent``. A campaign of 100,000 cases stays small because gzip folds the
prompts its cases share; ``max_conversations`` caps the conversations embedded (the index
keeps every case, so every count still links to its cases).
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.tables import ReportContext

MAX_TAG_CHARS = 80  # longer strings (prompts, answers) are text, not labels to filter by
OUTCOMES = ("VIOLATED", "HELD", "INVALID", "OPEN")


def labels(value: Any, out: set[str]) -> None:
    """The short strings of a case's data or evidence (values, not keys), lower-cased: the
    labels a report row names (a group, an attribute, a term, a concern)."""
    if isinstance(value, str):
        if 0 < len(value) <= MAX_TAG_CHARS:
            out.add(value.lower())
    elif isinstance(value, dict):
        for v in value.values():
            labels(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            labels(v, out)


@dataclass
class CaseIndex:
    """Every case of the campaign, compactly: strings once in ``models``, ``relations``
    and ``tags``, each case a list of indexes into them."""

    models: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    conversations: list[dict[str, Any]] = field(default_factory=list)
    total: int = 0
    cap: int | None = None
    _ids: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)

    def code(self, kind: str, value: str) -> int:
        table = self._ids.setdefault(kind, {})
        if value not in table:
            table[value] = len(table)
            getattr(self, kind).append(value)
        return table[value]

    def known(self, kind: str, value: str) -> bool:
        return value in self._ids.get(kind, {})

    def payload(self) -> dict[str, Any]:
        return {
            "models": self.models,
            "relations": self.relations,
            "outcomes": list(OUTCOMES),
            "tags": self.tags,
            "cases": self.rows,
            "conversations": self.conversations,
            "total": self.total,
            "cap": self.cap,
        }


def _turns(ctx: ReportContext) -> Iterator[tuple[str, list[list[Any]]]]:
    """Each case's turns from the ``turns`` view: the last attempt of each turn."""
    cur = ctx.log.connection.execute(
        "SELECT case_id, turn, attempt, thread, role, prompt, reply, error_kind FROM turns"
        " WHERE campaign = ? ORDER BY case_id, turn, attempt",
        (ctx.campaign,),
    )
    case: str | None = None
    turns: list[list[Any]] = []
    last: int | None = None
    for case_id, turn, _attempt, thread, role, prompt, reply, error in cur:
        if case_id != case:
            if case is not None:
                yield case, turns
            case, turns, last = case_id, [], None
        item = [turn, thread, role, prompt, reply, error]
        if last == turn:
            turns[-1] = item  # a retried turn: its last attempt is the one that counts
        else:
            turns.append(item)
        last = turn
    if case is not None:
        yield case, turns


def _verdicts(ctx: ReportContext) -> dict[str, list[list[Any]]]:
    out: dict[str, list[list[Any]]] = {}
    cur = ctx.log.connection.execute(
        "SELECT case_id, source, outcome, reason, evidence FROM verdicts WHERE campaign = ?"
        " ORDER BY case_id, decided_at",
        (ctx.campaign,),
    )
    for case_id, source, outcome, reason, evidence in cur:
        out.setdefault(case_id, []).append(
            [source, outcome, reason, json.loads(evidence or "null")]
        )
    return out


def _priority(outcome: str) -> int:
    """Which conversations a cap keeps first: the ones a reader opens (violations, then
    INVALID and unfinished ones), then the rest."""
    return {"VIOLATED": 0, "INVALID": 1, "OPEN": 2}.get(outcome, 3)


def case_index(ctx: ReportContext, max_conversations: int | None = None) -> CaseIndex:
    index = CaseIndex(cap=max_conversations)
    verdicts = _verdicts(ctx)
    data = ctx.case_data
    cur = ctx.log.connection.execute(
        "SELECT case_id, json_extract(payload, '$.case.relation'),"
        " json_extract(payload, '$.case.model') FROM events"
        " WHERE campaign = ? AND kind = 'CaseOpened' ORDER BY case_id",
        (ctx.campaign,),
    )
    cases = cur.fetchall()
    outcome_of: dict[str, str] = {}
    for case_id, _, _ in cases:
        own = [v for v in verdicts.get(case_id, []) if v[0] == "relation"]
        outcome_of[case_id] = str(own[-1][1]) if own else "OPEN"
    ranked = sorted(cases, key=lambda c: (_priority(outcome_of[c[0]]), c[0]))
    limit = len(ranked) if max_conversations is None else max_conversations
    embedded = {c[0] for c in ranked[:limit]}
    turns = dict(t for t in _turns(ctx) if t[0] in embedded)
    for case_id, relation, model in cases:
        found: set[str] = set()
        labels(data.get(case_id, {}), found)
        for v in verdicts.get(case_id, []):
            if v[0] == "relation":
                labels(v[3], found)
        tags = sorted(index.code("tags", t) for t in sorted(found))
        conversation = -1
        if case_id in embedded:
            conversation = len(index.conversations)
            index.conversations.append(
                {
                    "data": data.get(case_id, {}),
                    "turns": turns.get(case_id, []),
                    "verdicts": verdicts.get(case_id, []),
                }
            )
        index.rows.append(
            [
                case_id,
                index.code("models", str(model)),
                index.code("relations", str(relation)),
                OUTCOMES.index(outcome_of[case_id]) if outcome_of[case_id] in OUTCOMES else 3,
                tags,
                conversation,
            ]
        )
    index.total = len(cases)
    return index


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def packed(index: CaseIndex) -> str:
    """The index as base64 of gzip of JSON: what the page's script decodes. Compressed a
    conversation at a time, so the JSON is never held whole (at 100,000 cases it would
    take hundreds of megabytes)."""
    gzip_stream = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # gzip framing
    chunks: list[bytes] = []

    def write(text: str) -> None:
        chunks.append(gzip_stream.compress(text.encode("utf-8")))

    payload = index.payload()
    conversations = payload.pop("conversations")
    write(_dumps(payload)[:-1] + ',"conversations":[')
    for i, conversation in enumerate(conversations):
        write(("," if i else "") + _dumps(conversation))
    write("]}")
    chunks.append(gzip_stream.flush())
    return base64.b64encode(b"".join(chunks)).decode("ascii")
