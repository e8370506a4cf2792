from __future__ import annotations

import ast
import re
from typing import List, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.facts.kinds import CALLABLE, STRING, Kind

TEXT = "a string: "  # how `_callables` marks a string leaf's reason
DATACLASS = "a dataclass: "  # and an instance of a dataclass that is not a pytree
DTYPE = "a dtype: "  # and a NumPy dtype object
# calls that return a `numpy.dtype` object (JAX 0.10.2: `Argument 'float32' of type '<class
# 'numpy.dtypes.Float32DType'>' is not a valid JAX type` under grad; fixtures/rules/VJP320/fire_dtype_residual.py)
DTYPE_CALLS = frozenset({"jax.numpy.result_type", "jax.numpy.dtype", "numpy.dtype", "numpy.result_type",
                         "jax.dtypes.result_type", "jax.dtypes.canonicalize_dtype"})


class CallableResidual(Rule):
    """## What it does
    Flags a custom_vjp fwd rule that puts a Python function among its residuals: a lambda, a
    function defined in the module (without decorators, which may make it a pytree), a
    `jax.numpy`/`jax.nn` function, or a nondiff argument that every call of the function in this
    module fills with one of those; and one that puts a Python string there (a literal, an
    f-string, or a name of the rule bound to one: a flag saying which branch fwd took); one that saves
    a dtype (`x.dtype`, `jnp.result_type(x)`, `np.dtype(...)`, or a name of the rule bound to one: to
    cast a cotangent back to its input's precision); and one that saves an instance of a plain `@dataclasses.dataclass` of the module that nothing registers as a
    pytree (`TypeError: Argument '...' of type <class '..._Residuals'> is not a valid JAX type`;
    with `@jax.tree_util.register_dataclass` it is a pytree of arrays and fine).
    `jax.tree_util.Partial` (a pytree), numbers, None and other values are left alone.

    ## Why is this bad?
    JAX flattens the residuals into JAX values. Measured on JAX 0.10.2 (docs/facts/structure.md):
    eager calls work, but `grad`, `jit(grad)` and `vmap(grad)` raise

        TypeError: Argument '<function double at 0x...>' of type '<class 'function'>' is not a
        valid JAX type

    (jax-ml/jax#17753); a string leaf raises `TypeError: Argument 'fwd' of type <class 'str'> is
    not a valid JAX type` the same way (`docs/facts/scripts/errors/e64_string_residual.py`).
    bwd receives the nondiff arguments anyway, so a callable passed in
    `nondiff_argnums` need not be saved; a closure built in fwd can be rebuilt in bwd from the
    arrays it closes over.

    ## Example
    ```python
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def solve(step, rhs): ...

    def solve_fwd(step, rhs):
        b = iterate(step, rhs)
        return b, (b, rhs, step)
    ```

    ## Use instead
    ```python
    def solve_fwd(step, rhs):
        b = iterate(step, rhs)
        return b, (b, rhs)

    def solve_bwd(step, res, g):   # step arrives as the nondiff argument
        b, rhs = res
        ...
    ```

    ## Fix safety
    No fix: bwd must stop reading the callable from the residuals.
    """

    CODE = "VJP320"
    NAME = "callable-residual"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"vjp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.tanh(x)

def f_fwd(x):
    y = jnp.tanh(x)
    return y, (y, lambda g: g * (1 - y ** 2))

def f_bwd(res, g):
    _, slope = res
    return (slope(g),)

f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.tanh(x)

def f_fwd(x):
    y = jnp.tanh(x)
    return y, y

def f_bwd(y, g):
    return (g * (1 - y ** 2),)

