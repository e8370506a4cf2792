"""pmwd: N-body time integration with a reversible adjoint, a
`@partial(custom_vjp, nondiff_argnums=(4,))` whose nondiff argument is the last parameter and has
a default (`reverse=False`), so bwd takes it first: `nbody_bwd(reverse, res, cotangents)`. The
output is the pair `(ptcl, obsvbl)` with `obsvbl` None (nothing observed), the particles a
pytree with a `replace` method, and the configuration a pytree with no leaves (its fields are auxiliary data). fwd
saves only the final particles, the cosmology and the configuration (not the trajectory); bwd
integrates backwards from the final state, rebuilding each earlier state by running the
symplectic steps in reverse and pulling the cotangents through each step, and returns
`ptcl_cot, obsvbl_cot, cosmo_cot, None`.

Adapted from eelregit/pmwd:pmwd/nbody.py:215 (`nbody`, `nbody_fwd`, `nbody_bwd`; the mesh
gravity is reduced to a pendulum-like force `-Omega_m * a * sin(disp)`, the growth-function time
factors to plain differences of the scale factor, and the hand-written `drift_adj`/`kick_adj`
to reverse steps plus `jax.vjp` of each forward step).
"""
import functools
from functools import partial
from typing import NamedTuple, Tuple
import jax
import jax.numpy as jnp
import numpy as np
from jax import custom_vjp, jit, vjp
from jax.tree_util import tree_map
EVAL = {'id': 'mutation/scan_caller/pmwd_nbody', 'family': 'mutation', 'expect': 'unknown', 'library': 'pmwd', 'source': 'eelregit/pmwd:pmwd/nbody.py:215', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'scan_caller', 'base': 'pmwd_nbody'}

class Particles(NamedTuple):
    disp: jnp.ndarray
    vel: jnp.ndarray
    acc: jnp.ndarray

    def replace(self, **changes):
        return self._replace(**changes)

class Cosmology(NamedTuple):
    Omega_m: jnp.ndarray

@jax.tree_util.register_pytree_node_class
class Configuration:
    """Static settings: a pytree with no leaves (every field is auxiliary data)."""

    def __init__(self, a_nbody: Tuple[float, ...]=(0.1, 0.4, 0.7, 1.0), symp_splits: Tuple[Tuple[float, float], ...]=((0, 0.5), (1, 0.5))):
        self.a_nbody = a_nbody
        self.symp_splits = symp_splits

    def tree_flatten(self):
        return ((), (self.a_nbody, self.symp_splits))

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*aux)

    def __eq__(self, other):
        return isinstance(other, Configuration) and (self.a_nbody, self.symp_splits) == (other.a_nbody, other.symp_splits)

    def __hash__(self):
        return hash((self.a_nbody, self.symp_splits))

def gravity(a, ptcl, cosmo, conf):
    return -cosmo.Omega_m * a * jnp.sin(ptcl.disp)

def force(a, ptcl, cosmo, conf):
    return ptcl.replace(acc=gravity(a, ptcl, cosmo, conf))

def drift(a_prev, a_next, ptcl):
    return ptcl.replace(disp=ptcl.disp + ptcl.vel * (a_next - a_prev))

def kick(a_prev, a_next, ptcl):
    return ptcl.replace(vel=ptcl.vel + ptcl.acc * (a_next - a_prev))

def integrate(a_prev, a_next, ptcl, cosmo, conf):
    """One symplectic step (kick-drift-kick for the default splits)."""
    D = K = 0
    a_disp = a_vel = a_prev
    for d, k in conf.symp_splits:
        if d != 0:
            D += d
            a_disp_next = a_prev * (1 - D) + a_next * D
            ptcl = drift(a_disp, a_disp_next, ptcl)
            a_disp = a_disp_next
            ptcl = force(a_disp, ptcl, cosmo, conf)
        if k != 0:
            K += k
            a_vel_next = a_prev * (1 - K) + a_next * K
            ptcl = kick(a_vel, a_vel_next, ptcl)
            a_vel = a_vel_next
    return ptcl

def integrate_back(a_prev, a_next, ptcl, cosmo, conf):
    """The step from `a_prev` to `a_next` undone: the state at `a_prev` from the one at `a_next`."""
    D = K = 0
    a_disp = a_vel = a_next
    for d, k in reversed(conf.symp_splits):
        if k != 0:
            K += k
            a_vel_next = a_next * (1 - K) + a_prev * K
            ptcl = kick(a_vel, a_vel_next, ptcl)
            a_vel = a_vel_next
        if d != 0:
            D += d
            a_disp_next = a_next * (1 - D) + a_prev * D
            ptcl = drift(a_disp, a_disp_next, ptcl)
            a_disp = a_disp_next
            ptcl = force(a_disp, ptcl, cosmo, conf)
    return ptcl

