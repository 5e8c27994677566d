"""report.html: the sweep's report as one self-contained page, made from report.md itself, so
every figure on the page is the markdown's own text (one source: sweep/report/render.py and the
sections report.py adds).

The page opens offline, from a copied results folder: the plots are the report's PNGs embedded as
data URIs, the style and the table sorting are inline, and a Content-Security-Policy forbids any
request (no script, style, image or font can be fetched from anywhere). The answer comes first,
as in report.md (the winner or tie of every cell), with a table of contents; every table sorts by
any column (click its header: numbers as numbers, the rest as text).

It reads the markdown subset render.py writes: headings, paragraphs, tables, bullet lists, images,
fenced code (a failure's journal), `code` and **bold**; anything else is a paragraph of text.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

HTML_FILE = "report.html"
# Nothing is fetched: images only from data: URIs, style and script only inline.
CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'none'"
)

_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)\s]+)\)$")
_HEADING = re.compile(r"^(#{1,4}) (.*)$")
_SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")

HERE = Path(__file__).resolve().parent
# inlined in every page: the style, and the tables' sorting
STYLE = (HERE / "page.css").read_text(encoding="utf-8")
SCRIPT = (HERE / "page.js").read_text(encoding="utf-8")


def _inline(text: str) -> str:
    """Escaped text with `code` and **bold**."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def _slug(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def _image(sweep_dir: Path, alt: str, src: str) -> str:
    path = sweep_dir / src
    if "/" in src or not path.is_file():
        return f"<p>{_inline(f'(plot {src} not found)')}</p>"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    kind = "svg+xml" if path.suffix == ".svg" else "png"
    return (
        f'<figure><img alt="{html.escape(alt)}" src="data:image/{kind};base64,{data}">'
        f"<figcaption>{html.escape(src)}</figcaption></figure>"
    )


def body(markdown: str, sweep_dir: Path) -> tuple[str, list[tuple[str, str]]]:
    """The markdown as HTML, and the (id, title) of every second-level heading."""
    lines = markdown.splitlines()
    out: list[str] = []
    toc: list[tuple[str, str]] = []
    taken: set[str] = set()
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append(f"<p>{' '.join(_inline(p) for p in para)}</p>")
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        heading = _HEADING.match(line)
        image = _IMAGE.match(line.strip())
        if not line.strip():
            flush()
        elif heading:
            flush()
            level, title = len(heading.group(1)), heading.group(2).strip()
            slug = _slug(title, taken)
            if level == 2:
                toc.append((slug, title))
            out.append(f'<h{level} id="{slug}">{_inline(title)}</h{level}>')
        elif line.startswith("|") and i + 1 < len(lines) and _SEPARATOR.match(lines[i + 1]):
            flush()
            head = _cells(line)
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            th = "".join(f'<th scope="col">{_inline(c)}</th>' for c in head)
            trs = "".join(
                "<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in rows
            )
            out.append(
                f'<div class="table-wrap"><table class="sortable"><thead><tr>{th}</tr></thead>'
                f"<tbody>{trs}</tbody></table></div>"
            )
            continue
        elif line.strip().startswith("```"):
            flush()
            indent = len(line) - len(line.lstrip())
            code = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code.append(html.escape(lines[i][indent:], quote=False))
                i += 1
            out.append("<pre><code>" + "\n".join(code) + "</code></pre>")
        elif line.startswith("- "):
            flush()
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:].strip())}</li>")
                i += 1
            out.append(f"<ul>{''.join(items)}</ul>")
            continue
        elif image:
            flush()
            out.append(_image(sweep_dir, image.group(1), image.group(2)))
        else:
            para.append(line.strip())
        i += 1
    flush()
    return "\n".join(out), toc


def page(markdown: str, sweep_dir: Path) -> str:
    """The whole page: report.md's content, its plots embedded, a table of contents."""
    content, toc = body(markdown, sweep_dir)
    links = "".join(f'<li><a href="#{slug}">{_inline(title)}</a></li>' for slug, title in toc)
    # the contents under the title, the answer (the first section) right after them
    nav = f'<nav aria-label="sections"><ul>{links}</ul></nav>'
    content = content.replace("</h1>", "</h1>" + nav, 1) if "</h1>" in content else nav + content
    title = html.escape(f"Sweep {sweep_dir.name}")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title><style>{STYLE}</style></head>\n"
        f"<body><main>\n{content}\n</main>\n"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
