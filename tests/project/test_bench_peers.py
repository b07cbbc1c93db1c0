"""The arithmetic of bench/bench_peers.py: the steady window and the ratio verdicts.

The benchmark itself (servers, peers installed from PyPI and npm) is not part of the suite.
"""

from __future__ import annotations

import pytest
from fixtures.bench_scripts import load_bench_script

bench_peers = load_bench_script("bench_peers")
Sample = bench_peers.Sample


def test_window_spans_the_first_polls_past_ten_and_ninety_percent() -> None:
    # 1,000 requests; start-up (no requests, 3 s of CPU) and the tail must not count.
    samples = [
        Sample(0.0, 0, 0.0),
        Sample(1.0, 0, 3.0),
        Sample(2.0, 50, 3.1),
        Sample(3.0, 150, 3.2),  # first poll >= 100: the window starts here
        Sample(4.0, 500, 3.5),
        Sample(5.0, 950, 3.9),  # first poll >= 900: it ends here
        Sample(6.0, 1000, 5.0),
    ]
    w = bench_peers.steady_window(samples, 1000)
    assert (w.requests, w.seconds) == (800, 2.0)
    assert w.cpu_s == pytest.approx(0.7)
    assert w.rate == 400.0
    assert w.cpu_ms_per_request == pytest.approx(0.875)


def test_window_refuses_a_run_that_never_reached_ninety_percent() -> None:
    samples = [Sample(0.0, 0, 0.0), Sample(1.0, 200, 0.5), Sample(2.0, 800, 1.0)]
    with pytest.raises(ValueError, match="too few requests"):
        bench_peers.steady_window(samples, 1000)


def test_ratio_line_says_met_or_missed() -> None:
    ok, line = bench_peers.ratio_line("promptfoo", 600.0, 200.0, 3.0)
    assert ok and line == "harness/promptfoo requests/s: 3.00x (target >= 3x) [ok]"
    ok, line = bench_peers.ratio_line("inspect_ai", 600.0, 100.0, 8.0)
    assert not ok and line.endswith("6.00x (target >= 8x) [MISSED]")
