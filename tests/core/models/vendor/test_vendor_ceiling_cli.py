"""After a ceiling stop, ``harness run`` prints a resume command that raises the ceiling,
and that command finishes the campaign."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner
from vendor_fakes import FakeVendor
from vendor_support import base_url

TOML = """
name = "ceiling"
[[models]]
name = "google:gemini-2.0-flash"
max_in_flight = 2
options = {{ base_url = "{url}", price_in_per_mtok = 1000, price_out_per_mtok = 1000 }}
[[relations]]
name = "test-vendor-probe"
cases = 20
[limits]
spend_ceiling_usd = 0.3
"""


def test_ceiling_stop_prints_a_resume_command_with_a_higher_ceiling(
    tmp_path: Path, vendor: FakeVendor, canary_keys: dict[str, str]
) -> None:
    import vendor_campaign  # noqa: F401  (registers the probe relation)

    from harness.cli import main

    campaign = tmp_path / "ceiling.toml"
    db = tmp_path / "ceiling.db"
    campaign.write_text(TOML.format(url=base_url("google", vendor)))
    runner = CliRunner()
    first = runner.invoke(main, ["run", str(campaign), "--db", str(db), "--no-report"])
    assert "stopped" in first.output, first.output
    hint = re.search(r"resume with a higher ceiling.*?: (harness resume .*)", first.output)
    assert hint is not None, first.output
    command = shlex.split(hint.group(1))
    assert command[:3] == ["harness", "resume", str(db)]
    assert "--spend-ceiling" in command
    assert float(command[command.index("--spend-ceiling") + 1]) > 0.3
    # The printed command, run as printed, does not stop at the old ceiling again.
    second = runner.invoke(main, [*command[1:], "--no-report"])
    print(first.output, second.output)
    assert "completed" in second.output, second.output
