"""report.html (sweep/report/html.py): the report's own text as one page that requests nothing.
Its figures are report.md's, table for table and cell for cell; its plots are embedded."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from test_sweep_report import BASE, _point, _rep_point

from sweep.report import html
from sweep.report.report import write_report


class _Page(HTMLParser):
    """Every table's rows (cell texts), every attribute that names a resource, the headings."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.links: list[str] = []
        self.headings: list[str] = []
        self._cell: list[str] | None = None
        self._heading: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset", "poster", "data") and value:
                self.links.append(value)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("h1", "h2", "h3"):
            self._heading = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag in ("h1", "h2", "h3") and self._heading is not None:
            self.headings.append("".join(self._heading).strip())
            self._heading = None

    def handle_data(self, data: str) -> None:
        for part in (self._cell, self._heading):
            if part is not None:
                part.append(data)


def _md_tables(md: str) -> list[list[list[str]]]:
    """report.md's tables as rows of cell texts, as a reader sees them (`code` unquoted)."""
    tables: list[list[list[str]]] = []
    lines = md.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
            tables.append([])
        if line.startswith("|") and not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line):
            cells = [c.strip().replace("`", "") for c in line.strip().strip("|").split("|")]
            tables[-1].append(cells)
    return tables


def _read(path: str) -> _Page:
    page = _Page()
    page.feed(Path(path).read_text(encoding="utf-8"))
    return page


def test_the_page_shows_report_md_table_for_table_and_cell_for_cell(tmp_path: Path) -> None:
    s = tmp_path / "s"
    _rep_point(s, "baseline", [100.0, 101.0, 99.0], server=BASE)
    _rep_point(s, "spec", [150.0, 151.0, 149.0])
    out = write_report(s, with_plots=False)
    md = Path(out["report"]).read_text(encoding="utf-8")
    page = _read(out["html"])
    assert out["html"] == str(s / "report.html")
    assert page.tables == _md_tables(md) and len(page.tables) >= 4
    # the answer first: the winner's mean and interval, as report.md gives them
    winners = page.tables[0]
    assert winners[0][:6] == ["context", "concurrency", "output len", "category", "winner", "tok/s"]
    assert winners[1][4:6] == ["spec", "150.0 ± 2.5"]
    assert page.headings[:2] == ["Sweep s", "Winner per cell"]


def test_a_sources_accept_length_is_the_same_on_the_page(tmp_path: Path) -> None:
    s = tmp_path / "demo"
    base = {"algorithm": "NONE", "budget": 16, "topk": 4, "window": 2048}
    _point(s, "baseline", base, 50.0, None)
    _point(s, "ddtree-b8-k4-w2048", {**base, "algorithm": "DDTREE", "budget": 8}, 150.0, 4.5)
    out = write_report(s, with_plots=True)
    md = Path(out["report"]).read_text(encoding="utf-8")
    page = _read(out["html"])
    assert page.tables == _md_tables(md)
    every = next(t for t in page.tables if t[0][:3] == ["point", "cell", "n"])
    accept = every[0].index("accept")
    spec = [row for row in every[1:] if row[0] == "ddtree-b8-k4-w2048"]
    assert spec and {row[accept] for row in spec} == {"4.50"}
    # every plot report.md shows is on the page, embedded
    pngs = re.findall(r"^!\[[^\]]*\]\(([^)]+\.png)\)$", md, re.M)
    assert pngs and len(
        [link for link in page.links if link.startswith("data:image/png;base64,")]
    ) == len(pngs)


def test_the_page_requests_nothing(tmp_path: Path) -> None:
    s = tmp_path / "s"
    _rep_point(s, "baseline", [100.0, 101.0, 99.0], server=BASE)
    _rep_point(s, "spec", [150.0, 151.0, 149.0])
    text = Path(write_report(s, with_plots=True)["html"]).read_text(encoding="utf-8")
    page = _Page()
    page.feed(text)
    assert page.links and all(link.startswith(("data:", "#")) for link in page.links)
    assert f'http-equiv="Content-Security-Policy" content="{html.CSP}"' in text
    assert "default-src 'none'" in html.CSP
    assert not re.search(r"(?i)\b(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text.replace(html.CSP, ""))


def test_the_markdown_subset_render_writes(tmp_path: Path) -> None:
    md = "\n".join(
        [
            "# Sweep x",
            "",
            "Two lines of one",
            "paragraph with `code`, **bold** and <angle> & amp.",
            "",
            "## A | section",
            "- one",
            "- two `b`",
            "",
            "| a | b |",
            "|---|---|",
            "| 1 | tie: p ~ q |",
            "",
            "## A | section",
            "![missing.png](missing.png)",
            "- a failure:",
            "",
            "  ```",
            "  Traceback <x>",
            "    raise",
            "  ```",
        ]
    )
    content, toc = html.body(md, tmp_path)
    assert toc == [("a-section", "A | section"), ("a-section-2", "A | section")]
    assert (
        "<p>Two lines of one paragraph with <code>code</code>, <strong>bold</strong> and "
        "&lt;angle&gt; &amp; amp.</p>"
    ) in content
    assert "<ul><li>one</li><li>two <code>b</code></li></ul>" in content
    assert '<thead><tr><th scope="col">a</th><th scope="col">b</th></tr></thead>' in content
    assert "<td>tie: p ~ q</td>" in content
    assert "(plot missing.png not found)" in content
    assert "<pre><code>Traceback &lt;x&gt;\n  raise</code></pre>" in content
    page = html.page(md, tmp_path)
    assert page.index("</h1><nav") < page.index('id="a-section"')


def test_a_model_searchs_rounds_are_drawn_on_the_grid(tmp_path: Path) -> None:
    import json

    from test_sweep_model_search import GRID
    from test_sweep_planner import drive, start

    from sweep.report.search_plot import search_plot

    d = start(tmp_path, baseline="false", **GRID)
    drive(d, ["h1"])
    search = json.loads((d / "search.json").read_text())
    ran = [pid for ids in search["round_points"] for pid in ids]
    assert ran == search["full"] and len(search["round_points"]) > 2
    out = write_report(d, with_plots=True)
    md = Path(out["report"]).read_text(encoding="utf-8")
    assert md.index("## Search") < md.index("![search_rounds.png](search_rounds.png)")
    assert (d / "search_rounds.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(d / "search_rounds.png") in out["plots"]
    # a search recorded before its rounds' points were: no plot, the report as before
    old = {k: v for k, v in search.items() if k != "round_points"}
    assert not search_plot(old, set(), tmp_path / "none.png")
    assert not (tmp_path / "none.png").exists()
