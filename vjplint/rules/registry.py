"""All rules, found by import in the family folders (no registration step), and code/prefix selection."""

from __future__ import annotations

import importlib
import os
from functools import lru_cache
from typing import Dict, Iterable, List, Type

from vjplint.rules.base import Rule
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
        return []  # importing every rule costs more than a run over files without custom derivatives
    codes = list(all_rules()) + list(ENGINE_CODES)
    # a merged code (vjplint.settings.redirects) selects the code it was merged into
    return [s for s in selectors if not any(c.startswith(redirected(s)) for c in codes)]


# Codes the engine itself emits (not rule classes).
ENGINE_CODES = {
    "VJP900": ("syntax-error", "error"),
    "VJP901": ("invalid-noqa", "warning"),
}


def default_off() -> frozenset:
    return frozenset(code for code, rule in all_rules().items() if not rule.DEFAULT_ENABLED)


def rules_for(codes: Iterable[str]) -> List[Type[Rule]]:
    table = all_rules()
    return [table[c] for c in sorted(codes) if c in table]
