from __future__ import annotations

import ast
from typing import Set

from vjplint.model.file_model import CustomDerivative
from vjplint.diagnostics import Severity
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.signature._pair_uses import PairUses


class NnxBwdPairCotangent(Rule):
    """## What it does
    Flags a `flax.nnx.custom_vjp` bwd rule in nnx's default mode (`graph` and `graph_updates`
    both true, the defaults) that uses its cotangent parameter as the output's cotangent and
    never reads it as the pair it is: any use a tuple cannot take (arithmetic `res * g`, unary
    `-g`, a comparison, an attribute `g.astype(...)`, an array index `g[idx]` or slice
    `g[:, None]`, an argument of a `jax.numpy`/`lax` function), in bwd, a function nested in it,
    or a function of the module it is passed to; a warning ("may") where bwd only hands `g`
    whole to a callable the module does not define (a `jax.vjp` pullback, a solver) or returns
    it. Any route to the creator counts (decorator, `partial`, call form, an alias import, a
    factory): a migration from `jax.custom_vjp` that keeps JAX's bwd is the usual cause.

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
            uses = PairUses(self.model, depth=2)
            use = uses.array_use(bwd.node, g)
            if use is None:
                continue
            self._seen.add(bwd.node)
            if not use.certain:
                self.report(use.node, f"{rule_label(bwd, 'bwd')} of nnx.custom_vjp `{d.name}` never unpacks `{g}` and "
                                      f"hands it on whole (`{self.quote(use.node)}`{use.through}), as JAX's output "
                                      f"cotangent; in nnx's default mode (graph and graph_updates true) `{g}` is the "
                                      f"pair (input_updates_g, out_g), so differentiating `{d.name}` may raise "
                                      f"{use.error}; unpack it (`input_updates_g, out_g = {g}`) and pass `out_g`, or "
                                      f"pass `graph_updates=False` to `nnx.custom_vjp` for JAX's protocol",
                            severity=Severity.WARNING)
                continue
            self.report(use.node, f"{rule_label(bwd, 'bwd')} of nnx.custom_vjp `{d.name}` uses `{g}` as the output "
                                  f"cotangent (`{self.quote(use.node)}`{use.through}), but in nnx's default mode (graph and "
                                  f"graph_updates true) `{g}` is the pair (input_updates_g, out_g): differentiating "
                                  f"`{d.name}` raises {use.error}; unpack it "
                                  f"(`input_updates_g, out_g = {g}`), or pass `graph_updates=False` to "
                                  f"`nnx.custom_vjp` for JAX's protocol")
