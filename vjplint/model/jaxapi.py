"""What vjplint knows about JAX's API by name: one table for the collector, the facts and the rules.

Qualified names are as `SemanticIndex.qualname` spells them (`jax.numpy.dot` for `jnp.dot`).
Namespaces end with a dot so that `str.startswith` matches whole path components.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Optional, Tuple

# -- creating and registering custom derivatives ---------------------------------------------
JAX_VJP = ("jax.custom_vjp", "jax.custom_derivatives.custom_vjp", "jax._src.custom_derivatives.custom_vjp")
JAX_JVP = ("jax.custom_jvp", "jax.custom_derivatives.custom_jvp", "jax._src.custom_derivatives.custom_jvp")
PARTIAL = ("functools.partial",)
REGISTRATION_METHODS = ("defvjp", "defjvp", "defjvps")

# Library creators (docs/facts/README.md has each protocol): qualified name -> (kind, api).
# `api` names the protocol the rules apply: "nnx", "linen", "equinox", "custom_gradient".
LIBRARY_CREATORS: Dict[str, Tuple[str, str]] = {
    **{n: ("vjp", "nnx") for n in ("flax.nnx.custom_vjp", "flax.nnx.transforms.autodiff.custom_vjp",
                                   "flax.nnx.transforms.custom_vjp")},
    **{n: ("vjp", "linen") for n in ("flax.linen.custom_vjp", "flax.linen.transforms.custom_vjp",
                                     "flax.core.lift.custom_vjp", "flax.core.custom_vjp")},
    **{n: ("vjp", "equinox") for n in ("equinox.filter_custom_vjp", "equinox._ad.filter_custom_vjp")},
    **{n: ("jvp", "equinox") for n in ("equinox.filter_custom_jvp", "equinox._ad.filter_custom_jvp")},
    **{n: ("vjp", "custom_gradient") for n in ("jax.custom_gradient", "jax.custom_derivatives.custom_gradient",
                                               "jax._src.custom_derivatives.custom_gradient")},
}
# equinox's own modules import its creators relatively (`from .._ad import filter_custom_vjp`).
RELATIVE_LIBRARY_CREATORS: Dict[str, str] = {
    "_ad.filter_custom_vjp": "equinox.filter_custom_vjp", "_ad.filter_custom_jvp": "equinox.filter_custom_jvp",
}
# Creators that accept configuration keywords before the function (`@nnx.custom_vjp(nondiff_argnums=...)`).
CONFIGURABLE_CREATORS = frozenset(n for n, (_, api) in LIBRARY_CREATORS.items()
                                  if api in ("nnx", "custom_gradient"))  # `@jax.custom_gradient(with_logs=True)`
# Creators whose rules are positional arguments of the creating call (linen: fn, forward_fn, backward_fn).
RULES_IN_CALL = frozenset(n for n, (_, api) in LIBRARY_CREATORS.items() if api == "linen")
# Registration methods by API (equinox registers fwd and bwd separately, each returning None).
API_REGISTRATION_METHODS: Dict[str, Tuple[str, ...]] = {
    "jax": REGISTRATION_METHODS, "nnx": ("defvjp",), "linen": (), "custom_gradient": (),
    # equinox's deprecated `defvjp(fwd, bwd)` / `defjvp(jvp)` (since 0.10.7; they warn and still run:
    # `defvjp` calls fwd(vjp_arg, *args) and bwd(residuals, g, vjp_arg, *args))
    "equinox": ("def_fwd", "def_bwd", "def_jvp", "defvjp", "defjvp"),
}
# Each creator's keywords (`inspect.signature` on JAX 0.10.2, flax 0.12.8, equinox 0.13.8), its own
# function parameter included: a keyword outside its set raises `TypeError: ... got an unexpected
# keyword argument` where the creator runs (docs/facts/jax-errors.md, "Wrappers: routes (wrap11)").
CREATOR_KEYWORDS: Dict[str, FrozenSet[str]] = {
    "jax": frozenset({"fun", "nondiff_argnums", "nondiff_argnames"}),
    "nnx": frozenset({"fun", "nondiff_argnums", "graph", "graph_updates"}),
    "equinox": frozenset({"fn"}),  # `filter_custom_vjp(fn)` / `filter_custom_jvp(fn)`: nothing else
    "linen": frozenset({"fn", "forward_fn", "backward_fn", "grad_vars", "nondiff_argnums"}),
}
# What messages call each API's object.
API_LABELS: Dict[Tuple[str, str], str] = {
    ("jax", "vjp"): "custom_vjp", ("jax", "jvp"): "custom_jvp", ("nnx", "vjp"): "nnx.custom_vjp",
    ("linen", "vjp"): "nn.custom_vjp", ("equinox", "vjp"): "eqx.filter_custom_vjp",
    ("equinox", "jvp"): "eqx.filter_custom_jvp", ("custom_gradient", "vjp"): "jax.custom_gradient",
}
# nnx Variables: a pytree whose leaf is the wrapped value (an array in one is an array leaf: UTE-nd
# when it reaches a nondiff slot traced, docs/facts/README.md §1).
NNX_VARIABLES = frozenset(f"flax.nnx.{n}" for n in ("Param", "BatchStat", "Variable", "Cache", "Intermediate",
                                                      "VariableState"))
EQX_CLOSURE_CONVERT = ("equinox.filter_closure_convert", "equinox._ad.filter_closure_convert")


def canonical_creator(qualname: Optional[str]) -> Optional[str]:
    """`..._ad.filter_custom_vjp` (equinox's relative imports) -> `equinox.filter_custom_vjp`."""
    if qualname and qualname.startswith("."):
        return RELATIVE_LIBRARY_CREATORS.get(qualname.lstrip("."), qualname)
    return qualname

# -- transformations ---------------------------------------------------------------------------
# Transformations whose function argument is traced, with the argument's position.
TRANSFORMS: Dict[str, int] = {
    **{f"jax.{n}": 0 for n in ("jit", "vmap", "pmap", "grad", "value_and_grad", "jacrev", "jacfwd",
                                "hessian", "checkpoint", "remat", "linearize", "vjp", "jvp", "eval_shape")},
    "jax.ad_checkpoint.checkpoint": 0,
    "equinox.filter_jit": 0, "equinox.filter_grad": 0, "equinox.filter_value_and_grad": 0,
    "equinox.filter_vmap": 0, "equinox.filter_pmap": 0,
    "flax.nnx.jit": 0, "flax.nnx.remat": 0,  # nnx.grad traces only its argnums: not listed
    "jax.lax.scan": 0, "jax.lax.map": 0, "jax.lax.fori_loop": 2, "jax.lax.while_loop": 1,
    "jax.lax.cond": 1, "jax.lax.switch": 1, "jax.lax.associative_scan": 0,
    "jax.numpy.vectorize": 0,
}
# `jax.lax.cond(p, true_fn, false_fn, ...)` and `while_loop(cond, body, ...)` trace two functions.
EXTRA_TRACED_POSITIONS: Dict[str, Tuple[int, ...]] = {"jax.lax.cond": (2,), "jax.lax.while_loop": (0,)}
# Decorators that keep a function's signature as JAX sees it: by name (`@jax.jit`,
# `@partial(jax.jit, static_argnames=...)`), or made by a call (`@jax.default_matmul_precision("float32")`,
# jax's own `_pinv_jvp`; `@jax.named_scope("x")`): on JAX 0.10.2 each keeps `inspect.signature`
# and the arity `TypeError` of the function it decorates (measured 2026-12-06; the fixtures
# fixtures/rules/VJP303/fire_jitted_primal.py and VJP312/fire_rule_under_matmul_precision.py run
# the first two on JAX). A project's own decorator stays unknown (VJP312/silent_rule_under_own_decorator.py).
SIGNATURE_KEEPING = frozenset({"builtins.staticmethod", "jax.jit", "jax.named_call", "jax.default_matmul_precision",
                               "jax._src.config.default_matmul_precision", "jax.named_scope"})

# -- namespaces --------------------------------------------------------------------------------
# Functions here compute on (and so return) traced arrays.
ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.")
# The same plus jax.image: a default or argument made here is an array.
ARRAY_VALUE_NAMESPACES = (*ARRAY_NAMESPACES, "jax.image.")
# Namespaces of the ARRAY_FUNCTIONS below (each returns one array, never a tuple).
ONE_ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.special.", "jax.scipy.linalg.")
# Host-side numerics: a tracer passed here fails, so a value passed here is concrete.
HOST_NAMESPACES = ("numpy.", "math.")
# Array constructors at a call site (`f(jnp.ones(3))`): the argument is an array.
ARRAY_ARGUMENT_NAMESPACES = ("jax.numpy.", "jax.random.", "jax.lax.")
# Function objects passed by attribute (`f(jnp.sin)`): the argument is a callable.
FUNCTION_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "numpy.", "jax.scipy.")

