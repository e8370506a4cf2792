"""structure look-alike: a custom_jvp that takes a dict and returns a dict; the rule indexes the tangent dict and returns a dict tangent.

Source: jax-ml/jax tests/custom_api_test.py, `CustomJVPTest.test_pytrees`
https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/tests/custom_api_test.py#L185-L199
(read at commit cec06d1): `f(x)` maps `{'a': ...}` to `{'b': ...}`; the rule unpacks one primal and
one tangent, both dicts, and returns `f(x), {'b': ...}` built from `g['a']`. Here polar to
Cartesian coordinates with a two-key dict on each side.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_jaxtest_custom_jvp_dict_in_dict_out", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax:tests/custom_api_test.py",
    "url": "https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/tests/custom_api_test.py#L185-L199",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0, 1), "extra": ["jacfwd", "jvp"], "heldout": True,
}


@jax.custom_jvp  # eval: span
def to_cartesian(p):  # eval: span
    return {"x": p["r"] * jnp.cos(p["theta"]), "y": p["r"] * jnp.sin(p["theta"])}


@to_cartesian.defjvp  # eval: span
def _to_cartesian_jvp(primals, tangents):  # eval: span
    p, = primals
    dp, = tangents
    c, s = jnp.cos(p["theta"]), jnp.sin(p["theta"])
    tangent = {"x": dp["r"] * c - p["r"] * s * dp["theta"],
               "y": dp["r"] * s + p["r"] * c * dp["theta"]}
    return to_cartesian(p), tangent  # eval: span


def eval_fn(r, theta):
    xy = to_cartesian({"r": r, "theta": theta})
    return xy["x"] + 2.0 * xy["y"]


def eval_inputs():
    return (np.array([1.0, 2.5, 0.4], np.float32), np.array([0.3, -1.1, 2.2], np.float32))


def eval_reference(r, theta):
    r, theta = np.asarray(r, np.float64), np.asarray(theta, np.float64)
    return r * np.cos(theta) + 2.0 * r * np.sin(theta)
