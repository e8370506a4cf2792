"""multinerf (Mip-NeRF 360 / Ref-NeRF / RawNeRF code): `safe_exp(x)`, a bare `@jax.custom_jvp`
that clamps its input at 88 before `jnp.exp` (finite output), registered with the decorator
`@safe_exp.defjvp` on `safe_exp_jvp(primals, tangents)`, which unpacks one-element tuples with a
trailing comma (`x, = primals`), calls the custom function again and returns `exp_x * x_dot` as the
tangent, so the gradient stays large where the input is large.

Adapted from google-research/multinerf:internal/math.py:41 (commit 5b4d4f6). Changed: nothing in
the definition. The caller is volume rendering's alpha compositing (as multinerf's
`render.compute_alpha_weights`): per-interval densities and ray distances give alphas
`1 - safe_exp(-density * delta)` and transmittances `safe_exp(-cumsum)`, whose product are the
weights; the inputs stay well below the clamp, where the rule is the true derivative.
"""
import jax
import jax.numpy as jnp
import numpy as np
jax.config.update('jax_enable_x64', True)
EVAL = {'id': 'mutation/caller_x64_inputs/multinerf_safe_exp', 'family': 'mutation', 'expect': 'unknown', 'library': 'multinerf', 'source': 'google-research/multinerf:internal/math.py:41', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'caller_x64_inputs', 'base': 'multinerf_safe_exp'}

@jax.custom_jvp
def safe_exp(x):
    """jnp.exp() but with finite output and gradients for large inputs."""
    return jnp.exp(jnp.minimum(x, 88.0))

@safe_exp.defjvp
def safe_exp_jvp(primals, tangents):
    """Override safe_exp()'s gradient so that it's large when inputs are large."""
    x, = primals
    x_dot, = tangents
    exp_x = safe_exp(x)
    exp_x_dot = exp_x * x_dot
    return (exp_x, exp_x_dot)

def compute_alpha_weights(density, tdist):
    """Alpha-compositing weights of the intervals between consecutive distances."""
    t_delta = tdist[..., 1:] - tdist[..., :-1]
    density_delta = density * t_delta
    alpha = 1 - safe_exp(-density_delta)
    trans = safe_exp(-jnp.concatenate([jnp.zeros_like(density_delta[..., :1]), jnp.cumsum(density_delta[..., :-1], axis=-1)], axis=-1))
    return alpha * trans

def eval_fn(density, tdist):
    density = jax.tree_util.tree_map(lambda _v: jnp.asarray(_v, jnp.float64), density)
    tdist = jax.tree_util.tree_map(lambda _v: jnp.asarray(_v, jnp.float64), tdist)
    return compute_alpha_weights(density, tdist)

def eval_inputs():
    return (np.array([0.5, 1.2, 2.0, 0.8, 0.3], np.float32), np.array([0.0, 0.4, 0.7, 1.1, 1.6, 2.0], np.float32))

def eval_reference(density, tdist):
    d = np.asarray(density, np.float64)
    t = np.asarray(tdist, np.float64)
    dd = d * (t[..., 1:] - t[..., :-1])
    alpha = 1 - np.exp(-dd)
    trans = np.exp(-np.concatenate([np.zeros_like(dd[..., :1]), np.cumsum(dd[..., :-1], axis=-1)], axis=-1))
    return alpha * trans
