"""Varmint (Princeton LIPS): the differentiable Levenberg-Marquardt solver of
`varmint/solver/optimizers/levmar.py`. `optfun(fun, jacfun, cond_fun, body_fun, factor, x0,
args)` is made with `@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2, 3, 4,))` -- five
nondiff arguments: the residual function, its Jacobian function, the loop's condition and body
(closures made by the factory) and a float -- and runs the solver (`_optfun`: a
`lax.while_loop` over an `LMState` namedtuple that carries `args` itself), returning the
solution only. The rule, registered by the decorator `@optfun.defjvp` on
`optfun_jvp(fun, jacfun, cond_fun, body_fun, factor, primals, tangents)`, unpacks `x0, args =
primals` and `_, arg_tans = tangents` (the initial guess gets no tangent), re-runs the solver, and
by the implicit function theorem returns `x_star, -solve(Jx, jvp(partial(fun, x_star), (args,),
(arg_tans,))[1])` with `Jx` the Jacobian kept in the solver's final state. The factory
`get_lmfunc(fun, maxiters, xtol, ftol, factor)` builds `jacfun = jax.jacfwd(fun)` and the two
loop closures and returns `partial(optfun, fun, jacfun, cond_fun, body_fun, factor)`: the
caller holds a `functools.partial` of the custom function with the nondiff arguments bound and
calls it as `lmfunc(x0, args)`. Here `args` is a *dict* (`{"ctrl": ..., "target": ...}`): the
caller inverts a quadratic Bezier patch -- the parametric coordinates (u, v) at which the patch
defined by a 3x3 control net reaches a target point (isogeometric point inversion) -- and
differentiates them with respect to the control points and the target.

Adapted from PrincetonLIPS/Varmint:varmint/solver/optimizers/levmar.py:125 (`optfun` and
`optfun_jvp`, :143; commit 0031b57), with `_optfun` (:79), `LMState` (:73) and `get_lmfunc`
(:165) of the same file. Changed: Moré's trust-region parameter search (`lm_param`, an inner
`while_loop` over SVD-based steps) is a damped Gauss-Newton step `-(J^T J + delta diag(D^2))^-1
J^T F` whose damping is divided by three after an improving step and doubled otherwise (`factor`
scales the initial damping); the termination tests keep their roles (`hit_xtol`, `hit_ftol`,
`maxiters`, a non-finite `x`) with tolerances a float32 run reaches; the SVD is not kept in the
state, and the counters are trimmed to `nit`; as in the library, an unconverged run returns NaN.
"""
from collections import namedtuple
from functools import partial
import jax
import jax.numpy as np
import jax.numpy.linalg as npla
import numpy as onp
import jax.numpy as jnp
EVAL = {'id': 'mutation/loss_keepdims_caller/varmint_levmar_optfun', 'family': 'mutation', 'expect': 'unknown', 'library': 'varmint', 'source': 'PrincetonLIPS/Varmint:varmint/solver/optimizers/levmar.py:125', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'loss_keepdims_caller', 'base': 'varmint_levmar_optfun'}
LMState = namedtuple('LMState', ['x', 'args', 'Fx', 'nFx', 'Jx', 'diagD', 'delta', 'hit_xtol', 'hit_ftol', 'nit'])

def _optfun(fun, jacfun, cond_fun, body_fun, factor, x0, args):
    Fx = fun(x0, args)
    Jx = jacfun(x0, args)
    diagD = npla.norm(Jx, axis=0)
    init_state = LMState(x=x0, args=args, Fx=Fx, nFx=npla.norm(Fx), Jx=Jx, diagD=diagD, delta=factor * np.float32(0.001), hit_xtol=np.float32(0.0), hit_ftol=np.float32(0.0), nit=np.float32(0.0))
    state = jax.lax.while_loop(cond_fun, body_fun, init_state)
    ret_x = jax.lax.cond(np.logical_or(state.hit_xtol > 0, state.hit_ftol > 0), lambda _: state.x, lambda _: np.ones_like(state.x) + np.nan, None)
    return (ret_x, state)

@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2, 3, 4))
def optfun(fun, jacfun, cond_fun, body_fun, factor, x0, args):
    x_star, res = _optfun(fun, jacfun, cond_fun, body_fun, factor, x0, args)
    return x_star

@optfun.defjvp
def optfun_jvp(fun, jacfun, cond_fun, body_fun, factor, primals, tangents):
    x0, args = primals
    _, arg_tans = tangents
    x_star, res = _optfun(fun, jacfun, cond_fun, body_fun, factor, x0, args)
    fun_x_star = partial(fun, x_star)
    _, tangents_out = jax.jvp(fun_x_star, (args,), (arg_tans,))
    x_star_tans = -npla.solve(res.Jx, tangents_out)
    return (x_star, x_star_tans)

