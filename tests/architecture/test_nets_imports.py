"""The modules of ``bnstudy.nets`` import one another without a circle: each network kind builds on the
shared interface (``spec``) and the one training loop (``train``), never the other way round.

Read from the source with ``ast`` (no import): imports at the top of a module and inside its
functions both count, so a late import that closes a circle is caught as soon as it is written."""

import ast

from conftest import ROOT

NETS = ROOT / "src" / "bnstudy" / "nets"
PACKAGE = ("bnstudy", "nets")


def _targets(node: ast.AST, modules: set[str]) -> set[str]:
    """The modules of ``modules`` (names inside ``bnstudy.nets``) that one import statement names."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = list(PACKAGE[: len(PACKAGE) - node.level + 1]) if node.level else []
        module = ".".join([*base, *([node.module] if node.module else [])])
        names = [module] + [f"{module}.{a.name}" for a in node.names]  # ``from pkg import module``
    else:
        return set()
    prefix = ".".join(PACKAGE) + "."
    return {n[len(prefix) :].split(".")[0] for n in names if n.startswith(prefix)} & modules


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """``{module: the modules of the package it imports}`` of ``sources`` (``{module name: source}``),
    every import statement anywhere in a module (inside functions too)."""
    modules = set(sources)
    graph = {}
    for name, source in sources.items():
        found = set()
        for node in ast.walk(ast.parse(source)):
            found |= _targets(node, modules)
        graph[name] = found - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle of imports found by a depth-first walk, each as the modules along it, first
    module repeated at the end (empty: none)."""
    found, state = [], {}  # state: 1 on the current path, 2 finished

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def _nets_sources() -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(NETS.glob("*.py")) if p.stem != "__init__"}


def test_the_nets_modules_import_one_another_without_a_circle():
    graph = import_graph(_nets_sources())
    assert {"spec", "train", "model", "conv_train", "network"} <= set(graph)
    assert not cycles(graph), f"circles of imports in bnstudy.nets: {cycles(graph)}"


def test_the_kinds_build_on_the_shared_interface_and_loop_which_know_no_kind():
    graph = import_graph(_nets_sources())
    assert "spec" in graph["model"] and "spec" in graph["conv_train"]
    assert not graph["train"] & {"model", "conv_train", "network", "spec"}, graph["train"]
    assert not graph["spec"] & {"model", "conv_train", "network"}, graph["spec"]
    assert {"model", "conv_train"} <= graph["network"]


def test_the_check_sees_a_circle_through_a_function_level_import():
    """The check can fail: a circle closed by an import inside a function, by ``from package import
    module`` or by a relative import is found; a chain without one is not."""
    sources = {
        "a": "from bnstudy.nets.b import f\n",
        "b": "def f():\n    from bnstudy.nets import c\n",
        "c": "import numpy\n",
    }
    assert import_graph(sources) == {"a": {"b"}, "b": {"c"}, "c": set()}
    assert cycles(import_graph(sources)) == []
    closed = sources | {"c": "def g():\n    from .a import f\n"}
    assert cycles(import_graph(closed)) == [["a", "b", "c", "a"]]
    assert cycles(import_graph({"x": "import bnstudy.nets.y\n", "y": "from bnstudy.nets import x\n"})) == [
        ["x", "y", "x"]
    ]
