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
import codecs
import heapq
import json
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.reporting.tables import ReportContext

MAX_TAG_CHARS = 80  # longer strings (prompts, answers) are text, not labels to filter by
OUTCOMES = ("VIOLATED", "HELD", "INVALID", "REFUSED", "OPEN")


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


class CompressedText:
    """Text compressed as it is written: what is held is the compressed bytes, never the
    text. The case pack is gzip (``wbits`` 16 + 15: the framing the page's
    DecompressionStream reads) at level 9; the conversations kept aside until the pack
    reaches them are raw deflate at level 1 (read back once, here)."""

    GATHER = 1 << 16  # characters gathered before one compress call

    def __init__(self, level: int = 9, wbits: int = 16 + zlib.MAX_WBITS) -> None:
        self._wbits = wbits
        self._stream = zlib.compressobj(level, zlib.DEFLATED, wbits)
        self._chunks: list[bytes] = []
        self._pending: list[str] = []
        self._pending_chars = 0

    def write(self, text: str) -> None:
        # Many small writes (a case row is ~60 characters) are gathered first: one
        # compress call per row costs more than the rows' JSON. (Deflate's output does not
        # depend on how its input is split: the pack is the same bytes either way.)
        self._pending.append(text)
        self._pending_chars += len(text)
        if self._pending_chars >= self.GATHER:
            self._drain()

    def _drain(self) -> None:
        if self._pending:
            self._chunks.append(self._stream.compress("".join(self._pending).encode("utf-8")))
        self._pending, self._pending_chars = [], 0

    def finish(self) -> list[bytes]:
        """The compressed chunks, the stream closed: handed over, not kept (once)."""
        self._drain()
        self._chunks.append(self._stream.flush())
        chunks, self._chunks = self._chunks, []
        return chunks

    def read_back(self) -> Iterator[str]:
        """The text written, in pieces of whole characters (once: `finish`); each
        compressed chunk is freed as it is inflated."""
        chunks = self.finish()
        chunks.reverse()  # popped from the end
        inflate = zlib.decompressobj(self._wbits)
        text = codecs.getincrementaldecoder("utf-8")()
        while chunks:
            piece = text.decode(inflate.decompress(chunks.pop()))
            if piece:
                yield piece
        rest = text.decode(inflate.flush(), final=True)
        if rest:
            yield rest


def _spool() -> CompressedText:
    return CompressedText(1, -zlib.MAX_WBITS)


@dataclass
class CaseIndex:
    """Every case of the campaign, compactly: strings once in ``models``, ``relations``
    and ``tags``, each case a list of indexes into them. The case rows go straight into
    the compressed pack (`add_case`) and the conversations (capped) into a compressed
    spool (`add_conversation`): a campaign of a million cases holds their compressed
    bytes, never a list or a dictionary per case."""

    models: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    shown: int = 0  # conversations carried
    total: int = 0
    cap: int | None = None
    _ids: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    _pack: CompressedText = field(default_factory=CompressedText, repr=False)
    _conversations: CompressedText = field(default_factory=_spool, repr=False)

    def code(self, kind: str, value: str) -> int:
        table = self._ids.setdefault(kind, {})
        if value not in table:
            table[value] = len(table)
            getattr(self, kind).append(value)
        return table[value]

    def known(self, kind: str, value: str) -> bool:
        return value in self._ids.get(kind, {})

    def add_conversation(self, conversation: dict[str, Any]) -> int:
        """One case's conversation (its data, turns and verdicts), kept compressed; its
        number in the pack's list of conversations."""
        self._conversations.write(("," if self.shown else "") + _dumps(conversation))
        self.shown += 1
        return self.shown - 1

    def add_case(self, row: list[Any]) -> None:
        """One case's row: [case id, model, relation, outcome, tags, conversation]."""
        self._pack.write(('{"cases":[' if self.total == 0 else ",") + _dumps(row))
        self.total += 1

    def finish(self) -> list[bytes]:
        """The whole pack, gzip-compressed, in chunks: the rows written so far, then the
        rest (the page reads it by key, so the cases may come first). Once: the pack and
        the conversations are handed over as it finishes."""
        self._pack.write('{"cases":[' if self.total == 0 else "")
        self._pack.write('],"conversations":[')
        for piece in self._conversations.read_back():
            self._pack.write(piece)
        rest = {
            "models": self.models,
            "relations": self.relations,
            "outcomes": list(OUTCOMES),
            "tags": self.tags,
            "total": self.total,
            "cap": self.cap,
        }
        self._pack.write("]," + _dumps(rest)[1:])
        return self._pack.finish()


