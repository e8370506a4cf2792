"""structure hazard: defjvps rules for a product where one primal is an integer.

Report: jax-ml/jax#7098 https://github.com/jax-ml/jax/issues/7098 ("Reverse-mode autodiff of
custom_vjp fails"; the repro is a custom_jvp with defjvps and `jax.vjp(f, 1, 1.0)`), closed.
Written as a look-alike of a fixed report, but the oracle shows it still fails in JAX 0.10.2: the
rule for the integer argument receives a float0 tangent and multiplies it.
"""
import jax
import numpy as np

EVAL = {
    "id": "structure/jax7098_defjvps_int_primal", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#7098", "url": "https://github.com/jax-ml/jax/issues/7098",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (1,),
}


@jax.custom_jvp
def product(a, b):
    return a * b


product.defjvps(lambda t, _, a, b: product(t, b), lambda t, _, a, b: product(a, t))  # eval: span


def eval_fn(a, b):
    return product(a, b)


def eval_inputs():
    return (1, np.float32(1.5))


def eval_reference(a, b):
    return np.float64(a) * np.float64(b)


def eval_custom():
    def vjp_with_int_primal():
        out, pullback = jax.vjp(product, 1, 1.0)
        return pullback(out)[1], np.float64(1.0)

    return {"vjp_int": vjp_with_int_primal}
