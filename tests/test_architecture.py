"""The house rules import-linter's contracts do not state (docs/architecture.md): no module
imports itself back through a cycle, and no module in `src/` is over 1,000 lines."""

from __future__ import annotations

from pathlib import Path

import grimp

SRC = Path(__file__).resolve().parents[1] / "src" / "gpucap"
MAX_LINES = 1000


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(edges.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle_and_only_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"b"}}) == []


def test_no_module_imports_itself_back_through_a_cycle() -> None:
    # Every import counts, those under TYPE_CHECKING and inside functions too: a cycle there is
    # still two modules that cannot be read, or moved, one without the other.
    graph = grimp.build_graph("gpucap", include_external_packages=False)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert cycles(edges) == []


def test_no_module_in_src_is_over_a_thousand_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
