"""A fix never breaks another module: the in-file residual-plus-None rewrite changes what fwd
returns and what bwd takes, so another module that imports and calls them (a test importing
`clip_fwd`/`clip_bwd`) would break (`clip_bwd() takes 2 positional arguments but 4 were given`)
or, unpacking fwd's result, silently receive the residuals. The command line asks this about the
files of the run (`vjplint.cli.fix_cross`), the Language Server about its workspace index
(`vjplint.server`): one implementation for both."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Callable, Dict, Iterable, Sequence, Tuple

from vjplint.diagnostics import ResidualPlusNone
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.settings.config import Config

NO_FIX = " (no automatic fix: "

# Another module: (its path, how messages name it, a reader of its bytes).
Other = Tuple[Path, str, Callable[[], bytes]]


def residual_plans(diagnostics) -> set:
    """The residual-plus-None fix plans on offer in `diagnostics`."""
    return {d.fix.plan for d in diagnostics
            if d.fix is not None and isinstance(d.fix.plan, ResidualPlusNone)}


def _word(word: str) -> "re.Pattern[bytes]":
    return re.compile(rb"(?<![\w])" + re.escape(word.encode()) + rb"(?![\w])")


def named_in_others(path: Path, text: str, config: Config, plans: Iterable, others: Sequence[Other],
                    facts: RunFacts = NO_FACTS) -> Dict[str, str]:
    """For the custom_vjps of `plans` (in the file `path` holding `text`): those whose fwd or bwd
    another module of `others` names, with the reason. A module counts when it imports the rule
    from the rule's module or reads it as that module's attribute (`from pkg.ops import clip_fwd`,
    `ops.clip_fwd`): a module with its own function of that name does not."""
    from vjplint.facts.collect import Recognizer, collect
    from vjplint.plans.residual_plan import find_derivative
    from vjplint.syntax.positions import source_lines
    from vjplint.syntax.source import parse

    plans = list(plans)
    if not plans:
        return {}
    try:
        model = collect(parse(text), source_lines(text), Recognizer.for_run(config, facts))
    except Exception:  # the fix itself reports what it cannot read
        return {}
    module = path.parent.name if path.stem == "__init__" else path.stem
    module_word = _word(module)
    contents: Dict[Path, bytes] = {}

    def data(other: Other) -> bytes:
        if other[0] not in contents:
            try:
                contents[other[0]] = other[2]()
            except OSError:
                contents[other[0]] = b""
        return contents[other[0]]

    found: Dict[str, str] = {}
    for fp in plans:
        d = find_derivative(model, fp.target, fp.line)
        if d is None:
            continue
        for role, changes in (("fwd", "what it returns"), ("bwd", "its parameters")):
            rule = d.rule(role)
            rule = rule.as_registered() if rule is not None else None
            if rule is None or not rule.name:
                continue
            word = _word(rule.name)
            user = next((o for o in others if o[0] != path and word.search(data(o)) and module_word.search(data(o))
                         and uses(data(o), module, rule.name)), None)
            if user is not None:
                found[fp.target] = f"{role} `{rule.name}` is also named in {user[1]}, and the rewrite changes {changes}"
                break
    return found


def uses(data: bytes, module: str, name: str) -> bool:
    """Whether a file imports `name` from a module whose last component is `module` (`from
    clipops.ops import clip_fwd`, `from .ops import *`) or reads it as an attribute of such a
    module (`ops.clip_fwd`, `o.clip_fwd` after `import clipops.ops as o`). A file that cannot be
    parsed counts (the worst is assumed)."""
    from vjplint.syntax.source import decode, parse

    try:
        tree = parse(decode(data).text)
    except Exception:
        return True
    aliases = {module}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if (node.module or "").rpartition(".")[2] == module and \
                    any(a.name in (name, "*") for a in node.names):
                return True
            aliases.update(a.asname or a.name for a in node.names if a.name == module)
        elif isinstance(node, ast.Import):
            aliases.update(a.asname for a in node.names if a.asname and a.name.rpartition(".")[2] == module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == name:
            value = node.value
            spelled = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else None
            if spelled in aliases:
                return True
    return False


def withdraw(diagnostics, reasons: Dict[str, str]) -> None:
    """The residual fixes of the custom_vjps in `reasons` are withdrawn, and their findings say why."""
    for d in diagnostics:
        plan = d.fix.plan if d.fix is not None else None
        if isinstance(plan, ResidualPlusNone) and plan.target in reasons:
            d.fix = None
            if NO_FIX not in d.message:
                d.message += f"{NO_FIX}{reasons[plan.target]})"
