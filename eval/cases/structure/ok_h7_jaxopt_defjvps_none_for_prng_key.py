"""structure look-alike: a custom_jvp built in a factory takes (inputs, rng) and registers defjvps(rule, None) for the key.

Source: google/jaxopt jaxopt/_src/perturbations.py
https://github.com/google/jaxopt/blob/main/jaxopt/_src/perturbations.py (`make_perturbed_argmax`:
inside the factory, `@jax.custom_jvp def forward_pert(inputs, rng)` averages an argmax over noisy
copies of the input; the rule `pert_jvp(tangent, _, inputs, rng)` redraws the same noise and returns
a score-function estimate shaped like the input, registered with `forward_pert.defjvps(pert_jvp,
None)`: no rule for the PRNG key). Here Gaussian noise and a one-hot argmax, as in jaxopt.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_jaxopt_defjvps_none_for_prng_key", "family": "structure",
    "expect": "ok", "source": "google/jaxopt jaxopt/_src/perturbations.py",
    "url": "https://github.com/google/jaxopt/blob/main/jaxopt/_src/perturbations.py",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0,), "heldout": True,
}

NUM_SAMPLES, SIGMA = 64, 0.5
WEIGHTS = np.array([1.0, -2.0, 0.5, 3.0], np.float32)


def one_hot_argmax(v):
    return jax.nn.one_hot(jnp.argmax(v), v.shape[-1])


def make_perturbed(argmax_fun, num_samples=NUM_SAMPLES, sigma=SIGMA):
    @jax.custom_jvp  # eval: span
    def perturbed(inputs, rng):
        noise = jax.random.normal(rng, (num_samples,) + inputs.shape)
        return jnp.mean(jax.vmap(argmax_fun)(inputs + sigma * noise), axis=0)

    def perturbed_jvp(tangent, _, inputs, rng):  # eval: span
        noise = jax.random.normal(rng, (num_samples,) + inputs.shape)
        outs = jax.vmap(argmax_fun)(inputs + sigma * noise)
        est = jnp.einsum("nd,ne,e->d", outs.reshape(num_samples, -1), noise.reshape(num_samples, -1),
                         tangent.reshape(-1)) / (num_samples * sigma)
        return est.reshape(inputs.shape)  # eval: span

    perturbed.defjvps(perturbed_jvp, None)  # eval: span
    return perturbed


soft_argmax = make_perturbed(one_hot_argmax)


def eval_fn(x, rng):
    return soft_argmax(x, rng) * WEIGHTS


def eval_inputs():
    return (np.array([0.2, 0.5, -0.1, 0.4], np.float32), jax.random.PRNGKey(3))


def _noise(x, rng):
    return np.asarray(jax.random.normal(rng, (NUM_SAMPLES,) + np.shape(x)), np.float64)


def _outs(x, rng):
    z = np.asarray(x, np.float64) + SIGMA * _noise(x, rng)
    return np.eye(z.shape[-1])[np.argmax(z, axis=-1)]


def eval_reference(x, rng):
    return _outs(x, rng).mean(axis=0) * WEIGHTS


def eval_grad_reference(x, rng):
    # d/dx of sum(w * E[argmax]) by the same score-function estimator the rule is meant to compute
    per_sample = _outs(x, rng) @ WEIGHTS.astype(np.float64)
    return (per_sample @ _noise(x, rng) / (NUM_SAMPLES * SIGMA),)
