"""The wording of VJP201's reports on jax.custom_gradient closures and the evidence its messages quote
(what the facts in vjplint/rules/tracing/_closures.py found, in words).

May import what a rule of this family may import (facts, plans, model, ...), never another family."""

from __future__ import annotations

import ast
from typing import List, Tuple

from vjplint.rules.tracing._closures import Capture, Root
from vjplint.facts.param_evidence import Verdict
from vjplint.model.file_model import CustomDerivative, FileModel


def evidence(capture: Capture, root: Root, verdict: Verdict) -> Tuple[str, str]:
    """The enclosing function's name, and why the captured value is traced, for the messages."""
    outer = getattr(root.function, "name", "<lambda>")
    evidence = verdict.best("array")
    assert evidence is not None
    if root.param == capture.name:
        return outer, f"`{root.param}` {evidence.reason}"
    via = f" ({root.chain[-1]})" if root.chain else ""
    return outer, f"`{capture.name}` is computed from `{root.param}`{via}; `{root.param}` {evidence.reason}"


# -- the messages -----------------------------------------------------------------------------
def own_arguments_message(model: FileModel, d: CustomDerivative, found: List[Tuple[Capture, List[Root], ast.Call]]) -> str:
    outer = getattr(found[0][1][0].function, "name", "<lambda>")
    read = []
    for capture, _, _ in found:
        reader = "its body" if d.name in capture.readers else (
            "the vjp lambda it returns" if "<lambda>" in capture.readers else
            f"the vjp function `{capture.readers[0]}` it returns")
        read.append(f"`{capture.name}` (read by {reader})")
    roots = [root for _, rs, _ in found for root in rs]
    params = sorted({root.param for root in roots})
    names = ", ".join(f"`{p}`" for p in params)
    either = " or ".join(f"`{p}`" for p in params)
    chains = list(dict.fromkeys(root.chain[-1] for root in roots if root.chain))
    computed = f"computed in `{outer}` from {names} ({'; '.join(chains)})" if chains else \
        f"{'a parameter' if len(params) == 1 else 'parameters'} of `{outer}`"
    call = found[0][2]
    vjp_outside = any("jax.vjp(" in chain for chain in chains)
    remedy = (f"Call `jax.vjp` inside `{d.name}` on its own arguments and return that output and pullback"
              if vjp_outside else f"Compute {'it' if len(found) == 1 else 'them'} inside `{d.name}` from its "
                                  f"own arguments")
    return (f"jax.custom_gradient `{d.name}` is defined inside `{outer}` and closes over {' and '.join(read)}, "
            f"{computed}, which `{outer}` also passes to `{d.name}` as "
            f"{'an argument' if len(params) == 1 else 'arguments'} (`{model.quote(call, 50)}`, line "
            f"{call.lineno}). Differentiating `{d.name}` with respect to {either} (what a custom_gradient is "
            f"for) makes the closed-over values tracers of that same differentiation, which escape: grad, "
            f"jit(grad) and vmap(grad) raise UnexpectedTracerError (grad(jit): CustomVJPException or 'No "
            f"constant handler'); eager calls, jit and vmap work. {remedy}")


def maybe_message(d: CustomDerivative, capture: Capture, root: Root, use: Tuple[str, str]) -> str:
    kind = "custom_vjp" if d.kind == "vjp" else "custom_jvp"
    outer = getattr(root.function, "name", "<lambda>")
    reader, quoted = use
    if root.param == capture.name:
        what = f"`{capture.name}`, a parameter of `{outer}`,"
    else:
        via = f" ({root.chain[-1]})" if root.chain else ""
        what = f"`{capture.name}`, computed from `{outer}`'s parameter `{root.param}`{via},"
    fails = ("UnexpectedTracerError, or CustomVJPException 'Detected differentiation of a custom_vjp function "
             "with respect to a closed-over value'") if d.kind == "vjp" else "UnexpectedTracerError"
    rule = "its cotangent (or None) from bwd" if d.kind == "vjp" else "its tangent from the jvp rule"
    return (f"{kind} `{d.name}` is defined inside `{outer}` and closes over {what} read by `{d.name}` and "
            f"used as array data by its rule `{reader}` (`{quoted}`). Nothing here shows `{outer}` traced, but "
            f"if it is differentiated with respect to `{root.param}`, JAX may raise ({fails}). If `{root.param}` can be an array being "
            f"differentiated, pass `{capture.name}` as an explicit argument of `{d.name}` (returning {rule}), "
            f"or hoist it with `jax.closure_convert`")