# -- array attributes --------------------------------------------------------------------------
# Attributes that are static Python metadata even on a tracer (shapes are known at trace time),
# or on a pytree definition.
STATIC_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "size", "weak_type", "sharding", "treedef", "aval"})
# Attributes whose use shows the object is an array (`x.shape`, `x.at[...]`, `x.T`).
ARRAY_USE_ATTRIBUTES = frozenset({"shape", "dtype", "T", "ndim", "at", "mT", "real", "imag", "size", "astype",
                                  "reshape", "block_until_ready", "addressable_shards", "sharding", "aval"})
# Every public attribute and method of `jax.Array` (JAX 0.10.2's `dir(jax.Array)`, with a tracer's
# `aval`/`weak_type` and a concrete array's `block_until_ready`/`tolist`): an object read through any
# other attribute (`model.func(x)`) is not an array, so its `.shape` shows nothing about arrays.
JAX_ARRAY_ATTRIBUTES = frozenset("""
T addressable_data addressable_shards all any argmax argmin argpartition argsort astype at byteswap choose
clip committed compress conj conjugate copy copy_to_host_async cumprod cumsum device diagonal dot dtype flat
flatten global_shards imag is_fully_addressable is_fully_replicated item itemsize mT max mean min nbytes ndim
nonzero prod ptp ravel real repeat reshape round searchsorted shape sharding size sort squeeze std sum swapaxes
take to_device trace transpose var view aval weak_type block_until_ready tolist devices delete is_deleted
on_device_size_in_bytes unsafe_buffer_pointer
""".split())
# Attributes of an array that are arrays themselves.
ARRAY_VALUED_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})
# Array methods that return one array.
ARRAY_METHODS = frozenset({"astype", "reshape", "sum", "mean", "transpose", "dot", "conj", "ravel", "flatten",
                           "squeeze", "prod", "max", "min", "clip", "cumsum", "std", "var", "swapaxes"})
