"""serket (ASEM000's equinox-free neural-network library): max pooling through `max_op`, a
custom_jvp made by *calling* the creator on a lambda at module level, `max_op =
jax.custom_jvp(lambda x: jnp.maximum(jnp.max(x), -jnp.inf))`, the reduction of one pooling
window. Its rule, registered by the decorator `@max_op.defjvp` on a function named `_`, unpacks
`(x,), (g,) = primals, tangents` in one statement and returns `max_op(x)` with the tangent of the
window's largest element, `g.ravel()[x.argmax()]` (one element gets the whole derivative, as
reverse-mode max pooling does, rather than JAX's average over ties). `pool_nd` maps the reducer
over every window with `jax.vmap` of a `kernel_map`: the input is padded with the initial value
(`-inf` for max pooling), each window gathered by integer indices. The caller is the layer
`MaxPool2D(kernel_size=3, strides=2, padding=((1, 1), (1, 1)))` over a channel-first feature map,
`max_pool_nd(input, kernel_size, strides, padding)` vmapped over the channels, after a 1x1
convolution with a tanh.

Adapted from ASEM000/serket:serket/_src/nn/pooling.py:67 (`max_op` and its rule, commit f5c9ddc),
with `pool_nd` (:32), `max_pool_nd` (:76) and `MaxPoolND` (:236, its `__call__`) of the same file and
`kernel_map` of serket/_src/utils/mapping.py:25. Changed: `kernel_map` (a minimal copy of
kernex's `kmap` built from `broadcasted_iota` views and a recursive vmap) is reduced to window
indices made with NumPy and one gather per window; padding is given explicitly (serket resolves
"same"/"valid" with `delayed_canonicalize_padding`); the `TreeClass` base and the spatial-ndim
validation decorator are left out.
"""
import functools as ft
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/while_loop_caller/serket_max_pool', 'family': 'mutation', 'expect': 'unknown', 'library': 'serket', 'source': 'ASEM000/serket:serket/_src/nn/pooling.py:67', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'while_loop_caller', 'base': 'serket_max_pool'}

def _window_indices(size, kernel, stride, pad):
    """Indices (into the padded axis) of every window along one axis."""
    count = (size + pad[0] + pad[1] - kernel) // stride + 1
    return np.arange(count)[:, None] * stride + np.arange(kernel)[None, :]

def kernel_map(func, shape, kernel_size, strides, padding, padding_mode=0.0):
    """Apply `func` to every window of an array of `shape` (one spatial array, no channels)."""
    rows = _window_indices(shape[0], kernel_size[0], strides[0], padding[0])
    cols = _window_indices(shape[1], kernel_size[1], strides[1], padding[1])
    out_shape = (rows.shape[0], cols.shape[0])
    view_r = np.repeat(rows, cols.shape[0], axis=0)
    view_c = np.tile(cols, (rows.shape[0], 1))

    def single_call_wrapper(array):
        padded = jnp.pad(array, padding, mode='constant', constant_values=padding_mode)

        def map_func(r, c):
            patch = padded[r[:, None], c[None, :]]
            return func(patch)
        result = jax.vmap(map_func)(view_r, view_c)
        return result.reshape(out_shape)
    return single_call_wrapper

def pool_nd(reducer, inital_value, input, kernel_size, strides, padding):
    """Pooling operation over a channeled input of shape (channels, *spatial)."""
    _, *S = input.shape

    @jax.vmap
    @ft.partial(kernel_map, shape=S, kernel_size=kernel_size, strides=strides, padding=padding, padding_mode=inital_value)
    def reducer_map(view):
        return reducer(view)
    return reducer_map(input)
max_op = jax.custom_jvp(lambda x: jnp.maximum(jnp.max(x), -jnp.inf))

@max_op.defjvp
def _(primals, tangents):
    (x,), (g,) = (primals, tangents)
    return (max_op(x), g.ravel()[x.argmax()])

def max_pool_nd(input, kernel_size, strides, padding):
    """Max pooling of a channel-first input."""
    return pool_nd(max_op, -jnp.inf, input, kernel_size, strides, padding)

class MaxPool2D:
    """2D max pooling layer."""

    def __init__(self, kernel_size, strides=1, *, padding=((0, 0), (0, 0))):
        self.kernel_size = (kernel_size,) * 2 if isinstance(kernel_size, int) else tuple(kernel_size)
        self.strides = (strides,) * 2 if isinstance(strides, int) else tuple(strides)
        self.padding = padding

    def __call__(self, input):
        return max_pool_nd(input=input, kernel_size=self.kernel_size, strides=self.strides, padding=self.padding)
POOL = MaxPool2D(kernel_size=3, strides=2, padding=((1, 1), (1, 1)))

def eval_fn(image, weight):
    features = jnp.tanh(jnp.einsum('oc,chw->ohw', weight, image))
    return POOL(features)

def eval_inputs():
    rng = np.random.RandomState(11)
    image = rng.normal(size=(2, 7, 6)).astype(np.float32)
    weight = (0.8 * rng.normal(size=(3, 2))).astype(np.float32)
    return (image, weight)

def eval_reference(image, weight):
    feats = np.tanh(np.einsum('oc,chw->ohw', np.asarray(weight, np.float64), np.asarray(image, np.float64)))
    padded = np.pad(feats, ((0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    rows = _window_indices(feats.shape[1], 3, 2, (1, 1))
    cols = _window_indices(feats.shape[2], 3, 2, (1, 1))
    out = np.empty((feats.shape[0], rows.shape[0], cols.shape[0]))
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            out[:, i, j] = padded[:, r[:, None], c[None, :]].reshape(feats.shape[0], -1).max(axis=1)
    return out

def while_loop_usage(*args):
    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])))
    x = jax.tree_util.tree_map(jnp.asarray, args[0])

    def descend(v):
        return jax.tree_util.tree_map(lambda a, b: a - 0.001 * b, v, g(v))

    def step(state):
        k, v = state
        return (k + 1, descend(v))
    return jax.lax.while_loop(lambda state: state[0] < 3, step, (0, x))[1]

def while_loop_usage_expected(*args):
    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])))
    x = jax.tree_util.tree_map(jnp.asarray, args[0])

    def descend(v):
        return jax.tree_util.tree_map(lambda a, b: a - 0.001 * b, v, g(v))
    for _ in range(3):
        x = descend(x)
    return x

def eval_custom():
    args = tuple(eval_inputs())
    return {'while_loop_usage': lambda: (while_loop_usage(*args), while_loop_usage_expected(*args))}
