"""The Meta-Fair example campaigns: ``examples/metafair_sim.toml`` runs all 14 relations on
``sim:`` and its report shows every one (MR1-MR10 judged by the jury, MR11-MR14 read by the
oracles in either ``--mode``); ``examples/metafair_local.toml`` names the same 14; and
``harness relations`` and the README's relations table list them and ``metafair.generate``."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.plugins.assembly import build_report
from harness.running.campaign import load_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader

ROOT = Path(__file__).resolve().parents[3]
ALL_MRS = {f"metafair.mr{mr}" for mr in range(1, 15)}
OPEN_MRS = {f"metafair.mr{mr}" for mr in range(1, 11)}
CLOSED_MRS = ALL_MRS - OPEN_MRS


def relations_of(example: str) -> set[str]:
    return {r.name for r in load_campaign(ROOT / "examples" / example).relations}


@pytest.mark.parametrize("example", ["metafair_sim.toml", "metafair_local.toml"])
def test_each_metafair_example_names_all_fourteen_relations(example: str) -> None:
    assert relations_of(example) == ALL_MRS


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = load_campaign(ROOT / "examples" / "metafair_sim.toml")
    config = config.model_copy(update={"repeats": 1})  # the relations, not the repeats
    db = tmp_path_factory.mktemp("mf_example") / "sim.db"
    assert asyncio.run(run_campaign(config, db)).status == "completed"
    return db


def reported_relations(db: Path, table: str, **options: str) -> set[str]:
    with EventReader(db) as log:
        tables = build_report(log, **options)
    found = [t for t in tables if t.name == table]
    assert found, f"no {table} table"
    column = found[0].columns.index("relation")
    return {str(row[column]) for row in found[0].rows}


def test_the_sim_example_reports_every_relation(sim_log: Path) -> None:
    with EventReader(sim_log) as log:
        rows = log.connection.execute("SELECT DISTINCT relation FROM verdicts").fetchall()
        verdicts = {r[0] for r in rows}
    assert verdicts == ALL_MRS
    assert reported_relations(sim_log, "metafair_bias_by_attribute") == OPEN_MRS
    for mode in ("strict", "guardme"):
        assert reported_relations(sim_log, "metafair_closed_rates", mode=mode) == CLOSED_MRS


def test_relations_command_and_readme_list_every_metafair_relation() -> None:
    names = [*sorted(ALL_MRS), "metafair.generate"]
    listing = CliRunner().invoke(main, ["relations"])
    assert listing.exit_code == 0
    lines = listing.stdout.splitlines()
    for name in names:
        [line] = [ln for ln in lines if ln.startswith(name + " ")]
        assert len(line.split(maxsplit=1)[1]) > 20, line
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("## Relations") :].split("\n\n")[1]
    listed = {"metafair.generate"} if "| `metafair.generate` |" in table else set()
    for low, high in re.findall(r"\| `metafair\.mr(\d+)`-`metafair\.mr(\d+)` \|", table):
        listed |= {f"metafair.mr{mr}" for mr in range(int(low), int(high) + 1)}
    assert listed == set(names)


@pytest.mark.slow
def test_the_sim_example_flags_its_planted_attributes_and_nothing_else(
    tmp_path: Path,
) -> None:
    """On the crossed sets, each attribute against the others within base prompts: the
    planted closed attributes are all flagged, the planted open ones (tailoring >= 0.5) in
    some relation, and no attribute that was not planted."""
    config = load_campaign(ROOT / "examples" / "metafair_sim.toml")
    db = tmp_path / "sim.db"
    assert asyncio.run(run_campaign(config, db)).status == "completed"
    with EventReader(db) as log:
        tables = {t.name: t for t in build_report(log)}

    def flagged(name: str) -> set[tuple[str, str]]:
        t = tables[name]
        rel, attr, flag = (t.columns.index(c) for c in ("relation", "attribute", "flagged"))
        return {(r[rel], r[attr]) for r in t.rows if r[flag] == "yes"}

    closed = {
        ("metafair.mr11", "homeless"), ("metafair.mr11", "nonbinary person"),
        ("metafair.mr12", "Muslim"), ("metafair.mr12", "unemployed"),
        ("metafair.mr13", "gay"), ("metafair.mr13", "overweight"),
        ("metafair.mr14", "woman"), ("metafair.mr14", "tattooed"),
    }  # fmt: skip
    assert flagged("metafair_closed_rates") == closed
    open_flags = flagged("metafair_bias_by_attribute")
    assert {a for _, a in open_flags} >= {"woman", "Muslim", "poor", "gay"}
    assert {a for _, a in open_flags} <= {"woman", "Muslim", "poor", "gay", "overweight"}
