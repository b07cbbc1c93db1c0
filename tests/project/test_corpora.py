"""The shipped data files and the families that declare them: every file under corpora/ is
some family's corpus (so `harness corpora` lists it and the code version hashes it), and
the core names none of them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import corpora
from harness.plugins.family_parts import corpora as registered_corpora

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPORA_DIR = Path(corpora.__file__).resolve().parent
NOT_DATA = {"__init__.py", "PROVENANCE.md", "py.typed"}


def data_files() -> set[Path]:
    return {
        p.resolve()
        for p in CORPORA_DIR.rglob("*")
        if p.is_file() and p.name not in NOT_DATA and "__pycache__" not in p.parts
    }


def test_every_data_file_is_declared_by_exactly_one_corpus() -> None:
    declared = Counter(f.resolve() for _, c in registered_corpora() for f in c.files)
    assert sorted(p for p, n in declared.items() if n > 1) == []
    assert sorted(data_files() - set(declared)) == [], "data files no family declares"
    assert all(p.is_file() for p in declared), "declared corpus files that do not exist"


def test_every_corpus_is_described_in_one_line_with_its_provenance() -> None:
    found = registered_corpora()
    assert {family for family, _ in found} == {
        "badf",
        "biaslens",
        "langbite",
        "metafair",
        "metaquerier",
    }
    for family, corpus in found:
        text = corpus.describe()
        assert text and "\n" not in text, (family, corpus.name)
        assert corpus.provenance == corpora.PROVENANCE
        assert (REPO_ROOT / corpus.provenance).is_file()


def test_the_core_names_no_family_data() -> None:
    names = {p.name for p in data_files()} | {
        p.relative_to(CORPORA_DIR).as_posix() for p in data_files()
    }
    naming = sorted(
        (path.relative_to(REPO_ROOT).as_posix(), name)
        for path in (REPO_ROOT / "harness").rglob("*.py")
        for name in names
        if name in path.read_text(encoding="utf-8")
    )
    assert naming == [], f"core modules naming a family's data file: {naming}"
