from __future__ import annotations

import ast
from typing import List, Optional, Set

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label

DICT_ERROR = ("`ValueError: dictionary update sequence element #0 has length N; 2 is required` (a TypeError for "
              "a scalar or an array of 2 rows: `dict()` reads the tuple as key-value pairs)")
TREE_ERROR = ("`TypeError: Custom VJP bwd rule must produce an output with the same container (pytree) "
              "structure as the args tuple of the primal function...`")


class NnxStateForArrayCotangent(Rule):
    """## What it does
    Flags a `flax.nnx.custom_vjp` bwd rule that returns, as the cotangent of an argument that is a
    plain array, an `nnx.State(...)`: e.g. `return (m_grad, nnx.State((x_grad,)))` for
    `f(m: Module, x: jax.Array)`. An argument is a plain array when it is annotated as one
    (`jax.Array`, `jnp.ndarray`, jaxtyping) or read as array data (`x @ w`, `jnp.tanh(x)`) and never
    as a Module, a Variable or a container (`x.layer`, `x(...)`, `x[...]`, `x["w"]`), and no call
    passes it an nnx Module, Variable or State. Arguments of unknown kind are left alone.

    ## Why is this bad?
    nnx turns only a graph node's entry (a Module's, Variable's or State's) into its own tangent
    type; a plain array argument's entry goes to JAX as it is and must be an array (or None). On
    flax 0.12.8, in every mode (docs/facts/scripts/out/nnx_state_cotangent.txt, google/flax#4301),
    `nnx.State((x_grad,))` builds a dict from the tuple and raises under `jax.grad`, `jax.jit(grad)`
    and `nnx.grad` (even with respect to the Module only):

        ValueError: dictionary update sequence element #0 has length 3; 2 is required

    and a State of a mapping (`nnx.State({'x': x_grad})`) fails JAX's check:

        TypeError: Custom VJP bwd rule must produce an output with the same container (pytree)
        structure as the args tuple of the primal function, ...

    A `State` is right for a Module argument (default mode); a State for an argument whose kind is
    not known is not flagged. When the evidence is only how the argument is read (a Variable also
    supports arithmetic), the finding is a warning.

    ## Example
    ```python
    @nnx.custom_vjp
    def affine(m: Affine, x: jax.Array):
        return x @ m.w[...]

    def affine_bwd(res, g):
        m, x = res
        _, out_g = g
        return (nnx.State({"w": jnp.outer(x, out_g)}), nnx.State((m.w[...] @ out_g,)))
    ```

    ## Use instead
    ```python
    def affine_bwd(res, g):
        m, x = res
        _, out_g = g
        return (nnx.State({"w": jnp.outer(x, out_g)}), m.w[...] @ out_g)
    ```

    ## Fix safety
    No fix: the array to return is usually the State's only item, but what the author meant to
    wrap is theirs to say.
    """

    CODE = "VJP330"
    NAME = "nnx-state-for-array-cotangent"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    APIS = frozenset({"nnx"})
    KINDS = frozenset({"vjp"})

    INVALID = ['''
import jax
import jax.numpy as jnp
from flax import nnx

@nnx.custom_vjp
def f(x: jax.Array):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), jnp.cos(x)

def f_bwd(cos_x, g):
    _, out_g = g
    return (nnx.State((cos_x * out_g,)),)

f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp
from flax import nnx

@nnx.custom_vjp
def f(x: jax.Array):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), jnp.cos(x)

def f_bwd(cos_x, g):
    _, out_g = g
    return (cos_x * out_g,)

f.defvjp(f_fwd, f_bwd)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()
        self._facts = self.model.facts

    def check_derivative(self, d: CustomDerivative) -> None:
        nondiff = self._facts.nondiff_positions(d)
        names = self._facts.differentiable_names(d)
        k = self._facts.primal_arg_count(d)
        if nondiff is None or names is None or k is None:
            return
        positions = [i for i in range(k) if i not in nondiff]
        for _, _, bwd in self._facts.checked_vjp_rules(d):
            if bwd is None or bwd.node is None:
                continue
            for _, value in self._facts.returns_of(bwd.node):
                for candidate in self.model.facts.return_branches(value):
                    elements = self._elements(candidate, bwd, len(positions))
                    for element, position in zip(elements, positions):
                        if element in self._seen:
                            continue
                        call = self.model.facts.state_call(element, bwd.node)
                        if call is None:
                            continue
                        evidence = self.model.facts.array_parameter(d, position)
                        if evidence is None:
                            continue
                        self._seen.add(element)
                        self._report(d, bwd, element, call, names[positions.index(position)], evidence)

    def _elements(self, value: ast.expr, bwd: RuleFunction, count: int) -> List[ast.expr]:
        """The entries of a returned tuple/list literal of `count` entries (or of a name bwd binds once to one)."""
        if isinstance(value, ast.Name):
            scope = self.model.index.scopes.get(bwd.node)  # type: ignore[arg-type]
            bindings = scope.bindings.get(value.id, []) if scope is not None else []
            if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].value is not None:
                value = bindings[0].value
        if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != count or \
                any(isinstance(e, ast.Starred) for e in value.elts):
            return []
        return list(value.elts)

    def _report(self, d: CustomDerivative, bwd: RuleFunction, element: ast.expr, call: ast.Call, name: str,
                evidence) -> None:
        why, certain = evidence
        inner = self._wrapped(call)
        shown = f"`{self.quote(call, 50)}`" if call is element else \
            f"`{self.quote(element)}` (`{self.quote(call, 50)}`, line {call.lineno})"
        error = DICT_ERROR if self._pairs(call) else TREE_ERROR
        verb = "raises" if certain else "may raise"
        instead = f"return the array itself (`{self.quote(inner, 50)}`)" if inner is not None else \
            f"return an array shaped like `{name}` (or None)"
        kind = "it is a plain array" if certain else "it is a plain array unless it is an nnx Variable"
        message = (f"{rule_label(bwd, 'bwd')} of {d.label} `{d.name}` returns {shown} as the cotangent of `{name}`, "
                   f"but {why}, so {kind}: nnx takes a State only as the entry of a graph-node argument (a Module, "
                   f"Variable or State) and hands a plain array argument's entry to JAX as it is, so differentiating "
                   f"`{d.name}` {verb} {error}; {instead}")
        self.report(element, message, severity=None if certain else Severity.WARNING)

    def _wrapped(self, call: ast.Call) -> Optional[ast.expr]:
        """The one array `nnx.State((a,))`, `nnx.State([a])` or `nnx.State({'k': a})` wraps."""
        if len(call.args) != 1 or call.keywords:
            return None
        arg = call.args[0]
        if isinstance(arg, (ast.Tuple, ast.List)) and len(arg.elts) == 1 and not isinstance(arg.elts[0], ast.Starred):
            return arg.elts[0]
        if isinstance(arg, ast.Dict) and len(arg.values) == 1 and arg.keys[0] is not None:
            return arg.values[0]
        return None

    def _pairs(self, call: ast.Call) -> bool:
        """`nnx.State(seq)` with a tuple/list literal (not of pairs): dict() takes it as key-value pairs."""
        return bool(call.args) and isinstance(call.args[0], (ast.Tuple, ast.List))
