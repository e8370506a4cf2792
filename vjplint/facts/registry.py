"""Registered queries: the one way a rule reaches a fact (`model.facts.<query>(...)`).

A fact is a module-level function of the facts layer decorated with `@query`. Its first
parameter is `model` (the file's `FileModel`, passed by the dispatcher) unless it is a fact of
its arguments alone; `model.facts.NAME(args...)` calls it once per file and arguments and keeps
the answer (`Facts`' memo table, keyed by the query and its arguments: AST nodes and the model's
records hash by identity, so the node itself is the key). A call whose arguments do not hash (a
list, a set) is computed each time. A query that may ask itself again while it computes (a
primal that calls itself) names the answer such a recursive ask gets (`on_cycle=`); one without
it computes again. A generator function's answers (iterators, consumed once) are never kept.

The modules holding queries are listed in `QUERY_MODULES`; the dispatcher imports them when a
name is first asked that no loaded module registered (`tests/unit/test_facts_interface.py`
checks the list is complete and that no query's name shadows a method of `Facts`).

May import: nothing of the package (the facts modules import it).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# Every module of the facts layer that registers a query (imported on the first unknown name).
QUERY_MODULES = (
    "vjplint.facts.callsites",
    "vjplint.facts.contract",
    "vjplint.facts.crossmodule",
    "vjplint.facts.dependence",
    "vjplint.facts.forward",
    "vjplint.facts.grad_inputs",
    "vjplint.facts.host_callbacks",
    "vjplint.facts.infer",
    "vjplint.facts.integers",
    "vjplint.facts.linearity",
    "vjplint.facts.nnx_nodes",
    "vjplint.facts.param_axes",
    "vjplint.facts.param_evidence",
    "vjplint.facts.pullbacks",
    "vjplint.facts.pytree_fields",
    "vjplint.facts.ranks",
    "vjplint.facts.rule_evidence",
    "vjplint.facts.scalar_eval",
    "vjplint.facts.shapes",
    "vjplint.facts.signatures",
    "vjplint.facts.structure",
    "vjplint.facts.transforms",
    "vjplint.facts.values",
)

_NOT_FOUND = object()
NO_CYCLE = object()  # `on_cycle` unset: a recursive ask computes again


@dataclass(frozen=True)
class Query:
    """One registered fact: its function, whether it takes the model first, whether its answers
    are kept, and what a recursive ask for an answer still being computed gets."""

    name: str
    function: Callable[..., Any]
    takes_model: bool
    memo: bool = True
    on_cycle: Any = NO_CYCLE


QUERIES: Dict[str, Query] = {}


def query(function: Optional[F] = None, *, name: Optional[str] = None, memo: bool = True,
          on_cycle: Any = NO_CYCLE) -> Any:
    """Register `function` as the query `name` (its own name by default): `@query`,
    `@query(memo=False)` for an answer cheaper to compute than to look up, `@query(on_cycle=None)`."""

    def register(fn: F) -> F:
        key = name or fn.__name__
        params = list(inspect.signature(fn).parameters)
        known = QUERIES.get(key)
        if known is not None and (known.function.__module__, known.function.__qualname__) != \
                (fn.__module__, fn.__qualname__):
            raise ValueError(f"query {key!r} is registered twice: {known.function.__module__} and {fn.__module__}")
        # a generator's answer is consumed once: never kept
        keep = memo and not inspect.isgeneratorfunction(fn)
        QUERIES[key] = Query(key, fn, bool(params) and params[0] == "model", keep, on_cycle)
        return fn

    return register(function) if function is not None else register


def find(name: str) -> Optional[Query]:
    """The query `name`, importing the query modules when no loaded one registered it."""
    found = QUERIES.get(name)
    if found is None and not name.startswith("_"):
        for module in QUERY_MODULES:
            importlib.import_module(module)
        found = QUERIES.get(name)
    return found


def bind(q: Query, model: Any, table: Dict[Any, Any]) -> Callable[..., Any]:
    """`q` asked of `model`, its answers kept in `table` (the file's `Facts`' memo table)."""
    fn = q.function
    if not q.memo:
        if q.takes_model:
            return lambda *args, **kwargs: fn(model, *args, **kwargs)
        return fn
    takes_model = q.takes_model
    on_cycle = q.on_cycle
    name = q.name

    def ask(*args: Any, **kwargs: Any) -> Any:
        key = (name, args, tuple(kwargs.items())) if kwargs else (name, args)
        try:
            found = table.get(key, _NOT_FOUND)
        except TypeError:  # an argument that does not hash: computed each time
            return fn(model, *args, **kwargs) if takes_model else fn(*args, **kwargs)
        if found is not _NOT_FOUND:
            return found
        if on_cycle is not NO_CYCLE:
            table[key] = on_cycle
        try:
            value = fn(model, *args, **kwargs) if takes_model else fn(*args, **kwargs)
        except BaseException:
            if on_cycle is not NO_CYCLE:
                del table[key]
            raise
        table[key] = value
        return value

    ask.__name__ = name
    ask.__doc__ = fn.__doc__
    return ask
