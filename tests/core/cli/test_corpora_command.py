"""``harness corpora`` lists every registered corpus under its family, through the registry."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from harness.cli import main
from harness.family_api import Corpus, Family
from harness.plugins.registry import extra_family


def run() -> str:
    result = CliRunner().invoke(main, ["corpora"])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_built_in_corpora_keep_their_lines_under_their_family() -> None:
    lines = run().splitlines()
    assert lines[-1] == "provenance: corpora/PROVENANCE.md"
    assert {"badf", "biaslens", "langbite", "metafair", "metaquerier"} <= set(lines)
    by_name = {line.split()[0]: " ".join(line.split()[1:]) for line in lines if line[:2] == "  "}
    assert by_name["social_groups.csv"].startswith("515 terms: profession 245, gender 82")
    assert by_name["attributes.toml"].startswith("94 attributes: gender 14")
    assert by_name["inverted_questions.toml"] == "36 question templates"
    family_of = {}
    for line in lines:
        if line[:2] != "  ":
            current = line
        else:
            family_of[line.split()[0]] = current
    assert family_of["social_groups.csv"] == "metaquerier"
    assert family_of["attributes.toml"] == "metafair"


def test_a_third_party_corpus_is_listed_with_its_own_provenance(tmp_path: Path) -> None:
    data = tmp_path / "words.txt"
    data.write_text("a\nb\n")
    toy = Family(
        name="toycorpus",
        summary="toy",
        corpora=(Corpus("toy/words.txt", (data,), lambda: "2 words", "toy/SOURCES.md"),),
    )
    with extra_family(toy):
        out = run()
    assert "toycorpus\n  toy/words.txt" in out and "2 words" in out
    assert "provenance: toy/SOURCES.md (toy/words.txt)" in out
