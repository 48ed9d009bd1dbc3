"""The package's layering (docs/architecture.md): no import cycle, and no arrow running back up."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "lysep_cli"
#: lower layers first; a module may import its own layer and those below it
LAYERS = ["platform_pin", "numerics", "accel", "solvers", "specs", "store", "execution", "reports", "options", "cli"]


@lru_cache(maxsize=1)
def _imports() -> dict[str, set[str]]:
    """module (dotted, relative to lysep_cli) -> the lysep_cli modules it imports."""
    out: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lysep_cli"):
                assert node.level == 0, f"{path}: relative import"
                sub = node.module[len("lysep_cli"):].lstrip(".")
                deps |= {a.name for a in node.names} if not sub else {sub}
            elif isinstance(node, ast.Import):
                deps |= {a.name[len("lysep_cli."):] for a in node.names if a.name.startswith("lysep_cli.")}
        out[name] = deps
    return out


def _layer(module: str) -> int:
    top = module.split(".")[0]
    return 0 if top == "__init__" else LAYERS.index(top)  # the package's __init__ only pins the platform


def test_every_module_belongs_to_a_layer():
    assert all(m.split(".")[0] in LAYERS + ["__init__"] for m in _imports())


def test_no_arrow_runs_back_up():
    back = [(m, d) for m, deps in _imports().items() for d in deps if _layer(d) > _layer(m)]
    assert back == []


def test_no_import_cycle():
    modules = _imports()
    graph = {m: {d for d in deps if d in modules} for m, deps in modules.items()}
    seen: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(m: str, path: list[str]) -> None:
        seen[m] = 1
        for d in sorted(graph[m]):
            assert seen.get(d) != 1, " -> ".join(path + [m, d])
            if d not in seen:
                visit(d, path + [m])
        seen[m] = 2

    for m in sorted(graph):
        if m not in seen:
            visit(m, [])


def _tree_modules() -> set[str]:
    """The modules docs/architecture.md's tree (its first code block) names, as paths relative to lysep_cli/:
    a line whose first word ends in "/" opens a package (the modules on that line are its own), every other
    line's modules belong to the innermost package indented less than it."""
    import re

    tree = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8").split("```")[1]
    stack: list[tuple[int, str]] = []
    named: set[str] = set()
    for line in tree.splitlines():
        if not line.strip():
            continue
        indent, first = len(line) - len(line.lstrip()), line.split()[0]
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if first.endswith("/"):
            stack.append((indent, first))
        package = "".join(name for _, name in stack[1:])  # stack[0]: lysep_cli/ itself
        named |= {package + m for m in re.findall(r"\b([a-z_0-9]+\.py)\b", line)}
    return named


def test_docs_architecture_lists_every_module():
    """Every module of lysep_cli/ is named in docs/architecture.md's tree under its package (issue 55), and
    the tree names no module that is gone."""
    modules = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
               if p.name != "__init__.py" or p.parent == PACKAGE}  # a package's own __init__: its line
    named = _tree_modules()
    assert sorted(modules - named) == [], "modules missing from docs/architecture.md"
    assert sorted(named - modules) == [], "docs/architecture.md names modules that are gone"
