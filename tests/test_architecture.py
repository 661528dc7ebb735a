"""The house rules import-linter's contracts do not state (docs/architecture.md): no module
imports itself back through a cycle, no two packages import each other, and no module in `src/`
is over 1,000 lines."""

from __future__ import annotations

import itertools
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


# Package loops known and not yet ended, each with what closes it (remove a pair once ended).
# None: the last two were the simulated EC2 API sitting inside `ec2/` beside the seam while it
# reads the AMI releases and the launch choice of the packages that call that seam; it lives in
# `cloudprovider/aws/simulated/` now, as Karpenter AWS keeps its fake EC2 API in `pkg/fake/`.
KNOWN_PACKAGE_LOOPS: set[tuple[str, str]] = set()


def package_loops(graph: grimp.ImportGraph) -> set[tuple[str, str]]:
    """The pairs of packages (each with its subpackages, neither inside the other) of which
    each imports the other directly."""
    packages = sorted(m for m in graph.modules if graph.find_children(m))

    def imports(a: str, b: str) -> bool:
        return graph.direct_import_exists(importer=a, imported=b, as_packages=True)

    return {
        (a, b)
        for a, b in itertools.combinations(packages, 2)
        if not b.startswith(f"{a}.") and imports(a, b) and imports(b, a)
    }


def test_no_two_packages_import_each_other() -> None:
    # A module-level cycle is caught above; this is the coarser loop between two packages
    # (disruption importing provisioning, provisioning importing disruption's PDB limits) that
    # keeps either package from being read, tested or moved without the other.
    graph = grimp.build_graph("gpucap", include_external_packages=False)
    assert package_loops(graph) == KNOWN_PACKAGE_LOOPS


def test_no_module_in_src_is_over_a_thousand_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
