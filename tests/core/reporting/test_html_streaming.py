"""The HTML page is written in pieces (issue 36: reports in bounded memory): each case row
and each embedded conversation goes to a compressor as it is read, the page goes to its
file section by section and the case pack piece by piece, and the bytes are those of the
page made whole."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.plugins.family_parts import report_sections
from harness.reporting.html import cases as html_cases
from harness.reporting.html import render_html, write_page
from harness.reporting.html.cases import CaseIndex, CompressedText, case_index, packed_pieces
from harness.reporting.tables import ReportContext
from harness.running.campaign import resolve_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config, _ = resolve_campaign("sim")
    db = tmp_path_factory.mktemp("sim") / "sim.db"
    asyncio.run(run_campaign(config, db))
    return db


class _Writes(io.StringIO):
    """A text file that records the size of every write."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def write(self, text: str) -> int:
        self.sizes.append(len(text))
        return super().write(text)


def test_the_page_is_written_in_pieces_and_is_the_whole_pages_bytes(
    sim_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EventReader(sim_log) as log:
        whole = render_html(log, sections=report_sections())
        monkeypatch.setattr(html_cases, "BASE64_PIECE", 300)
        out = _Writes()
        write_page(out, log, sections=report_sections())
    assert out.getvalue() == whole
    pack = whole.split('id="case-pack">', 1)[1].split("</script>", 1)[0]
    # The pack (tens of kB here) reached the file in pieces of at most 400 characters (300
    # bytes in base64), never as one string; no write holds the page.
    assert len(pack) > 10 * 400
    assert max(out.sizes) < len(pack) and len(out.sizes) > len(pack) // 400


def test_rows_and_conversations_go_to_the_compressor_as_they_are_read(
    sim_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []
    original = CompressedText.write

    def recording(self: CompressedText, text: str) -> None:
        written.append(text)
        original(self, text)

    monkeypatch.setattr(CompressedText, "write", recording)
    with EventReader(sim_log) as log:
        index = case_index(ReportContext(log, log.campaign_id(None)))
    # Before the pack is finished, every case row and every conversation was written to a
    # compressor, one piece each; the index holds no list that grows with the cases (only
    # the names its rows point into: models, relations, labels).
    assert index.total > 100 and index.shown == index.total
    assert len(written) == index.total + index.shown
    assert sum(t.startswith(('{"cases":[[', ",[")) for t in written) == index.total
    assert sum(t.startswith(('{"data":', ',{"data":')) for t in written) == index.shown
    held = {k for k, v in vars(index).items() if isinstance(v, list | dict)}
    assert held == {"models", "relations", "tags", "_ids"}


def test_a_conversation_is_packed_as_it_was_when_added() -> None:
    """The index keeps a conversation's text, not the dictionary (which may change)."""
    index = CaseIndex()
    conversation: dict[str, Any] = {"data": {"term": "nurse"}, "turns": [], "verdicts": []}
    number = index.add_conversation(conversation)
    index.add_case(["c/0/r0", 0, 0, 0, [], number])
    conversation["data"]["term"] = "changed"
    pack = json.loads(zlib.decompress(base64.b64decode("".join(packed_pieces(index))), 31))
    assert pack["conversations"] == [{"data": {"term": "nurse"}, "turns": [], "verdicts": []}]
    assert pack["cases"] == [["c/0/r0", 0, 0, 0, [], 0]]


_text = st.text(st.characters(codec="utf-8"), max_size=40)
_rows = st.lists(
    st.tuples(_text, st.integers(0, 5), st.lists(st.integers(0, 50), max_size=4)), max_size=30
)
_conversations = st.lists(st.dictionaries(_text, _text, max_size=4), max_size=10)


@settings(max_examples=60, deadline=None)
@given(_rows, _conversations, st.integers(1, 300), st.integers(1, 400), st.integers(1, 300))
def test_the_pack_is_the_same_bytes_however_it_is_split(
    rows: list[tuple[str, int, list[int]]],
    conversations: list[dict[str, str]],
    gather: int,
    spool_gather: int,
    piece: int,
) -> None:
    """Rows and conversations compressed in any split, spooled and read back in any split
    (multi-byte characters cut anywhere), and encoded in pieces of any size, give the
    base64 of one gzip of the whole JSON text: the page's bytes do not depend on them."""
    index = CaseIndex(cap=7)
    index._pack.GATHER = gather
    index._conversations.GATHER = spool_gather
    numbers = [index.add_conversation(c) for c in conversations]
    for i, (case_id, outcome, tags) in enumerate(rows):
        number = numbers[i] if i < len(numbers) else -1
        index.add_case([case_id, index.code("models", "m"), 0, outcome, tags, number])

    def dumps(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    rest = {"models": index.models, "relations": [], "outcomes": list(html_cases.OUTCOMES),
            "tags": [], "total": len(rows), "cap": 7}  # fmt: skip
    text = (
        '{"cases":['
        + ",".join(
            dumps([c, 0, 0, o, t, numbers[i] if i < len(numbers) else -1])
            for i, (c, o, t) in enumerate(rows)
        )
        + '],"conversations":['
        + ",".join(dumps(c) for c in conversations)
        + "],"
        + dumps(rest)[1:]
    )
    one = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    expected = base64.b64encode(one.compress(text.encode("utf-8")) + one.flush()).decode()
    pieces = list(packed_pieces(index, piece))
    assert "".join(pieces) == expected
    assert all(len(p) <= 4 * max(3, piece // 3 * 3) // 3 for p in pieces)
    assert json.loads(zlib.decompress(base64.b64decode(expected), 31))["total"] == len(rows)
