"""structure look-alike: a custom_jvp whose single argument is a dict pytree; the rule dots the tree with its tangent tree.

Source: patrick-kidger/lineax lineax/_norm.py
https://github.com/patrick-kidger/lineax/blob/main/lineax/_norm.py (`_two_norm`: `@jax.custom_jvp`
over one PyTree argument; the rule unpacks `(x,) = x` and `(tx,) = tx`, divides the tree by the norm
(guarded where the norm is 0 or inf), takes the tree dot product with the tangent tree and returns a
scalar tangent). Here the norm of a layer's weight and bias together.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_lineax_two_norm_pytree_custom_jvp", "family": "structure",
    "expect": "ok", "source": "patrick-kidger/lineax lineax/_norm.py",
    "url": "https://github.com/patrick-kidger/lineax/blob/main/lineax/_norm.py",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0, 1), "extra": ["jvp"], "heldout": True,
}


def _tree_dot(a, b):
    return sum(jnp.vdot(u, v) for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)))


@jax.custom_jvp  # eval: span
def tree_two_norm(tree):
    return jnp.sqrt(_tree_dot(tree, tree))


@tree_two_norm.defjvp  # eval: span
def _tree_two_norm_jvp(primals, tangents):  # eval: span
    (tree,) = primals  # eval: span
    (t_tree,) = tangents  # eval: span
    out = tree_two_norm(tree)
    degenerate = (out == 0) | jnp.isinf(out)
    denom = jnp.where(degenerate, 1.0, out)
    unit = jax.tree_util.tree_map(lambda leaf: leaf / denom, tree)
    return out, jnp.where(degenerate, 0.0, _tree_dot(unit, t_tree))  # eval: span


def eval_fn(w, b):
    return tree_two_norm({"kernel": w, "bias": b})


def eval_inputs():
    return (np.array([[0.5, -1.0], [2.0, 0.3]], np.float32), np.array([0.7, -0.2], np.float32))


def eval_reference(w, b):
    w, b = np.asarray(w, np.float64), np.asarray(b, np.float64)
    return np.sqrt(np.sum(w ** 2) + np.sum(b ** 2))
