"""silent-wrong hazard: a custom_jvp rule guards its tangent with where(x == 0, 0, ...), so the second derivative at 0 is lost.

Report: jax-ml/jax#40627 https://github.com/jax-ml/jax/issues/40627 (jnp.i0, whose derivative comes
from a custom rule, gave grad(grad(.)) = 0 at zero where the true second derivative is 1/2; first
derivatives were right, nothing raised). Here an unnormalised sinc has a rule whose tangent is a
constant 0 at x == 0: its first derivative there is right, its second derivative (-1/3) becomes 0.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/h6_jax40627_jvp_where_guard_drops_second_derivative", "family": "silent-wrong",
    "expect": "hazard", "source": "jax-ml/jax#40627", "url": "https://github.com/jax-ml/jax/issues/40627",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "extra": ["hessian"], "heldout": True,
}


@jax.custom_jvp
def sinc(x):
    safe = jnp.where(x == 0, 1.0, x)
    return jnp.where(x == 0, 1.0, jnp.sin(safe) / safe)


@sinc.defjvp
def _sinc_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    safe = jnp.where(x == 0, 1.0, x)
    slope = jnp.where(x == 0, 0.0, (safe * jnp.cos(safe) - jnp.sin(safe)) / safe ** 2)  # eval: span
    return sinc(x), slope * dx


def eval_fn(x):
    return jnp.sum(sinc(x))


def eval_inputs():
    return (np.array([0.0, 0.7, -1.2], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.asarray(np.sum(np.sinc(x / np.pi)))


def curvature(x):
    """The reporter's caller: the second derivative, as grad of grad, elementwise."""
    return jax.vmap(jax.grad(jax.grad(sinc)))(x)


def eval_custom():
    def second_derivative():
        x = jnp.asarray(eval_inputs()[0])
        xn = np.asarray(x, np.float64)
        safe = np.where(xn == 0, 1.0, xn)
        exact = np.where(xn == 0, -1.0 / 3.0,
                         ((2.0 - safe ** 2) * np.sin(safe) - 2.0 * safe * np.cos(safe)) / safe ** 3)
        return curvature(x), exact
    return {"second_derivative": second_derivative}
