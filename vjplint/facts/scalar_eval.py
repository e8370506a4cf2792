"""Evaluate small elementwise functions on Python floats, so a derivative rule can be compared
with its primal's slope without running JAX.

Only straight-line bodies are read: assignments (with tuple unpacking), `+=`-style updates and one
return, over numbers, arithmetic, comparisons, `jnp.where` and the elementwise functions of
`jnp`/`np`/`lax`/`jax.nn`/`math` listed below, calls of other such functions of the module (the
primal itself included) and module constants. Anything else (a reduction, an index, a loop, an
attribute, a keyword argument) raises `Unsupported`, so a comparison built on this says nothing
about code it cannot read. On a scalar every function here means what it means elementwise.

`ScalarEvaluator(model, equality=True)` also reads `==`/`!=` and `lax.select` (VJP612 approaches
a `where(x == 0, ...)` guard from either side), and `env_at` runs a body leniently up to one of
its statements: what cannot be read is `UNKNOWN` there, which nothing can compute with;
`frozen` gives chosen expression nodes a fixed value (a guard's constant branch taken everywhere).
"""

from __future__ import annotations

import ast
import math
from typing import Any, Callable, Dict, List, Optional, Sequence

from vjplint.model.file_model import FileModel
from vjplint.model.semantic import FunctionNode, named_function
from vjplint.facts.registry import query

PREFIXES = ("jax.numpy.", "numpy.", "jax.nn.", "jax.lax.", "jax.scipy.special.", "math.")


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _softplus(x: float) -> float:
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


def _where(c: Any, a: Any, b: Any) -> Any:
    if not isinstance(c, bool):
        raise Unsupported("a condition that is not a comparison")
    return a if c else b


UNARY: Dict[str, Callable[[float], float]] = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "exp": math.exp, "log": math.log,
    "log1p": math.log1p, "expm1": math.expm1, "sqrt": math.sqrt, "tanh": math.tanh, "sinh": math.sinh,
    "cosh": math.cosh, "arctan": math.atan, "atan": math.atan, "arcsin": math.asin, "asin": math.asin,
    "arccos": math.acos, "acos": math.acos, "arctanh": math.atanh, "atanh": math.atanh,
    "arcsinh": math.asinh, "asinh": math.asinh, "arccosh": math.acosh, "acosh": math.acosh,
    "abs": abs, "absolute": abs, "fabs": abs, "square": lambda x: x * x, "reciprocal": lambda x: 1.0 / x,
    "negative": lambda x: -x, "neg": lambda x: -x, "sigmoid": _sigmoid, "expit": _sigmoid,
    "logistic": _sigmoid, "softplus": _softplus, "log_sigmoid": lambda x: -_softplus(-x),
    "exp2": lambda x: 2.0 ** x, "log2": math.log2, "log10": math.log10, "cbrt": lambda x: math.copysign(
        abs(x) ** (1.0 / 3.0), x), "rsqrt": lambda x: 1.0 / math.sqrt(x), "erf": math.erf, "erfc": math.erfc,
    "relu": lambda x: max(x, 0.0), "round": lambda x: float(round(x)), "floor": lambda x: float(math.floor(x)),
    "ceil": lambda x: float(math.ceil(x)), "sign": lambda x: float((x > 0) - (x < 0)),
}
BINARY: Dict[str, Callable[[float, float], float]] = {
    "maximum": max, "minimum": min, "power": lambda a, b: a ** b, "pow": lambda a, b: a ** b,
    "arctan2": math.atan2, "atan2": math.atan2, "add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
    "sub": lambda a, b: a - b, "multiply": lambda a, b: a * b, "mul": lambda a, b: a * b,
    "divide": lambda a, b: a / b, "true_divide": lambda a, b: a / b, "div": lambda a, b: a / b,
    "hypot": math.hypot, "logaddexp": lambda a, b: max(a, b) + math.log1p(math.exp(-abs(a - b))),
    "integer_pow": lambda a, b: a ** b,
}
BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
          ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b}
COMPARE = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
           ast.GtE: lambda a, b: a >= b}
EQUALITY = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}