@jit
def nbody_init(a, ptcl, obsvbl, cosmo, conf):
    return (force(a, ptcl, cosmo, conf), obsvbl)

@jit
def nbody_step(a_prev, a_next, ptcl, obsvbl, cosmo, conf):
    return (integrate(a_prev, a_next, ptcl, cosmo, conf), obsvbl)

@partial(custom_vjp, nondiff_argnums=(4,))
def nbody(ptcl, obsvbl, cosmo, conf, reverse=False):
    """N-body time integration."""
    a_nbody = conf.a_nbody[::-1] if reverse else conf.a_nbody
    ptcl, obsvbl = nbody_init(a_nbody[0], ptcl, obsvbl, cosmo, conf)
    for a_prev, a_next in zip(a_nbody[:-1], a_nbody[1:]):
        ptcl, obsvbl = nbody_step(a_prev, a_next, ptcl, obsvbl, cosmo, conf)
    return (ptcl, obsvbl)

def nbody_adj(ptcl, ptcl_cot, obsvbl_cot, cosmo, conf, reverse=False):
    """Backward integration with the adjoint equation: rebuild each state, pull the cotangents."""
    a_nbody = conf.a_nbody[::-1] if reverse else conf.a_nbody
    cosmo_cot = tree_map(jnp.zeros_like, cosmo)
    for a_prev, a_next in zip(a_nbody[-2::-1], a_nbody[:0:-1]):
        ptcl = integrate_back(a_prev, a_next, ptcl, cosmo, conf)
        _, step_vjp = vjp(lambda p, c: integrate(a_prev, a_next, p, c, conf), ptcl, cosmo)
        ptcl_cot, cosmo_cot_step = step_vjp(ptcl_cot)
        cosmo_cot = tree_map(jnp.add, cosmo_cot, cosmo_cot_step)
    _, init_vjp = vjp(lambda p, c: force(a_nbody[0], p, c, conf), ptcl, cosmo)
    ptcl_cot, cosmo_cot_init = init_vjp(ptcl_cot)
    cosmo_cot = tree_map(jnp.add, cosmo_cot, cosmo_cot_init)
    return (ptcl, ptcl_cot, cosmo_cot)

def nbody_fwd(ptcl, obsvbl, cosmo, conf, reverse):
    ptcl, obsvbl = nbody(ptcl, obsvbl, cosmo, conf, reverse)
    return ((ptcl, obsvbl), (ptcl, cosmo, conf))

def nbody_bwd(reverse, res, cotangents):
    ptcl, cosmo, conf = res
    ptcl_cot, obsvbl_cot = cotangents
    ptcl, ptcl_cot, cosmo_cot = nbody_adj(ptcl, ptcl_cot, obsvbl_cot, cosmo, conf, reverse=reverse)
    return (ptcl_cot, obsvbl_cot, cosmo_cot, None)
nbody.defvjp(nbody_fwd, nbody_bwd)

def eval_fn(disp, vel, omega_m):
    ptcl = Particles(disp=disp, vel=vel, acc=jnp.zeros_like(disp))
    ptcl, obsvbl = nbody(ptcl, None, Cosmology(Omega_m=omega_m), Configuration())
    return jnp.stack([ptcl.disp, 0.5 * ptcl.vel])

def eval_inputs():
    return (np.array([0.3, -0.9, 1.4, 0.05], np.float32), np.array([0.6, 0.2, -0.7, 1.1], np.float32), np.float32(1.7))

def eval_reference(disp, vel, omega_m):
    x = np.asarray(disp, np.float64)
    v = np.asarray(vel, np.float64)
    om = np.float64(omega_m)
    a_nbody = Configuration().a_nbody
    acc = -om * a_nbody[0] * np.sin(x)
    for a_prev, a_next in zip(a_nbody[:-1], a_nbody[1:]):
        a_half = 0.5 * (a_prev + a_next)
        v = v + acc * (a_half - a_prev)
        x = x + v * (a_next - a_prev)
        acc = -om * a_next * np.sin(x)
        v = v + acc * (a_next - a_half)
    return np.stack([x, 0.5 * v])

def scan_usage(*args):

    def loss(*a):

        def body(carry, _):
            return (carry + jnp.sum(eval_fn(*a)), None)
        total, _ = jax.lax.scan(body, jnp.float32(0.0), None, length=2)
        return total
    return jax.grad(loss, argnums=(0, 1, 2))(*args)

def eval_custom():
    args = tuple(eval_inputs())
    return {'scan_usage': lambda: (scan_usage(*args), tuple((2.0 * g for g in jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums=(0, 1, 2))(*args))))}