def _grouped(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
    """Rows ordered by case id (their first column), as one (case id, rows) pair a case."""
    case: str | None = None
    group: list[tuple[Any, ...]] = []
    for row in rows:
        if row[0] != case:
            if case is not None:
                yield case, group
            case, group = row[0], []
        group.append(row)
    if case is not None:
        yield case, group


class _ByCase:
    """The groups of a case-ordered stream, taken in step with another case-ordered stream:
    ``of(case_id)`` skips the cases the other stream does not have and returns the rows of
    ``case_id`` (none when it has none). Both streams come ordered by the store, which
    orders case ids by their bytes (SQLite's BINARY, PostgreSQL's ``COLLATE "C"``): the
    order of Python's ``str`` comparison too."""

    def __init__(self, rows: Iterable[tuple[Any, ...]]) -> None:
        self._groups = _grouped(rows)
        self._head: tuple[str, list[tuple[Any, ...]]] | None = next(self._groups, None)

    def of(self, case_id: str) -> list[tuple[Any, ...]]:
        while self._head is not None and self._head[0] < case_id:
            self._head = next(self._groups, None)
        if self._head is None or self._head[0] != case_id:
            return []
        rows = self._head[1]
        self._head = next(self._groups, None)
        return rows


def _turn_rows(ctx: ReportContext) -> Iterator[tuple[Any, ...]]:
    return iter(
        ctx.log.connection.execute(
            "SELECT case_id, turn, attempt, thread, role, prompt, reply, error_kind FROM turns"
            " WHERE campaign = ? ORDER BY case_id, turn, attempt",
            (ctx.campaign,),
        )
    )


def _last_attempts(rows: list[tuple[Any, ...]]) -> list[list[Any]]:
    """A case's turns: the last attempt of each (a retried turn's last attempt counts)."""
    turns: list[list[Any]] = []
    last: int | None = None
    for _case, turn, _attempt, thread, role, prompt, reply, error in rows:
        item = [turn, thread, role, prompt, reply, error]
        if last == turn:
            turns[-1] = item
        else:
            turns.append(item)
        last = turn
    return turns


def _verdict_rows(ctx: ReportContext, columns: str, where: str = "") -> Iterator[tuple[Any, ...]]:
    return iter(
        ctx.log.connection.execute(
            f"SELECT case_id, {columns} FROM verdicts WHERE campaign = ?{where}"
            " ORDER BY case_id, decided_at",
            (ctx.campaign,),
        )
    )


def _opened(ctx: ReportContext, columns: str) -> Iterator[tuple[Any, ...]]:
    return iter(
        ctx.log.connection.execute(
            f"SELECT case_id{columns} FROM events"
            " WHERE campaign = ? AND kind = 'CaseOpened' ORDER BY case_id",
            (ctx.campaign,),
        )
    )


def _outcome(relation_outcomes: list[tuple[Any, ...]]) -> str:
    """A case's outcome: its relation's latest verdict, OPEN while it has none."""
    return str(relation_outcomes[-1][-1]) if relation_outcomes else "OPEN"


def _priority(outcome: str) -> int:
    """Which conversations a cap keeps first: the ones a reader opens (violations, then
    INVALID and unfinished ones), then the rest."""
    return {"VIOLATED": 0, "INVALID": 1, "REFUSED": 1, "OPEN": 2}.get(outcome, 3)


def _embedded(ctx: ReportContext, cap: int) -> set[str]:
    """The ``cap`` cases whose conversations the page carries, by (priority, case id): one
    streamed pass that keeps ``cap`` entries, not one per case."""
    outcomes = _ByCase(_verdict_rows(ctx, "outcome", " AND source = 'relation'"))
    ranked = ((_priority(_outcome(outcomes.of(c))), c) for (c,) in _opened(ctx, ""))
    return {case_id for _, case_id in heapq.nsmallest(cap, ranked)}


def case_index(ctx: ReportContext, max_conversations: int | None = None) -> CaseIndex:
    """Every case's row and the conversations of up to ``max_conversations`` of them, read
    in one pass over the cases in id order beside their verdicts and turns (streams merged
    by case id): what is held is the page's own payload, not the log's rows."""
    index = CaseIndex(cap=max_conversations)
    embedded = None if max_conversations is None else _embedded(ctx, max_conversations)
    verdicts = _ByCase(_verdict_rows(ctx, "source, outcome, reason, evidence"))
    turns = _ByCase(_turn_rows(ctx))
    opened = _opened(
        ctx,
        ", json_extract(payload, '$.case.relation'), json_extract(payload, '$.case.model'),"
        " json_extract(payload, '$.case.data')",
    )
    for case_id, relation, model, data_json in opened:
        data = json.loads(data_json or "{}")
        own = [
            [source, outcome, reason, json.loads(evidence or "null")]
            for _, source, outcome, reason, evidence in verdicts.of(case_id)
        ]
        relation_verdicts = [v for v in own if v[0] == "relation"]
        outcome = str(relation_verdicts[-1][1]) if relation_verdicts else "OPEN"
        found: set[str] = set()
        labels(data, found)
        for v in relation_verdicts:
            labels(v[3], found)
        tags = sorted(index.code("tags", t) for t in sorted(found))
        conversation = -1
        if embedded is None or case_id in embedded:
            conversation = index.add_conversation(
                {"data": data, "turns": _last_attempts(turns.of(case_id)), "verdicts": own}
            )
        index.add_case(
            [
                case_id,
                index.code("models", str(model)),
                index.code("relations", str(relation)),
                OUTCOMES.index(outcome) if outcome in OUTCOMES else 3,
                tags,
                conversation,
            ]
        )
    return index


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def packed(index: CaseIndex) -> str:
    """The index as base64 of gzip of JSON: what the page's script decodes (once: the
    pack is finished by it)."""
    return "".join(packed_pieces(index))


BASE64_PIECE = 3 * (1 << 16)  # bytes a piece: whole 3-byte groups join into one encoding


def packed_pieces(index: CaseIndex, piece_bytes: int | None = None) -> Iterator[str]:
    """`packed` in pieces, each as it is encoded (once: the pack is finished by it): the
    page is written with them, never holding the whole base64 text. ``piece_bytes``
    (`BASE64_PIECE` by default; taken down to whole 3-byte groups) bounds the bytes a
    piece encodes."""
    size = max(3, (piece_bytes or BASE64_PIECE) // 3 * 3)
    chunks = index.finish()
    chunks.reverse()  # popped from the end: each compressed chunk is freed once encoded
    held = b""
    while chunks:
        held += chunks.pop()
        whole = len(held) - len(held) % 3
        for start in range(0, whole, size):
            yield base64.b64encode(held[start : min(start + size, whole)]).decode("ascii")
        held = held[whole:]
    if held:
        yield base64.b64encode(held).decode("ascii")
