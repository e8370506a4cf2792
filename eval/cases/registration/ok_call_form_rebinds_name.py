"""registration look-alike: the call form rebinds the function's own name, then registers on it.

Source: jax-ml/jax#2026 https://github.com/jax-ml/jax/pull/2026 (`f = custom_vjp(f)` then
`f.defvjp(f_fwd, f_bwd)`). After the rebinding, `softsign` is the custom_vjp, so `defvjp`
registers the rules on it.
"""
import jax
import numpy as np

EVAL = {
    "id": "registration/ok_call_form_rebinds_name", "family": "registration", "expect": "ok",
    "source": "jax-ml/jax#2026", "url": "https://github.com/jax-ml/jax/pull/2026",
    "written_at": "2026-12-02", "written_at_commit": "115b9c4617e4f87b47d1ecf56abc6b2b19d66835",
    "argnums": (0,),
}


def softsign(x):
    return x / (1.0 + abs(x))


softsign = jax.custom_vjp(softsign)


def softsign_fwd(x):
    d = 1.0 + abs(x)
    return x / d, d


def softsign_bwd(d, g):
    return (g / (d * d),)


softsign.defvjp(softsign_fwd, softsign_bwd)


def eval_fn(x):
    return softsign(x)


def eval_inputs():
    return (np.float32(0.5),)


def eval_reference(x):
    x = np.float64(x)
    return x / (1.0 + abs(x))