f.defvjp(f_fwd, f_bwd)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for reg, fwd, _ in self.model.facts.checked_vjp_rules(d):
            if fwd is None or fwd.node is None or fwd.node in self._seen or not self.model.facts.registered_here(d, reg.node):
                continue
            self._seen.add(fwd.node)
            for _, value in self.model.facts.returns_of(fwd.node):
                if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == 2 and \
                        not any(isinstance(e, ast.Starred) for e in value.elts):
                    for leaf, why in self._callables(d, fwd, value.elts[1], 0):
                        self.report(leaf, self._text_message(d, fwd, leaf, why[len(TEXT):]) if why.startswith(TEXT)
                                    else self._dtype_message(d, fwd, leaf, why[len(DTYPE):]) if why.startswith(DTYPE)
                                    else self._class_message(d, fwd, leaf, why[len(DATACLASS):])
                                    if why.startswith(DATACLASS) else self._message(d, fwd, leaf, why))

    def _callables(self, d: CustomDerivative, fwd: RuleFunction, e: ast.expr, depth: int) -> List[Tuple[ast.expr, str]]:
        """The parts of the residual expression that are Python functions, with why."""
        if depth > 3:
            return []
        if isinstance(e, (ast.Tuple, ast.List)):
            return [hit for x in e.elts if not isinstance(x, ast.Starred) for hit in self._callables(d, fwd, x, depth + 1)]
        if isinstance(e, ast.Dict):
            return [hit for x in e.values for hit in self._callables(d, fwd, x, depth + 1)]
        if isinstance(e, ast.Lambda):
            return [(e, "a lambda")]
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and self._plain_dataclass(e.func):
            return [(e, DATACLASS + f"`{e.func.id}`")]
        if isinstance(e, ast.Call) and (self._named_tuple(e.func) or self.model.index.qualname(e.func) == "builtins.dict"):
            # a NamedTuple of the module or `dict(...)`: pytree nodes, their fields are the residual's leaves
            return [hit for x in (*e.args, *(k.value for k in e.keywords)) if not isinstance(x, ast.Starred)
                    for hit in self._callables(d, fwd, x, depth + 1)]
        if isinstance(e, ast.Constant) and isinstance(e.value, (str, bytes)) or isinstance(e, ast.JoinedStr):
            return [(e, TEXT + "a literal")]
        if self._dtype(e):
            return [(e, DTYPE + ("an array's `.dtype`" if isinstance(e, ast.Attribute) else "what the call returns"))]
        if isinstance(e, ast.Name) and fwd.signature is not None and \
                e.id not in (*fwd.signature.positional, fwd.signature.vararg, *fwd.signature.kwonly):
            bound = [a.value for a in ast.walk(fwd.node) if isinstance(a, ast.Assign) and len(a.targets) == 1
                     and isinstance(a.targets[0], ast.Name) and a.targets[0].id == e.id]
            if len(bound) == 1 and self._dtype(bound[0]):
                return [(e, DTYPE + f"`{e.id}` is bound to `{self.quote(bound[0], 30)}` in the rule")]
        kind = self.model.facts.values().of(e)
        if isinstance(e, ast.Name) and kind.tag == STRING and fwd.signature is not None and \
                e.id not in (*fwd.signature.positional, fwd.signature.vararg, *fwd.signature.kwonly):
            return [(e, TEXT + f"`{e.id}` is bound to one in the rule")]
        if isinstance(e, ast.Name):
            if kind.tag in ("tuple", "list") and kind.items is not None:
                return [(e, f"`{e.id}` holds {why}") for item in kind.items for why in [self._function(item)] if why]
            why = self._function(kind) or self._nondiff_callable(d, fwd, e.id)
            return [(e, why)] if why else []
        if isinstance(e, ast.Attribute):
            q = self.model.index.qualname(e) or ""
            if kind.tag == CALLABLE and q.startswith(("jax.numpy.", "jax.nn.", "jax.lax.", "jax.scipy.")):
                return [(e, f"the function `{q}`")]
        return []

    def _dtype(self, e: ast.expr) -> bool:
        """`e` is a dtype object: `<array>.dtype`, `jnp.result_type(...)`, `np.dtype(...)`."""
        if isinstance(e, ast.Attribute) and e.attr == "dtype" and isinstance(e.ctx, ast.Load):
            return True
        return isinstance(e, ast.Call) and self.model.index.qualname(e.func) in DTYPE_CALLS

    def _named_tuple(self, func: ast.expr) -> bool:
        """`func` names a class of the module whose one base is `typing.NamedTuple`."""
        found = self.model.index.lookup(func.id, self.model.index.scope_of(func)) if isinstance(func, ast.Name) else []
        cls = found[0].node if len(found) == 1 and found[0].kind == "class" else None
        return isinstance(cls, ast.ClassDef) and len(cls.bases) == 1 and \
            self.model.index.qualname(cls.bases[0]) == "typing.NamedTuple"

    def _plain_dataclass(self, name: ast.Name) -> bool:
        """`name` is a class of the module made by `@dataclasses.dataclass` alone, with no base, that
        nothing in the module registers as a pytree (`register_dataclass`, `register_pytree_node...`)."""
        found = self.model.index.lookup(name.id, self.model.index.scope_of(name))
        if len(found) != 1 or found[0].kind != "class" or not isinstance(found[0].node, ast.ClassDef):
            return False
        cls = found[0].node
        decs = [d.func if isinstance(d, ast.Call) else d for d in cls.decorator_list]
        if cls.bases or cls.keywords or len(decs) != 1 or self.model.index.qualname(decs[0]) != "dataclasses.dataclass":
            return False  # a base or another decorator (`chex.dataclass`, `flax.struct`) may make it a pytree
        # the file's text, not only the regions parsed: `register_dataclass(Cls, ...)` may stand anywhere,
        # its arguments on the lines below (`register_pytree_node(\n    Cls, flatten, unflatten)`)
        registered = re.compile(r"register\w*\(\s*(?:nodetype\s*=\s*)?" + re.escape(name.id) + r"\b")
        return registered.search("\n".join(self.model.lines)) is None

    @staticmethod
    def _function(kind: Kind) -> Optional[str]:
        """Why `kind` is a plain Python function (a def or a lambda), or None."""
        if kind.tag == CALLABLE and isinstance(kind.node, ast.Lambda):
            return kind.why or "a lambda"
        if kind.tag == CALLABLE and isinstance(kind.node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                not kind.node.decorator_list:  # a decorator may make it a pytree (`eqx.filter_jit`)
            return kind.why or "a function"
        return None

    def _nondiff_callable(self, d: CustomDerivative, fwd: RuleFunction, name: str) -> Optional[str]:
        """A fwd parameter in a nondiff slot that every call of the primal fills with a function."""
        if fwd.node is None or d.primal is None or d.signature is None:
            return None
        params = fwd.signature.positional[fwd.bound_positional:]  # type: ignore[union-attr]
        if name not in params:
            return None
        index = params.index(name)
        if index not in d.nondiff or index >= len(d.signature.positional):
            return None
        primal_name = d.signature.positional[index]
        kind = self.model.facts.values().param(d.primal, primal_name)
        why = self._function(kind)
        return f"`{name}` is the nondiff argument `{primal_name}`, and {why}" if why else None

    def _message(self, d: CustomDerivative, fwd: RuleFunction, leaf: ast.expr, why: str) -> str:
        return (f"{rule_label(fwd, 'fwd')} saves `{self.quote(leaf, 40)}` in its residuals, and it is a Python function "
                f"({why}): JAX flattens residuals into JAX values, so differentiating `{d.name}` (grad, jit(grad), "
                f"vmap(grad)) raises `TypeError: Argument '<function ...>' of type '<class 'function'>' is not a valid "
                f"JAX type`; keep only arrays in the residuals (bwd receives nondiff arguments as its leading "
                f"parameters; rebuild a closure in bwd from the arrays it uses)")

    def _text_message(self, d: CustomDerivative, fwd: RuleFunction, leaf: ast.expr, why: str) -> str:
        return (f"{rule_label(fwd, 'fwd')} saves `{self.quote(leaf, 40)}` in its residuals, and it is a Python string "
                f"({why}): JAX flattens residuals into JAX values, so differentiating `{d.name}` (grad, jit(grad), "
                f"jax.vjp) raises `TypeError: Argument '...' of type <class 'str'> is not a valid JAX type`; keep the "
                f"string out of the residuals (bwd can close over it or tell the branch from the arrays), or save "
                f"an array flag")

    def _dtype_message(self, d: CustomDerivative, fwd: RuleFunction, leaf: ast.expr, why: str) -> str:
        return (f"{rule_label(fwd, 'fwd')} saves `{self.quote(leaf, 40)}` in its residuals, and it is a NumPy dtype "
                f"({why}), not an array: JAX flattens residuals into JAX values, so differentiating `{d.name}` (grad, "
                f"jit(grad), jax.vjp) raises `TypeError: Argument 'float32' of type '<class "
                f"'numpy.dtypes.Float32DType'>' is not a valid JAX type`; read the dtype in bwd from an array residual "
                f"(`x.dtype`) or from the cotangent, or close over it")

    def _class_message(self, d: CustomDerivative, fwd: RuleFunction, leaf: ast.expr, cls: str) -> str:
        return (f"{rule_label(fwd, 'fwd')} saves `{self.quote(leaf, 40)}` as its residuals, an instance of the dataclass "
                f"{cls}, which is not a pytree: JAX flattens residuals into JAX values, so differentiating `{d.name}` "
                f"raises `TypeError: Argument '...' of type <class '...{cls.strip('`')}'> is not a valid JAX type`; "
                f"register the class (`@jax.tree_util.register_dataclass`) or save a tuple of arrays")
