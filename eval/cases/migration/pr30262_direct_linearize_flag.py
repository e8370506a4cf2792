"""migration case: code that switches direct linearize off to keep the old autodiff path.

Source: jax-ml/jax#30262 https://github.com/jax-ml/jax/pull/30262 (direct linearize made the
default, JAX 0.7.0) and the migration guide
https://jax.readthedocs.io/en/latest/direct_linearize_migration.html (opt-out via
`jax_use_direct_linearize`, planned for removal). In JAX 0.10.2 the flag still exists but is dead:
setting it changes nothing, which the oracle confirms by running the case with and without the
statement (label `no-op`: the hazard is only the opt-out the user believes in, and future removal).
"""
import jax
import numpy as np

jax.config.update("jax_use_direct_linearize", False)  # eval: span

EVAL = {
    "id": "migration/pr30262_direct_linearize_flag", "family": "migration", "expect": "hazard",
    "source": "jax-ml/jax#30262", "url": "https://github.com/jax-ml/jax/pull/30262",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
    "claim": "no-op",  # the oracle also runs it without the flag and compares the grad jaxprs
}


@jax.custom_vjp
def gelu_like(x):
    return x * jax.nn.sigmoid(1.702 * x)


def gelu_like_fwd(x):
    return gelu_like(x), x


def gelu_like_bwd(x, g):
    s = jax.nn.sigmoid(1.702 * x)
    return (g * (s + 1.702 * x * s * (1 - s)),)


gelu_like.defvjp(gelu_like_fwd, gelu_like_bwd)


def eval_fn(x):
    return gelu_like(x)


def eval_inputs():
    return (np.array([-0.5, 1.0], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return x / (1 + np.exp(-1.702 * x))
