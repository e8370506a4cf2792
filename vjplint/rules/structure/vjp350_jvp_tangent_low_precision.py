from __future__ import annotations

import ast
import re
from typing import Iterator, List, Optional, Set, Tuple

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.model.semantic import named_function
from vjplint.rules.base import Rule
from vjplint.rules.helpers import fixed_float_cast, rule_label

# The half-precision dtypes: the tangent of a primal output computed from float32 inputs is not one of them.
LOW = frozenset({"float16", "bfloat16"})
# Nor is a complex dtype (a rule ported from a complex-valued version): JAX raises the same error.
COMPLEX = frozenset({"complex64", "complex128"})
_DTYPE_MODULES = ("jax.numpy.", "numpy.")
JAX_ERROR = ("`TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
             "dtypes. Expected float32[...] (tangent type of float32[...]) but got {dtype}[...]`")


class JvpTangentLowPrecision(Rule):
    """## What it does
    Flags a `jax.custom_jvp` rule whose tangent output, or one leaf of it (an element of a
    tuple or list, a value of a dict, a field of a NamedTuple), is cast to a fixed half-precision
    dtype (`t.astype(jnp.bfloat16)`, `jnp.asarray(t, jnp.float16)`, `jnp.float16(t)`, a name bound
    to such a cast, or a helper of the module that returns one) while its primal output is not
    cast to that dtype and nothing else in the module mentions it (no input, primal or caller in
    half precision). The mirror of VJP340, which flags the primal output cast alone. A cast to
    a complex dtype (`jnp.asarray(t, jnp.complex64)`, a rule ported from a complex-valued
    version) is flagged alike, unless the module makes complex values elsewhere (a `complex`
    dtype, a `1j` literal, `jnp.fft`).

    ## Why is this bad?
    A jvp rule's tangent output must have the tangent dtype of its primal output, leaf by leaf.
    The primal output of float32 inputs is float32, so its tangent in float16 makes `jax.jvp`,
    `jax.grad`, `jax.jacfwd` and `jit` of them raise (measured on JAX 0.10.2,
    `fixtures/rules/VJP350/fire_*.py`, census row E08 of `docs/facts/jax-errors.md`):

        TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding
        shapes and dtypes. Expected float32[3] (tangent type of float32[3]) but got float16[3]

    The same holds for a complex64 tangent of a float32 output (`... but got complex64[3]`).
    It runs only when the primal output is already in that dtype (every input half precision,
    or complex, from another module), hence "may".

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), (jnp.cos(x) * t).astype(jnp.float16)
    ```

    ## Use instead
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), jnp.cos(x) * t      # or `.astype(x.dtype)`, the primal's own dtype
    ```

    ## Fix safety
    No fix: whether the tangent should follow the primal's dtype or both go to half precision is
    the author's choice.
    """

    CODE = "VJP350"
    NAME = "jvp-tangent-low-precision"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_jvp",)
    NEEDS = re.compile("float16|complex")  # float16, bfloat16, complex64/128: as a string or an attribute
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), (jnp.cos(x) * t).astype(jnp.float16)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sin(x)

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), (jnp.cos(x) * t).astype(x.dtype)
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for reg, rule in self.model.facts.jvp_rules(d):
            if reg.method != "defjvp" or rule.node is None or rule.node in self._done:
                continue
            self._done.add(rule.node)
            self._check_rule(d, rule)

    def _check_rule(self, d: CustomDerivative, rule: RuleFunction) -> None:
        assert rule.node is not None
        fn = self.model.facts.through_wrapper(rule.node)
        found: List[Tuple[ast.expr, ast.expr, str, ast.expr]] = []  # (tangent output, leaf, dtype, the cast)
        for _, value in self.model.facts.returns_of(fn):
            pair = self._follow(value)
            if not isinstance(pair, (ast.Tuple, ast.List)) or len(pair.elts) != 2 or \
                    any(isinstance(e, ast.Starred) for e in pair.elts):
                continue
            primal_expr, tangent_expr = pair.elts
            for tangent_leaf, primal_leaf in self._leaves(self._follow(tangent_expr), self._follow(primal_expr)):
                dtype, cast = self._cast(tangent_leaf, 0)
                if dtype not in LOW | COMPLEX or cast is None:
                    continue
                if primal_leaf is not None and self._cast(primal_leaf, 0)[0] == dtype:
                    continue  # both outputs in that dtype
                found.append((tangent_expr, tangent_leaf, dtype, cast))
        if not found or self._mentioned_elsewhere({f[2] for f in found}, [f[3] for f in found]):
            return  # an input, the primal or a caller in half precision: the outputs may agree
        tangent_expr, tangent_leaf, dtype, cast = found[0]
        where = "" if cast is tangent_leaf else f" (`{self.quote(cast, 40)}`, line {cast.lineno})"
        which = "the tangent output" if tangent_leaf is tangent_expr else "a leaf of its tangent output,"
        self.report(tangent_leaf, (
            f"{rule_label(rule, 'jvp rule')} of {d.label} `{d.name}` returns {which} `{self.quote(tangent_leaf, 40)}`, "
            f"cast to {dtype}{where}, but its primal output is not cast to {dtype} and nothing in this "
            f"module makes an input {dtype}: a tangent output must have its primal output's dtype, so "
            f"unless every input of `{d.name}` is already {dtype}, `jax.jvp`/`jax.grad` of `{d.name}` "
            f"may raise {JAX_ERROR.format(dtype=dtype)}; cast the tangent to the primal's dtype (`.astype(x.dtype)`) or leave "
            f"it as computed"))

    def _follow(self, e: ast.expr) -> ast.expr:
        """A name bound once to a simple value in its scope: that value; else `e`."""
        if isinstance(e, ast.Name):
            bindings = self.model.index.lookup(e.id, self.model.index.scope_of(e))
            if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].value is not None:
                return bindings[0].value
        return e

    def _leaves(self, tangent: ast.expr, primal: Optional[ast.expr]) -> Iterator[Tuple[ast.expr, Optional[ast.expr]]]:
        """Each leaf of the tangent output with the primal output's leaf in the same place, when shown."""
        if isinstance(tangent, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in tangent.elts):
            shown = primal.elts if isinstance(primal, (ast.Tuple, ast.List)) and len(primal.elts) == len(
                tangent.elts) else [None] * len(tangent.elts)
            for t, p in zip(tangent.elts, shown):
                yield from self._leaves(self._follow(t), self._follow(p) if p is not None else None)
        elif isinstance(tangent, ast.Dict) and None not in tangent.keys:
            keyed = {ast.dump(k): v for k, v in zip(primal.keys, primal.values) if k is not None} if isinstance(
                primal, ast.Dict) else {}
            for k, v in zip(tangent.keys, tangent.values):
                yield v, keyed.get(ast.dump(k))  # type: ignore[arg-type]
        elif isinstance(tangent, ast.Call) and isinstance(tangent.func, ast.Name) and tangent.func.id.lstrip("_")[:1].isupper() \
                and not tangent.keywords and fixed_float_cast(self.model, tangent) is None:
            shown = primal.args if isinstance(primal, ast.Call) and isinstance(primal.func, ast.Name) and \
                primal.func.id == tangent.func.id and len(primal.args) == len(tangent.args) else [None] * len(tangent.args)
            for t, p in zip(tangent.args, shown):  # a NamedTuple (or other pytree class) built positionally
                yield t, p
        else:
            yield tangent, primal

    def _cast(self, e: ast.expr, depth: int) -> Tuple[Optional[str], Optional[ast.expr]]:
        """The fixed float dtype `e` is cast to, with the cast itself: `e`, the value of a name bound
        to it, or the return of a helper of the module `e` calls (every return cast alike)."""
        e = self._follow(e)
        dtype = fixed_float_cast(self.model, e) or self._complex_cast(e)
        if dtype is not None:
            return dtype, e
        if depth < 2 and isinstance(e, ast.Call):
            helper = named_function(self.model.index, e.func)
            if helper is not None and not isinstance(helper, ast.Lambda):
                found: List[Tuple[Optional[str], Optional[ast.expr]]] = [
                    self._cast(v, depth + 1) for _, v in self.model.facts.returns_of(helper) if v is not None]
                if found and all(f[0] == found[0][0] for f in found):
                    return found[0]
            elif isinstance(helper, ast.Lambda):
                return self._cast(helper.body, depth + 1)
        return None, None

    def _complex_cast(self, e: ast.expr) -> Optional[str]:
        """The complex dtype `e` is cast to at its outermost operation: `v.astype(jnp.complex64)`,
        `jnp.asarray(v, jnp.complex64)` / `dtype=`, `jnp.complex64(v)`."""
        if not isinstance(e, ast.Call):
            return None
        q = self.model.index.qualname(e.func) or ""
        named: Optional[ast.expr] = None
        if isinstance(e.func, ast.Attribute) and e.func.attr == "astype" and len(e.args) == 1 and not e.keywords:
            named = e.args[0]
        elif q in ("jax.numpy.asarray", "jax.numpy.array") and not e.keywords and len(e.args) == 2:
            named = e.args[1]
        elif q in ("jax.numpy.asarray", "jax.numpy.array") and len(e.args) == 1:
            named = next((k.value for k in e.keywords if k.arg == "dtype"), None)
        elif q.startswith(_DTYPE_MODULES) and q.rsplit(".", 1)[-1] in COMPLEX and len(e.args) == 1 and not e.keywords:
            return q.rsplit(".", 1)[-1]
        if isinstance(named, ast.Constant) and named.value in COMPLEX:
            return named.value
        dtype = (self.model.index.qualname(named) or "") if named is not None else ""
        return dtype.rsplit(".", 1)[-1] if dtype.startswith(_DTYPE_MODULES) and dtype.rsplit(".", 1)[-1] in COMPLEX else None

    def _mentioned_elsewhere(self, dtypes: Set[str], casts: List[ast.expr]) -> bool:
        """A dtype's name appears in the module other than in the tangent casts found (for a
        complex dtype: also a complex literal `1j`, `complex`, or an FFT, which make complex values)."""
        complex_too = bool(dtypes & COMPLEX)
        for node in self.model.facts.walk(self.model.module):
            named = (isinstance(node, ast.Attribute) and node.attr in dtypes) or (
                isinstance(node, ast.Name) and node.id in dtypes) or (
                isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in dtypes) or \
                complex_too and (isinstance(node, ast.Constant) and isinstance(node.value, complex) or isinstance(
                    node, ast.Name) and "complex" in node.id or isinstance(node, ast.Attribute) and (
                    "complex" in node.attr or node.attr == "fft"))
            if named and not any(self.model.index.inside(node, c) for c in casts):
                return True
        return False
