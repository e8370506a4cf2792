"""All rules, found by import (no registration step), and code/prefix selection."""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import lru_cache
from typing import Dict, Iterable, List, Type

from vjplint.rules.base import Rule

DOCS_BASE_URL = "https://github.com/vjplint/vjplint/blob/main/docs/rules/"
_SELECTOR = re.compile(r"^(ALL|VJP\d{0,3})$")


@lru_cache(maxsize=None)
def all_rules() -> Dict[str, Type[Rule]]:
    import vjplint.rules as package

    found: Dict[str, Type[Rule]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("vjp"):
            continue
        module = importlib.import_module(f"vjplint.rules.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and hasattr(value, "CODE"):
                found[value.CODE] = value
    return dict(sorted(found.items()))


def rule_url(code: str) -> str:
    return f"{DOCS_BASE_URL}{code}.md"


def validate_selectors(selectors: Iterable[str], where: str) -> None:
    from vjplint.config import ConfigError

    selectors = list(selectors)
    if not selectors:
        return  # importing every rule costs more than a run over files without custom derivatives
    codes = list(all_rules()) + list(ENGINE_CODES)
    for selector in selectors:
        if not _SELECTOR.match(selector) or not any(c.startswith(selector) or selector == "ALL" for c in codes):
            raise ConfigError(f"{where}: unknown rule code or prefix {selector!r}")


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
