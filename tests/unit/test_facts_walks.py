"""The facts' kept walks (issue #34's cold-lint work): each answers what the scan it replaced
answered, over every function of the rule fixtures and eval cases."""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

import vjplint.rules as rules_package
from vjplint.rules.nondiff._callables_passed import CALLS_FIRST, called
from vjplint.facts.collect import collect
from vjplint.rules.nondiff._concrete import is_name
from vjplint.model.file_model import FileModel
from vjplint.rules.registry import all_rules, rule_modules
from vjplint.syntax.positions import source_lines

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _models() -> Iterator[Tuple[str, FileModel]]:
    for path in sorted([*(ROOT / "fixtures" / "rules").rglob("*.py"), *(ROOT / "eval" / "cases").rglob("*.py")]):
        text = path.read_text(encoding="utf-8")
        try:
            module = ast.parse(text)
        except SyntaxError:
            continue
        yield path.relative_to(ROOT).as_posix(), collect(module, source_lines(text))


MODELS = list(_models())


def _functions(model: FileModel) -> List[ast.AST]:
    return [n for n in ast.walk(model.module) if isinstance(n, FUNCTIONS)]


def _old_called(model: FileModel, fn: ast.AST, param: str) -> Optional[ast.Call]:
    """`called` as it was: every call of `fn`, in source order, tried for `param`."""
    index = model.index
    calls = sorted((n for n in ast.walk(fn) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    for node in calls:
        if is_name(node.func, param):
            name = node.func
        elif node.args and is_name(node.args[0], param) and index.qualname(node.func) in CALLS_FIRST:
            name = node.args[0]
        else:
            continue
        found = index.resolve(param, index.scope_of(name))
        if found is not None and found[0].node is fn:
            return node
    return None


def test_the_corpus_is_read():
    assert len(MODELS) > 500
    assert sum(len(_functions(m)) for _, m in MODELS) > 2000


def test_walk_is_ast_walk_without_expression_contexts():
    for name, model in MODELS:
        for fn in _functions(model):
            expected = [n for n in ast.walk(fn) if not isinstance(n, ast.expr_context)]
            got = model.facts.walk(fn)
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), name
            assert model.facts.walk(fn) is got  # kept


def test_calls_and_unpackings_are_the_walks_filtered():
    for name, model in MODELS:
        for fn in _functions(model):
            calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)]
            assert model.facts.calls_in(fn) == calls, name
            assert model.facts.calls_by_position(fn) == sorted(calls, key=lambda n: (n.lineno, n.col_offset)), name
            unpacked = {}
            for n in ast.walk(fn):
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], (ast.Tuple, ast.List)) \
                        and isinstance(n.value, ast.Name):
                    unpacked.setdefault(n.value.id, []).append(n)
            assert model.facts.unpackings(fn) == unpacked, name


def test_called_answers_as_the_scan_of_every_call():
    asked = answered = 0
    for name, model in MODELS:
        for fn in _functions(model):
            params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]
            for param in params:
                asked += 1
                expected = _old_called(model, fn, param)
                answered += expected is not None
                assert called(model, fn, param) is expected, (name, getattr(fn, "name", "<lambda>"), param)
    assert asked > 3000 and answered > 20  # the corpus has parameters that are called, and many that are not


def test_own_of_types_keeps_own_nodes_order():
    for name, model in MODELS:
        for fn in _functions(model):
            types = (ast.If, ast.Call)
            assert model.facts.own_of_types(fn, types) == [n for n in model.facts.own_nodes(fn)
                                                           if type(n) in types], name


def test_rule_modules_are_the_packages_rule_modules():
    walked = sorted(info.name for info in pkgutil.walk_packages(rules_package.__path__, prefix="vjplint.rules.")
                    if info.name.rpartition(".")[2].startswith("vjp"))
    assert sorted(rule_modules()) == walked
    assert len(all_rules()) == len(walked)