def get_lmfunc(fun, maxiters=100.0, xtol=1e-06, ftol=1e-06, factor=100.0):
    """A Levenberg-Marquardt solver for one parametric family of residual functions
    `fun(x, args)`: returns a function called as `lmfunc(x0, args)`."""
    jacfun = jax.jacfwd(fun)

    def cond_fun(state):
        return np.logical_not(np.logical_or(np.logical_or(np.logical_or(state.hit_xtol > 0.0, state.hit_ftol > 0.0), state.nit >= maxiters), np.logical_not(np.all(np.isfinite(state.x)))))

    def body_fun(state):
        JtJ = state.Jx.T @ state.Jx
        p = -npla.solve(JtJ + state.delta * np.diag(state.diagD ** 2), state.Jx.T @ state.Fx)
        new_x = state.x + p
        new_Fx = fun(new_x, state.args)
        new_nFx = npla.norm(new_Fx)
        improved = new_nFx < state.nFx
        x, Fx, nFx, Jx = jax.lax.cond(improved, lambda _: (new_x, new_Fx, new_nFx, jacfun(new_x, state.args)), lambda _: (state.x, state.Fx, state.nFx, state.Jx), None)
        diagD = np.maximum(state.diagD, npla.norm(Jx, axis=0))
        delta = np.where(improved, state.delta / 3.0, state.delta * 2.0)
        hit_ftol = np.logical_and(improved, new_nFx <= ftol)
        hit_xtol = np.logical_and(improved, npla.norm(p) <= xtol * (npla.norm(new_x) + xtol))
        return LMState(x=x, args=state.args, Fx=Fx, nFx=nFx, Jx=Jx, diagD=diagD, delta=delta, hit_xtol=np.asarray(hit_xtol, np.float32), hit_ftol=np.asarray(hit_ftol, np.float32), nit=state.nit + 1.0)
    return partial(optfun, fun, jacfun, cond_fun, body_fun, factor)

def _bernstein2(t):
    return np.stack([(1 - t) ** 2, 2 * t * (1 - t), t ** 2])

def patch_residual(x, args):
    """Quadratic Bezier patch at parametric point x, minus the target point."""
    bu, bv = (_bernstein2(x[0]), _bernstein2(x[1]))
    point = np.einsum('i,j,ijk->k', bu, bv, args['ctrl'])
    return point - args['target']
invert_patch = get_lmfunc(patch_residual)

def eval_fn(ctrl, target):
    x0 = np.array([0.5, 0.5])
    return invert_patch(x0, {'ctrl': ctrl, 'target': target})

def eval_inputs():
    g = onp.linspace(0.0, 1.0, 3)
    ctrl = onp.stack(onp.meshgrid(g, g, indexing='ij'), axis=-1) * onp.array([2.0, 1.5])
    ctrl[1, 1] += onp.array([0.25, -0.15])
    ctrl[2, 0] += onp.array([0.1, 0.2])
    ctrl[0, 2] += onp.array([-0.1, 0.1])
    return (ctrl.astype(onp.float32), onp.array([1.3, 0.6], onp.float32))

def eval_reference(ctrl, target):
    c = onp.asarray(ctrl, onp.float64)
    y = onp.asarray(target, onp.float64)
    b = lambda t: onp.array([(1 - t) ** 2, 2 * t * (1 - t), t ** 2])
    db = lambda t: onp.array([-2 * (1 - t), 2 - 4 * t, 2 * t])
    x = onp.array([0.5, 0.5])
    for _ in range(40):
        f = onp.einsum('i,j,ijk->k', b(x[0]), b(x[1]), c) - y
        jac = onp.stack([onp.einsum('i,j,ijk->k', db(x[0]), b(x[1]), c), onp.einsum('i,j,ijk->k', b(x[0]), db(x[1]), c)], axis=-1)
        x = x - onp.linalg.solve(jac, f)
    return x

def keepdims_loss_usage(*args):

    def loss(*a):
        return jnp.mean(eval_fn(*a), keepdims=True)
    return jax.grad(loss, argnums=(0, 1))(*args)

def keepdims_loss_usage_expected(*args):
    n = jnp.size(eval_fn(*args))
    g = jax.grad(lambda *a: jnp.sum(eval_fn(*a)), argnums=(0, 1))(*args)
    return tuple((x / n for x in g))

def eval_custom():
    args = tuple(eval_inputs())
    return {'keepdims_loss_usage': lambda: (keepdims_loss_usage(*args), keepdims_loss_usage_expected(*args))}
