"""docs/parameters.md from playbooks/vars/parameters.yml, the one list of the -e parameters that
sweep.yml and deploy.yml accept. A `default_from` is read where the code keeps it, so the table
shows the value the code uses.

    .venv/bin/python scripts/parameters_doc.py           # rewrite docs/parameters.md
    .venv/bin/python scripts/parameters_doc.py --check   # exit 1 when it is not current
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "playbooks" / "vars" / "parameters.yml"
DOC = ROOT / "docs" / "parameters.md"
PLAYBOOKS = {"sweep": "sweep.yml", "deploy": "deploy.yml"}


def parameters() -> dict[str, list[dict[str, Any]]]:
    return dict(yaml.safe_load(SOURCE.read_text(encoding="utf-8"))["sglang_parameters"])


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(_shown(v) for v in value)
    return str(value)


def default_of(param: dict[str, Any]) -> str:
    """The default as the table shows it: `default` as written, or the value `default_from` names
    (module:NAME, module:Class.field, role:<role>:<variable>)."""
    where = param.get("default_from")
    if where is None:
        return str(param["default"])
    kind, _, rest = str(where).partition(":")
    if kind == "role":
        role, _, var = rest.partition(":")
        path = ROOT / "roles" / role / "defaults" / "main.yml"
        return f"{_shown(yaml.safe_load(path.read_text(encoding='utf-8'))[var])} (`{var}`)"
    sys.path.insert(0, str(ROOT))
    try:
        value: Any = importlib.import_module(kind)
    finally:
        sys.path.remove(str(ROOT))
    for part in rest.split("."):
        value = getattr(value, part)
    if not isinstance(value, (int, float, str, bool)):  # a dataclass field: its default
        raise TypeError(f"{param['name']}: {where} is not a plain value")
    return _shown(value)


def render() -> str:
    lines = [
        "# Parameters",
        "",
        "Every `-e` parameter of `sweep.yml` and `deploy.yml`. Generated from",
        "`playbooks/vars/parameters.yml` by `scripts/parameters_doc.py`: edit that file, then",
        "run the script (a test fails while the two differ). A bad value, or a name that is none",
        "of these (an inventory variable given with -e is named `sglang_*` or `ansible_*`), is",
        "refused by name before any host changes.",
    ]
    for playbook, params in parameters().items():
        lines += ["", f"## {PLAYBOOKS[playbook]}", ""]
        lines += ["| name | default | meaning |", "|---|---|---|"]
        for p in params:
            meaning = str(p["meaning"]).replace("|", "\\|")
            lines.append(f"| `{p['name']}` | {default_of(p)} | {meaning} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/parameters.md differs")
    a = ap.parse_args(argv)
    text = render()
    if a.check:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(f"{DOC.relative_to(ROOT)} is not current: run scripts/parameters_doc.py")
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
