"""trajax: the total cost of a control sequence, `objective(cost, dynamics, U, x0)`, whose
gradient with respect to the controls is the adjoint (costate) recursion rather than
backpropagation through the rollout. The public function closure-converts both user functions
(`custom_derivatives.closure_convert(cost, x0, U[0], 0)`, likewise `dynamics`), so that the
float constants they close over become explicit arguments, and calls
`_objective(cost, dynamics, U, x0, cost_args, dynamics_args)`, a
`@partial(jax.custom_vjp, nondiff_argnums=(0, 1))` whose two nondiff arguments are the converted
functions and whose last two are the lists of hoisted constants (pytrees). The forward rule
calls the custom function itself and saves `(U, x0, cost_args, dynamics_args)`; the backward
rule takes the two functions first, then `res, g`, and returns
`(g * grad_wrt_controls(cost, dynamics, *res),) + (None,) * 3`: the controls' cotangent from
the adjoint equations (a reverse `lax.scan` over the dynamics' and the cost's Jacobians along
the rolled-out trajectory), and `None` for the initial state and both constant lists, which the
optimiser holds fixed. Registered with `_objective.defvjp(_objective_fwd, _objective_bwd)`.

Adapted from google/trajax:trajax/optimizers.py:249 (commit c94a637), with `objective`
(:223), `_objective_template`, `evaluate`, `vectorize`, `linearize`, `_rollout`, `adjoint` and
`grad_wrt_controls` of the same file, `euler` of trajax/integrators.py:18, and the pendulum and
the cost of tests/optimizers_test.py:109 and :256 (`testGradient`: `functools.partial(
optimizers.objective, cost, dynamics)` against the flattened controls). Changed: the pytree
helpers that call the removed `jax.tree_map` are dropped (unused here); the acrobot of the test
is replaced by its pendulum with a short horizon, and the cost closes over a goal state passed
in by the caller (a model-predictive controller's target): concrete in eager calls, a tracer
under `jit`, where `closure_convert` hoists it into `cost_args`. The caller differentiates the
controls only (the initial state and the goal are held fixed, as trajax's optimisers hold
them), where the rule is the true derivative.
"""
import functools
from functools import partial
import jax
from jax import custom_derivatives
from jax import jacobian
from jax import lax
from jax import vmap
import jax.numpy as np
import numpy as onp
import jax.numpy as jnp
EVAL = {'id': 'mutation/shard_map_caller/trajax_objective', 'family': 'mutation', 'expect': 'unknown', 'library': 'trajax', 'source': 'google/trajax:trajax/optimizers.py:249', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'shard_map_caller', 'base': 'trajax_objective'}
pad = lambda A: np.vstack((A, np.zeros((1,) + A.shape[1:])))

def vectorize(fun, argnums=3):
    """Batches the first `argnums` arguments of `fun` (x, u, t) over axis 0."""

    def vfun(*args):
        _fun = lambda tup, *margs: fun(*margs + tup)
        return vmap(_fun, in_axes=(None,) + (0,) * argnums)(args[argnums:], *args[:argnums])
    return vfun

def linearize(fun, argnums=3):
    """Jacobians of fun(x, u, t, *args) with respect to x and u along a trajectory."""
    jacobian_x = jacobian(fun)
    jacobian_u = jacobian(fun, argnums=1)

    def linearizer(*args):
        return (jacobian_x(*args), jacobian_u(*args))
    return vectorize(linearizer, argnums)

def _rollout(dynamics, U, x0, *args):

    def dynamics_for_scan(x, ut):
        u, t = ut
        x_next = dynamics(x, u, t, *args)
        return (x_next, x_next)
    return np.vstack((x0, lax.scan(dynamics_for_scan, x0, (U, np.arange(U.shape[0])))[1]))

def evaluate(cost, X, U, *args):
    timesteps = np.arange(X.shape[0])
    return vectorize(cost)(X, U, timesteps, *args)

def adjoint(A, B, q, r):
    """Backward recursion of the adjoint equations: gradient, adjoints, final adjoint."""
    n = q.shape[1]
    T = q.shape[0] - 1
    m = r.shape[1]
    P = np.zeros((T, n))
    g = np.zeros((T, m))

    def body(p, t):
        g = r[t] + np.matmul(B[t].T, p)
        p = np.matmul(A[t].T, p) + q[t]
        return (p, (p, g))
    p, (P, g) = lax.scan(body, q[T], np.arange(T - 1, -1, -1))
    return (np.flipud(g), np.vstack((np.flipud(P[:T - 1]), q[T])), p)

