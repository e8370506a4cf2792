"""structure look-alike: a one-argument custom_jvp registered with defjvps(lambda g, ans, x: ...), the rule computing the derivative from the primal output.

Source: jax-ml/jax jax/_src/nn/functions.py, `relu.defjvps` and `log1mexp.defjvps`
https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/_src/nn/functions.py#L1512-L1533
(read at commit cec06d1): JAX's own activations register a single tangent rule with
`defjvps(lambda g, ans, x: ...)`, i.e. (tangent, primal output, primal input). Here softplus, whose
derivative sigmoid(x) equals 1 - exp(-softplus(x)) and so is read off the output `ans`.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_jaxnn_defjvps_rule_reads_primal_output", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax:jax/_src/nn/functions.py",
    "url": "https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/_src/nn/functions.py#L1512-L1533",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0,), "extra": ["hessian", "jvp"], "heldout": True,
}


@jax.custom_jvp  # eval: span
def softplus(x):  # eval: span
    return jnp.logaddexp(x, 0.0)


softplus.defjvps(lambda g, ans, x: -jnp.expm1(-ans) * g)  # eval: span


def eval_fn(x):
    return softplus(x)


def eval_inputs():
    return (np.array([-2.0, -0.1, 0.5, 3.0], np.float32),)


def eval_reference(x):
    return np.logaddexp(np.asarray(x, np.float64), 0.0)
