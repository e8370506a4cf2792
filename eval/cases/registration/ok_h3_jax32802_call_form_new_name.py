"""registration look-alike: custom_vjp applied by call to an undecorated f under a new name; fwd calls the plain f.

Report: jax-ml/jax#32802 https://github.com/jax-ml/jax/issues/32802 (timing the autodiff tutorial's
f(x, y) = sin(x) * y with and without a custom_vjp attached as f_ = custom_vjp(f); f_.defvjp(f_fwd,
f_bwd), where f_fwd calls the undecorated f; the report is about speed, the code is correct).
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax import custom_vjp

EVAL = {
    "id": "registration/ok_h3_jax32802_call_form_new_name", "family": "registration",
    "expect": "ok", "source": "jax-ml/jax#32802", "url": "https://github.com/jax-ml/jax/issues/32802",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0, 1), "heldout": True,
}


def wave(a, b):
    return jnp.sin(a) * b


def wave_fwd(a, b):
    return wave(a, b), (jnp.cos(a), jnp.sin(a), b)


def wave_bwd(res, g):
    cos_a, sin_a, b = res
    return cos_a * g * b, sin_a * g


wave_ = custom_vjp(wave)  # eval: span
wave_.defvjp(wave_fwd, wave_bwd)  # eval: span


def eval_fn(a, b):
    return jax.jit(wave_)(a, b)


def eval_inputs():
    return (np.float32(0.4), np.float32(-1.3))


def eval_reference(a, b):
    return np.asarray(np.sin(float(a)) * float(b))
