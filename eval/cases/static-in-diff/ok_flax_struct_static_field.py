"""static-in-diff look-alike: a flax struct dataclass with a static field passed in a differentiable slot.

Report: jax-ml/jax#11646 https://github.com/jax-ml/jax/issues/11646 (the thread's advice: keep the
integer static). A `flax.struct.dataclass` marks the count `pytree_node=False`, so it is part of
the tree structure, never a leaf: `range(cfg.steps)` sees a Python int under `jit` too.
"""
import jax
import numpy as np
from flax import struct

EVAL = {
    "id": "static-in-diff/ok_flax_struct_static_field", "family": "static-in-diff", "expect": "ok",
    "source": "jax-ml/jax#11646", "url": "https://github.com/jax-ml/jax/issues/11646",
    "written_at": "2026-12-02", "written_at_commit": "115b9c4617e4f87b47d1ecf56abc6b2b19d66835",
    "argnums": (0,),
}


@struct.dataclass
class Schedule:
    rate: float
    steps: int = struct.field(pytree_node=False)


@jax.custom_vjp
def grow(x, cfg):
    y = x
    for _ in range(cfg.steps):
        y = y + cfg.rate * y
    return y


def grow_fwd(x, cfg):
    return grow(x, cfg), cfg


def grow_bwd(cfg, g):
    return g * (1.0 + cfg.rate) ** cfg.steps, jax.tree_util.tree_map(lambda v: 0.0 * v, cfg)


grow.defvjp(grow_fwd, grow_bwd)


def eval_fn(x):
    return grow(x, Schedule(rate=0.1, steps=3))


def eval_inputs():
    return (np.float32(2.0),)


def eval_reference(x):
    return np.float64(x) * 1.1 ** 3