class _Unknown:
    """A value `env_at` could not compute: any arithmetic, comparison or unpacking of it is Unsupported."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


class Unsupported(Exception):
    """The code uses something this evaluator does not read (or fails on this point's values)."""


class ScalarEvaluator:
    """Calls of one module's functions on floats."""

    MAX_DEPTH = 6

    def __init__(self, model: FileModel, equality: bool = False) -> None:
        self.model = model
        self.compare = {**COMPARE, **EQUALITY} if equality else COMPARE
        self.selects = ("where", "select") if equality else ("where",)
        self.frozen: Dict[ast.AST, Any] = {}  # an expression node -> the value it is taken to have
        self._depth = 0
        self._module_defs: Optional[Dict[str, FunctionNode]] = None
        self._constants: Optional[Dict[str, float]] = None

    def _positional(self, fn: FunctionNode, e: ast.Call) -> List[ast.expr]:
        """The arguments of `e`, a call of `fn`, in positional order: `f(x=a, y=b)` as `f(a, b)`
        (a keyword after a gap is left to the parameter's default only when every later one is)."""
        if not e.keywords:
            return list(e.args)
        sig = self.model.signature(fn)
        given = {k.arg: k.value for k in e.keywords}
        if any(name not in sig.positional[len(e.args):] for name in given):
            raise Unsupported("a keyword argument naming no positional parameter")
        out = list(e.args)
        for name in sig.positional[len(e.args):]:
            if name not in given:
                break
            out.append(given.pop(name))
        if given:
            raise Unsupported("a keyword argument after a defaulted parameter")
        return out

    def call(self, fn: FunctionNode, args: Sequence[Any]) -> Any:
        """`fn(*args)` on floats and tuples of them; raises Unsupported."""
        if self._depth >= self.MAX_DEPTH:
            raise Unsupported("calls nested too deep")
        sig = self.model.signature(fn)
        if sig.vararg or sig.kwonly or sig.kwarg or len(args) > len(sig.positional):
            raise Unsupported("a signature other than positional parameters")
        env: Dict[str, Any] = dict(zip(sig.positional, args))
        for name in sig.positional[len(args):]:
            default = sig.defaults.get(name)
            if default is None:
                raise Unsupported("a missing argument")
            env[name] = self._expr(default, {})
        self._depth += 1
        try:
            if isinstance(fn, ast.Lambda):
                return self._expr(fn.body, env)
            return self._body(fn.body, env)
        except (ArithmeticError, ValueError, TypeError, RecursionError) as exc:
            raise Unsupported(f"fails on these values ({type(exc).__name__})") from exc
        finally:
            self._depth -= 1

    def bound_values(self, rule: Any) -> Optional[List[Any]]:
        """The values a `functools.partial(rule, a, ...)` registration binds before JAX's arguments
        (`[]` for a plain rule), when they are literals (`partial(bwd, None)`, a configuration);
        None when they cannot be evaluated (a function, a keyword, nested partials)."""
        if not rule.bound_positional:
            return [] if not rule.bound_keywords else None
        call = rule.expr
        if rule.bound_keywords or not isinstance(call, ast.Call) or len(call.args) - 1 != rule.bound_positional:
            return None
        if not all(isinstance(a, ast.Constant) and not isinstance(a.value, (str, bytes)) for a in call.args[1:]):
            return None
        return [self._expr(a, {}) for a in call.args[1:]]

    def env_at(self, fn: FunctionNode, args: Dict[str, Any], stop: ast.stmt,
               pinned: Dict[str, float]) -> Dict[str, Any]:
        """The names bound when `fn`'s top-level statement `stop` starts, `args` bound to its
        parameters: assignments are evaluated where they can be, and whatever a statement binds
        that cannot be computed (or a compound statement binds) is UNKNOWN. A name in `pinned`
        takes its pinned value wherever it is bound (a parameter included), so the statements
        after it see that value."""
        env: Dict[str, Any] = {**args, **{n: v for n, v in pinned.items() if n in args}}
        if isinstance(fn, ast.Lambda):
            return env
        for stmt in fn.body:
            if stmt is stop:
                return env
            bound = _stored_names(stmt)
            try:
                if isinstance(stmt, ast.Assign):
                    value = self._expr(stmt.value, env)
                    for target in stmt.targets:
                        self._bind(target, value, env)
                elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) \
                        and type(stmt.op) in BINOPS and stmt.target.id in env:
                    env[stmt.target.id] = self._number(BINOPS[type(stmt.op)](
                        self._float(env[stmt.target.id]), self._float(self._expr(stmt.value, env))))
                elif bound:
                    raise Unsupported(f"a `{type(stmt).__name__}` statement")
            except (Unsupported, ArithmeticError, ValueError, TypeError, RecursionError):
                for name in bound:
                    env[name] = UNKNOWN
            for name in bound:
                if name in pinned:
                    env[name] = pinned[name]
        raise Unsupported("a statement outside the body's top level")

    def value(self, e: ast.expr, env: Dict[str, Any]) -> Any:
        """`e` evaluated with the names of `env`; raises Unsupported."""
        try:
            return self._expr(e, env)
        except (ArithmeticError, ValueError, TypeError, RecursionError) as exc:
            raise Unsupported(f"fails on these values ({type(exc).__name__})") from exc

    def _body(self, body: List[ast.stmt], env: Dict[str, Any]) -> Any:
        for i, stmt in enumerate(body):
            if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                continue  # the docstring
            if isinstance(stmt, ast.Assign):
                value = self._expr(stmt.value, env)
                for target in stmt.targets:
                    self._bind(target, value, env)
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) \
                    and type(stmt.op) in BINOPS and stmt.target.id in env:
                env[stmt.target.id] = self._number(BINOPS[type(stmt.op)](
                    env[stmt.target.id], self._expr(stmt.value, env)))
            elif isinstance(stmt, ast.Return) and stmt.value is not None:
                return self._expr(stmt.value, env)
            else:
                raise Unsupported(f"a `{type(stmt).__name__}` statement")
        raise Unsupported("no return")

    def _bind(self, target: ast.expr, value: Any, env: Dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, tuple) \
                and len(target.elts) == len(value) and not any(isinstance(t, ast.Starred) for t in target.elts):
            for t, v in zip(target.elts, value):
                self._bind(t, v, env)
        else:
            raise Unsupported("an assignment target it cannot bind")

    def _expr(self, e: ast.expr, env: Dict[str, Any]) -> Any:
        if self.frozen and e in self.frozen:
            return self.frozen[e]
        if isinstance(e, ast.Constant):
            if isinstance(e.value, bool) or e.value is None:
                return e.value
            if isinstance(e.value, (int, float)):
                return float(e.value)
            raise Unsupported("a constant that is not a number")
        if isinstance(e, ast.Name) and e.id in env:
            return env[e.id]
        if isinstance(e, (ast.Name, ast.Attribute)):
            return self._global(e)
        if isinstance(e, (ast.Tuple, ast.List)):
            if any(isinstance(x, ast.Starred) for x in e.elts):
                raise Unsupported("a starred element")
            return tuple(self._expr(x, env) for x in e.elts)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            v = self._float(self._expr(e.operand, env))
            return -v if isinstance(e.op, ast.USub) else v
        if isinstance(e, ast.BinOp) and type(e.op) in BINOPS:
            return self._number(BINOPS[type(e.op)](self._float(self._expr(e.left, env)),
                                                   self._float(self._expr(e.right, env))))
        if isinstance(e, ast.Compare) and len(e.ops) == 1 and type(e.ops[0]) in self.compare:
            return self.compare[type(e.ops[0])](self._float(self._expr(e.left, env)),
                                           self._float(self._expr(e.comparators[0], env)))
        if isinstance(e, ast.IfExp):
            test = self._expr(e.test, env)
            if not isinstance(test, bool):
                raise Unsupported("a condition that is not a comparison")
            return self._expr(e.body if test else e.orelse, env)
        if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, int):
            value = self._expr(e.value, env)
            if isinstance(value, tuple) and -len(value) <= e.slice.value < len(value):
                return value[e.slice.value]
            raise Unsupported("an index into an array")
        if isinstance(e, ast.Call):
            return self._call(e, env)
        raise Unsupported(f"a `{type(e).__name__}` expression")

    def _call(self, e: ast.Call, env: Dict[str, Any]) -> Any:
        if any(isinstance(a, ast.Starred) for a in e.args) or any(k.arg is None for k in e.keywords):
            raise Unsupported("starred arguments")
        if isinstance(e.func, ast.Name) and e.func.id not in env:
            callee = self._callee(e.func)
            if callee is not None:
                return self.call(callee, [self._expr(a, env) for a in self._positional(callee, e)])
        if e.keywords:
            raise Unsupported("keyword arguments")
        q = self.model.index.qualname(e.func) or ""
        if not q.startswith(PREFIXES):
            raise Unsupported(f"a call of `{q or self.model.quote(e.func, 30)}`")
        tail = q.rsplit(".", 1)[-1]
        args = [self._expr(a, env) for a in e.args]
        if tail in self.selects and len(args) == 3:
            return _where(*args)
        if tail in ("stop_gradient",):
            raise Unsupported("stop_gradient changes the slope, not the value")
        if tail in UNARY and len(args) == 1:
            return self._number(UNARY[tail](self._float(args[0])))
        if tail in BINARY and len(args) == 2:
            return self._number(BINARY[tail](self._float(args[0]), self._float(args[1])))
        raise Unsupported(f"`{tail}`")

    def _callee(self, name: ast.Name) -> Optional[FunctionNode]:
        """The function a called name runs: a module-level function bound once, a def or lambda
        bound once in the call's scope (a factory's or method's own), or a custom derivative's
        primal (`f = jax.custom_vjp(f)`, fwd calling `f`: the primal's value is the output's)."""
        if name.id in self.module_defs():
            return self.module_defs()[name.id]
        d = self.model.facts.derivative_named(name)
        if d is not None:
            return d.primal
        return named_function(self.model.index, name)

    def _global(self, e: ast.expr) -> float:
        """A module constant, or pi and e from math, numpy or jax.numpy."""
        if isinstance(e, ast.Name) and e.id in self.constants():
            return self.constants()[e.id]
        q = self.model.index.qualname(e) or ""
        if q.endswith(".pi") and q.startswith(("math.", "numpy.", "jax.numpy.")):
            return math.pi
        raise Unsupported(f"the name `{self.model.quote(e, 30)}`")

    def module_defs(self) -> Dict[str, FunctionNode]:
        """Module-level functions bound once (a redefined name is not followed)."""
        if self._module_defs is None:
            found: Dict[str, List[FunctionNode]] = {}
            for stmt in self.model.module.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found.setdefault(stmt.name, []).append(stmt)
                elif isinstance(stmt, ast.Assign):
                    for t in stmt.targets:
                        if isinstance(t, ast.Name):
                            found.setdefault(t.id, []).append(stmt.value)  # type: ignore[arg-type]
            self._module_defs = {n: fs[0] for n, fs in found.items()
                                 if len(fs) == 1 and isinstance(fs[0], (ast.FunctionDef, ast.Lambda))}
        return self._module_defs

    def constants(self) -> Dict[str, float]:
        """Module-level names bound once to a number (`EPS = 1e-6`, `SCALE = -2.0`)."""
        if self._constants is None:
            counts: Dict[str, int] = {}
            values: Dict[str, float] = {}
            index = self.model.index  # its cached nodes by type, not another walk of the module
            for kind in (ast.Assign, ast.AugAssign, ast.AnnAssign):
                for node in index.of_type(kind):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
                    for t in targets:
                        if isinstance(t, ast.Name):
                            counts[t.id] = counts.get(t.id, 0) + 1
            for stmt in self.model.module.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    number = _literal_number(stmt.value)
                    if number is not None and counts.get(stmt.targets[0].id) == 1:
                        values[stmt.targets[0].id] = number
            self._constants = values
        return self._constants

    @staticmethod
    def _float(v: Any) -> float:
        if isinstance(v, float):
            return v
        raise Unsupported("a value that is not a number")

    @staticmethod
    def _number(v: Any) -> float:
        if isinstance(v, complex) or not isinstance(v, float) or not math.isfinite(v):
            raise Unsupported("a value that is not a finite real number")
        return v


def _stored_names(stmt: ast.stmt) -> List[str]:
    """The names a statement binds, nested bodies included (not those of a nested function's own scope)."""
    names: List[str] = []
    todo: List[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.append(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
            continue
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.extend((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return names


def literal_number(e: ast.expr) -> Optional[float]:
    """A number literal, negated or not, as a float; None otherwise."""
    return _literal_number(e)


def _literal_number(e: ast.expr) -> Optional[float]:
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        inner = _literal_number(e.operand)
        return None if inner is None else -inner
    if isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
        return float(e.value)
    return None


@query(memo=False)
def scalar_evaluator(model: "FileModel", equality: bool = False) -> ScalarEvaluator:
    """Calls of the module's functions on floats (`equality`: `==` and `select` too): a fresh evaluator."""
    return ScalarEvaluator(model, equality)
