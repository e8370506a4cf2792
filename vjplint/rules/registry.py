"""All rules, found by import in the family folders (no registration step), and code/prefix selection."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from typing import Dict, Iterable, List, Type

from vjplint.rules.base import Rule
from vjplint.settings.redirects import redirected
import vjplint.rules as package


@lru_cache(maxsize=None)
def all_rules() -> Dict[str, Type[Rule]]:
    found: Dict[str, Type[Rule]] = {}
    # one folder per family (what the user got wrong), one module per rule inside it
    for info in pkgutil.walk_packages(package.__path__, prefix="vjplint.rules."):
        if not info.name.rpartition(".")[2].startswith("vjp"):
            continue
        module = importlib.import_module(info.name)
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
