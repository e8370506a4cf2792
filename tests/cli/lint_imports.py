"""import-linter's `lint-imports`, on a graph that also holds the edges the rule registry makes at run
time: `vjplint.rules.registry` loads every rule module with `importlib` (no registration step), so
grimp, which reads import statements, sees none of them. Each module `rule_modules()` lists is added
as a direct import of the registry before the contracts are checked, so an import of the registry
from a rule family (a chain to every other family) breaks the independence contract, and a rule
module that imports the registry back makes a cycle (test_layers.py's cycle check adds them too).

    PYTHONPATH=ROOT python tests/cli/lint_imports.py --no-cache
"""

from __future__ import annotations

import sys

import grimp
from importlinter import cli
from importlinter.adapters.building import GraphBuilder
from importlinter.application.app_config import settings

REGISTRY = "vjplint.rules.registry"


def registry_edges() -> list:
    """(importer, imported) for every rule module the registry imports at run time."""
    from vjplint.rules.registry import rule_modules

    return [(REGISTRY, name) for name in rule_modules()]


def with_registry_edges(graph: grimp.ImportGraph) -> grimp.ImportGraph:
    for importer, imported in registry_edges():
        assert imported in graph.modules, f"the registry loads {imported}, which grimp did not find"
        graph.add_import(importer=importer, imported=imported, line_number=0,
                         line_contents="importlib.import_module(name)  # rule_modules()")
    return graph


class RegistryGraphBuilder(GraphBuilder):
    def build(self, *args, **kwargs) -> grimp.ImportGraph:  # type: ignore[override]
        return with_registry_edges(super().build(*args, **kwargs))


if __name__ == "__main__":
    settings.configure(GRAPH_BUILDER=RegistryGraphBuilder())
    sys.exit(cli.lint_imports_command())
