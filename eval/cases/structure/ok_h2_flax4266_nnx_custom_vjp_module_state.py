"""structure look-alike: flax nnx.custom_vjp on a Module; bwd unpacks (input updates, output cotangent).

Report: google/flax#4266 https://github.com/google/flax/pull/4266 (the nnx.custom_vjp API entry:
unlike jax.custom_vjp, the nnx bwd receives a pair whose second item is the output cotangent, and
returns one nnx.State per Module argument). The gradient with respect to the Module's parameters
is taken with nnx.grad, as in the docs.
"""
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

EVAL = {
    "id": "structure/ok_h2_flax4266_nnx_custom_vjp_module_state", "family": "structure",
    "expect": "ok", "source": "google/flax#4266", "url": "https://github.com/google/flax/pull/4266",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0, 1), "heldout": True,
}


class Wave(nnx.Module):
    def __init__(self, freq, amp):
        self.freq = nnx.Param(freq)
        self.amp = nnx.Param(amp)


@nnx.custom_vjp
def wave(m: Wave):
    return jnp.sin(m.freq[...]) * m.amp[...]


def _wave_fwd(m: Wave):
    return wave(m), (jnp.cos(m.freq[...]), jnp.sin(m.freq[...]), m)


def _wave_bwd(res, g):
    _, out_g = g  # eval: span
    cos_f, sin_f, m = res
    return (nnx.State(dict(freq=cos_f * out_g * m.amp[...], amp=sin_f * out_g)),)


wave.defvjp(_wave_fwd, _wave_bwd)


def eval_fn(freq, amp):
    return wave(Wave(freq, amp))


def eval_inputs():
    return (np.array([0.3, 1.2], np.float32), np.array([2.0, -1.0], np.float32))


def eval_reference(freq, amp):
    return np.sin(np.asarray(freq, np.float64)) * np.asarray(amp, np.float64)


def eval_custom():
    freq, amp = (np.float32(0.7), np.float32(1.5))

    def nnx_grads():
        grads = nnx.grad(wave)(Wave(jnp.asarray(freq), jnp.asarray(amp)))
        got = (grads["freq"][...], grads["amp"][...])
        return got, (np.cos(0.7) * 1.5, np.sin(0.7))

    return {"nnx_grad": nnx_grads}
