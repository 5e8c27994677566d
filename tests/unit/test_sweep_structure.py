"""The packages' shape: no import cycle among sweep/'s modules nor bench/'s (lazy imports inside
functions count too: they hide a cycle, they do not remove it), and no Python file in library/ or
sweep/ over 800 lines (a module is named for one job)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 800


def package_imports(package: str = "sweep") -> dict[str, set[str]]:
    """module -> the package's modules it imports anywhere in its file."""
    graph: dict[str, set[str]] = {}
    modules = {p.stem for p in (ROOT / package).glob("*.py")}
    for path in (ROOT / package).glob("*.py"):
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == package:
                    edges |= {a.name for a in node.names if a.name in modules}
                elif node.module.startswith(f"{package}."):
                    edges.add(node.module.split(".")[1])
            elif isinstance(node, ast.Import):
                edges |= {
                    a.name.split(".")[1] for a in node.names if a.name.startswith(f"{package}.")
                }
        graph[path.stem] = edges - {path.stem}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle reachable by depth-first search (each found once per entry point)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_the_sweep_package_has_no_import_cycle() -> None:
    graph = package_imports("sweep")
    assert "plan" in graph and "planner" in graph["__main__"]  # the walk sees the package
    assert cycles(graph) == []


def test_the_bench_package_has_no_import_cycle() -> None:
    graph = package_imports("bench")
    assert {"builtin", "corpora"} <= graph["prompt_sets"]  # the walk sees the package
    assert cycles(graph) == []


def test_the_walk_finds_a_cycle_when_there_is_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_python_file_in_library_or_sweep_is_over_800_lines() -> None:
    sizes = {
        str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
        for d in ("library", "sweep")
        for p in (ROOT / d).glob("*.py")
    }
    assert sizes and {p: n for p, n in sizes.items() if n > MAX_LINES} == {}
