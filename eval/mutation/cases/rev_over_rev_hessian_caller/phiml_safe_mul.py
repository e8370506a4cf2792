"""PhiML (the math layer of PhiFlow, TUM): `safe_mul(x, y)`, multiplication whose gradient drops
the contributions of non-finite values, built with PhiML's `custom_gradient(f, gradient)`. The
`CustomGradientFunction` object traces the function once per signature in its method `_trace`,
which defines `forward_native` (calls `self.f`) and `backward_native(x_natives, y_natives,
dy_natives)` (calls the user's `gradient(kwargs, y, dy)`, which returns a dict keyed by the
forward function's parameter names, and orders it back into a tuple with `None` for a missing
name) and hands them to the JAX backend's `custom_gradient`: `jax_fun = jax.custom_vjp(f)`
(the creator called, not a decorator), fwd `forward(*x)` returning `y, (x, y)` (the inputs'
tuple and the output as residuals) and bwd `backward(x_y, dy)` unpacking `x, y = x_y` and
returning `tuple(dx)`; registered by `jax_fun.defvjp(forward, backward)`, the custom function
returned from the method and cached in `self.traces`. The gradient `_safe_mul_bwd(input_dict,
prod, adj)` zeroes the non-finite inputs with `where` and reduces each product to its input's
shape (the broadcast dimensions summed). The caller is PhiFlow's
`apply_boundary_conditions` for a moving obstacle, `safe_mul(1 - obs_mask, velocity) +
safe_mul(obs_mask, obstacle_velocity)`, with a soft circular obstacle mask of one channel
broadcast against the two velocity components and the obstacle's velocity vector broadcast over
the grid.

Adapted from tum-pbs/PhiML:phiml/math/_functional.py:914 (`CustomGradientFunction`, its
`_trace` and `__call__`; commit 48a1030), phiml/backend/jax/_jax_backend.py:298
(`JaxBackend.custom_gradient`), phiml/math/_functional.py:1109 (`safe_mul`, `_safe_mul_fwd`,
`_safe_mul_bwd`) and the caller tum-pbs/PhiFlow:phi/physics/fluid.py:212 (commit 872597ec).
Changed: the backend's `custom_gradient` is inlined into `_trace` (one backend); PhiML's named
`Tensor`s become arrays, so `assemble_tensors` / `assemble_tree` / `grad_natives` reduce to
zipping the natives with the parameter names, and `math.sum_(adj * y, y.shape - x.shape)` is
a reduction to the input's shape; `forward_native` takes the two natives of `safe_mul` by name
instead of `*natives`; the signature key is the arguments' shapes and dtypes; the soft obstacle
mask (a resampled sphere) is a logistic of the signed distance to a fixed circle.
"""
import functools
import inspect
import jax
import jax.numpy as jnp
import numpy as np
import jax.flatten_util
EVAL = {'id': 'mutation/rev_over_rev_hessian_caller/phiml_safe_mul', 'family': 'mutation', 'expect': 'unknown', 'library': 'phiml', 'source': 'tum-pbs/PhiML:phiml/math/_functional.py:914', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'rev_over_rev_hessian_caller', 'base': 'phiml_safe_mul'}

def _sum_to(value, shape):
    """Sum `value` over the dimensions that broadcasting added to an array of `shape`."""
    lead = value.ndim - len(shape)
    value = jnp.sum(value, axis=tuple(range(lead))) if lead else value
    axes = tuple((i for i, n in enumerate(shape) if n == 1 and value.shape[i] != 1))
    return jnp.sum(value, axis=axes, keepdims=True) if axes else value

class CustomGradientFunction:

    def __init__(self, f, gradient):
        self.f = f
        self.f_params = tuple(inspect.signature(f).parameters)
        self.gradient = gradient
        self.traces = {}

    def _trace(self, in_key):

        def forward_native(x, y):
            kwargs = dict(zip(self.f_params, (x, y)))
            return self.f(**kwargs)

        def backward_native(x_natives, y_natives, dy_natives):
            kwargs = dict(zip(self.f_params, x_natives))
            result = self.gradient(kwargs, y_natives, dy_natives)
            assert isinstance(result, dict) and all((key in kwargs for key in result.keys()))
            return tuple((result.get(name, None) for name in self.f_params))
        jax_fun = jax.custom_vjp(forward_native)

        def forward(*x):
            y = forward_native(*x)
            return (y, (x, y))

        def backward(x_y, dy):
            x, y = x_y
            dx = backward_native(x, y, dy)
            return tuple(dx)
        jax_fun.defvjp(forward, backward)
        return jax_fun

    def __call__(self, *args):
        key = tuple(((jnp.shape(a), jnp.result_type(a)) for a in args))
        if key not in self.traces:
            self.traces[key] = self._trace(key)
        return self.traces[key](*args)

def custom_gradient(f, gradient):
    return CustomGradientFunction(f, gradient)

def _safe_mul_fwd(x, y):
    return x * y

def _safe_mul_bwd(input_dict, prod, adj):
    x, y = (input_dict['x'], input_dict['y'])
    x = jnp.where(jnp.isfinite(x), x, 0)
    y = jnp.where(jnp.isfinite(y), y, 0)
    return {'x': _sum_to(adj * y, jnp.shape(x)), 'y': _sum_to(adj * x, jnp.shape(y))}
_safe_mul = custom_gradient(_safe_mul_fwd, _safe_mul_bwd)

def safe_mul(x, y):
    """Multiplication for tensors with non-finite values: x*y forward, non-finite values dropped
    from the gradient."""
    return _safe_mul(x, y)
_yy, _xx = np.meshgrid(np.arange(5) + 0.5, np.arange(5) + 0.5, indexing='ij')
OBSTACLE_CENTER = np.array([2.2, 2.7])
OBSTACLE_RADIUS = 1.3
OBS_MASK = (1.0 / (1.0 + np.exp(4.0 * (np.hypot(_yy - OBSTACLE_CENTER[0], _xx - OBSTACLE_CENTER[1]) - OBSTACLE_RADIUS))))[..., None].astype(np.float32)

def apply_boundary_conditions(velocity, obstacle_velocity, obs_mask=OBS_MASK):
    """Cells inside the (moving, non-rotating) obstacle take its velocity; cells outside keep theirs."""
    angular_velocity = 0
    return safe_mul(1 - obs_mask, velocity) + safe_mul(obs_mask, angular_velocity + obstacle_velocity)

def eval_fn(velocity, obstacle_velocity):
    return apply_boundary_conditions(velocity, obstacle_velocity)

def eval_inputs():
    rng = np.random.RandomState(3)
    velocity = rng.uniform(-1.0, 1.0, (5, 5, 2)).astype(np.float32)
    return (velocity, np.array([0.6, -0.3], np.float32))

def eval_reference(velocity, obstacle_velocity):
    m = OBS_MASK.astype(np.float64)
    return (1 - m) * np.asarray(velocity, np.float64) + m * np.asarray(obstacle_velocity, np.float64)

def rev_hessian_usage(*args):
    x0, unravel = jax.flatten_util.ravel_pytree(args[0])

    def loss(v):
        return jnp.sum(eval_fn(*[unravel(v) if i == 0 else a for i, a in enumerate(args)]))
    hess = jax.jacrev(jax.jacrev(loss))(x0)
    return hess @ jnp.ones_like(x0)

def eval_custom():
    args = tuple(eval_inputs())
    return {'rev_hessian_usage': lambda: (rev_hessian_usage(*args), None)[1]}
