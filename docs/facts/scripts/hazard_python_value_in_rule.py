"""VJP344: a custom_vjp rule that turns a traced value into a Python value (float, .item(), .tolist(),
if, range, np.asarray, a format spec, bool), in fwd, on a residual in bwd and on the cotangent, under
eager grad, jit(grad) and eager; and the same conversions in a custom_jvp rule on its primals and tangents
(the tangent case is VJP335's). Run: JAX_PLATFORMS=cpu python hazard_python_value_in_rule.py (JAX 0.10.2:
every fwd/bwd conversion runs under grad and raises under jit_grad; the tangent ones raise under grad)."""
import jax, jax.numpy as jnp, numpy as np
def mk(where, op):
    @jax.custom_vjp
    def f(x): return jnp.sin(x)
    def fwd(x):
        if where=='fwd': s = op(x)
        return jnp.sin(x), x
    def bwd(x, g):
        if where=='bwd_res': s = op(x)
        if where=='bwd_g': s = op(g)
        return (g*jnp.cos(x),)
    f.defvjp(fwd, bwd); return f
ops = {'float': lambda v: float(jnp.max(v)), 'item': lambda v: jnp.max(v).item(), 'tolist': lambda v: v.tolist(),
       'if': lambda v: 1 if jnp.max(v) > 0 else 0, 'range': lambda v: list(range(int(jnp.max(v)))), 'np.asarray': lambda v: np.asarray(v),
       'fstr': lambda v: f"{jnp.max(v):.3f}", 'bool': lambda v: bool(jnp.all(v > -5))}
x = jnp.array([1.5, 2.0])
for where in ('fwd','bwd_res','bwd_g'):
    for name, op in ops.items():
        out=[]
        for tr, fn in (('grad', lambda f: jax.grad(lambda x: f(x).sum())(x)), ('jit_grad', lambda f: jax.jit(jax.grad(lambda x: f(x).sum()))(x)), ('eager', lambda f: f(x))):
            try: fn(mk(where, op)); out.append(f"{tr}:ok")
            except Exception as e: out.append(f"{tr}:{type(e).__name__}")
        print(where, name, out)
# custom_jvp
def mkj(op, on):
    @jax.custom_jvp
    def f(x): return jnp.sin(x)
    @f.defjvp
    def fj(p, t):
        (x,), (dx,) = p, t
        s = op(x if on=='p' else dx)
        return jnp.sin(x), jnp.cos(x)*dx
    return f
for on in ('p','t'):
    for name, op in ops.items():
        out=[]
        for tr, fn in (('grad', lambda f: jax.grad(lambda x: f(x).sum())(x)), ('jvp', lambda f: jax.jvp(f, (x,), (x,))), ('jit', lambda f: jax.jit(f)(x)), ('eager', lambda f: f(x))):
            try: fn(mkj(op, on)); out.append(f"{tr}:ok")
            except Exception as e: out.append(f"{tr}:{type(e).__name__}")
        print('jvp', on, name, out)
