"""The check-grads child's inputs (a mixin of GradChecker, loaded by its path; never imported by
vjplint): values moved into the domain being tried (DOMAINS), the recorded calls of the project's
own runs (vjplint.record) with their Python scalars and traced shapes, and made-up values where a
recording gave only shapes.
"""

import importlib.util
import inspect
import os
import sys
import zlib


def _load(folder, name):
    """vjplint/<folder>/<name>.py, loaded by its path once per process: the check runs as a script
    under `python -I` (or inside the recorded process), where vjplint need not be importable."""
    key = "_vjplint_{}_{}".format(folder, name)
    if key not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), folder, name + ".py")
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[key]
            raise
    return sys.modules[key]


P = _load("verify", "process")
V = _load("verify", "verifier")
Unverifiable, describe_exc = P.Unverifiable, P.describe_exc

class Inputs:
    """How GradChecker makes its inputs (overrides of the harness Verifier's)."""

    # -- input domains --------------------------------------------------------------------------
    def make_value(self, spec, choices, sample, slot):
        value = super().make_value(spec, choices, sample, slot)
        if isinstance(slot, int) and spec.get("domain") == "unit":
            # The module's caller normalises this argument: its domain, not a guessed one.
            saved, self.domain = self.domain, ("unit",)
            try:
                return self.in_domain(value)
            finally:
                self.domain = saved
        if self.domain is None or not isinstance(slot, int) or slot not in self.synth_params:
            return value
        return self.in_domain(value)

    def in_domain(self, value):
        """A synthesised value (drawn from (0.25, 1.75)) moved into the current domain."""
        np, jnp, how = self.np, self.jnp, self.domain
        scalar = isinstance(value, float)
        if not scalar and not (hasattr(value, "dtype") and jnp.issubdtype(value.dtype, jnp.floating)):
            return value
        a = np.asarray(value, dtype=np.float64)
        u = (a - 0.25) / 1.5
        if how[0] == "interval" or a.ndim == 0 or a.size == 0:
            lo, hi = (how[1], how[2]) if how[0] == "interval" else (0.05, 0.95)
            b = lo + u * (hi - lo)
        elif how[0] == "unit":
            c = a - 1.0
            b = c / np.maximum(np.linalg.norm(c, axis=-1, keepdims=True), 1e-3)
        else:
            b = a / a.sum(axis=-1, keepdims=True)
        return float(b) if scalar else jnp.asarray(b, dtype=value.dtype)

    # -- recorded inputs (vjplint.record) ---------------------------------------------------------
    def make_samples(self):
        """Recorded arguments first (after [tool.vjplint.verify] examples, which the user names
        explicitly), then EXAMPLE_ARGS(), call sites and probing (the harness's order)."""
        recorded = self.plan.get("recorded")
        if recorded and not self.plan.get("example"):
            samples = self.recorded_samples(recorded)
            if samples is not None:
                return samples
        return super().make_samples()

    def recorded_samples(self, recorded):
        """Up to three recorded calls of the first signature whose calls load (repeated when
        fewer were recorded); arguments recorded as shape and dtype only (traced ones) get
        made-up values of that shape, which count as assumed."""
        import base64
        import pickle

        target = getattr(self.fo, "fun", self.fo)
        try:
            self.signature = inspect.signature(target)
        except (TypeError, ValueError):
            self.signature = None
        self.recorded_error = ""
        for group in recorded["signatures"]:
            try:  # live values (checked in the recording process) or pickled calls
                calls = group.get("values") or [pickle.loads(base64.b64decode(c)) for c in group["calls"]]
            except Exception as exc:
                self.recorded_error = describe_exc(exc)
                continue
            made = set()
            samples = []
            for k in range(V.BATCH):
                args = list(calls[k % len(calls)])
                for i, value in enumerate(args):
                    value = args[i] = self.plain_scalars(value)
                    filled = self.fill_abstract(value, k, i)
                    if filled is not value:
                        made.add(i)
                    args[i] = filled
                samples.append(args)
            seen = "{} call{} seen in the project's runs".format(group["count"], "s" if group["count"] != 1 else "")
            try:
                samples = self.samples_from_args(samples, "recorded: {}{}".format(seen, self.plan.get("replayed", "")))
            except Unverifiable as exc:
                self.recorded_error = str(exc)
                continue
            for i in made:
                self.inputs[i]["source"] = "assumed: values at a recorded shape ({})".format(seen)
            self.synth_params = set(made)
            return samples
        return None

    def plain_scalars(self, value):
        """JAX's typed Python scalars (a float subclass carrying a dtype, as JAX passes literals)
        as NumPy scalars of that dtype: their dtype must survive the comparison with jit."""
        np = self.np

        def one(x):
            if isinstance(x, (float, int)) and type(x) not in (float, int, bool) and hasattr(x, "dtype"):
                return np.asarray(x, dtype=str(x.dtype))
            return x
        return self.jax.tree_util.tree_map(one, value)

    def fill_abstract(self, value, sample, slot):
        """`value` with every shape-only marker replaced by values of that shape."""
        np, jax = self.np, self.jax

        def marker(x):
            # `x[0]` compared only as a string: a 3-tuple of arrays (pmwd's particle state) is data
            return isinstance(x, tuple) and len(x) == 3 and isinstance(x[0], str) and x[0] == "__vjplint_abstract__"
        if not any(marker(x) for x in jax.tree_util.tree_leaves(value, is_leaf=marker)):
            return value
        rng = np.random.default_rng([zlib.crc32(self.plan["qualname"].encode()), sample, slot])

        def fill(x):
            if not marker(x):
                return x
            made = self.random_array(rng, tuple(x[1]), x[2])
            return self.in_domain(made) if self.domain is not None else made
        return jax.tree_util.tree_map(fill, value, is_leaf=marker)

