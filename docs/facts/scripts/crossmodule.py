"""Facts for cross-module hazards (docs/facts/crossmodule.md): a tiny package is written to a
temporary directory, and each construct is run from an importing module, on JAX 0.10.2 (CPU)."""
import os
import subprocess
import sys
import tempfile
import textwrap

LIB = '''
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def gather_rows(x, idx):
    return x[idx]
gather_rows.defvjp(lambda x, idx: (x[idx], jnp.zeros_like(x)), lambda idx, z, g: (z.at[idx].add(g),))

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply(kernel, v):
    return kernel(v)
apply.defvjp(lambda k, v: (k(v), v), lambda k, v, g: jax.vjp(k, v)[1](g))

def make_decay(rate):
    @jax.custom_vjp
    def decay(y):
        return jnp.exp(-rate * y)
    decay.defvjp(lambda y: (jnp.exp(-rate * y), jnp.exp(-rate * y)), lambda out, g: (-rate * out * g,))
    return decay

@jax.custom_vjp
def unregistered(x):
    return jnp.cos(x)
def unregistered_fwd(x):
    return jnp.cos(x), jnp.sin(x)
def unregistered_bwd(s, g):
    return (-s * g,)

@jax.custom_vjp
def registered_elsewhere(x):
    return jnp.sin(x)
def registered_elsewhere_fwd(x):
    return jnp.sin(x), jnp.cos(x)
def registered_elsewhere_bwd(c, g):
    return (c * g,)
'''

PARAMS = '''
import jax.numpy as jnp
ROWS = jnp.array([0, 2])
def init_table():
    return jnp.array([0, 2])
def stored_table():
    return ROWS
'''

CASES = {
    "XM-1 traced index from a jitted caller in another module": '''
        import jax, jax.numpy as jnp
        from lib import gather_rows
        f = jax.jit(lambda x, i: jnp.sum(gather_rows(x, i) ** 2))
        print(jax.grad(f)(jnp.arange(4.0), jnp.array([0, 2])))''',
    "XM-2 static index from a jitted caller (look-alike)": '''
        import jax, jax.numpy as jnp
        from functools import partial
        from lib import gather_rows
        f = partial(jax.jit, static_argnums=1)(lambda x, i: jnp.sum(gather_rows(x, i) ** 2))
        print(jax.grad(f)(jnp.arange(4.0), 2))''',
    "XM-3 kernel factory closing over a traced width, grad of jit": '''
        import jax, jax.numpy as jnp
        from lib import apply
        make = lambda w: (lambda d: jnp.exp(-d * d / w))
        f = jax.jit(lambda w: jnp.sum(apply(make(w), jnp.arange(3.0))))
        print(jax.grad(f)(0.5))''',
    "XM-4 factory parameter differentiated by the caller": '''
        import jax, jax.numpy as jnp
        from lib import make_decay
        print(jax.grad(lambda r, y: jnp.sum(make_decay(r)(y)))(0.8, jnp.ones(2)))''',
    "XM-5 factory given a Python constant (look-alike)": '''
        import jax, jax.numpy as jnp
        from lib import make_decay
        print(jax.grad(lambda y: jnp.sum(make_decay(0.8)(y)))(jnp.ones(2)))''',
    "XM-6 custom_vjp with fwd/bwd beside it, never registered, called from another module": '''
        import jax.numpy as jnp
        from lib import unregistered
        print(unregistered(jnp.float32(0.7)))''',
    "XM-7 rules registered by another module before use (look-alike)": '''
        import jax, jax.numpy as jnp
        from lib import registered_elsewhere, registered_elsewhere_fwd, registered_elsewhere_bwd
        registered_elsewhere.defvjp(registered_elsewhere_fwd, registered_elsewhere_bwd)
        print(jax.grad(registered_elsewhere)(0.7))''',
    "XM-8 defvjp on a plain function": '''
        import jax.numpy as jnp
        def f(x):
            return jnp.sin(x)
        f.defvjp(lambda x: (f(x), x), lambda x, g: (g,))''',
    "XM-9 @f.defjvp on a plain function": '''
        import jax.numpy as jnp
        def f(x):
            return jnp.sin(x)
        @f.defjvp
        def f_jvp(p, t):
            return f(p[0]), t[0]''',
    "XM-10 a function of another module building a new jnp array, called inside jit, passed to nondiff": '''
        import jax, jax.numpy as jnp
        from lib import gather_rows
        from params import init_table
        f = jax.jit(lambda x: jnp.sum(gather_rows(x, init_table())))
        print(f(jnp.arange(4.0)))''',
    "XM-11 the same function returning a module-level array (look-alike for the tracer)": '''
        import jax, jax.numpy as jnp
        from lib import gather_rows
        from params import stored_table
        f = jax.jit(lambda x: jnp.sum(gather_rows(x, stored_table())))
        print(f(jnp.arange(4.0)))''',
    "XM-12 defvjp on the function a call-form custom_vjp wraps": '''
        import jax, jax.numpy as jnp
        def impl(x):
            return jnp.sin(x)
        g = jax.custom_vjp(impl)
        impl.defvjp(lambda x: (impl(x), x), lambda x, t: (t,))''',
}

with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "lib.py"), "w") as fh:
        fh.write(LIB)
    with open(os.path.join(tmp, "params.py"), "w") as fh:
        fh.write(PARAMS)
    for label, code in CASES.items():
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp, capture_output=True, text=True,
                              env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": tmp})
        if proc.returncode == 0:
            print(f"{label}: OK")
        else:
            lines = [ln for ln in proc.stderr.strip().splitlines() if ln and not ln.startswith((" ", "For simplicity",
                                                                                             "----", "The above"))]
            last = next((ln for ln in reversed(lines) if ("Error" in ln or "Exception" in ln) and not ln.startswith("See ")), lines[-1])
            print(f"{label}: {last[:200]}")