def grad_wrt_controls(cost, dynamics, U, x0, cost_args, dynamics_args):
    """Gradient (T, m) of the total cost with respect to the controls."""
    jacobians = linearize(dynamics)
    grad_cost = linearize(cost)
    X = _rollout(dynamics, U, x0, *dynamics_args)
    timesteps = np.arange(X.shape[0])
    A, B = jacobians(X, pad(U), timesteps, *dynamics_args)
    q, r = grad_cost(X, pad(U), timesteps, *cost_args)
    gradient, _, _ = adjoint(A, B, q, r)
    return gradient

def objective(cost, dynamics, U, x0):
    """Total cost of the control sequence U from x0."""
    cost_converted, cost_consts = custom_derivatives.closure_convert(cost, x0, U[0], 0)
    dynamics_converted, dynamics_consts = custom_derivatives.closure_convert(dynamics, x0, U[0], 0)
    return _objective(cost_converted, dynamics_converted, U, x0, cost_consts, dynamics_consts)

def _objective_template(cost, dynamics, U, x0, cost_args, dynamics_args):
    return np.sum(evaluate(cost, _rollout(dynamics, U, x0, *dynamics_args), pad(U), *cost_args))

@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _objective(cost, dynamics, U, x0, cost_args, dynamics_args):
    return _objective_template(cost, dynamics, U, x0, cost_args, dynamics_args)

def _objective_fwd(cost, dynamics, U, x0, cost_args, dynamics_args):
    obj = _objective(cost, dynamics, U, x0, cost_args, dynamics_args)
    return (obj, (U, x0, cost_args, dynamics_args))

def _objective_bwd(cost, dynamics, res, g):
    return (g * grad_wrt_controls(cost, dynamics, *res),) + (None,) * 3
_objective.defvjp(_objective_fwd, _objective_bwd)

def euler(dynamics, dt=0.01):
    return lambda x, u, t: x + dt * dynamics(x, u, t)

def pendulum(state, action, t, params=(1.0, 1.0, 9.81)):
    del t
    theta, theta_dot = state
    m, l, g = params
    return np.array([theta_dot, (np.squeeze(action) - m * g * l * np.sin(theta)) / (m * l * l)])
T = 6
DT = 0.1
X0 = onp.array([0.3, -0.2], onp.float32)
PARAMS_COST = (10.0, 0.5, 0.1)

def make_cost(goal):

    def cost(x, u, t, params):
        delta = x - goal
        terminal_cost = 0.5 * params[0] * np.dot(delta, delta)
        stagewise_cost = 0.5 * params[1] * np.dot(delta, delta) + 0.5 * params[2] * np.dot(u, u)
        return np.where(t == T, terminal_cost, stagewise_cost)
    return cost

def eval_fn(U, goal):
    cost = make_cost(goal)
    total = functools.partial(objective, functools.partial(cost, params=PARAMS_COST), euler(pendulum, dt=DT))
    return total(U, X0)

def eval_inputs():
    U = onp.array([[0.5], [-0.3], [1.2], [0.8], [-0.6], [0.4]], onp.float32)
    goal = onp.array([onp.pi, 0.0], onp.float32)
    return (U, goal)

def eval_reference(U, goal):
    U = onp.asarray(U, onp.float64)
    goal = onp.asarray(goal, onp.float64)
    x = X0.astype(onp.float64)
    w_final, w_state, w_control = PARAMS_COST
    total = 0.0
    for t in range(T + 1):
        u = U[t] if t < T else onp.zeros(1)
        d = x - goal
        total += 0.5 * w_final * d @ d if t == T else 0.5 * w_state * d @ d + 0.5 * w_control * u @ u
        if t < T:
            x = x + DT * onp.array([x[1], u[0] - 9.81 * onp.sin(x[0])])
    return onp.asarray(total)

def shard_map_usage(*args):
    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])))
    x = jnp.asarray(args[0])
    mesh = jax.make_mesh((1,), ('data',))
    spec = jax.sharding.PartitionSpec()
    return jax.shard_map(g, mesh=mesh, in_specs=spec, out_specs=spec)(x)

def shard_map_usage_expected(*args):
    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])))
    x = jnp.asarray(args[0])
    return g(x)

def eval_custom():
    args = tuple(eval_inputs())
    return {'shard_map_usage': lambda: (shard_map_usage(*args), shard_map_usage_expected(*args))}
