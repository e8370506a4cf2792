"""The package's layers (pyproject.toml's [tool.importlinter], drawn in CONTRIBUTING.md): imports
flow one way, function-level imports included, and no module imports itself back through others."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Layer cli: runs import-linter's command in a subprocess.

LINT_IMPORTS = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                "sys.exit(lint_imports_command())", "--no-cache"]


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(LINT_IMPORTS, cwd=root, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "vjplint", tmp_path / "vjplint", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_layers_contract_is_kept() -> None:
    proc = _lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Contracts: 2 kept, 0 broken." in proc.stdout


@pytest.mark.parametrize("module, statement, upward", [
    # a module-level import from the syntax layer up into the engine
    ("vjplint/syntax/source.py", "from vjplint.lint.engine import lint_source\n", "vjplint.syntax is not allowed to import vjplint.lint"),
    # a function-level import (the kind that hid the old cycle) from the facts up into the rules
    ("vjplint/facts/loops.py", "\n\ndef _upward():\n    from vjplint.rules.registry import all_rules\n    return all_rules\n",
     "vjplint.facts is not allowed to import vjplint.rules"),
    # one rule family reading another's module (what two families share goes to vjplint/facts/)
    ("vjplint/rules/order/vjp334_rule_order_by_name.py",
     "from vjplint.rules.structure.vjp333_jvp_tangent_structure import JvpTangentStructure\n",
     "vjplint.rules.order is not allowed to import vjplint.rules.structure"),
])
def test_an_upward_import_breaks_the_contract(tmp_path: Path, module: str, statement: str, upward: str) -> None:
    root = _copy(tmp_path)
    target = root / module
    text = target.read_text(encoding="utf-8")
    if statement.startswith("\n"):
        target.write_text(text + statement, encoding="utf-8")
    else:
        head, _, rest = text.partition("\nfrom ")
        target.write_text(head + "\n" + statement + "from " + rest, encoding="utf-8")
    proc = _lint_imports(root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Contracts: 1 kept, 1 broken." in proc.stdout
    assert upward in proc.stdout


def test_no_import_cycle_between_modules() -> None:
    """grimp's graph (the one import-linter checks) has no cycle, imports inside functions included."""
    import grimp

    graph = grimp.build_graph("vjplint", cache_dir=None)
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    cycles = []

    def visit(start: str) -> None:  # Tarjan's strongly connected components, iteratively
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
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
                        cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert cycles == []


def test_at_most_eight_top_level_modules_and_documented_folders() -> None:
    package = ROOT / "vjplint"
    top = sorted(p.name for p in package.glob("*.py"))
    assert len(top) <= 8, top
    for folder in sorted(p for p in package.iterdir() if (p / "__init__.py").exists()):
        doc = (folder / "__init__.py").read_text(encoding="utf-8")
        assert doc.lstrip().startswith('"""'), f"{folder.name}/__init__.py has no docstring"
        assert "import" in doc.lower().split('"""')[1], f"{folder.name}/__init__.py does not say what it may import"


def test_no_rule_module_over_300_lines() -> None:
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in (ROOT / "vjplint" / "rules").rglob("vjp*.py")}
    assert len(sizes) >= 60
    assert {name: n for name, n in sizes.items() if n > 300} == {}


def test_rules_live_in_family_folders_that_the_independence_contract_lists() -> None:
    """Every rule module sits in a family folder (named after what the user got wrong), and every
    family is one of the modules the independence contract keeps apart."""
    rules = ROOT / "vjplint" / "rules"
    assert sorted(p.name for p in rules.glob("vjp*.py")) == []
    families = sorted(p.name for p in rules.iterdir() if (p / "__init__.py").exists())
    for family in families:
        assert list((rules / family).glob("vjp[0-9]*.py")), family
        doc = (rules / family / "__init__.py").read_text(encoding="utf-8")
        assert doc.lstrip().startswith('"""') and "import" in doc, family
    (independence,) = [c for c in _contracts() if c["type"] == "independence"]
    assert sorted(m.split(".")[-1] for m in independence["modules"]) == families


def _contracts() -> list:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def _contract_layers() -> list:
    (contract,) = [c for c in _contracts() if c["type"] == "layers"]
    return [sorted(part.strip().split(".", 1)[1] for part in layer.split("|")) for layer in contract["layers"]]


def test_the_contributing_drawing_lists_the_contract_s_layers() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    drawing = text.split("<!-- layers: top to bottom, as in pyproject.toml -->", 1)[1].split("```")[1]
    drawn = []
    for line in drawing.strip("\n").splitlines():
        head = line.split("   ")[0].strip()  # the layer, then at least three spaces, then what it holds
        drawn.append(sorted(name.strip().rstrip("/") for name in head.split("|")))
    assert drawn == _contract_layers()
