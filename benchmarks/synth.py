"""Generate Python trees of N times a real tree's size, for the scaling benchmark.

Two ways:
  python benchmarks/synth.py OUT --scale 4                   synthetic code in the JAX tree's
                                                             proportions (1,044 files per 1x, 9.5 %
                                                             with custom derivatives, 560 lines
                                                             per file on average, candidates ~4.5x
                                                             bigger), deterministic (--seed)
  python benchmarks/synth.py OUT --scale 4 --from TREE       N copies of a real tree's .py files

The synthetic files parse on every supported Python and carry the custom-derivative spellings
vjplint recognises (decorators, partial(...) with nondiff_argnums, defvjp/defjvp, call sites
under jit), some correct and some with the bugs the rules report, amid ordinary numeric code.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
from pathlib import Path
from typing import Iterator, List

# The JAX tree (jax-ml/jax export used throughout the benchmarks): 1,044 files, 99 of which
# mention custom_vjp/custom_jvp; 584,917 lines; candidates are the big files (187,089 lines).
FILES_PER_SCALE = 1044
CANDIDATE_SHARE = 99 / 1044
MEAN_LINES_PLAIN = 421
MEAN_LINES_CANDIDATE = 1890
FILES_PER_DIRECTORY = 30


def _name(rng: random.Random, prefix: str) -> str:
    syllables = ("ka", "lo", "mi", "ren", "tor", "vex", "zu", "ple", "gra", "dan", "sho", "qui")
    return prefix + "".join(rng.choice(syllables) for _ in range(3)) + str(rng.randrange(1000))


def _filler_function(rng: random.Random) -> List[str]:
    name = _name(rng, "f_")
    args = [_name(rng, "a_") for _ in range(rng.randint(1, 4))]
    lines = [f"def {name}({', '.join(args)}, *, scale=1.0):",
             f'    """Combine {", ".join(args)} elementwise and reduce (generated)."""',
             f"    acc = jnp.zeros_like({args[0]})"]
    for i in range(rng.randint(3, 14)):
        a, b = rng.choice(args), rng.choice(args)
        op = rng.choice(("+", "-", "*"))
        fn = rng.choice(("jnp.sin", "jnp.tanh", "jnp.exp", "jnp.abs", "np.float32"))
        if i % 5 == 4:
            lines += [f"    for step in range({rng.randint(2, 9)}):",
                      f"        acc = acc {op} {fn}({a}) * step  # accumulate"]
        elif i % 7 == 6:
            lines += [f"    if {a}.ndim > {rng.randint(0, 3)}:",
                      f"        acc = acc.reshape(-1)",
                      f"    else:",
                      f"        acc = acc {op} {b}"]
        else:
            lines.append(f"    acc = acc {op} {fn}({a} {op} {b}) * scale")
    lines += ["    return acc.sum()", "", ""]
    return lines


def _filler_class(rng: random.Random) -> List[str]:
    name = _name(rng, "C").capitalize()
    lines = [f"class {name}:", f'    """A small container (generated)."""', "",
             "    def __init__(self, width: int, depth: int = 2):",
             "        self.width = width", "        self.depth = depth",
             "        self.params = [np.ones((width, width)) for _ in range(depth)]", ""]
    for _ in range(rng.randint(1, 4)):
        method = _name(rng, "m_")
        lines += [f"    def {method}(self, x):",
                  "        for w in self.params:",
                  "            x = jnp.tanh(x @ w)",
                  "        return x", ""]
    return lines + [""]


def _derivative(rng: random.Random) -> List[str]:
    """One custom derivative in one of several spellings; about a third have a bug a rule finds."""
    name = _name(rng, "op_")
    kind = rng.randrange(5)
    if kind == 0:  # correct custom_vjp
        return [
            "@jax.custom_vjp", f"def {name}(x, y):", "    return jnp.sin(x) * y", "",
            f"def {name}_fwd(x, y):", f"    return {name}(x, y), (jnp.cos(x), x, y)", "",
            f"def {name}_bwd(res, g):", "    cos_x, x, y = res", "    return (cos_x * g * y, jnp.sin(x) * g)", "",
            f"{name}.defvjp({name}_fwd, {name}_bwd)", "", "",
        ]
    if kind == 1:  # static int in nondiff_argnums, used as a shape: correct
        return [
            "@partial(jax.custom_vjp, nondiff_argnums=(1,))", f"def {name}(x, axis):",
            "    return jnp.cumsum(x, axis=axis)", "",
            f"def {name}_fwd(x, axis):", f"    return {name}(x, axis), None", "",
            f"def {name}_bwd(axis, res, g):", "    return (jnp.flip(jnp.cumsum(jnp.flip(g, axis), axis), axis),)", "",
            f"{name}.defvjp({name}_fwd, {name}_bwd)", "", "",
        ]
    if kind == 2:  # an array in nondiff_argnums (VJP101)
        return [
            "@partial(jax.custom_vjp, nondiff_argnums=(1,))", f"def {name}(x, weight):",
            "    return x * jnp.asarray(weight)", "",
            f"def {name}_fwd(x, weight):", f"    return {name}(x, weight), None", "",
            f"def {name}_bwd(weight, res, g):", "    return (g * weight,)", "",
            f"{name}.defvjp({name}_fwd, {name}_bwd)", "", "",
        ]
    if kind == 3:  # custom_jvp, correct
        return [
            "@jax.custom_jvp", f"def {name}(x):", "    return jnp.log1p(jnp.exp(x))", "",
            f"@{name}.defjvp", f"def {name}_jvp(primals, tangents):", "    (x,), (t,) = primals, tangents",
            f"    return {name}(x), t * jax.nn.sigmoid(x)", "", "",
        ]
    # a call site under jit passing a traced value to a nondiff position (VJP104)
    return [
        "@partial(jax.custom_vjp, nondiff_argnums=(0,))", f"def {name}(n, x):", "    return x * n", "",
        f"def {name}_fwd(n, x):", f"    return {name}(n, x), None", "",
        f"def {name}_bwd(n, res, g):", "    return (g * n,)", "",
        f"{name}.defvjp({name}_fwd, {name}_bwd)", "", "",
        "@jax.jit", f"def use_{name}(x, n):", f"    return {name}(n, x)", "", "",
    ]


HEADER = ['"""Generated module for the vjplint scaling benchmark."""', "",
          "from functools import partial", "", "import jax", "import jax.numpy as jnp",
          "import numpy as np", "", ""]
PLAIN_HEADER = ['"""Generated module for the vjplint scaling benchmark."""', "",
                "import jax.numpy as jnp", "import numpy as np", "", ""]


def synthetic_file(rng: random.Random, candidate: bool) -> str:
    mean = MEAN_LINES_CANDIDATE if candidate else MEAN_LINES_PLAIN
    target = max(20, int(rng.lognormvariate(0, 0.8) * mean / 1.377))  # E[lognormal(0, .8)] = 1.377
    lines = list(HEADER if candidate else PLAIN_HEADER)
    while len(lines) < target:
        if candidate and rng.random() < 0.12:
            lines += _derivative(rng)
        elif rng.random() < 0.2:
            lines += _filler_class(rng)
        else:
            lines += _filler_function(rng)
    return "\n".join(lines) + "\n"


def _relative_paths(count: int) -> Iterator[Path]:
    for i in range(count):
        directory = i // FILES_PER_DIRECTORY
        yield Path(f"pkg_{directory // 10:03d}") / f"sub_{directory % 10}" / f"mod_{i % FILES_PER_DIRECTORY:02d}.py"


def generate_synthetic(out: Path, scale: float, seed: int = 0) -> int:
    rng = random.Random(seed)
    count = int(FILES_PER_SCALE * scale)
    candidates = set(rng.sample(range(count), round(count * CANDIDATE_SHARE)))
    for i, relative in enumerate(_relative_paths(count)):
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(synthetic_file(rng, i in candidates))
    return count


def copy_tree(source: Path, out: Path, scale: int) -> int:
    """`scale` copies of every .py/.pyi file of `source` (excluded directories are vjplint's own
    business: the copies keep the tree's layout, so they apply to each copy alike)."""
    files = [p for p in sorted(source.rglob("*")) if p.suffix in (".py", ".pyi") and p.is_file()
             and not any(part.startswith(".") for part in p.relative_to(source).parts)]
    for k in range(scale):
        for path in files:
            target = out / f"copy_{k:02d}" / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return len(files) * scale


def tree_stats(root: Path) -> dict:
    files = lines = size = 0
    for directory, _, names in os.walk(root):
        for name in names:
            if name.endswith((".py", ".pyi")):
                data = Path(directory, name).read_bytes()
                files += 1
                size += len(data)
                lines += data.count(b"\n")
    return {"files": files, "lines": lines, "bytes": size}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="directory to create (must not exist)")
    parser.add_argument("--scale", type=float, default=1, help="size in JAX trees (default 1)")
    parser.add_argument("--from", dest="source", type=Path, default=None, help="copy this real tree instead")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.out.exists():
        parser.error(f"{args.out} exists")
    args.out.mkdir(parents=True)
    if args.source is not None:
        copy_tree(args.source, args.out, max(1, int(args.scale)))
    else:
        generate_synthetic(args.out, args.scale, args.seed)
    stats = tree_stats(args.out)
    print(f"{args.out}: {stats['files']} files, {stats['lines']} lines, {stats['bytes'] / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
