"""structure look-alike: an eqx.filter_custom_jvp returns (root, residual) and a symbolic zero tangent for the residual.

Source: patrick-kidger/optimistix optimistix/_ad.py
https://github.com/patrick-kidger/optimistix/blob/main/optimistix/_ad.py (`_implicit_impl`: an
`eqx.filter_custom_jvp` over `(fn_primal, fn_rewrite, inputs, tags, linear_solver)`; its rule
unpacks five primals and five tangents (None for the callables), solves for the root's tangent by the
implicit function theorem with `jax.jvp`, and returns `(root, residual), (t_root, t_residual)` where
`t_residual = zero_from_primal(residual, symbolic_zeros=True)`). Here a Newton solve of
`y**3 + y = a`.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import zero_from_primal

EVAL = {
    "id": "structure/ok_h7_optimistix_filter_custom_jvp_root_and_residual", "family": "structure",
    "expect": "ok", "source": "patrick-kidger/optimistix optimistix/_ad.py",
    "url": "https://github.com/patrick-kidger/optimistix/blob/main/optimistix/_ad.py",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0,), "extra": ["jvp"], "heldout": True,
}


def cubic(y, a):
    return y ** 3 + y - a


def _newton(fn, inputs):
    def step(_, y):
        slope = jax.jvp(lambda r: fn(r, inputs), (y,), (jnp.ones_like(y),))[1]
        return y - fn(y, inputs) / slope

    root = jax.lax.fori_loop(0, 40, step, jnp.zeros_like(inputs))
    return root, fn(root, inputs)


@eqx.filter_custom_jvp  # eval: span
def implicit_root(fn, inputs):
    return _newton(fn, jax.lax.stop_gradient(inputs))


@implicit_root.def_jvp  # eval: span
def _implicit_root_jvp(primals, tangents):  # eval: span
    fn, inputs = primals  # eval: span
    t_fn, t_inputs = tangents  # eval: span
    del t_fn
    root, residual = implicit_root(fn, inputs)
    if t_inputs is None:
        t_root = jnp.zeros_like(root)
    else:
        slope = jax.jvp(lambda r: fn(r, inputs), (root,), (jnp.ones_like(root),))[1]
        push = jax.jvp(lambda a: fn(root, a), (inputs,), (t_inputs,))[1]
        t_root = -push / slope
    t_residual = zero_from_primal(residual, symbolic_zeros=True)  # eval: span
    return (root, residual), (t_root, t_residual)  # eval: span


def eval_fn(a):
    root, _ = implicit_root(cubic, a)
    return root


def eval_inputs():
    return (np.array([0.5, 2.0, -3.0, 10.0], np.float32),)


def eval_reference(a):
    out = []
    for v in np.asarray(a, np.float64):
        roots = np.roots([1.0, 0.0, 1.0, -v])
        out.append(roots[np.argmin(np.abs(roots.imag))].real)
    return np.array(out)
