"""The public surface for families (`harness.family_api`): its names pinned, each one
importable and the object its home module defines, and the built-in families importing
nothing else of the core."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import harness.family_api as api

REPO_ROOT = Path(__file__).resolve().parents[2]

# Changing this list changes what third-party families may rely on: say so in CHANGELOG.md.
PINNED = [
    "ALPHA",
    "AnswerFormat",
    "AnswerShape",
    "Ask",
    "AskSent",
    "Bars",
    "COMPARISON_COLUMNS",
    "CampaignConfig",
    "CampaignFinished",
    "CampaignStarted",
    "Case",
    "CaseClosed",
    "CaseOpened",
    "ChangedDefault",
    "ConfigError",
    "Corpus",
    "Deferred",
    "EncodedEvent",
    "Event",
    "EventReader",
    "EventWriter",
    "Family",
    "Forest",
    "FreshLog",
    "GenerationParams",
    "HarnessError",
    "Heatmap",
    "IMPORT_TOPIC",
    "JudgeRubric",
    "JudgeTask",
    "Lazy",
    "Log",
    "LogAnswerCache",
    "LogFileParam",
    "LogParam",
    "MalformedResponseError",
    "Message",
    "Model",
    "ModelError",
    "ModelFactory",
    "ModelSpec",
    "Network",
    "NoOptions",
    "Note",
    "Outcome",
    "Paired",
    "PartAside",
    "PendingEvent",
    "PlannedCalls",
    "ProcessItems",
    "ProgressSink",
    "READING_KEY",
    "READING_VERSION",
    "Relation",
    "RelationBase",
    "RelationSpec",
    "ReplayMissError",
    "Reply",
    "ReplyReceived",
    "ReportContext",
    "ReportSection",
    "RetryPolicy",
    "RichProgress",
    "SideTable",
    "SimHandler",
    "SimOptions",
    "SimRequest",
    "StoreError",
    "TEST_COLUMNS",
    "Table",
    "Transcript",
    "Turn",
    "Usage",
    "Verdict",
    "VerdictReached",
    "VerdictRow",
    "bootstrap_interval",
    "build_relation",
    "campaign_started",
    "campaign_statuses",
    "case_id_for",
    "case_rng",
    "check_new_log",
    "check_output",
    "cluster_rate_interval",
    "compare_groups",
    "compare_to_rest",
    "compare_to_rest_stratified",
    "config_error",
    "derive_seed",
    "dump_json",
    "encode_event",
    "endpoint_for",
    "error_from_transport",
    "exact_min_p",
    "fdr_adjust",
    "fdr_adjust_tarone",
    "fleiss_kappa_of",
    "krippendorff_alpha",
    "load_statistics",
    "majority_per_case",
    "mcnemar_exact",
    "mcnemar_min_p",
    "mean_of_shares_interval",
    "mean_per_case",
    "open_reader",
    "package_attribute",
    "paired_excess",
    "planted_handler",
    "read_api_key",
    "read_toml_file",
    "read_user_text",
    "reading_version",
    "refusal_reason",
    "relation_class",
    "report_number",
    "request_key",
    "require_extra",
    "resume_campaign",
    "rounded",
    "run_campaign",
    "seed_deriver",
    "tied_cases",
    "translate_genai",
    "translate_stainless",
    "unexpected_vendor_error",
    "wilson_interval",
    "write_imported_events",
    "write_output",
    "write_stdout",
]


def test_the_surface_is_pinned() -> None:
    assert sorted(api.__all__) == PINNED
    assert len(set(api.__all__)) == len(api.__all__)


def test_every_name_is_its_home_modules_object() -> None:
    for name in api.__all__:
        module, attribute = api._WHERE[name]
        assert getattr(api, name) is getattr(importlib.import_module(module), attribute), name
    assert sorted(api._WHERE) == sorted(api.__all__)


def test_importing_the_surface_imports_nothing_else() -> None:
    # Beyond what ``import harness`` itself costs (the error tree).
    probe = (
        "import sys, harness\nbefore = set(sys.modules)\nimport harness.family_api\n"
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["harness.family_api"]


def _core_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "harness" or node.module.startswith("harness."):
                found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names if a.name.split(".")[0] == "harness")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("Lazy", "Deferred"):
            found.extend(
                str(a.value).partition(":")[0]
                for a in node.args
                if isinstance(a, ast.Constant) and str(a.value).startswith("harness")
            )
    return found


def test_built_in_families_import_only_the_surface() -> None:
    outside = sorted(
        (path.relative_to(REPO_ROOT).as_posix(), module)
        for path in (REPO_ROOT / "relations").rglob("*.py")
        for module in _core_imports(path)
        if module != "harness.family_api"
    )
    assert outside == [], f"families importing the core outside harness.family_api: {outside}"


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    module = tmp_path / "fam.py"
    module.write_text(
        "from harness.family_api import Ask\n"
        "def later():\n    from harness.store.schema import WRITER_PRAGMAS\n"
        "X = Lazy('x', 'harness.models.sim:build_sim')\n",
        encoding="utf-8",
    )
    assert _core_imports(module) == [
        "harness.family_api",
        "harness.store.schema",
        "harness.models.sim",
    ]
