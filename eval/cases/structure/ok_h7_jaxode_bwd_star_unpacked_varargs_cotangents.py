"""structure look-alike: an integrator custom_vjp over (func, y0, *args) whose bwd returns (y0_bar, *args_bar).

Source: jax-ml/jax jax/experimental/ode.py, `_odeint` / `_odeint_fwd` / `_odeint_rev`
https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/experimental/ode.py#L185-L263
(read at commit cec06d1): `partial(jax.custom_vjp, nondiff_argnums=...)` with the vector field as a
non-differentiable callable and the parameters as `*args`; fwd keeps `(ys, ts, args)` (args a
tuple) as residuals and the adjoint bwd returns `(y_bar, ts_bar, *args_bar)`, one cotangent per
varargs entry spliced into the tuple. Here a fixed-step explicit Euler integrator with a discrete
adjoint: one jax.vjp of a step per saved state, accumulating the parameters' cotangents with tree_map.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_jaxode_bwd_star_unpacked_varargs_cotangents", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax:jax/experimental/ode.py",
    "url": "https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/experimental/ode.py#L185-L263",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0, 1, 2), "heldout": True,
}

STEPS, DT = 6, 0.1


def _states(field, y0, args):
    ys = [y0]
    for _ in range(STEPS):
        ys.append(ys[-1] + DT * field(ys[-1], *args))
    return ys


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def euler(field, y0, *args):  # eval: span
    return _states(field, y0, args)[-1]


def _euler_fwd(field, y0, *args):  # eval: span
    ys = _states(field, y0, args)
    return ys[-1], (ys, args)  # eval: span


def _euler_bwd(field, res, y_bar):  # eval: span
    ys, args = res
    args_bar = jax.tree_util.tree_map(jnp.zeros_like, args)
    for y in reversed(ys[:-1]):
        _, step_vjp = jax.vjp(lambda y_, *a: y_ + DT * field(y_, *a), y, *args)
        y_bar, *a_bar = step_vjp(y_bar)
        args_bar = jax.tree_util.tree_map(jnp.add, args_bar, tuple(a_bar))
    return (y_bar, *args_bar)  # eval: span


euler.defvjp(_euler_fwd, _euler_bwd)  # eval: span


def relax(y, rate, target):
    return -rate * (y - target)


def eval_fn(y0, rate, target):
    return euler(relax, y0, rate, target)


def eval_inputs():
    return (np.array([1.0, -0.5, 2.0], np.float32), np.array(0.8, np.float32),
            np.array([0.2, 0.1, -0.3], np.float32))


def eval_reference(y0, rate, target):
    y = np.asarray(y0, np.float64)
    r, t = np.asarray(rate, np.float64), np.asarray(target, np.float64)
    for _ in range(STEPS):
        y = y + DT * (-r * (y - t))
    return y
