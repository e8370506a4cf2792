"""structure look-alike: a symbolic_zeros=True custom_jvp identity on a pair, under jit, differentiated by jacfwd(jacrev(.)).

Report: jax-ml/jax#31448 https://github.com/jax-ml/jax/issues/31448 (jacfwd of jacrev of a jitted
custom_jvp with symbolic_zeros=True crashed in JAX's dead-code elimination; fixed by #31496). Here a
pass-through with its own rule, fed a pair of which only one half depends on the input.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h6_jax31448_symbolic_zeros_jacfwd_jacrev_jit", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax#31448", "url": "https://github.com/jax-ml/jax/issues/31448",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "heldout": True,
}


@jax.custom_jvp
def passthrough(pair):
    return pair


def _passthrough_jvp(primals, tangents):
    (pair,), (tpair,) = primals, tangents
    return passthrough(pair), tpair


passthrough.defjvp(_passthrough_jvp, symbolic_zeros=True)  # eval: span


def eval_fn(x):
    a, b = jax.jit(passthrough)((x, jnp.float32(3.0)))
    return jnp.sum(jnp.sin(a) * b)


def eval_inputs():
    return (np.array([0.2, -0.8], np.float32),)


def eval_reference(x):
    return np.asarray(np.sum(np.sin(np.asarray(x, np.float64)) * 3.0))


def eval_custom():
    def hessian_fwd_rev():
        x = jnp.asarray(eval_inputs()[0])
        got = jax.jacfwd(jax.jacrev(eval_fn))(x)  # eval: span
        return got, np.diag(-3.0 * np.sin(np.asarray(x, np.float64)))
    return {"jacfwd_jacrev": hessian_fwd_rev}
