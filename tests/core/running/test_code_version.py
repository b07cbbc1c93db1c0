"""The recorded code version covers each registered family's own package and its corpus
files, found through the registry: a third party's family enters it like a built-in one."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.plugins.registry import extra_family
from harness.running.code_version import code_version, family_package


@pytest.fixture
def toy_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``toyfam_cv``: a family package outside this checkout, with one data file."""
    package = tmp_path / "toyfam_cv"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from pathlib import Path\n"
        "from harness.family_api import Corpus, Family\n"
        "DATA = Path(__file__).parent.parent / 'toy_terms.csv'\n"
        "FAMILY = Family(name='toyfam_cv', summary='toy', corpora=(\n"
        "    Corpus('toy_terms.csv', (DATA,), lambda: '2 terms', 'nowhere'),))\n"
    )
    (package / "logic.py").write_text("THRESHOLD = 1\n")
    (tmp_path / "toy_terms.csv").write_text("term\na\nb\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package
    sys.modules.pop("toyfam_cv", None)


def test_a_family_file_and_its_corpus_change_the_code_version(toy_package: Path) -> None:
    module = importlib.import_module("toyfam_cv")
    without = code_version()
    with extra_family(module.FAMILY, origin="toyfam_cv:FAMILY"):
        first = code_version()
        assert first == code_version()  # a pure function of the files
        (toy_package / "logic.py").write_text("THRESHOLD = 2\n")
        second = code_version()
        (toy_package.parent / "toy_terms.csv").write_text("term\na\nc\n")
        third = code_version()
        (toy_package.parent / "unrelated.txt").write_text("not code\n")
        assert code_version() == third
    assert len({without, first, second, third}) == 4
    assert code_version() == without


def test_family_package_is_the_entry_points_package() -> None:
    assert family_package("relations.metaquerier:FAMILY") == "relations.metaquerier"
    assert family_package("harness.builtins:CORE") == "harness"
    assert family_package("test") is None
    assert family_package("no_such_module_xyz:FAMILY") is None


def test_shared_private_packages_beside_a_family_count() -> None:
    from harness.running.code_version import _hashed_files

    labels = {label for label, _ in _hashed_files()}
    assert "relations/_common/answers.py" in labels
    assert "relations/metafair/closed/oracles.py" in labels
    assert "harness/running/code_version.py" in labels
    assert any(label.startswith("corpus metaquerier/social_groups.csv") for label in labels)
