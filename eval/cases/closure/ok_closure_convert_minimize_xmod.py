"""closure look-alike, caller in another module: the `jax.closure_convert` docs pattern, a public `minimize` that hoists the objective's closed-over values before its custom_vjp.

Source: the `jax.closure_convert` API page https://docs.jax.dev/en/latest/_autosummary/jax.closure_convert.html
(`minimize(objective_fn, x0)` converts the objective and calls a custom_vjp `_minimize` with the
objective in nondiff_argnums and the hoisted values as arguments), from jax-ml/jax#5222. The
caller (`_ok_closure_convert_minimize_driver.py`) imports this module by name and differentiates
with respect to a value its objective lambda closes over: that is what the conversion is for.
"""
from functools import partial

import jax
import jax.numpy as jnp

EVAL = {
    "id": "closure/ok_closure_convert_minimize_xmod", "family": "closure", "expect": "ok",
    "source": "jax-ml/jax#5222", "url": "https://docs.jax.dev/en/latest/_autosummary/jax.closure_convert.html",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["grad_jit"], "driver": "_ok_closure_convert_minimize_driver.py",
}


def minimize(objective_fn, x0):
    converted_fn, aux_args = jax.closure_convert(objective_fn, x0)
    return _minimize(converted_fn, x0, *aux_args)


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def _minimize(objective_fn, x0, *args):  # eval: span
    step = jax.grad(objective_fn)
    return jax.lax.fori_loop(0, 200, lambda _, x: x - 0.1 * step(x, *args), x0)


def _minimize_fwd(objective_fn, x0, *args):
    x_opt = _minimize(objective_fn, x0, *args)
    return x_opt, (x_opt, args)


def _minimize_bwd(objective_fn, res, g):
    x_opt, args = res
    stationarity = jax.grad(objective_fn)  # zero at the optimum, for every value of args
    hess = jax.jacfwd(stationarity)(x_opt, *args)
    w = jnp.linalg.solve(hess.T, g)
    _, pullback = jax.vjp(lambda *a: stationarity(x_opt, *a), *args)
    args_bar = tuple(-t for t in pullback(w))
    return (jnp.zeros_like(x_opt), *args_bar)


_minimize.defvjp(_minimize_fwd, _minimize_bwd)
