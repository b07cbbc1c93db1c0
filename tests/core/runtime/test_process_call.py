"""`ProcessCall`: a function computed in a spawned child, its value, error or death raised in
the caller, and a child nobody waits for stopped."""

from __future__ import annotations

import math
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.runtime.process_call import ChildDied, Failed, ProcessCall
from harness.vocabulary.errors import HarnessError


def test_the_value_comes_back() -> None:
    call = ProcessCall("factorial", math.factorial, 20)
    try:
        assert call.result() == math.factorial(20)
        assert call.ready()
        with pytest.raises(HarnessError, match="taken already"):
            call.result()
    finally:
        call.close()


def test_the_childs_exception_is_raised_in_the_caller() -> None:
    call = ProcessCall("parse", int, "not a number")
    try:
        with pytest.raises(ValueError, match="not a number"):
            call.result()
    finally:
        call.close()


def test_a_child_that_dies_is_an_error_naming_its_exit_code() -> None:
    call = ProcessCall("the dying process", os._exit, 3)
    try:
        with pytest.raises(ChildDied, match=r"the dying process died \(exit code 3\)"):
            call.result()
    finally:
        call.close()


def test_an_exception_that_does_not_pickle_arrives_as_its_text() -> None:
    exc = RuntimeError("boom", lambda: None)  # a lambda does not pickle
    failed = pickle.loads(Failed.pickled(exc))
    assert failed.error is None and "RuntimeError" in failed.text and "boom" in failed.text
    with pytest.raises(HarnessError, match=r"(?s)the counting process failed:.*boom"):
        failed.raise_it("the counting process")


def test_close_stops_a_child_still_running_and_the_child_ignores_ctrl_c() -> None:
    before = signal.getsignal(signal.SIGINT)
    call = ProcessCall("a long sleep", time.sleep, 60)
    pid = call._process.pid
    assert pid is not None
    status = Path(f"/proc/{pid}/status").read_text()
    ignored = int(next(ln for ln in status.splitlines() if ln.startswith("SigIgn:")).split()[1], 16)
    assert ignored & (1 << (signal.SIGINT - 1))  # Ctrl-C is the caller's to handle
    assert signal.getsignal(signal.SIGINT) == before
    assert not call.ready()
    started = time.monotonic()
    call.close()
    assert time.monotonic() - started < 10
    assert not call._process.is_alive()


def _run_script(script: Path) -> subprocess.CompletedProcess[str]:
    """``script`` run by this Python in its own folder, the project importable."""
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=script.parent,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_script_without_a_main_guard_runs_once(tmp_path: Path) -> None:
    # A library user's script with no `if __name__ == "__main__"`: a child that imported the
    # caller's main module again would run its top level (a campaign, say) a second time.
    marker = tmp_path / "ran"
    script = tmp_path / "script.py"
    script.write_text(
        "import math\n"
        "from pathlib import Path\n"
        "from harness.runtime.process_call import ProcessCall\n"
        f"with Path({str(marker)!r}).open('a') as fh:\n"
        "    fh.write('top level\\n')\n"
        "call = ProcessCall('factorial', math.factorial, 10)\n"
        "print(call.result())\n"
        "call.close()\n"
    )
    done = _run_script(script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(math.factorial(10))
    assert marker.read_text() == "top level\n"


def test_a_child_ends_with_its_parent_killed_outright(tmp_path: Path) -> None:
    # SIGKILL leaves no `close` to run: the child must not work on for nobody.
    script = tmp_path / "script.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "from harness.runtime.process_call import ProcessCall\n"
        "call = ProcessCall('a long sleep', time.sleep, 120)\n"
        "print(call._process.pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = _run_script(script)
    assert done.returncode == -signal.SIGKILL
    child = int(done.stdout.split()[0])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _running(child):
        time.sleep(0.1)
    assert not _running(child)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has ended (its parent, init, reaps it)
