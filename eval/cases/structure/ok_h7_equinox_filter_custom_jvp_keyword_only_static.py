"""structure look-alike: an eqx.filter_custom_jvp with keyword-only static arguments; the rule takes them as keywords and ignores the None tangents of a bool and an int.

Source: patrick-kidger/equinox equinox/_errors.py
https://github.com/patrick-kidger/equinox/blob/main/equinox/_errors.py (`_error(x, pred, index, *,
msgs, on_error, stack)` is an `eqx.filter_custom_jvp`; its rule is `_error_jvp(primals, tangents, *,
msgs, on_error, stack)`, unpacks `x, pred, index = primals` and `tx, _, _ = tangents`, and returns
`_error(...), tx`: keyword arguments are never differentiated, and the bool and int arguments get
None tangents). Here a check that poisons its input with NaN when a predicate holds.
"""
import equinox as eqx
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_equinox_filter_custom_jvp_keyword_only_static", "family": "structure",
    "expect": "ok", "source": "patrick-kidger/equinox equinox/_errors.py",
    "url": "https://github.com/patrick-kidger/equinox/blob/main/equinox/_errors.py",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0,), "extra": ["jvp"], "heldout": True,
}


@eqx.filter_custom_jvp  # eval: span
def checked(x, pred, index, *, msgs, on_error):
    if on_error == "nan":
        return jnp.where(jnp.any(pred), jnp.nan, x)
    return x


@checked.def_jvp  # eval: span
def _checked_jvp(primals, tangents, *, msgs, on_error):  # eval: span
    x, pred, index = primals  # eval: span
    tx, _, _ = tangents  # eval: span
    return checked(x, pred, index, msgs=msgs, on_error=on_error), tx  # eval: span


def eval_fn(x):
    safe = checked(x, x < -100.0, jnp.int32(0), msgs=("input below -100",), on_error="nan")
    return safe * jnp.cos(x)


def eval_inputs():
    return (np.array([0.4, -1.3, 2.2], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return x * np.cos(x)
