"""Logs that the documentation tells users to open are logs its commands write.

For every doc and example campaign, each ``harness report|show|export|replay|resume LOG.db``
must name a log that a ``harness run`` or ``harness import`` in the same file writes
(``--db``, else the campaign file's stem + ``.db`` in the current directory), a log
shipped in the repo, or a placeholder (``LOG.db``).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(
    [
        ROOT / "README.md",
        *ROOT.glob("docs/*.md"),
        *ROOT.glob("relations/*/docs.md"),
        *ROOT.glob("examples/*.toml"),
    ]
)
_COMMAND = re.compile(r"harness (run|import|report|show|export|replay|resume)\b([^\n#&|`]*)")


def _commands(text: str) -> list[tuple[str, list[str]]]:
    out = []
    for match in _COMMAND.finditer(text):
        try:
            args = shlex.split(match.group(2))
        except ValueError:
            continue
        out.append((match.group(1), args))
    return out


def _written_by(args: list[str]) -> str | None:
    """The log a ``harness run`` or ``harness import`` writes."""
    if "--db" in args and args.index("--db") + 1 < len(args):
        return args[args.index("--db") + 1]
    positional = [a for a in args if not a.startswith("-")]
    if positional and positional[0].endswith(".toml"):
        return Path(positional[0]).stem + ".db"
    return None


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_logs_are_written_by_documented_runs(doc: Path) -> None:
    commands = _commands(doc.read_text())
    writers = ("run", "import")
    written = {db for verb, args in commands if verb in writers if (db := _written_by(args))}
    for verb, args in commands:
        if verb in writers:
            continue
        logs = [a for a in args if a.endswith(".db") and not a.startswith("-")]
        for log in logs[:1]:
            shipped = (ROOT / log).exists()
            placeholder = Path(log).stem.isupper() or "<" in log
            assert log in written or shipped or placeholder, (
                f"{doc.relative_to(ROOT)}: 'harness {verb} {log}' but no documented run "
                f"writes {log} (runs write: {sorted(written)})"
            )
