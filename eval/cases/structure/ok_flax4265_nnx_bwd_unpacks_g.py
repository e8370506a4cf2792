"""structure look-alike: an `nnx.custom_vjp` bwd that unpacks `g` as `(input_updates_g, out_g)`.

Report: google/flax#4265 https://github.com/google/flax/issues/4265 (a user asked how to write
nnx's custom_vjp; the maintainer's answer, and later reporters in google/flax#4306, point out that
nnx's default mode passes bwd `g = (input_updates_g, out_g)` and wants one State per Module,
unlike JAX's `bwd(res, g)`). JAX's protocol read onto this code would see a wrong cotangent;
on flax it is correct. Written after vjplint learnt nnx's protocol (`written_at_commit`): a
false-positive check, not a recall claim.
"""
import jax.numpy as jnp
import numpy as np
from flax import nnx

EVAL = {
    "id": "structure/ok_flax4265_nnx_bwd_unpacks_g", "family": "structure", "expect": "ok",
    "source": "google/flax#4265", "url": "https://github.com/google/flax/issues/4265",
    "written_at": "2026-12-01", "written_at_commit": "7a9efd5c9f59ee3d58e5e2e04c528f95efbc1f30",
    "argnums": (0, 1),
}


class Pair(nnx.Module):
    def __init__(self, a, b):
        self.a = nnx.Param(a)
        self.b = nnx.Param(b)


@nnx.custom_vjp
def wave(m):
    return jnp.sin(m.a[...]) * m.b[...]


def wave_fwd(m):
    return wave(m), (jnp.cos(m.a[...]), jnp.sin(m.a[...]), m.b[...])


def wave_bwd(res, g):
    cos_a, sin_a, b = res
    (m_g,), out_g = g
    m_g["a"][...] = cos_a * out_g * b
    m_g["b"][...] = sin_a * out_g
    return (m_g,)


wave.defvjp(wave_fwd, wave_bwd)


def eval_fn(a, b):
    return wave(Pair(a, b))


def eval_inputs():
    return (np.float32(1.0), np.float32(2.0))


def eval_reference(a, b):
    return np.sin(np.float64(a)) * np.float64(b)
