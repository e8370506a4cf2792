from __future__ import annotations

import ast
from typing import Callable, Optional, Set

from vjplint.model.file_model import CustomDerivative
from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.model.semantic import FunctionNode, named_function
from vjplint.syntax.walk import walk

# Operators that fail on a tuple operand (`+` concatenates two tuples, so it is left out unless the
# other side is provably not a tuple: too rare to be worth it).
ARITHMETIC = (ast.Mult, ast.Div, ast.Sub, ast.Pow, ast.MatMult, ast.FloorDiv, ast.Mod)


class NnxBwdPairCotangent(Rule):
    """## What it does
    Flags a `flax.nnx.custom_vjp` bwd rule in nnx's default mode (`graph` and `graph_updates`
    both true, the defaults) that uses its cotangent parameter as the output's cotangent, in
    arithmetic (`res * g`, `g @ w`, `g ** 2`), and never unpacks or indexes it.

    ## Why is this bad?
    In the default mode nnx calls `bwd(*nondiff, residuals, g)` with
    `g = (input_updates_g, out_g)`: a pair, not JAX's output cotangent. A bwd written with
    JAX's protocol fails under grad (docs/facts/README.md, nnx §2):

        TypeError: unsupported operand type(s) for *: 'ArrayImpl' and 'tuple'

    With `graph_updates=False` (or `graph=False`) nnx uses JAX's protocol and the same bwd is
    right, so the rule stays silent there and when the mode is not a literal.

    ## Example
    ```python
    @nnx.custom_vjp
    def softclip(x):
        return jnp.tanh(x)

    def softclip_bwd(t, g):
        return ((1 - t ** 2) * g,)
    ```

    ## Use instead
    ```python
    def softclip_bwd(t, g):
        _, out_g = g  # (input_updates_g, out_g)
        return ((1 - t ** 2) * out_g,)
    ```

    ## Fix safety
    No fix: unpacking `g` or switching to `graph_updates=False` (which changes how Module
    arguments' cotangents are returned) is the author's choice.
    """

    CODE = "VJP317"
    NAME = "nnx-bwd-pair-cotangent"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    APIS = frozenset({"nnx"})

    INVALID = ['''
import jax.numpy as jnp
from flax import nnx

@nnx.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), jnp.cos(x)

def f_bwd(cos_x, g):
    return (cos_x * g,)

f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax.numpy as jnp
from flax import nnx

@nnx.custom_vjp
def f(x):
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

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.mode != "default":
            return
        nondiff = self.model.facts.nondiff_positions(d)
        if nondiff is None:
            return
        for _, _, bwd in self.model.facts.checked_vjp_rules(d):
            arity = self.model.facts.bwd_arity(d, bwd)
            if bwd is None or bwd.node is None or arity is None or bwd.node in self._seen:
                continue
            if arity.vararg or len(arity.names) != len(nondiff) + 2:
                continue
            g = arity.names[len(nondiff) + 1]
            use = _arithmetic_use(bwd.node, g, lambda call: self._helper_arithmetic(call, g))
            if use is None:
                continue
            self._seen.add(bwd.node)
            self.report(use, f"{rule_label(bwd, 'bwd')} of nnx.custom_vjp `{d.name}` uses `{g}` as the output "
                             f"cotangent (`{self.quote(use)}`{self._through(use)}), but in nnx's default mode (graph and "
                             f"graph_updates true) `{g}` is the pair (input_updates_g, out_g): differentiating "
                             f"`{d.name}` raises `TypeError: unsupported operand type(s) ... 'tuple'`; unpack it "
                             f"(`input_updates_g, out_g = {g}`), or pass `graph_updates=False` to "
                             f"`nnx.custom_vjp` for JAX's protocol")


    def _helper_arithmetic(self, call: ast.Call, name: str) -> Optional[ast.AST]:
        """The arithmetic a function of the module does on the parameter the bare `name` is passed
        to (`_scale(g, s)` with `def _scale(g, s): return g * s`)."""
        helper = named_function(self.model.index, call.func)
        if not isinstance(helper, ast.FunctionDef) or helper.decorator_list:
            return None
        params = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
        for i, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                return None
            if isinstance(arg, ast.Name) and arg.id == name and i < len(params):
                return _arithmetic_use(helper, params[i])
        return None

    def _through(self, use: ast.AST) -> str:
        if not isinstance(use, ast.Call):
            return ""
        helper = named_function(self.model.index, use.func)
        return f", which does arithmetic on it in `{getattr(helper, 'name', '?')}`" if helper is not None else ""


def _arithmetic_use(fn: FunctionNode, name: str,
                    helper_use: Optional[Callable[[ast.Call], Optional[ast.AST]]] = None) -> Optional[ast.AST]:
    """The first arithmetic on the bare `name` in `fn`'s own body; None when `name` is ever unpacked,
    indexed, reassigned or used as a container, so that it may not be the pair any more."""
    found: Optional[ast.AST] = None
    nodes = list(walk(fn.body if isinstance(fn, ast.Lambda) else ast.Module(body=fn.body, type_ignores=[])))
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node is not fn:
            if any(isinstance(n, ast.Name) and n.id == name for n in walk(node)):
                return None  # a nested function may do anything with it
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name:
            return None
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension)):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets if t is not None for n in walk(t)):
                return None  # rebound
            value = getattr(node, "value", None) or getattr(node, "iter", None)
            if isinstance(value, ast.Name) and value.id == name:
                return None  # `a, b = g`, `for part in g`
        if isinstance(node, ast.Starred) and isinstance(node.value, ast.Name) and node.value.id == name:
            return None
        if found is None and helper_use is not None and isinstance(node, ast.Call) and helper_use(node) is not None:
            found = node
        if found is None and isinstance(node, ast.BinOp) and isinstance(node.op, ARITHMETIC):
            if any(isinstance(side, ast.Name) and side.id == name for side in (node.left, node.right)):
                found = node
    return found
