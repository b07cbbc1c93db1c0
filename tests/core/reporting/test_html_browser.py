"""The sim example's HTML report in a real headless Chromium (Debian's ``chromium``, driven
by Playwright over the DevTools protocol; Playwright never downloads a browser here): no
console error, no network request, every section present, a count opens its cases and a
case its conversation, model text shown as text, and a screenshot that is not blank.

Skipped only when no Chromium binary is found (``.ci/run`` installs it).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

from harness.plugins.assembly import build_report
from harness.plugins.family_parts import report_sections
from harness.reporting.html import render_html
from harness.running.campaign import resolve_campaign
from harness.running.runner import run_campaign
from harness.store.reader import EventReader
from tests.core.reporting.test_html_report import HOSTILE_REPLY, hostile_log, hostile_page

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is a dev dependency (uv sync --all-groups)"
)

REPO = Path(__file__).resolve().parents[3]
T = TypeVar("T")
SCREENSHOT = REPO / "docs" / "report-screenshot.png"


def in_thread(work: Callable[[], T]) -> T:
    """Run ``work`` (which runs an event loop) beside Playwright's own loop."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(work).result()


def chromium_binary() -> str | None:
    for candidate in (os.environ.get("HARNESS_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and (found := shutil.which(candidate)):
            return found
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no chromium binary on PATH (apt-get install chromium; .ci/run does)")
    with playwright_api.sync_playwright() as p:
        # Debian's chromium, never a browser Playwright would download.
        launched = p.chromium.launch(executable_path=binary, args=["--no-sandbox"])
        yield launched
        launched.close()


class Watched:
    """A page with every console error, page error, request and dialog recorded."""

    def __init__(self, browser: Any, scheme: str = "light") -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
        # Generous: CI machines and shared ones can be slow; a real failure still fails.
        self.page.set_default_timeout(120_000)
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def open(self, path: Path) -> Any:
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("body[data-ready=true]")
        return self.page


@pytest.fixture(scope="module")
def sim_html(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    config, _ = resolve_campaign("sim")
    directory = tmp_path_factory.mktemp("sim")
    db = directory / "sim.db"
    in_thread(lambda: asyncio.run(run_campaign(config, db)))
    page = directory / "sim.html"
    with EventReader(db) as log:
        page.write_text(render_html(log, sections=report_sections()), encoding="utf-8")
    return db, page


def _pixel_spread(png: bytes) -> float:
    """Standard deviation of the screenshot's grey levels (0 for a blank page)."""
    import io

    from PIL import Image, ImageStat

    grey = Image.open(io.BytesIO(png)).convert("L")
    return float(ImageStat.Stat(grey).stddev[0])


def test_the_sim_report_in_chromium(browser: Any, sim_html: tuple[Path, Path]) -> None:
    db, path = sim_html
    watched = Watched(browser)
    page = watched.open(path)
    # Keyboard: the first Tab reaches the skip link.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    with EventReader(db) as log:
        names = [t.name for t in build_report(log)]
    for name in ["campaign", *(f"t-{n}" for n in names), "cases"]:
        assert page.locator(f"#{name}").count() == 1, name
        assert page.locator(f"#{name} h2").first.is_visible(), name
    assert page.locator("svg.plot").count() >= 6
    # A count opens its cases: the first row of the violation rates (one relation).
    first = page.locator("#t-violation_rates tbody tr").first
    relation = first.locator("td").nth(1).inner_text()
    cases = int(first.locator("td").nth(2).inner_text())
    first.locator("a.drill").first.click()
    assert page.locator("#case-count").inner_text().startswith(f"{cases} of ")
    listed = page.locator("#case-list button")
    assert listed.count() == min(cases, 100)
    # A case opens its conversation turn by turn, with its verdict.
    listed.first.click()
    conversation = page.locator("#conversation")
    assert conversation.locator(".turn").count() >= 2
    assert conversation.locator(".verdict").count() >= 1
    assert relation in conversation.inner_text()
    assert conversation.locator(".text.reply").first.inner_text().strip()
    # Filters: outcome VIOLATED and a search narrow the list.
    page.select_option("#f-outcome", label="VIOLATED")
    violated = page.locator("#case-count").inner_text()
    assert int(violated.split()[0]) < cases
    page.click("#f-clear")
    page.fill("#f-search", "no match for this text anywhere")
    playwright_api.expect(page.locator("#case-count")).to_have_text(
        re.compile(r"^0 of "), timeout=60_000
    )
    page.click("#f-clear")
    # Keyboard: Enter on a focused case opens it and moves focus to the conversation.
    page.locator("#case-list button").nth(1).focus()
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "conversation"
    png = page.screenshot()
    page.close()
    assert watched.errors == [], watched.errors
    assert [u for u in watched.requests if not u.startswith("file:")] == []
    assert watched.requests == [path.as_uri()]  # the page itself, and nothing else
    assert _pixel_spread(png) > 10


def test_the_screenshot_for_the_docs(browser: Any, sim_html: tuple[Path, Path]) -> None:
    """Kept in docs/ for the README: the top of the sim report. Regenerated with
    HARNESS_REGENERATE_SCREENSHOT=1; otherwise checked to exist and not be blank."""
    _, path = sim_html
    watched = Watched(browser)
    page = watched.open(path)
    png = page.screenshot(clip={"x": 0, "y": 0, "width": 1280, "height": 1400}, full_page=True)
    if os.environ.get("HARNESS_REGENERATE_SCREENSHOT"):
        SCREENSHOT.write_bytes(png)
    assert _pixel_spread(png) > 10
    assert SCREENSHOT.exists() and _pixel_spread(SCREENSHOT.read_bytes()) > 10
    assert watched.errors == []


def test_dark_mode_and_print(browser: Any, sim_html: tuple[Path, Path]) -> None:
    _, path = sim_html
    watched = Watched(browser, scheme="dark")
    page = watched.open(path)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(18, 20, 22)"
    page.emulate_media(media="print")
    assert not page.locator("#filters").is_visible()
    assert page.locator("#t-violation_rates table").is_visible()
    assert watched.errors == []


def test_model_text_is_shown_as_text_in_the_browser(browser: Any, tmp_path: Path) -> None:
    db = in_thread(lambda: hostile_log(tmp_path))
    path = tmp_path / "hostile.html"
    path.write_text(hostile_page(db), encoding="utf-8")
    watched = Watched(browser)
    page = watched.open(path)
    assert page.title().startswith("bias-harness report: hostile </title><script>")
    assert page.locator("script").count() == 2
    assert page.locator("img").count() == 0
    page.locator("#case-list button").first.click()
    reply = page.locator("#conversation .text.reply").first.inner_text()
    assert reply == HOSTILE_REPLY
    assert watched.dialogs == [] and watched.errors == []
    assert page.evaluate("document.title") != "pwned"


PLOTTED_VALUES = """
(section) => {
  const s = document.getElementById(section);
  const heads = [...s.querySelectorAll("table thead th")].map(
    (th) => th.textContent.replace(" ◆", "").trim()
  );
  const rows = [...s.querySelectorAll("table tbody tr")].map((tr) => {
    const cells = [...tr.querySelectorAll("td")].map((td) => td.textContent.trim());
    return Object.fromEntries(heads.map((h, i) => [h, cells[i]]));
  });
  const drawn = [...s.querySelectorAll("th.drawn")].map(
    (th) => th.textContent.replace(" ◆", "").trim()
  );
  const figures = [...s.querySelectorAll("figure")].map((f) => ({
    measure: f.querySelector("figcaption").dataset.measure,
    caption: f.querySelector("figcaption").textContent,
    points: [...f.querySelectorAll("g[data-value]")].map((g) => ({
      label: g.dataset.label, row: g.dataset.row, column: g.dataset.column,
      value: Number(g.dataset.value),
    })),
  }));
  return { rows, drawn, figures };
}
"""


def test_the_findings_come_first_and_plots_draw_what_the_table_shows(
    browser: Any, sim_html: tuple[Path, Path]
) -> None:
    _, path = sim_html
    watched = Watched(browser)
    page = watched.open(path)
    # The findings block is the first section after the campaign header, in sentences.
    order = page.evaluate("[...document.querySelectorAll('main > section')].map(s => s.id)")
    assert order[:2] == ["campaign", "t-findings"]
    findings = page.locator("#t-findings")
    assert findings.locator(".headline").inner_text().split()[1] == "flagged"
    flagged = findings.locator("li.flagged")
    assert flagged.count() >= 5
    # A flagged sentence names its direction and its interval (the first may be a
    # relation's excess over its control, which has no direction).
    texts = flagged.all_inner_texts()
    assert any(" -> " in t and "[+" in t for t in texts), texts[:3]
    # An example link opens that conversation in the case browser.
    link = findings.locator("a.case-link").first
    case_id = link.get_attribute("data-case")
    link.click()
    assert page.locator("#conversation h3").inner_text() == case_id
    assert page.locator("#case-count").inner_text().startswith("1 of ")
    # Each plot names the column it draws; the table marks it; every point drawn is that
    # column's value in the table's row of the same labels.
    seen = 0
    for section in ("t-violation_rates", "t-top_violating_terms"):
        got = page.evaluate(PLOTTED_VALUES, section)
        assert got["figures"], section
        for figure in got["figures"]:
            measure = figure["measure"]
            assert measure in got["drawn"] and measure in figure["caption"]
            for point in figure["points"]:
                if point["label"] is not None:  # forest: labelled by model · relation (· term)
                    parts = point["label"].split(" · ")
                    match = [r for r in got["rows"] if all(p in r.values() for p in parts)]
                else:  # heatmap: a row label by a column label
                    match = [
                        r for r in got["rows"]
                        if point["row"] in r.values() and point["column"] in r.values()
                    ]  # fmt: skip
                assert match, point
                assert float(match[0][measure]) == pytest.approx(point["value"], abs=1e-9)
                seen += 1
    assert seen >= 8
    assert watched.errors == []
