"""The package's layers (pyproject.toml's [tool.importlinter], drawn in CONTRIBUTING.md): imports
flow one way, function-level imports included, and no module imports itself back through others."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.lint_imports import REGISTRY, registry_edges, with_registry_edges
from tests.conftest import ROOT

# Layer cli: runs import-linter's command in a subprocess, on grimp's graph plus the rule registry's
# run-time edges (tests/cli/lint_imports.py: the registry loads each rule module with importlib).

LINT_IMPORTS = [sys.executable, str(ROOT / "tests" / "cli" / "lint_imports.py"), "--no-cache"]


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


@pytest.mark.parametrize("module, statement, upward, summary", [
    # a module-level import from the syntax layer up into the engine (which loads the registry, so every
    # family reading the syntax layer now reaches every other one too)
    ("vjplint/syntax/source.py", "from vjplint.lint.engine import lint_source\n", "vjplint.syntax is not allowed to import vjplint.lint",
     "Contracts: 0 kept, 2 broken."),
    # a function-level import (the kind that hid the old cycle) from the facts up into the rules
    ("vjplint/facts/loops.py", "\n\ndef _upward():\n    from vjplint.rules.registry import all_rules\n    return all_rules\n",
     "vjplint.facts is not allowed to import vjplint.rules", "Contracts: 0 kept, 2 broken."),
    # one rule family reading another's module (what two families share goes to vjplint/facts/)
    ("vjplint/rules/order/vjp334_rule_order_by_name.py",
     "from vjplint.rules.structure.vjp333_jvp_tangent_structure import JvpTangentStructure\n",
     "vjplint.rules.order is not allowed to import vjplint.rules.structure", "Contracts: 1 kept, 1 broken."),
    # a rule reaching every other rule through the registry (an edge only the registry's importlib makes)
    ("vjplint/rules/order/vjp334_rule_order_by_name.py",
     "\n\ndef _other_rule(code):\n    from vjplint.rules.registry import all_rules\n    return all_rules()[code]\n",
     "vjplint.rules.order is not allowed to import vjplint.rules.structure", "Contracts: 1 kept, 1 broken."),
])
def test_an_upward_import_breaks_the_contract(tmp_path: Path, module: str, statement: str, upward: str,
                                              summary: str) -> None:
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
    assert summary in proc.stdout
    assert upward in proc.stdout


def _graph():
    import grimp

    return with_registry_edges(grimp.build_graph("vjplint", cache_dir=None))


def test_no_import_cycle_between_modules() -> None:
    """grimp's graph (the one import-linter checks, with the registry's run-time edges) has no cycle,
    imports inside functions included."""
    assert _cycles(_graph()) == []


def test_the_registry_s_edges_are_in_the_checked_graph() -> None:
    """Every rule module the registry loads is an import of the registry in the graph the contracts
    and the cycle check read, and a rule module importing the registry back is a cycle there."""
    from vjplint.rules.registry import all_rules

    graph = _graph()
    loaded = {name for _, name in registry_edges()}
    assert len(loaded) >= 60 and loaded == {cls.__module__ for cls in all_rules().values()}
    assert loaded <= graph.find_modules_directly_imported_by(REGISTRY)
    rule = "vjplint.rules.order.vjp334_rule_order_by_name"
    graph.add_import(importer=rule, imported=REGISTRY)
    assert [c for c in _cycles(graph) if rule in c and REGISTRY in c]


def _cycles(graph) -> list:
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
    return cycles


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


# -- function-level imports: for heavy or optional dependencies, or a cheap path kept cheap --------------------
# A function-level import hides a dependency from whoever reads the module's head. One is kept only when
# (1) the module it imports brings in, through its own module-level imports, a heavy or optional third-party
#     package (HEAVY: the `verify` and `lsp` extras of pyproject.toml, libcst, numpy), or
# (2) its importer is listed in LAZY below, with the modules it defers and why: each keeps a cheap path
#     from loading what it does not use (the module sets that `--version`, `--help`, `rule CODE`, a run over
#     files without custom derivatives, a warm run from the cache and a lint of one small file load were
#     measured equal before and after moving every other import to module level).
# Standard-library modules are not counted (`argparse`, `dataclasses`, ... are deferred for the same
# startup reasons and cost nothing to read).
# Only a target (the imported module), not a name, decides: `from vjplint.x import y` imports vjplint.x.

ALWAYS_HEAVY = {"libcst": "a required dependency, but 60 ms to import: files without custom derivatives never load it",
                "numpy": "comes with JAX (the verify extra); only the runtime checks read it"}

LAZY = {
    # importer: (deferred vjplint modules, reason)
    "vjplint.cli": ({"vjplint.batch.fastpath", "vjplint.cli.check", "vjplint.cli.check_grads", "vjplint.batch.class_code",
                     "vjplint.cli.rule",
                     "vjplint.cli.verify", "vjplint.server"},
                    "the entry point: `--version` and the fast path load 10 modules, each subcommand loads when chosen"),
    "vjplint.cli.check": ({"vjplint.batch.outcomes", "vjplint.batch.parallel", "vjplint.batch.runner",
                           "vjplint.cli.add_noqa", "vjplint.cli.fix", "vjplint.cli.fix_cross", "vjplint.cli.report",
                           "vjplint.cli.show_settings", "vjplint.cli.watch", "vjplint.lint.engine",
                           "vjplint.output.progress", "vjplint.project.workspace", "vjplint.syntax.positions"},
                          "`--help` builds this parser alone (12 modules); --fix, --add-noqa, --show-settings, "
                          "--watch load when asked"),
    "vjplint.cli.watch": ({"watchfiles"}, "the optional `watch` extra: only --watch needs it, and says how to "
                                          "install it when it is missing"),
    "vjplint.cli.fix_cross": ({"vjplint.fixes.cross_module", "vjplint.fixes.multi_write", "vjplint.install_hint",
                               "vjplint.project.modules", "vjplint.verify.api"},
                              "only a run with cross-module fixes plans, verifies and writes them"),
    "vjplint.cli.verify": ({"vjplint.fixes.cross_module"}, "only a run with cross-module candidates plans their rewrites"),
    "vjplint.cli.report": ({"vjplint.fixes.apply"}, "fix edits are attached only where the format shows them"),
    "vjplint.batch.parallel": ({"vjplint.batch.cache", "vjplint.facts.collect", "vjplint.fixes.apply", "vjplint.fixes.residual_text",
                                "vjplint.model.expected_errors", "vjplint.rules.registry", "vjplint.syntax.region_parse"},
                               "a run over files without custom derivatives loads no rules, collector, fixer or cache "
                               "(test_speed_invariants: cheap runs import no vjplint.rules)"),
    "vjplint.lint.engine": ({"vjplint.facts.collect", "vjplint.facts.crossmodule", "vjplint.facts.infer", "vjplint.model.expected_errors",
                             "vjplint.rules.base", "vjplint.rules.catalog", "vjplint.rules.registry",
                             "vjplint.syntax.region_parse",
                             "vjplint.syntax.regions", "vjplint.lint.chunks", "vjplint.model.file_model"},
                            "the prefilter answers for files without custom derivatives before any rule, collector or "
                            "region parser loads (53 modules instead of 170); the chunks of the grouped lint only "
                            "for a module of 2 MB or more"),
    "vjplint.facts": ({"vjplint.facts.forward", "vjplint.facts.infer", "vjplint.facts.integers",
                       "vjplint.facts.value_kinds"}, "each analysis loads when a rule first reads its table"),
    "vjplint.facts.loops": ({"vjplint.syntax.regions"}, "`vjplint rule CODE` loads the facts, not the region splitter"),
    "vjplint.syntax.source": ({"vjplint.syntax.regions"}, "plain runs parse without the region splitter"),
    "vjplint.project.text": ({"vjplint.syntax.region_parse", "vjplint.syntax.regions"},
                             "plain runs read project text without the region parser"),
    "vjplint.project.summary": ({"vjplint.syntax.regions"},
                                "`regions.focus` would shadow the functions' `focus` flag at module level"),
    "vjplint.project.cross_values": ({"vjplint.project.summary"},
                                     "summaries of other modules only when a run has cross-module candidates"),
    "vjplint.project.index": ({"vjplint.project.cross_values"},
                              "a lint of one small file builds no cross-module values"),
    "vjplint.project.discover": ({"pathspec"}, "read only where a .gitignore is; without it the walk goes on (ImportError)"),
    "vjplint.project.workspace": ({"vjplint.rules.registry"}, "checking selected codes loads the rules; plain runs do not"),
    "vjplint.model.wrappers": ({"vjplint.syntax.source"}, "`vjplint rule CODE` loads the model, not the parser"),
    "vjplint.plans.closure_plan": ({"vjplint.syntax.noqa"}, "`vjplint rule CODE` loads the plans, not the noqa editor"),
    "vjplint.fixes.apply": ({"vjplint.fixes.residual_text", "vjplint.lint.engine"},
                            "engine.lint_source and residual_text.spans_of are read at call time (tests replace "
                            "them: test_fix_cli)"),
    "vjplint.server.far": ({"vjplint.fixes.apply", "vjplint.server.fixes"},
                           "the far process imports the fix machinery when a fix is first asked for"),
    "vjplint.server.analysis": ({"vjplint.fixes.apply", "vjplint.fixes.residual_text"},
                                  "fixes.apply: preloaded on a thread once the editor is served (a failure only leaves "
                                  "quick fixes without edits)"),
    "vjplint.facts.dependence": ({"vjplint.facts.infer", "vjplint.facts.param_evidence"}, "a warm run served from the cache loads this, not the inference"),
    "vjplint.plans.residual_reads": ({"vjplint.facts.infer"}, "a warm run served from the cache loads this, not the inference"),
    "vjplint.record.live": ({"vjplint.facts.collect", "vjplint.model.run_facts", "vjplint.syntax.positions",
                             "vjplint.syntax.source", "vjplint.verify.synth"},
                            "every Python a `--record` run starts loads this package; only one that called a custom "
                            "derivative loads the static model, at exit, to plan its checks"),
    "vjplint.fixes.named_elsewhere": ({"vjplint.facts.collect", "vjplint.fixes.targets", "vjplint.plans.residual_plan"},
                                      "plain runs ask it and load no collector"),
}


STANDARD = set(getattr(sys, "stdlib_module_names", ())) | {"tomli"}  # tomli: tomllib before Python 3.11


def _heavy_packages() -> set:
    extras = tomllib_loads()["project"]["optional-dependencies"]
    names = {spec.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower()
             for extra in ("verify", "lsp") for spec in extras[extra]}
    return names | set(ALWAYS_HEAVY)


def tomllib_loads() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _modules() -> dict:
    out = {}
    for path in sorted((ROOT / "vjplint").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def _imports(modules: dict) -> tuple:
    """(module-level targets per module, function-level imports as (module, file:line, targets)). A target is
    a vjplint module (with the packages above it, which importing it runs) or a third-party top-level name;
    `if TYPE_CHECKING:` blocks import nothing at run time."""
    import ast

    def targets(node, module: str, is_package: bool) -> list:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            full = node.module or ""
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                full = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            names = [full] + [f"{full}.{a.name}" for a in node.names if f"{full}.{a.name}" in modules]
        out = []
        for name in names:
            parts = name.split(".")
            if parts[0] != "vjplint":
                out.append(parts[0])
                continue
            out += [".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in modules]
        return out

    module_level: dict = {}
    function_level = []
    for module, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}  # parents run first
        stack = [(node, False) for node in tree.body]
        while stack:
            node, in_function = stack.pop()
            if isinstance(node, ast.If) and not in_function and "TYPE_CHECKING" in ast.unparse(node.test):
                stack += [(n, False) for n in node.orelse]
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if in_function:
                    rel = path.relative_to(ROOT).as_posix()
                    function_level.append((module, f"{rel}:{node.lineno}", targets(node, module, is_package)))
                else:
                    found.update(targets(node, module, is_package))
            inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            stack += [(child, inner) for child in ast.iter_child_nodes(node)]
        found.discard(module)
        module_level[module] = found
    return module_level, function_level


def test_function_level_imports_are_for_heavy_dependencies_or_listed_cheap_paths() -> None:
    modules = _modules()
    module_level, function_level = _imports(modules)
    heavy_packages = _heavy_packages()
    assert {"jax", "jaxlib", "pygls", "lsprotocol", "libcst"} <= heavy_packages
    heavy: dict = {}

    def brings_heavy(target: str) -> bool:  # iteratively: module-level imports have no cycle (test above)
        if target not in modules:
            return target in heavy_packages
        if target not in heavy:
            heavy[target] = False  # while it is being computed
            heavy[target] = any(brings_heavy(t) for t in sorted(module_level[target]))
        return heavy[target]

    offending = []
    used = set()
    for module, where, targets in function_level:
        first_party = [t for t in targets if t.startswith("vjplint")]
        third_party = [t for t in targets if not t.startswith("vjplint") and t not in STANDARD]
        if not first_party and not third_party:
            continue  # the standard library
        if any(brings_heavy(t) for t in targets if t not in STANDARD):
            continue
        deferred, _reason = LAZY.get(module, (set(), ""))
        leaf = first_party[-1] if first_party else third_party[0]
        if leaf in deferred:
            used.add((module, leaf))
            continue
        offending.append(f"{where}: imports {leaf} inside a function: move it to the module's head (or, for a "
                         f"cheap path, list it in LAZY with the reason)")
    assert offending == [], "\n".join(offending)
    stale = sorted(f"{module} -> {t}" for module, (deferred, _) in LAZY.items() for t in deferred if (module, t) not in used)
    assert stale == [], "LAZY lists imports that are no longer made inside a function"
