"""closure hazard, caller in another module: a layer function unpacks its params dict and defines a custom_vjp that closes over the entries.

Report: jax-ml/jax#2520 https://github.com/jax-ml/jax/issues/2520 (differentiating with respect to
values a custom_vjp closes over; PR #4008 turned the failure into "Detected differentiation of a
custom_vjp function with respect to a closed-over value ... Try passing the closed-over value into
the custom_vjp function as an argument"). Here the library function `dense(params, x)` reads
`params["w"]`/`params["b"]` into locals that its inner custom_vjp uses; the training script
(`_jax2520_dict_params_driver.py`) imports it by name and takes gradients with respect to the params.
"""
import jax
import jax.numpy as jnp

EVAL = {
    "id": "closure/jax2520_dict_params_inner_vjp_xmod", "family": "closure", "expect": "hazard",
    "source": "jax-ml/jax#2520", "url": "https://github.com/jax-ml/jax/issues/2520",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0, 1), "extra": ["grad_jit"], "driver": "_jax2520_dict_params_driver.py",
}


def dense(params, x):
    w = params["w"]
    b = params["b"]

    @jax.custom_vjp  # eval: span
    def affine_tanh(v):  # eval: span
        return jnp.tanh(w * v + b)  # eval: span

    def affine_tanh_fwd(v):
        y = jnp.tanh(w * v + b)  # eval: span
        return y, y

    def affine_tanh_bwd(y, g):
        return ((1.0 - y ** 2) * w * g,)  # eval: span

    affine_tanh.defvjp(affine_tanh_fwd, affine_tanh_bwd)
    return affine_tanh(x)
