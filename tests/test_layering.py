"""The floor plan: ``minidp/core`` imports nothing from the Paddle surface built on it, and no two
of minidp's modules import each other, directly or round a longer loop.

Every import counts, including those inside functions (a lazy import still ties two modules
together, and is how cycles usually hide). A package counts as its ``__init__.py``; a module
being loaded after its parent package is not an import of its own.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "minidp"


def module_files() -> dict:
    """Every module of minidp by dotted name, packages under their own name."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imports_of(name: str, path: Path, modules: dict) -> set:
    """The minidp modules that ``name`` (at ``path``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()

    def nearest(dotted: str) -> str:
        while dotted not in modules and "." in dotted:
            dotted = dotted.rpartition(".")[0]
        return dotted

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(nearest(alias.name) for alias in node.names if alias.name.split(".")[0] == "minidp")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "minidp":
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in modules else nearest(target))
    found.discard(name)
    return found


def import_graph() -> dict:
    modules = module_files()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def in_core(name: str) -> bool:
    return name == "minidp.core" or name.startswith("minidp.core.")


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module, or of one that imports itself
    (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in graph:
                    continue
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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


def test_the_core_imports_nothing_from_the_surface():
    graph = import_graph()
    assert any(in_core(name) for name in graph), "minidp/core is missing"
    leaks = sorted(
        f"{name} imports {target}" for name in graph if in_core(name) for target in graph[name] if not in_core(target)
    )
    assert not leaks, (
        "the core (minidp/core) must import nothing outside itself: the Paddle surface is built on "
        "the core, never the other way round. Move what the core needs into it, or give the core a "
        "seam the surface fills:\n" + "\n".join(leaks)
    )


def test_no_two_modules_import_each_other():
    found = cycles(import_graph())
    assert not found, "import cycles among minidp's modules (each line one cycle):\n" + "\n".join(
        " <-> ".join(component) for component in found
    )


def test_the_checks_see_a_leak_and_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    modules = module_files()
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert "minidp.core.tensor" in graph["minidp.core.function"]
    assert "minidp.core.tensor" in graph["minidp.autograd"]
