"""All rules, found by import in the family folders (no registration step), and code/prefix selection."""

from __future__ import annotations

import ast
import importlib
import os
from functools import lru_cache
from typing import Dict, Iterable, List, Optional, Tuple, Type

from vjplint.rules.base import Rule
from vjplint.rules.catalog import RULES
from vjplint.settings.redirects import redirected
import vjplint.rules as package


def rule_modules() -> List[str]:
    """The dotted names of the rule modules: `vjp*.py` in the family folders (packages) of
    vjplint/rules, one folder per family (what the user got wrong), and beside them; one
    listing per folder (pkgutil's walk imported each family package and listed each folder
    several times: a tenth of the imports' cost)."""
    names: List[str] = []
    for root in package.__path__:
        for entry in sorted(os.scandir(root), key=lambda e: e.name):
            if entry.is_dir() and os.path.isfile(os.path.join(entry.path, "__init__.py")):
                names.extend(f"vjplint.rules.{entry.name}.{name[:-3]}" for name in sorted(os.listdir(entry.path))
                             if name.startswith("vjp") and name.endswith(".py"))
            elif entry.name.startswith("vjp") and entry.name.endswith(".py"):
                names.append(f"vjplint.rules.{entry.name[:-3]}")
    return names


@lru_cache(maxsize=None)
def all_rules() -> Dict[str, Type[Rule]]:
    found: Dict[str, Type[Rule]] = {}
    for name in rule_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and hasattr(value, "CODE"):
                found[value.CODE] = value
    return dict(sorted(found.items()))


def unknown_selectors(selectors: Iterable[str]) -> List[str]:
    """The selectors (codes or prefixes, shape-checked by vjplint.settings.config) that match no rule."""
    selectors = [s for s in selectors if s != "ALL"]
    if not selectors:
        return []
    # The catalog's codes (a test keeps them the classes'): a `per-file-ignores` or `select` in
    # pyproject.toml imported every rule module before a pre-commit run had linted its one file.
    codes = list(RULES) + list(ENGINE_CODES)
    # a merged code (vjplint.settings.redirects) selects the code it was merged into
    return [s for s in selectors if not any(c.startswith(redirected(s)) for c in codes)]


# Codes the engine itself emits (not rule classes).
ENGINE_CODES = {
    "VJP900": ("syntax-error", "error"),
    "VJP901": ("invalid-noqa", "warning"),
}


def default_off() -> frozenset:
    """The codes off by default, from the catalog (no rule is imported)."""
    return frozenset(code for code, entry in RULES.items() if not entry[1])


def rule_codes() -> Tuple[str, ...]:
    """Every rule's code, sorted, from the catalog (no rule is imported)."""
    return tuple(RULES)


def rules_for(codes: Iterable[str]) -> List[Type[Rule]]:
    """The classes of `codes`, by code; only their modules are imported."""
    return [rule_class(c) for c in sorted(codes) if c in RULES]


@lru_cache(maxsize=None)
def rule_class(code: str) -> Type[Rule]:
    """The class of rule `code`, importing its module alone (the catalog says which)."""
    module = importlib.import_module(RULES[code][0])
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and \
                getattr(value, "CODE", None) == code and value.__module__ == module.__name__:
            return value
    raise LookupError(f"{RULES[code][0]} holds no rule {code}: write the catalog again ({CATALOG_HOW})")


CATALOG_HOW = "python -c 'from vjplint.rules.registry import write_catalog; write_catalog()'"


def catalog_entry(rule: Type[Rule]) -> tuple:
    """What the catalog keeps of a rule class (vjplint/rules/catalog.py's RULES)."""
    needs = (rule.NEEDS.pattern, rule.NEEDS.flags) if rule.NEEDS is not None else None
    return (rule.__module__, bool(rule.DEFAULT_ENABLED), bool(rule.DEFAULT_REPORTS), bool(rule.IN_STUBS),
            bool(rule.RUNTIME), tuple(rule.TRIGGERS), needs)


# What a set-up `check` may assign to the rule's own attributes: constants, empty containers.
_EMPTY_CALLS = frozenset({"set", "dict", "list", "frozenset", "tuple"})


def _is_set_up(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.List, ast.Set, ast.Tuple)) and not node.elts:
        return True
    if isinstance(node, ast.Dict) and not node.keys:
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _EMPTY_CALLS \
        and not node.args and not node.keywords


def _sets_up_only(function: object) -> bool:
    """Whether a `check` method only gives the rule's own attributes constants or empty
    containers (`self._seen: Set[ast.AST] = set()`): it reads nothing, reports nothing, raises
    nothing, so a rule with nothing else to run finds nothing without it."""
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))  # type: ignore[arg-type]
    except (OSError, TypeError, SyntaxError):
        return False
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else None
    if body is None:
        return False
    for i, statement in enumerate(body):
        if i == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # the docstring
        if isinstance(statement, ast.Pass):
            continue
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            return False
        if not _is_set_up(value) or not all(
                isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                for t in targets):
            return False
    return True


def derivative_gate(rule: Type[Rule]) -> Optional[Tuple[Optional[Tuple[str, ...]], Optional[Tuple[str, ...]]]]:
    """(APIS, KINDS), sorted, of a rule that only judges derivatives: what it runs is its
    `check_derivative`, its `check` being absent or a set-up (`_sets_up_only`), its `__init__`
    the base's, with no `visit_` method. The engine neither imports nor makes such a rule for a
    module holding no derivative of its APIS and KINDS (it would call nothing that can report).
    None for every other rule."""
    if rule.__init__ is not Rule.__init__ or any(attr.startswith("visit_") for attr in dir(rule)):
        return None
    if rule.check is not Rule.check and not _sets_up_only(rule.check):
        return None
    return (tuple(sorted(rule.APIS)) if rule.APIS is not None else None,
            tuple(sorted(rule.KINDS)) if rule.KINDS is not None else None)


def catalog_text() -> str:
    """vjplint/rules/catalog.py as the rule classes say it should read."""
    rows = "".join(f"    {code!r}: {catalog_entry(rule)!r},\n" for code, rule in all_rules().items())
    gates = "".join(f"    {code!r}: {derivative_gate(rule)!r},\n" for code, rule in all_rules().items()
                    if derivative_gate(rule) is not None)
    return (f'"""Each rule\'s module and what the engine reads of its class before it runs (written by\n'
            f"`{CATALOG_HOW}`; tests/cli/test_start_up.py\n"
            f"compares it with the classes). A lint imports only the rules a file's trigger names and\n"
            f'`NEEDS` select; `vjplint rule`, the docs and SARIF still import them all (`all_rules`)."""\n\n'
            f"# code: (module, DEFAULT_ENABLED, DEFAULT_REPORTS, IN_STUBS, RUNTIME, TRIGGERS, NEEDS as (pattern, flags))\n"
            f"RULES = {{\n{rows}}}\n\n"
            f"# The rules that only judge derivatives (`registry.derivative_gate`): code: (APIS, KINDS), None: any.\n"
            f"# The engine imports and runs them only for a module holding a derivative of those.\n"
            f"DERIVATIVE_ONLY = {{\n{gates}}}\n")


def write_catalog() -> None:
    import os.path

    with open(os.path.join(os.path.dirname(package.__file__), "catalog.py"), "w", encoding="utf-8") as handle:
        handle.write(catalog_text())
