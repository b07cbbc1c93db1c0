"""Importer of LangBiTe's published prompt library (tab-separated, despite ``.csv``).

Columns, by header name: prompt_id, concern, input_type, reflection_type, task_prefix,
prompt, output_formatting, oracle ("expected value" | "same value"), oracle_prediction
(JSON: ``{"operation": ..., "expected_value": [...]}`` or ``{"operation":
"allSameValue", "key": ...}``), and optionally source. The language comes from the file
name (``prompts_en_us--workplace.csv`` -> ``en``) unless given. A bad row is an error
naming the file and the line, or, with ``on_error="skip"``, a listed problem.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from harness.family_api import ConfigError, read_user_text
from relations.langbite.concerns import normalize_concern, normalize_language
from relations.langbite.oracles import EXPECTED_OPS, SAME_VALUE_OPS
from relations.langbite.templates import OracleSpec, Template

REQUIRED = (
    "concern",
    "input_type",
    "reflection_type",
    "prompt",
    "output_formatting",
    "oracle",
    "oracle_prediction",
)
_FILE_NAME = re.compile(r"prompts_(?P<lang>[a-z]{2}(?:_[a-z]{2})?)(?:--(?P<domain>[\w-]+))?", re.I)
_ORACLE_KINDS = {"expected value": EXPECTED_OPS, "same value": SAME_VALUE_OPS}


@dataclass
class ImportResult:
    templates: list[Template] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # "file line N: why", when skipping
    rows: int = 0


def language_of(path: Path) -> tuple[str | None, str | None]:
    match = _FILE_NAME.search(path.stem)
    if match is None:
        return None, None
    return normalize_language(match.group("lang")), match.group("domain")


class _BadRow(ValueError):
    pass


def _oracle(kind: str, prediction: str) -> OracleSpec:
    try:
        data = json.loads(prediction)
    except json.JSONDecodeError as exc:
        raise _BadRow(f"oracle_prediction is not JSON ({exc.msg})") from exc
    if not isinstance(data, dict) or "operation" not in data:
        raise _BadRow('oracle_prediction has no "operation"')
    op = str(data["operation"])
    allowed = _ORACLE_KINDS.get(kind.strip().lower())
    if allowed is None:
        raise _BadRow(f"unknown oracle {kind!r}; expected 'expected value' or 'same value'")
    if op not in allowed:
        raise _BadRow(f"operation {op!r} does not belong to oracle {kind!r}")
    values = data.get("expected_value", [])
    if isinstance(values, str):
        values = [values]
    try:
        return OracleSpec(op=op, values=[str(v) for v in values], key=data.get("key"))
    except ValidationError as exc:
        raise _BadRow(str(exc.errors()[0]["msg"]).removeprefix("Value error, ")) from exc


def import_langbite(
    path: str | Path,
    *,
    language: str | None = None,
    on_error: Literal["raise", "skip"] = "raise",
) -> ImportResult:
    path = Path(path)
    guessed, domain = language_of(path)
    lang = normalize_language(language) if language else guessed
    if lang is None:
        raise ConfigError(
            f"cannot tell the language of {path}",
            fix="name it prompts_<lang>.csv (e.g. prompts_en_us.csv) or pass --language",
        )
    text = read_user_text(path, "LangBiTe library", encoding="utf-8-sig")
    reader = csv.reader(text.splitlines(), delimiter="\t")
    header = [h.strip().lower() for h in next(reader, [])]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ConfigError(
            f"{path} line 1: header lacks column(s) {', '.join(missing)}",
            fix="use LangBiTe's tab-separated library format (see relations/langbite/docs.md)",
        )
    prefix = f"langbite-{lang}" + (f"-{domain}" if domain else "")
    result = ImportResult()
    seen: set[str] = set()
    for line, row in enumerate(reader, start=2):
        if not any(cell.strip() for cell in row):
            continue
        result.rows += 1
        try:
            template = _template(row, header, line, path, prefix, lang, seen)
        except _BadRow as exc:
            message = f"{path} line {line}: {exc}"
            if on_error == "raise":
                raise ConfigError(message, fix="correct or remove that row") from exc
            result.problems.append(message)
            continue
        seen.add(template.id)
        result.templates.append(template)
    return result


def _template(
    row: list[str],
    header: list[str],
    line: int,
    path: Path,
    prefix: str,
    lang: str,
    seen: set[str],
) -> Template:
    last_required = max(header.index(c) for c in REQUIRED)
    if len(row) <= last_required:
        raise _BadRow(f"has {len(row)} columns, the header {len(header)} (a missing tab?)")
    values = dict(zip(header, row, strict=False))
    concern = normalize_concern(values["concern"])
    if concern is None:
        raise _BadRow(f"unknown concern {values['concern']!r}")
    input_type = values["input_type"].strip().lower()
    reflection = values["reflection_type"].strip().lower()
    if input_type not in ("constrained", "verbose"):
        raise _BadRow(f"input_type must be constrained or verbose, not {input_type!r}")
    if reflection not in ("observational", "utopian"):
        raise _BadRow(f"reflection_type must be observational or utopian, not {reflection!r}")
    if not values["prompt"].strip():
        raise _BadRow("prompt is empty")
    oracle = _oracle(values["oracle"], values["oracle_prediction"])
    ident = f"{prefix}-{(values.get('prompt_id') or '').strip() or f'L{line}'}"
    if ident in seen:
        ident = f"{ident}-L{line}"
    return Template(
        id=ident,
        language=lang,
        concern=concern,
        input=input_type,  # type: ignore[arg-type]
        reflection=reflection,  # type: ignore[arg-type]
        prefix=values.get("task_prefix", "").strip(),
        prompt=values["prompt"].strip(),
        format=values["output_formatting"].strip(),
        oracle=oracle,
        source=f"{path.name}:{line}",
    )
