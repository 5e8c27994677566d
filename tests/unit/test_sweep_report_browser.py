"""report.html in a real headless Chromium (Debian's; tests/browser.py drives it over the DevTools
protocol): the report of a grid sweep shaped like the demo's and of a model-search sweep open with
no console error and no request beyond the file itself, show every section report.md has, winner
table first, sort a table by a click, and give a screenshot (saved beside the test's output).

`make deps` installs Chromium. Without it the test is skipped on a developer's machine and fails
in CI (CI=true), so the suite never passes there without having opened the pages."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import Browser, find_chromium
from test_sweep_model_search import GRID
from test_sweep_planner import drive, start

from sweep.report.report import write_report


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("no Chromium: make deps installs it (the report's browser test needs it)")
        pytest.skip("no Chromium here (make deps installs it)")
    b = Browser(binary)
    yield b
    b.close()


def _rows(b: Browser, table: int) -> list[list[str]]:
    return b.evaluate(
        f"Array.from(document.querySelectorAll('table')[{table}].tBodies[0].rows)"
        ".map(r => Array.from(r.cells).map(c => c.textContent))"
    )


def _check(b: Browser, sweep_dir: Path, shot: Path) -> dict[str, object]:
    out = write_report(sweep_dir, with_plots=True)
    page = Path(out["html"])
    md = Path(out["report"]).read_text(encoding="utf-8")
    b.events.clear()
    b.open(page)
    assert b.errors() == []
    requests = b.requests()
    assert requests[0] == page.resolve().as_uri()
    assert [u for u in requests[1:] if not u.startswith("data:")] == []
    sections = b.sections()
    assert sections == re.findall(r"^## (.*)$", md, re.M)
    assert sections[0] == "Winner per cell"
    images = b.images()
    assert images and all(ok for _, ok in images), images
    b.screenshot(shot)
    assert shot.stat().st_size > 10_000
    return {"sections": sections, "images": len(images)}


def _sort(b: Browser, header: str, beside: str) -> None:
    """Click `header` in the table that has it and `beside`: its rows then go by that column,
    ascending; a second click reverses them (one of the two orders is not the table's own)."""
    tables = b.evaluate(
        "Array.from(document.querySelectorAll('table')).map(t => "
        "Array.from(t.tHead.rows[0].cells).map(c => c.textContent))"
    )
    table = next(i for i, heads in enumerate(tables) if {header, beside} <= set(heads))
    column = tables[table].index(header)
    before = _rows(b, table)
    b.evaluate(f"document.querySelectorAll('table')[{table}].tHead.rows[0].cells[{column}].click()")
    after = _rows(b, table)
    values = [float(row[column].split()[0]) for row in after]
    assert values == sorted(values) and sorted(after) == sorted(before)
    b.evaluate(f"document.querySelectorAll('table')[{table}].tHead.rows[0].cells[{column}].click()")
    again = _rows(b, table)
    assert [row[column] for row in again] == [row[column] for row in reversed(after)]
    assert again != before and len(set(values)) > 1  # the click reordered the table


def test_the_grid_sweeps_page_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    d = start(tmp_path, budget="32,48", topk="2,4")
    drive(d, ["h1"])
    shot = tmp_path / "report-grid.png"
    seen = _check(browser, d, shot)
    assert "Greedy-output check" in seen["sections"] and "Every point x cell" in seen["sections"]
    _sort(browser, "tok/s", "cell")
    print(f"screenshot: {shot}")


def test_the_model_search_sweeps_page_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    d = start(tmp_path, baseline="false", **GRID)
    drive(d, ["h1", "h2"])
    shot = tmp_path / "report-model-search.png"
    seen = _check(browser, d, shot)
    assert any(s.startswith("Model search") or "search" in s.lower() for s in seen["sections"])
    _sort(browser, "tok/s", "cell")
    size = Path(d / "report.html").stat().st_size
    print(f"screenshot: {shot}; report.html {size} bytes")
