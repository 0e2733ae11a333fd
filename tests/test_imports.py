"""No import cycle in pytest_zbench: every module's imports, those under `if TYPE_CHECKING:` and those inside
functions included, relative ones resolved (docs/architecture.md, "The layers").

A cycle that only exists at type level is still a cycle: the two modules cannot be read, moved or tested
one without the other. The walk is over the source (ast), so nothing is imported to check it.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_zbench"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The package's modules this file imports. `from X import y` counts X.y when it is a module (a
    submodule import), else X; a package's own __init__ counts only when names come from it."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in modules else target)
    return {module for module in found if module in modules and module != name}


def import_graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imported_modules(path, modules) for path in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as the list of its modules (the first one again at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return None


def test_the_walk_sees_relative_and_type_checking_imports() -> None:
    graph = import_graph()
    assert "pytest_zbench.errors" in graph["pytest_zbench.protocol"]
    assert "pytest_zbench.host.devices.device" in graph["pytest_zbench.host.host_session"]


def test_a_cycle_is_found_and_named() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_the_package() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


# host/'s folders by role, each importing only those before it; the session and the run record, at host/'s
# top, import them all (docs/architecture.md, "The layers").
HOST_FOLDERS = ("devices", "measure", "verdicts", "report")


def test_host_folders_import_only_the_folders_before_them() -> None:
    def rank(module: str) -> int | None:
        parts = module.split(".")
        if parts[:2] != ["pytest_zbench", "host"] or len(parts) < 3:
            return None
        return HOST_FOLDERS.index(parts[2]) if parts[2] in HOST_FOLDERS and len(parts) > 3 else len(HOST_FOLDERS)

    upward = [f"{module} -> {target}" for module, targets in import_graph().items() for target in targets
              if (low := rank(module)) is not None and (high := rank(target)) is not None and high > low]
    assert not upward, "imports against host/'s folder order:\n" + "\n".join(sorted(upward))
