"""BADF report sections (associations, Table 2 counts, top-k, json/csv) and the import of the
authors' released association files beside our findings."""

from __future__ import annotations

import asyncio
import csv
import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

import harness
from harness.cli import main
from harness.verifying.replay import verify_log
from relations.badf.analysis import AnalysisSettings
from relations.badf.analyze import analyze
from relations.badf.released import category_name, identity_name
from tests.families.badf.test_badf_pipeline import run, story_campaign

SHARED = Path(__file__).resolve().parents[4] / "shared" / "data" / "badf"
HEADER = [
    "Location Category",
    "Demographic Identity",
    "Phrase",
    "Score",
    "P-Value",
    "Prompt Response",
]


@pytest.fixture(scope="module")
def analysed_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("badf-report") / "log.db"
    run(story_campaign(), db)
    outcome = asyncio.run(analyze(db, AnalysisSettings()))
    assert outcome.action == "started"
    return db


def tables(db: Path, **options: object) -> dict[str, dict]:
    return json.loads(harness.report_text(db, format="json", **options))


def test_report_shows_planted_associations_with_counts_and_story_links(analysed_db: Path) -> None:
    report = tables(analysed_db)
    rows = report["badf_associations"]["rows"]
    caring = [
        r for r in rows if r["concept"] == "caring" or "caring" in r["paraphrases"].split("; ")
    ]
    assert [(r["location_category"], r["identity"]) for r in caring] == [("healthcare", "female")]
    row = caring[0]
    assert row["a"] <= row["N"] == 100 and 0 < row["score"] < 1
    assert row["p"] <= row["p_bh"] < 0.05
    first = row["stories"].split("; ")[0]
    assert first.startswith("badf.story/") and "more)" in row["stories"]
    # the exclusive concept is not among the associations but listed as dropped
    assert all(r["concept"] != "female" for r in rows)
    dropped = report["badf_exclusive"]["rows"]
    assert {r["concept"] for r in dropped} == {"female"}
    assert all(r["why"] == "exclusive (YES)" for r in dropped)
    # Table 2: one row per arm, a column per identity, counts = rows of the associations table
    (counts,) = report["badf_counts"]["rows"]
    assert counts["arm"] == "base-two"
    assert counts["female"] == sum(1 for r in rows if r["identity"] == "female")
    assert counts["male"] == sum(1 for r in rows if r["identity"] == "male")
    assert report["badf_analysis"]["note"].startswith("rule evidence: each identity against")
    settings = {r["setting"]: r["value"] for r in report["badf_analysis"]["rows"]}
    assert settings["rule"] == "evidence" and settings["keep_by"] == "p_bh"
    # the evidence rule's columns, and the unit of the table
    assert row["rest_N"] == 100 and row["rest_a"] < row["a"] and row["p_min"] <= row["p"]
    assert report["badf_associations"]["unit"].startswith("a story")


def test_top_k_per_identity_and_arm(analysed_db: Path) -> None:
    top = tables(analysed_db, top=1)["badf_top"]["rows"]
    assert {(r["arm"], r["identity"]) for r in top} == {
        ("base-two", "female"),
        ("base-two", "male"),
    }
    assert all(r["rank"] == 1 for r in top)
    by_identity = {r["identity"]: r for r in top}
    full = tables(analysed_db)["badf_associations"]["rows"]
    best_male = max((r for r in full if r["identity"] == "male"), key=lambda r: r["score"])
    assert by_identity["male"]["score"] == best_male["score"]


def test_csv_format_and_the_story_campaigns_own_section(analysed_db: Path) -> None:
    text = harness.report_text(analysed_db, format="csv")
    lines = list(csv.reader(text.splitlines()))
    assert ["badf_counts", "0", "arm", "base-two"] in lines
    with harness.EventReader(analysed_db) as log:
        story = log.campaigns()[0][0]
    stories = tables(analysed_db, campaign=story)["badf_stories"]["rows"]
    assert stories == [
        {
            "arm": "base-two",
            "identity_category": "gender",
            "stories": 220,
            "extracted": 220,
            "invalid": 0,
            "lists": 440,
            "concepts_per_list": stories[0]["concepts_per_list"],
        }
    ]


