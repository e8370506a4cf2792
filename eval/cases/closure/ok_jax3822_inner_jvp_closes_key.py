"""closure look-alike (fixed report): a custom_jvp defined inside a sampler closes over the PRNG key parameter; only the explicit rate is differentiated.

Report: jax-ml/jax#3822 https://github.com/jax-ml/jax/issues/3822 ("Some tracer level is None when
vmap'ing a custom_jvp": `sample(seed)` defined a custom_jvp over `alpha` that drew
`jax.random.gamma(seed, alpha)` from the enclosing key; vmap over seeds crashed). Fixed by PR
#4008: closing over a key works, and a key is never differentiated.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ok_jax3822_inner_jvp_closes_key", "family": "closure", "expect": "ok",
    "source": "jax-ml/jax#3822", "url": "https://github.com/jax-ml/jax/issues/3822",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["jvp"],
}


def sample(rate, seed):
    @jax.custom_jvp
    def scaled_noise(r):  # eval: span
        return r * jax.random.uniform(seed, (3,)) + r ** 2

    @scaled_noise.defjvp
    def scaled_noise_jvp(primals, tangents):
        (r,), (r_dot,) = primals, tangents
        u = jax.random.uniform(seed, (3,))
        return r * u + r ** 2, (u + 2.0 * r) * r_dot

    return scaled_noise(rate)


def eval_fn(rate, seed):
    return sample(rate, seed)


def eval_inputs():
    return (np.float32(0.6), np.asarray(jax.random.PRNGKey(3)))


def eval_reference(rate, seed):
    u = np.asarray(jax.random.uniform(jnp.asarray(seed), (3,)), np.float64)
    r = np.float64(rate)
    return r * u + r ** 2
