"""Bounded by construction: no number in a campaign file makes the harness allocate without
limit or wait forever. Huge ``repeats``/``cases`` are walked lazily; ``max_in_flight`` has
an upper bound; every float is finite; a file too deep or too large is a configuration
error (exit 2) before anything is created; SIGTERM stops a run within its grace period."""

from __future__ import annotations

import itertools
import resource
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

import pytest

from harness.running.campaign import load_campaign, parse_campaign
from harness.running.plan import Plan
from harness.vocabulary.config_bounds import MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH, MAX_IN_FLIGHT
from harness.vocabulary.errors import ConfigError

BASE = """\
name = "bounds"
seed = 1
repeats = {repeats}

[[models]]
name = "sim:default"
max_in_flight = {in_flight}
params = {{ temperature = {temperature} }}
options = {{ latency_s = {latency} }}

[[relations]]
name = "metaquerier.mr1"
cases = {cases}

[limits]
stop_grace_s = {grace}
"""

DEFAULTS = {
    "repeats": 1,
    "in_flight": 4,
    "temperature": 0.5,
    "latency": 0.0,
    "cases": 2,
    "grace": 8.0,
}


def campaign_text(**changes: object) -> str:
    return BASE.format(**{**DEFAULTS, **changes})


def write(tmp_path: Path, text: str, name: str = "campaign.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def fails(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load_campaign(write(tmp_path, text))
    return err.value


HARNESS = [sys.executable, "-c", "from harness.cli import main; main()"]


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HARNESS, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


# --- the plan is lazy ---------------------------------------------------------------


def test_a_billion_repeats_are_walked_not_listed(tmp_path: Path) -> None:
    config = load_campaign(write(tmp_path, campaign_text(repeats=10**9, cases=10**9)))
    tracemalloc.start()
    try:
        plan = Plan(config)
        first = list(itertools.islice(plan.cases_for("sim:default"), 5))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert plan.total_cases == 10**18
    assert [c.case_id for c, _ in first] == [
        f"metaquerier.mr1/0/r{r}@sim:default" for r in range(5)
    ]
    assert len({c.seed for c, _ in first}) == 1  # one case index, its repeats
    assert peak < 5_000_000, f"walking five cases allocated {peak} bytes"


def test_skipped_repeats_are_skipped_lazily_and_in_order(tmp_path: Path) -> None:
    config = load_campaign(write(tmp_path, campaign_text(repeats=3, cases=3)))
    plan = Plan(config)
    every = [c.case_id for c, _ in plan.cases_for("sim:default")]
    assert len(every) == 9 and every[:3] == [
        "metaquerier.mr1/0/r0@sim:default",
        "metaquerier.mr1/0/r1@sim:default",
        "metaquerier.mr1/0/r2@sim:default",
    ]
    closed = set(every[:4]) | {every[7]}
    made: list[int] = []
    relation = plan.relations[0][1]
    original = relation.make_case

    def counting(index: int, seed: int) -> dict[str, object]:
        made.append(index)
        return original(index, seed)

    relation.make_case = counting  # type: ignore[method-assign]
    rest = [c.case_id for c, _ in plan.cases_for("sim:default", skip=closed.__contains__)]
    assert rest == [c for c in every if c not in closed]
    assert made == [1, 2]  # index 0 is all closed: never generated; each other index once


def test_a_resumed_billion_repeat_plan_skips_lazily(tmp_path: Path) -> None:
    config = load_campaign(write(tmp_path, campaign_text(repeats=10**9)))
    plan = Plan(config)
    closed = {f"metaquerier.mr1/0/r{r}@sim:default" for r in range(1000)}
    case, _ = next(iter(plan.cases_for("sim:default", skip=closed.__contains__)))
    assert case.case_id == "metaquerier.mr1/0/r1000@sim:default"


# --- numbers with a bound -----------------------------------------------------------


def test_max_in_flight_is_bounded(tmp_path: Path) -> None:
    err = fails(tmp_path, campaign_text(in_flight=1_000_000_000))
    assert err.field == "models[0](sim:default).max_in_flight"
    assert f"<= {MAX_IN_FLIGHT}" in str(err)
    load_campaign(write(tmp_path, campaign_text(in_flight=MAX_IN_FLIGHT)))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "+nan"])
def test_non_finite_floats_are_refused_wherever_they_are(tmp_path: Path, value: str) -> None:
    err = fails(tmp_path, campaign_text(temperature=value))
    assert err.field == "models[0].params.temperature"
    assert "finite" in str(err)
    err = fails(tmp_path, campaign_text(latency=value))  # a backend's own option
    assert err.field == "models[0].options.latency_s"
    err = fails(tmp_path, campaign_text(grace=value))
    assert err.field == "limits.stop_grace_s"