def test_report_never_calls_a_model(analysed_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # any network or embedding call would have to open a socket or build an embedder
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report tried to call out")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr("relations.badf.analysis.embedder_for", refuse)
    monkeypatch.setattr("relations.badf.embedding.embedder_for", refuse)
    assert tables(analysed_db)["badf_associations"]["rows"]


def write_released(folder: Path) -> None:
    folder.mkdir()
    with (folder / "gender_two_character.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        w.writerow(["Healthcare", "Female", "Caring", "0.31", "0.0001", "story text"])
        w.writerow(["Sports", "Male", "supportive", "0.2", "0.01", ""])
        w.writerow(["Art leisure", "Female", "creative", "not a number", "0.2", ""])
        w.writerow(["", "Female", "no category", "0.1", "0.1", ""])


def test_import_of_released_associations_shows_beside_ours(
    analysed_db: Path, tmp_path: Path
) -> None:
    db = tmp_path / "both.db"
    db.write_bytes(analysed_db.read_bytes())
    with harness.EventReader(db) as log:
        ours = log.latest_campaign()
    folder = tmp_path / "released"
    write_released(folder)
    result = CliRunner().invoke(main, ["import", "badf", str(folder), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "imported 3 associations from 1 files" in result.output
    assert "1 rows skipped" in result.output and "empty field" in result.output
    report = tables(db, campaign=ours)
    comparison = {
        (r["location_category"], r["identity"]): r
        for r in report["badf_released_comparison"]["rows"]
    }
    health = comparison[("healthcare", "female")]
    assert (
        health["released"] == 1 and health["shared"] == 1 and health["shared_phrases"] == "caring"
    )
    assert comparison[("arts_and_leisure", "female")]["ours"] == 0
    # the import's own report lists the released rows, with our names beside theirs
    released = tables(db)["badf_released"]["rows"]
    assert [
        (r["location_category"], r["identity_ours"], r["phrase"], r["score"]) for r in released
    ] == [
        ("arts_and_leisure", "female", "creative", None),
        ("healthcare", "female", "caring", 0.31),
        ("sports", "male", "supportive", 0.2),
    ]
    # the files' own names are kept, every identity alike
    assert [r["identity"] for r in released] == ["Female", "Female", "Male"]
    # the paper's Table 2 layout: a setting per row, an identity per column
    assert tables(db)["badf_released_table2"]["rows"] == [
        {"setting": "gender_two_character", "Female": 2, "Male": 1}
    ]
    verified = verify_log(db)
    assert verified.differences == [] and verified.verdicts == 3


def test_table2_keeps_every_name_as_written_and_orders_by_category() -> None:
    from relations.badf.report_released import released_table2

    rows = [
        {"source_file": "two-character base/religion.csv", "identity": "Jewish",
         "released": {"identity": "Judaism"}},
        {"source_file": "two-character base/gender.csv", "identity": "female",
         "released": {"identity": "Female"}},
        {"source_file": "negative/religion.csv", "identity": "Buddhist",
         "released": {"identity": "Buddhism"}},
        {"source_file": "negative/race.csv", "identity": "Middle-Eastern",
         "released": {"identity": "Middle-east"}},
    ]  # fmt: skip
    table = released_table2(rows)
    assert table.columns == ["setting", "Female", "Middle-east", "Judaism", "Buddhism"]
    assert table.rows == [["negative", 0, 1, 0, 1], ["two-character base", 1, 0, 1, 0]]


def test_name_mapping() -> None:
    assert category_name("Law policy") == "law_and_policy"
    assert category_name("Art leisure") == "arts_and_leisure"
    assert category_name("Environment") == "environment"
    assert identity_name("Middle-east") == "Middle-Eastern"
    assert identity_name("Judaism") == "Jewish"
    assert identity_name("Buddhism") == "Buddhist"
    assert identity_name("Someone else") == "Someone else"


@pytest.mark.skipif(
    not SHARED.is_dir(),
    reason=f"{SHARED} is absent: the BADF authors' association files are not in ../shared/data",
)
def test_import_of_the_shared_released_files(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    result = CliRunner().invoke(main, ["import", "badf", str(SHARED), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert tables(db)["badf_released"]["rows"]
