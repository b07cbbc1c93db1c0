"""The ``harness`` command line: the group (`main`), the core's commands (`commands/`), the
live progress display (`progress`) and the exit status of every command (`exit_codes`).

What it may import: every room. Nothing imports it but the entry point (``harness =
harness.cli:main``) and the core's own registration (`harness.builtins`).
"""

from harness.cli.main import main

__all__ = ["main"]
