"""The names a finding needs, in one table: the byte prefilter (the engine, the pre-commit fast
path, the server's project index) and the regions' search all read them here. Imports nothing, so
that vjplint.batch.fastpath (os and sys only) can read it too; a test keeps PREFILTER_NAMES equal
to the union of the rules' TRIGGERS."""

from typing import Tuple

# The names a finding needs in the file's bytes; files without any are skipped unparsed.
PREFILTER_NAMES: Tuple[bytes, ...] = (b"custom_vjp", b"custom_jvp", b"custom_gradient", b"JVPTracer",
                                      b"direct_linearize", b"DIRECT_LINEARIZE",
                                      b"defvjp", b"defjvp",  # rules registered on a plain function
                                      b"custom_transforms",  # the pre-2020 API (VJP403)
                                      b"odeint",  # a library custom_vjp (VJP315's LIBRARY_VJP)
                                      b"pure_callback", b"io_callback")  # differentiated host callbacks (VJP370)
# The names above that no custom derivative needs: a file holding only these was never linted
# before VJP370, and only VJP370 judges it (its other noqa comments may be for a rule of this
# file registered by another module: vjplint.lint.engine._apply_noqa).
CALLBACK_NAMES: Tuple[bytes, ...] = (b"pure_callback", b"io_callback")
CALLBACK_CODES = frozenset({"VJP370"})
# What VJP370 needs besides them: a differentiation's name (its NEEDS; the engine skips a file
# the callback names alone admit when this is absent).
DIFFERENTIATION_PATTERN = r"grad|jvp|vjp|jacrev|jacfwd|hessian|linearize"


# Identifiers that extend a prefilter name and still name what a rule reads (`f.defjvps`, the
# pre-2020 `jax.defvjp_all`); every other extension (`custom_vjp_call_p`, `process_custom_jvp_call`,
# `ad.defjvp2`, TensorFlow's `experimental_custom_gradients`) is another API that no rule reads.
EXTENDED_NAMES: Tuple[bytes, ...] = (b"defjvps", b"defvjp_all", b"defjvp_all")
