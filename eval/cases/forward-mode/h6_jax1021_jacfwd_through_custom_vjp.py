"""forward-mode hazard: jacfwd of a loss whose inner op has only a reverse-mode custom rule.

Report: jax-ml/jax#1021 https://github.com/jax-ml/jax/issues/1021 (jacfwd of a function with a custom
reverse-mode rule, then written with custom_transforms, failed while jacrev and grad worked; the
custom_vjp that replaced it still cannot be pushed forward). Here a log-cosh loss with a custom_vjp
for stability is differentiated with jacfwd, as the reporter did to compare with jacrev.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/h6_jax1021_jacfwd_through_custom_vjp", "family": "forward-mode",
    "expect": "hazard", "source": "jax-ml/jax#1021", "url": "https://github.com/jax-ml/jax/issues/1021",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "extra": ["jacfwd"], "heldout": True,
}


@jax.custom_vjp  # eval: span
def logcosh(r):
    a = jnp.abs(r)
    return a + jnp.log1p(jnp.exp(-2.0 * a)) - jnp.log(2.0)


def _logcosh_fwd(r):
    return logcosh(r), jnp.tanh(r)


def _logcosh_bwd(t, g):
    return (t * g,)


logcosh.defvjp(_logcosh_fwd, _logcosh_bwd)


def eval_fn(r):
    return jnp.sum(logcosh(r))


def eval_inputs():
    return (np.array([0.3, -2.0, 5.0], np.float32),)


def eval_reference(r):
    return np.asarray(np.sum(np.log(np.cosh(np.asarray(r, np.float64)))))



def compare_modes(r):
    """The reporter's caller: the same derivative by forward and by reverse mode."""
    return jax.jacfwd(eval_fn)(r), jax.jacrev(eval_fn)(r)  # eval: span


def eval_custom():
    def both_modes():
        r = jnp.asarray(eval_inputs()[0])
        fwd, rev = compare_modes(r)
        exp = np.tanh(np.asarray(r, np.float64))
        return (fwd, rev), (exp, exp)
    return {"compare_modes": both_modes}