def test_non_finite_floats_are_refused_from_python_too() -> None:
    data = {
        "models": [{"name": "sim:default"}],
        "relations": [{"name": "metaquerier.mr1", "cases": 1}],
        "limits": {"call_timeout_s": float("inf")},
    }
    with pytest.raises(ConfigError) as err:
        parse_campaign(data)
    assert err.value.field == "limits.call_timeout_s"


def test_timeouts_and_grace_have_an_upper_bound(tmp_path: Path) -> None:
    err = fails(tmp_path, campaign_text(grace=1e12))
    assert err.field == "limits.stop_grace_s" and "<=" in str(err)


# --- the file itself ----------------------------------------------------------------


def test_toml_nested_past_the_parser_is_a_config_error(tmp_path: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    err = fails(tmp_path, campaign_text() + f"\n[extra]\nx = {deep}\n")
    assert "nests arrays or tables too deep" in str(err)


def test_toml_nested_past_the_bound_names_the_field(tmp_path: Path) -> None:
    deep = "[" * (MAX_CONFIG_DEPTH + 5) + "]" * (MAX_CONFIG_DEPTH + 5)
    text = campaign_text().replace("cases = 2", f"cases = 2\noptions = {{ groups = {deep} }}")
    err = fails(tmp_path, text)
    assert err.field is not None and err.field.startswith("relations[0].options.groups[0]")
    assert f"nested more than {MAX_CONFIG_DEPTH} deep" in str(err)


def test_a_file_too_large_is_refused_before_it_is_read(tmp_path: Path) -> None:
    text = campaign_text() + "\n# " + "x" * MAX_CONFIG_BYTES + "\n"
    err = fails(tmp_path, text)
    assert "more than the" in str(err) and str(MAX_CONFIG_BYTES) in str(err)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"in_flight": 1_000_000_000}, "max_in_flight"),
        ({"temperature": "nan"}, "temperature"),
        ({"grace": "inf"}, "stop_grace_s"),
    ],
)
def test_the_cli_exits_2_before_creating_the_log(
    tmp_path: Path, change: dict[str, object], field: str
) -> None:
    path = write(tmp_path, campaign_text(**change))
    result = harness("run", str(path), "--db", "out.db", "--no-report", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert field in result.stderr and "fix:" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out.db").exists()


def test_the_cli_refuses_deep_toml_without_a_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, campaign_text() + "\n[extra]\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    result = harness("run", str(path), "--db", "out.db", "--no-report", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "too deep" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out.db").exists()


# --- SIGTERM ------------------------------------------------------------------------


def _limit_memory() -> None:  # a regression must fail the test, not the machine
    resource.setrlimit(resource.RLIMIT_AS, (3_000_000_000, 3_000_000_000))


def test_sigterm_stops_a_billion_repeat_campaign_with_130(tmp_path: Path) -> None:
    path = write(tmp_path, campaign_text(repeats=10**9, grace=2.0, latency=0.01))
    proc = subprocess.Popen(
        [*HARNESS, "run", str(path), "--db", "big.db", "--no-report"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_limit_memory,
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "big.db").exists() or (tmp_path / "big.db").stat().st_size < 50_000:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the campaign never got going"
        time.sleep(0.1)
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - signalled
    assert proc.returncode == 130, err
    assert took < 2.0 + 5.0, f"stopped {took:.1f}s after SIGTERM"
    assert "resume with: harness resume" in err and "Traceback" not in err


def test_sigterm_while_starting_exits_130(tmp_path: Path) -> None:
    # Before any campaign handler is installed (imports, planning): still an interruption.
    script = textwrap.dedent(
        """
        import os, signal, sys, time
        import click
        from harness.cli import main
        saved = click.Group.invoke
        def slow(self, ctx):  # the command is still starting when the signal comes
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
            return saved(self, ctx)
        click.Group.invoke = slow
        sys.argv = ["harness", "relations"]
        main()
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert result.returncode == 130, result.stderr
    assert "interrupted" in result.stderr and "Traceback" not in result.stderr


def test_a_loop_that_never_yields_still_stops_after_the_grace(tmp_path: Path) -> None:
    # A stop that cannot be honoured (the event loop stuck in one step) ends the process
    # grace + margin after the signal, with the interruption status.
    script = textwrap.dedent(
        """
        import asyncio, time
        from harness.running.runner import install_stop_handlers
        async def main():
            install_stop_handlers(lambda reason: None, grace_s=0.5)
            print("ready", flush=True)
            time.sleep(60)  # never yields to the loop
        asyncio.run(main())
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    took = time.monotonic() - signalled
    assert proc.returncode == 130, err
    assert took < 0.5 + 5.0 + 2.0
    assert "did not wind down within its grace period" in err
