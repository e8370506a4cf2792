"""The check-grads child's numbers (a mixin of GradChecker, loaded by its path; never imported by
vjplint): central finite differences element by element or along random directions, the
comparisons with tolerances by dtype, and the values they are made of.
"""

# Central differences: step (relative to max(1, |x|)), and the tolerance (atol + rtol * scale).
FD = {"float64": (1e-6, 1e-5, 1e-8), "float32": (1e-3, 3e-2, 3e-3)}
SAME = {"float64": 1e-9, "float32": 2e-5}  # eager vs jit/vmap, primal vs the rule's primal output
MAX_ELEMENTS = 32  # per argument: element by element up to this size, random directions beyond
DIRECTIONS = 4


class Numerics:
    """Finite differences, comparisons and values: what GradChecker's checks measure with."""

    # -- finite differences -----------------------------------------------------------------------
    def fast(self, f):
        """`f` under jit when that runs and agrees with the eager value (finite differences call it
        often); `f` itself otherwise."""
        jax = self.jax
        try:
            jitted = jax.jit(f)
            a, e = jax.block_until_ready(jitted(*self.vals)), jax.block_until_ready(f(*self.vals))
            if self.same(a, e, SAME[self.prec] * 10)[0]:
                return jitted
        except Exception:
            pass
        return f

    def fd_compare(self, S, j, ads):
        """Central differences of the scalar function S along argument j, and each derivative of
        `ads` brought to the same form: element by element for small arguments (elements that
        are not finite, such as an infinite initial value, are left out), along random
        directions beyond. Returns (fd, [ad, ...]) as flat float64 arrays."""
        np, jax = self.np, self.jax
        eps = self.fd_step()
        value = self.vals[j]
        leaves, treedef = jax.tree_util.tree_flatten(value)
        size = sum(int(np.size(x)) for x in leaves)
        flats = [self.flat(ad) for ad in ads]
        if size <= MAX_ELEMENTS:
            fd_flat, keep, offset = [], [], 0
            for li, leaf in enumerate(leaves):
                base = np.asarray(leaf, dtype=np.float64).ravel()
                for k in range(base.size):
                    if not np.isfinite(base[k]):
                        continue
                    h = eps * max(1.0, abs(base[k]))
                    plus, minus = base.copy(), base.copy()
                    plus[k] += h
                    minus[k] -= h
                    fp = self.scalar(S, j, treedef, leaves, li, plus)
                    fm = self.scalar(S, j, treedef, leaves, li, minus)
                    fd_flat.append((fp - fm) / (2 * h))
                    keep.append(offset + k)
                offset += base.size
            return np.asarray(fd_flat), [a[keep] if a.size == offset else a for a in flats]
        fd, projected = [], [[] for _ in flats]
        arrays = [np.asarray(x, dtype=np.float64) for x in leaves]
        finite = [np.isfinite(x) for x in arrays]
        big = max([1.0] + [float(np.max(np.abs(x[m]))) for x, m in zip(arrays, finite) if m.any()])
        for _ in range(DIRECTIONS):
            d = [self.rng.standard_normal(np.shape(x)) * m for x, m in zip(arrays, finite)]
            h = eps * big
            plus = [np.where(m, x + h * di, x) for x, di, m in zip(arrays, d, finite)]
            minus = [np.where(m, x - h * di, x) for x, di, m in zip(arrays, d, finite)]
            fp = self.scalar_tree(S, j, treedef, leaves, plus)
            fm = self.scalar_tree(S, j, treedef, leaves, minus)
            fd.append((fp - fm) / (2 * h))
            direction = np.concatenate([di.ravel() for di in d]) if d else np.zeros(0)
            for p, a in zip(projected, flats):
                p.append(float(np.dot(np.nan_to_num(a, nan=np.nan), direction)) if a.size == direction.size
                         else float("nan"))
        return np.asarray(fd), [np.asarray(p) for p in projected]

    def errors(self, ad, fd, rtol, atol):
        """(max rel. error, ok): ok when both are finite and |ad - fd| <= atol + rtol * scale."""
        np = self.np
        if ad.shape != fd.shape:
            return float("inf"), False
        if not (np.all(np.isfinite(ad)) and np.all(np.isfinite(fd))):
            return float("inf"), False
        diff = float(np.max(np.abs(ad - fd))) if ad.size else 0.0
        scale = max(float(np.max(np.abs(fd))), float(np.max(np.abs(ad)))) if fd.size else 0.0
        return diff / max(scale, 1e-300) if diff else 0.0, diff <= atol + rtol * scale

    def rebuild(self, like, flat):
        jnp = self.jnp
        if isinstance(like, float):
            return float(flat.reshape(()))
        if self.reference is not None and self.is_real_float(like):  # kept in float64 for the reference device
            return self.np.asarray(flat, dtype=self.np.float64).reshape(self.np.shape(like))
        return jnp.asarray(flat.reshape(self.np.shape(like)), dtype=like.dtype)

    def reference_call(self, f, args):
        """f(*args): a reference (finite differences, the primal's autodiff). Where the default
        device has no float64 (self.reference: a CPU device), on that CPU device in float64, the
        real floating-point arguments widened there; otherwise where and as the rule runs."""
        jax, np = self.jax, self.np
        if self.reference is None:
            return f(*args)

        def host(x):
            if isinstance(x, (bool, int, float, complex)) or not hasattr(x, "dtype"):
                return x
            value = np.asarray(x)
            return value.astype(np.float64) if value.dtype.kind == "f" else value
        with jax.enable_x64(True), jax.default_device(self.reference):
            return jax.block_until_ready(f(*jax.tree_util.tree_map(host, list(args))))

    def fd_step(self):
        """The central differences' relative step: float64's where the references run in float64."""
        return FD["float64" if self.reference is not None else self.prec][0]

    def scalar(self, S, j, treedef, leaves, li, flat):
        new = list(leaves)
        new[li] = self.rebuild(leaves[li], flat)
        return self.scalar_tree(S, j, treedef, leaves, [self.np.asarray(x, dtype=self.np.float64) for x in new])

    def scalar_tree(self, S, j, treedef, leaves, arrays):
        new = [self.rebuild(like, self.np.asarray(a, dtype=self.np.float64)) for like, a in zip(leaves, arrays)]
        vals = list(self.vals)
        vals[j] = self.jax.tree_util.tree_unflatten(treedef, new)
        return float(self.np.real(self.np.asarray(self.reference_call(S, vals))))

    def fd_directional(self, f, t):
        """(f(x + h t) - f(x - h t)) / 2h, leaf by leaf, as float64 NumPy arrays."""
        np, jax = self.np, self.jax
        eps = self.fd_step()
        finite = [np.asarray(x, dtype=np.float64) for x in jax.tree_util.tree_leaves(self.vals) if np.size(x)]
        big = max([1.0] + [float(np.max(np.abs(x[np.isfinite(x)]))) for x in finite if np.isfinite(x).any()])
        h = eps * big
        plus = [self.shift(v, d, h) for v, d in zip(self.vals, t)]
        minus = [self.shift(v, d, -h) for v, d in zip(self.vals, t)]
        fp, fm = self.reference_call(f, plus), self.reference_call(f, minus)
        return jax.tree_util.tree_map(lambda a, b: (np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
                                      / (2 * h), fp, fm)

    def shift(self, value, direction, h):
        jax, np = self.jax, self.np
        return jax.tree_util.tree_map(
            lambda x, d: self.rebuild(x, np.asarray(x, dtype=np.float64) + h * np.asarray(d, dtype=np.float64)),
            value, direction)


    # -- comparison helpers -----------------------------------------------------------------------
    def same(self, actual, expected, rtol):
        """(ok, max rel. error) for two trees of the same structure: |a - e| <= rtol * max|e| + rtol."""
        np, jax = self.np, self.jax
        worst, ok = 0.0, True
        for a, e in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)):
            a, e = np.asarray(a), np.asarray(e)
            if a.shape != e.shape:
                return False, float("inf")
            if e.dtype.kind not in "fc":
                if not np.array_equal(a, e):
                    return False, float("inf")
                continue
            a64, e64 = a.astype(np.complex128), e.astype(np.complex128)
            nan = np.isnan(a64) | np.isnan(e64)
            if (np.isnan(a64) != np.isnan(e64)).any():
                return False, float("inf")
            diff = float(np.max(np.where(nan, 0, np.abs(a64 - e64)))) if a.size else 0.0
            scale = float(np.max(np.where(nan, 0, np.abs(e64)))) if e.size else 0.0
            if not np.isfinite(diff):
                diff = 0.0 if np.array_equal(a64, e64) else float("inf")
            both = max(scale, float(np.max(np.where(nan, 0, np.abs(a64)))) if a.size else 0.0)
            worst = max(worst, diff / max(both, 1e-300) if diff else 0.0)
            if diff > rtol * max(scale, 1.0):
                ok = False
        return ok, worst

    def structure_problem(self, actual, expected):
        np, jax = self.np, self.jax
        ta, te = jax.tree_util.tree_structure(actual), jax.tree_util.tree_structure(expected)
        if ta != te:
            return "has the structure {}, the primal's is {}".format(ta, te)
        for a, e in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)):
            if np.shape(a) != np.shape(e):
                return "has shape {}, expected {}".format(tuple(np.shape(a)), tuple(np.shape(e)))
            da, de = self.dtype_of(a), self.dtype_of(e)
            if da != de:
                return "has dtype {}, expected {}".format(da, de)
        return ""

    def worst_label(self, actual, expected):
        np = self.np
        worst, label = -1.0, ""
        for j, name in enumerate(self.names):
            a = [np.asarray(x, dtype=np.float64) for x in self.jax.tree_util.tree_leaves(actual[j])]
            e = [np.asarray(x, dtype=np.float64) for x in self.jax.tree_util.tree_leaves(expected[j])]
            d = max([float(np.max(np.abs(x - y))) if x.size else 0.0 for x, y in zip(a, e)] or [0.0])
            if d > worst:
                worst, label = d, " for `{}`".format(name)
        return label

    # -- values -----------------------------------------------------------------------------------
    def as_jax_arrays(self, value):
        """NumPy arrays among the differentiated values as JAX arrays, as JAX code hands them to a
        rule: a test may pass NumPy arrays (or the recorder keep them so), and a rule written for
        JAX arrays can break on one where JAX itself never gives it one (equinox's `x**ω` is
        NumPy's operator on an ndarray: an object array). Float64 stays float64 only where x64 is
        on; elsewhere (a TPU) it becomes the default float, as `jnp.asarray` would make it."""
        np, jnp = self.np, self.jnp

        def one(x):
            if type(x) is not np.ndarray or x.dtype.kind not in "fc":
                return x
            if x.dtype == np.float64 and not self.jax.config.jax_enable_x64:
                return jnp.asarray(x, dtype=jnp.float32)
            if x.dtype == np.complex128 and not self.jax.config.jax_enable_x64:
                return jnp.asarray(x, dtype=jnp.complex64)
            return jnp.asarray(x)
        return self.jax.tree_util.tree_map(one, value)

    def cast_like(self, tangents, primals):
        """Each floating tangent leaf at its primal leaf's dtype (jax.jvp requires them equal)."""
        jax, jnp = self.jax, self.jnp

        def one(t, p):
            dtype = getattr(p, "dtype", None)
            if dtype is None or getattr(t, "dtype", None) == dtype or not jnp.issubdtype(dtype, jnp.inexact):
                return t
            return jnp.asarray(t, dtype=dtype)
        return [jax.tree_util.tree_map(one, t, p) for t, p in zip(tangents, primals)]

    def widen(self, value):
        jnp = self.jnp

        def one(x):
            if isinstance(x, float):
                return x
            if self.dtype_of(x) in ("float32", "float16", "bfloat16"):
                return jnp.asarray(x, dtype=jnp.float64)
            return x
        return self.jax.tree_util.tree_map(one, value)

    def random_like(self, value):
        jnp = self.jnp
        np = self.np  # zero where the value is not finite (an infinite initial value stays put)
        return self.jax.tree_util.tree_map(
            lambda x: (float(self.rng.uniform(0.5, 1.5)) if np.isfinite(x) else 0.0) if isinstance(x, float) else
            jnp.asarray(self.rng.uniform(0.5, 1.5, np.shape(x)) * np.isfinite(np.asarray(x)), dtype=x.dtype), value)

    def scale(self, value, factor):
        return self.jax.tree_util.tree_map(lambda x: x * factor, value)

    def norm(self, tree):
        np = self.np
        return float(np.sqrt(sum(float(np.sum(np.abs(np.asarray(x, dtype=np.float64)) ** 2))
                                 for x in self.jax.tree_util.tree_leaves(tree))))

    def dtype_of(self, x):
        if isinstance(x, float):
            return "float64" if self.x64 else "float32"
        return str(getattr(x, "dtype", type(x).__name__))

    def is_real_float(self, value):
        leaves = self.jax.tree_util.tree_leaves(value)
        if not leaves:
            return False
        for leaf in leaves:
            if isinstance(leaf, (bool, int, complex)):
                return False
            if isinstance(leaf, float):
                continue
            dtype = getattr(leaf, "dtype", None)
            if dtype is None or not self.jnp.issubdtype(dtype, self.jnp.floating):
                return False
        return True

    @staticmethod
    def num(value):
        return "{:.3g}".format(value)