# -- jax.custom_gradient: the body is the primal, the vjp function it returns the bwd rule ---------
def gradient_what(d: CustomDerivative, capture: Capture, root: Root) -> Tuple[str, str, bool]:
    """(who reads the value, in words; how to pass it; whether only the vjp function reads it)."""
    vjps = [r for r in capture.readers if r != d.name]
    vjp = " and ".join("the vjp lambda it returns" if r == "<lambda>" else f"the vjp function `{r}` it returns"
                       for r in vjps)
    if d.name in capture.readers:
        readers = f"its body and {vjp}" if vjps else "its body"
    else:
        readers = vjp
    passed = (f"Pass `{capture.name}` as an explicit argument of `{d.name}` (its vjp function then returns a "
              f"cotangent for it, `None` when it is not differentiated), or hoist it with `jax.closure_convert`")
    return readers, passed, d.name not in capture.readers

def gradient_message(d: CustomDerivative, capture: Capture, root: Root, verdict: Verdict) -> str:
    outer, what = evidence(capture, root, verdict)
    readers, passed, vjp_only = gradient_what(d, capture, root)
    head = (f"jax.custom_gradient `{d.name}` is defined inside `{outer}` and closes over `{capture.name}` (read "
            f"by {readers}): {what}.")
    staged = ("`jax.grad(jax.jit(...))` around the caller fails with 'No constant handler for type "
              "DynamicJaxprTracer' (`jax.grad(jax.checkpoint(...))` with UnexpectedTracerError)")
    if vjp_only:
        return (f"{head} custom_gradient cannot close over tracers even when they are not differentiated "
                f"(jax-ml/jax#24545): eager calls, jit, vmap, grad and jit(grad) work, but {staged}. {passed}")
    return (f"{head} Differentiating `{d.name}` with respect to `{root.param}` fails (UnexpectedTracerError, or "
            f"CustomVJPException 'Detected differentiation of a custom_vjp function with respect to a closed-over "
            f"value' when staged by jit), and {staged} even when it is not differentiated. {passed}")

def gradient_maybe_message(d: CustomDerivative, capture: Capture, root: Root,
                            use: Tuple[str, str]) -> str:
    outer = getattr(root.function, "name", "<lambda>")
    _, quoted = use
    if root.param == capture.name:
        what = f"`{capture.name}`, a parameter of `{outer}`,"
    else:
        via = f" ({root.chain[-1]})" if root.chain else ""
        what = f"`{capture.name}`, computed from `{outer}`'s parameter `{root.param}`{via},"
    readers, passed, vjp_only = gradient_what(d, capture, root)
    differentiated = ("" if vjp_only else f"; differentiating it with respect to `{root.param}` raises "
                      f"UnexpectedTracerError")
    return (f"jax.custom_gradient `{d.name}` is defined inside `{outer}` and closes over {what} read by {readers} "
            f"and used there as array data (`{quoted}`). Nothing here shows `{outer}` traced, but custom_gradient "
            f"cannot close over tracers even when they are not differentiated (jax-ml/jax#24545): if `{outer}` "
            f"is traced inside a differentiation, `jax.grad(jax.jit(...))` may fail with 'No constant handler "
            f"for type DynamicJaxprTracer' (`jax.grad(jax.checkpoint(...))` with UnexpectedTracerError)"
            f"{differentiated}. If `{root.param}` can be an array, {passed[0].lower()}{passed[1:]}")