# jnp/lax/nn functions that return one array (never a tuple or list).
ARRAY_FUNCTIONS: FrozenSet[str] = frozenset("""
abs absolute add arccos arccosh arcsin arcsinh arctan arctan2 arctanh around array asarray bitwise_and
bitwise_not bitwise_or bitwise_xor broadcast_to cbrt ceil clip concatenate conj conjugate copysign cos cosh
cumprod cumsum deg2rad diag diagonal divide dot einsum equal exp exp2 expand_dims expm1 eye flip floor
floor_divide fmax fmin full full_like greater greater_equal heaviside hypot imag inner isfinite isinf isnan
kron ldexp less less_equal linspace log log10 log1p log2 logaddexp logical_and logical_not logical_or
logical_xor matmul max maximum mean min minimum mod moveaxis multiply nan_to_num negative nextafter
not_equal ones ones_like outer power prod rad2deg real reciprocal remainder repeat reshape rint round sign
signbit sin sinc sinh sqrt square squeeze stack std subtract sum swapaxes take take_along_axis tan tanh
tensordot tile trace transpose tril triu true_divide var vdot zeros zeros_like relu sigmoid softplus
log_sigmoid softmax log_softmax gelu silu swish elu selu celu leaky_relu logsumexp one_hot rsqrt mul sub
div neg pow integer_pow dot_general convert_element_type broadcast_in_dim erf erfc erf_inv lgamma digamma
solve inv det pinv cholesky solve_triangular cho_solve expm matrix_power tensorsolve tensorinv cross norm
""".split())  # the last line: jnp.linalg / jax.scipy.linalg (eigh, svd, qr, slogdet, lstsq, cho_factor give tuples)
