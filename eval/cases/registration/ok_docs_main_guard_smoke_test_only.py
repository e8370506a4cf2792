"""registration look-alike: the registration stays at module level; only the demo is under `__main__`.

Source: the JAX docs' custom_vjp walkthrough https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html
(`f.defvjp(f_fwd, f_bwd)` right after the rules). The smoke test under the guard does not hold
the registration, so importing the module registers the rules.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "registration/ok_docs_main_guard_smoke_test_only", "family": "registration", "expect": "ok",
    "source": "jax docs: Custom derivative rules", "url": "https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-07", "written_at_commit": "95017652b41e6b2ff5624389643a0f4b83835c4e",
    "argnums": (0,),
}


@jax.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def eval_fn(x):
    return clip_gradient(-1.0, 1.0, jnp.sin(x))


if __name__ == "__main__":
    print(jax.grad(lambda x: eval_fn(x).sum())(jnp.ones(3)))


def eval_inputs():
    return (np.array([0.1, 0.5, 2.0], np.float32),)


def eval_reference(x):
    return np.sin(np.asarray(x, np.float64))
