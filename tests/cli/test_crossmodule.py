"""Cross-module value inference (vjplint.project.cross_values, vjplint.facts.crossmodule): the package
tests/data/crossmodule/shop, linted as a run, reports hazards whose evidence is in another module
(a jitted caller passing a traced index, a kernel factory closing over a traced width, a factory
parameter differentiated by the caller, a custom_vjp never registered and called elsewhere), with
the caller's file and line in the message; its look-alikes (shop/calm_*) stay silent; a module
linted alone behaves as before (`lint_source` without a project); the per-file cache follows a
change in a caller, and so does the Language Server's per-file index. The eval cases
eval/cases/*/*_xmod.py run the same constructs on JAX."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, ROOT, pythonpath, run_cli

DATA = ROOT / "tests" / "data" / "crossmodule"

XMOD = [
    ("shop/ops.py", 10, 2, "VJP104",
     "`gather_rows` receives a traced value in its nondiff position 1 (`idx`) from another module: at "
     "shop/train.py:15 `picked_energy` passes `idx` (`idx` is a parameter of `picked_energy`, which is traced by "
     "`jax.jit`), so JAX raises UnexpectedTracerError there. Mark it static in that transformation, pass a Python "
     "constant, or move `idx` out of nondiff_argnums"),
    ("shop/ops.py", 11, 20, "VJP101",
     "`idx` (position 1) is in nondiff_argnums but receives an array at shop/train.py:15: `idx` (`idx` is a "
     "parameter of `picked_energy`, which is traced by `jax.jit`); a traced value here raises "
     "UnexpectedTracerError under jit, vmap or grad. Pass it as a regular argument, save it in the residuals and "
     "return None for it from bwd"),
    ("shop/ops.py", 26, 2, "VJP105",
     "the callable `make_kernel(width)` (which returns the lambda at shop/train.py:10) passed as nondiff `kernel` "
     "of `interpolate` at shop/train.py:20 captures `width`, a traced value (`width` is a parameter of `smooth`, "
     "which is traced by `jax.jit`): differentiating with respect to it raises UnexpectedTracerError ('Encountered "
     "an unexpected tracer') or CustomVJPException ('Detected differentiation of a custom_vjp function with respect "
     "to a closed-over value'), and grad of a jit fails with 'No constant handler'. Use `jax.closure_convert` and "
     "pass the constants as arguments"),
    ("shop/ops.py", 45, 25, "VJP201",
     "custom_vjp `decay` is defined inside `make_decay` and closes over `rate` (read in `decay`, `decay_fwd`, "
     "`decay_bwd`): `rate` receives tracers: `make_decay` is called at shop/train.py:24 with `rate` (`rate` is a "
     "parameter of `decay_loss`, which is traced by `jax.grad`). Differentiating `decay` with respect to `rate` "
     "fails (UnexpectedTracerError, or CustomVJPException 'Detected differentiation of a custom_vjp function with "
     "respect to a closed-over value' when the call is staged by jit/checkpoint/scan), and "
     "`jax.grad(jax.jit(...))` fails with 'No constant handler for type DynamicJaxprTracer' even when it is not "
     "differentiated. Pass `rate` as an explicit argument of `decay` (returning its cotangent (or None) from bwd), "
     "or hoist it with `jax.closure_convert`"),
    ("shop/ops.py", 58, 2, "VJP301",
     "custom_vjp `external_cos` is used in another module of this run (shop/train.py:31) but never gets its rules: "
     "no module of this run has `external_cos.defvjp(fwd, bwd)`, so calling it raises `AttributeError: No VJP "
     "defined for custom_vjp function external_cos using defvjp.` in every mode, eager included; register the "
     "rules defined here with `external_cos.defvjp(external_cos_fwd, external_cos_bwd)`"),
]

# ops.py linted alone: what vjplint said before cross-module inference, plus the factory's closure
# as a "may" (a warning): without train.py nothing shows `rate` traced, or passed only Python values.
ALONE = [
    ("shop/ops.py", 11, 20, "VJP102",
     "`idx` (position 1) is in nondiff_argnums and may be an array: it is used as array data in `x[idx]` "
     "(line 12), `x[idx]` (line 16). If it can be traced, JAX raises UnexpectedTracerError; move it to the "
     "residuals or annotate it as a static type"),
    ("shop/ops.py", 45, 25, "VJP201",
     "custom_vjp `decay` is defined inside `make_decay` and closes over `rate`, a parameter of `make_decay`, read "
     "by `decay` and used as array data by its rule `decay_bwd` (`-rate * out`). Nothing here shows `make_decay` "
     "traced, but if it is differentiated with respect to `rate`, JAX may raise (UnexpectedTracerError, or "
     "CustomVJPException 'Detected differentiation of a custom_vjp function with respect to a closed-over "
     "value'). If `rate` can be an array being differentiated, pass `rate` as an explicit argument of `decay` "
     "(returning its cotangent (or None) from bwd), or hoist it with `jax.closure_convert`"),
    ("shop/ops.py", 71, 2, "VJP301",
     "custom_vjp `external_sin` is called (line 85) but never gets its rules: this file has no "
     "`external_sin.defvjp(fwd, bwd)`, so calling it raises `AttributeError: No VJP defined for custom_vjp "
     "function external_sin using defvjp.` in every mode, eager included; register the rules defined here with "
     "`external_sin.defvjp(external_sin_fwd, external_sin_bwd)`"),
]


def _check(cwd: Path, *args: str):
    proc = run_cli("check", "--output-format", "json", "--exit-zero", *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return [(d["filename"], d["location"]["row"], d["location"]["column"], d["code"], d["message"])
            for d in json.loads(proc.stdout)]


def test_the_package_reports_hazards_whose_evidence_is_in_another_module():
    assert _check(DATA, "--no-cache", "shop") == XMOD


def test_look_alikes_called_with_python_values_stay_silent():
    assert _check(DATA, "--no-cache", "shop/calm_ops.py", "shop/calm_train.py") == []


def test_a_module_alone_is_linted_as_before():
    assert _check(DATA, "--no-cache", "shop/ops.py") == ALONE


def test_a_registration_in_another_module_counts_and_the_cache_follows_callers(tmp_path):
    root = tmp_path / "proj"
    shutil.copytree(DATA / "shop", root / "shop")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert _check(root, *cache, "shop") == XMOD
    assert _check(root, *cache, "shop") == XMOD  # warm: read from the caches
    train = root / "shop" / "train.py"
    train.write_text(train.read_text().replace("@jax.jit\ndef picked_energy",
                                               "@partial(jax.jit, static_argnums=(1,))\ndef picked_energy")
                     .replace("import jax\n", "from functools import partial\n\nimport jax\n", 1))
    moved = {f"train.py:{line}": f"train.py:{line + 2}" for line in (10, 20, 24, 31)}  # two lines added above
    shifted = []
    for f, r, c, code, m in XMOD:
        if code not in ("VJP104", "VJP101"):  # the index is static now: nothing traced reaches `idx`
            for old, new in moved.items():
                m = m.replace(old, new)
            shifted.append((f, r, c, code, m))
    assert _check(root, *cache, "shop") == shifted
    (root / "shop" / "setup_rules.py").unlink()  # the only registration of external_sin
    found = _check(root, *cache, "shop")
    assert [(f, r, code) for f, r, _, code, _ in found if code == "VJP301"] == [
        ("shop/ops.py", 58, "VJP301"), ("shop/ops.py", 71, "VJP301")]


@pytest.mark.unit
def test_lint_source_without_a_project_knows_no_other_module():
    from vjplint.settings.config import Config
    from vjplint.lint.engine import lint_source

    path = DATA / "shop" / "ops.py"
    found = [("shop/ops.py", d.location.row, d.location.column, d.code, d.message)
             for d in lint_source(str(path), path.read_bytes(), Config()).diagnostics]
    assert found == ALONE


@pytest.mark.unit
def test_the_servers_per_file_index_equals_the_runs_and_follows_each_edit(tmp_path):
    """The Language Server's wrapper index leaves the values to its own index (per file, fed the
    buffers: vjplint.server.project_index), which equals the run's after every update and says
    which modules' facts changed."""
    from vjplint.settings.config import Config
    from vjplint.project.index import build_index
    from vjplint.server.indexing import _python_files
    from vjplint.server.project_index import FolderFacts

    root = tmp_path / "proj"
    shutil.copytree(DATA / "shop", root / "shop")
    files = sorted((root / "shop").glob("*.py"))
    run = build_index(files, Config(), use_cache=False, base=str(root), cross_module=True)
    assert sorted(run.external) == ["shop.calm_ops", "shop.ops"]
    assert [row[:3] for row in run.external["shop.ops"] if row[0] == "register"] == [
        ("register", "external_sin", "defvjp")]
    served = build_index(files, Config(), use_cache=False, base=str(root))  # the server's wrapper index
    assert served.external == {}
    buffers = {}
    facts = FolderFacts(_python_files(served, files, str(root)), lambda path: buffers.get(path))
    facts.build()
    assert facts.external == run.external

    def rerun():
        for path, text in buffers.items():
            Path(path).write_text(text, encoding="utf-8")
        return build_index(files, Config(), use_cache=False, base=str(root), cross_module=True).external

    train = str(root / "shop" / "train.py")
    text = (root / "shop" / "train.py").read_text(encoding="utf-8")
    assert facts.update(train, text + "\n# a comment below everything\n") == set()  # nothing another module sees
    buffers[train] = text.replace("@jax.jit\ndef picked_energy", "def picked_energy")
    assert facts.update(train, buffers[train]) == {"shop.ops"}
    assert facts.external == rerun()
    setup = str(root / "shop" / "setup_rules.py")
    buffers[setup] = "\n"  # the only registration of external_sin is gone
    assert facts.update(setup, buffers[setup]) == {"shop.ops"}
    assert facts.external == rerun()
    assert not [row for row in facts.external["shop.ops"] if row[0] == "register"]


@pytest.mark.unit
def test_a_notebook_is_a_caller_of_the_run_and_of_the_servers_index(tmp_path):
    """A notebook's code cells call the modules of the run like a module would (its rows quote
    its cell and the line in it); no module imports a notebook, so it defines no target and gets
    no facts, even beside a module of its name."""
    import nbformat

    from vjplint.settings.config import Config
    from vjplint.project.index import build_index
    from vjplint.server.indexing import _python_files
    from vjplint.server.project_index import FolderFacts

    root = tmp_path / "proj"
    shutil.copytree(DATA / "shop", root / "shop")
    calls = "from shop.ops import gather_rows\n\n\n@jax.jit\ndef picked(x, i):\n    return gather_rows(x, i).sum()"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# notes"), nbformat.v4.new_code_cell("import jax\n%matplotlib inline"),
                nbformat.v4.new_code_cell(calls)]
    nbformat.write(nb, str(root / "shop" / "ops.ipynb"))
    files = sorted((root / "shop").glob("*.py")) + [root / "shop" / "ops.ipynb"]
    run = build_index(files, Config(), use_cache=False, base=str(root), cross_module=True)
    from_notebook = [row for row in run.external["shop.ops"] if "ops.ipynb" in row[2]]
    assert [row[:4] for row in from_notebook if row[0] == "call"] == [
        ("call", "gather_rows", "shop/ops.ipynb:cell 3:6", "picked")]
    assert {row[2] for row in from_notebook} == {"shop/ops.ipynb:cell 3:6"}
    assert "shop/ops.ipynb" not in run.external
    assert run.facts_for(Config(), root / "shop" / "ops.ipynb").rows == ()  # not ops.py's
    served = build_index(files, Config(), use_cache=False, base=str(root))
    buffers = {}
    facts = FolderFacts(_python_files(served, files, str(root)), lambda path: buffers.get(path))
    facts.build()
    assert facts.external == run.external
    notebook = str(root / "shop" / "ops.ipynb")
    assert facts.update(notebook, "# %% vjplint: cell 2\nimport jax\n") == {"shop.ops"}  # the call is gone
    assert not [row for row in facts.external["shop.ops"] if "ops.ipynb" in row[2]]


CONFIRM = '''
import jax, jax.numpy as jnp
from shop import calm_train, ops, setup_rules, train

def outcome(thunk):
    try:
        thunk()
        return "runs"
    except Exception as exc:
        return type(exc).__name__

x, vals = jnp.arange(4.0), jnp.array([0.5, 1.5, -1.0])
print(outcome(lambda: jax.grad(train.picked_energy)(x, jnp.array([0, 2]))))
print(outcome(lambda: jax.grad(lambda w: jnp.sum(train.smooth(w, vals)))(0.3)))
print(outcome(lambda: train.decay_grad(0.8, jnp.ones(2))))
print(outcome(lambda: train.cosine(0.7)))
print(outcome(lambda: jax.grad(ops.doubled_sin)(0.7)))
print(outcome(lambda: jax.grad(calm_train.picked_energy)(x, 2)))
print(outcome(lambda: jax.grad(lambda v: jnp.sum(calm_train.smooth(v)))(vals)))
print(outcome(lambda: jax.grad(calm_train.decay_loss)(jnp.ones(2))))
'''


@pytest.mark.jax
def test_the_package_behaves_on_jax_as_the_diagnostics_say():
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", CONFIRM], cwd=DATA, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": pythonpath(DATA), **JAX_ENV})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["UnexpectedTracerError", "CustomVJPException", "UnexpectedTracerError",
                                   "AttributeError", "runs", "runs", "runs", "runs"]


def test_a_custom_jvp_nondiff_slot_fed_an_array_by_another_module(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "lib.py").write_text(
        "from functools import partial\n\nimport jax\n\n\n"
        "@partial(jax.custom_jvp, nondiff_argnums=(1,))\n"
        "def take(x, idx):\n    return helper(x, idx)\n\n\n"
        "def helper(x, idx):\n    return x[idx]\n\n\n"
        "@take.defjvp\ndef take_jvp(idx, primals, tangents):\n"
        "    (x,), (t,) = primals, tangents\n    return take(x, idx), t[idx]\n")
    (tmp_path / "pkg" / "use.py").write_text(
        "import jax\nimport jax.numpy as jnp\n\nfrom pkg.lib import take\n\n\n"
        "@jax.jit\ndef f(x, idx):\n    return jnp.sum(take(x, idx))\n")
    expected = [("pkg/lib.py", 7, 13, "VJP106",
                 "`idx` (position 1) is in nondiff_argnums of custom_jvp `take` but receives an array at "
                 "pkg/use.py:9: `idx` (`idx` is a parameter of `f`, which is traced by `jax.jit`): custom_jvp "
                 "stop-gradients nondiff arguments, so its derivative is silently zero, and it fails under "
                 "jax_custom_jvp3. Make it a differentiable argument")]
    assert _check(tmp_path, "--no-cache", "--extend-select", "VJP106", "pkg") == expected
    assert _check(tmp_path, "--no-cache", "--extend-select", "VJP106", "pkg/lib.py") == []  # alone: as before


def test_a_value_imported_from_another_module_keeps_its_kind_and_chain(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "consts.py").write_text("import jax.numpy as jnp\n\nROWS = jnp.array([0, 2])\nSCALE = 2.0\n")
    (tmp_path / "pkg" / "lib.py").write_text(
        "from functools import partial\n\nimport jax\n\n\n"
        "@partial(jax.custom_vjp, nondiff_argnums=(1,))\n"
        "def pick(x, idx):\n    return helper(x, idx)\n\n\n"
        "def helper(x, idx):\n    return x[idx]\n\n\n"
        "pick.defvjp(lambda x, idx: (pick(x, idx), x), lambda idx, x, g: (g,))\n")
    (tmp_path / "pkg" / "use.py").write_text(
        "from pkg.consts import ROWS, SCALE\nfrom pkg.lib import pick\n\n\n"
        "def f(x):\n    return pick(x, ROWS) + pick(x, SCALE)\n")
    found = _check(tmp_path, "--no-cache", "pkg")
    # One caller passes an array, another a Python value: the evidence combines into a "may".
    assert found == [("pkg/lib.py", 7, 13, "VJP102",
                      "`idx` (position 1) is in nondiff_argnums and may be an array: it receives an array at "
                      "pkg/use.py:6: `ROWS` (`ROWS` is imported from `pkg.consts`, where `ROWS` = "
                      "`jnp.array([0, 2])` at pkg/consts.py:3), although it receives a Python value at "
                      "pkg/use.py:6: `SCALE` (`SCALE` is imported from `pkg.consts`, where `SCALE` = `2.0` at "
                      "pkg/consts.py:4). If it can be traced, JAX raises UnexpectedTracerError; move it to the "
                      "residuals or annotate it as a static type")]


@pytest.mark.unit
def test_the_servers_index_shares_the_command_lines_per_file_cache(tmp_path):
    import os
    import time

    from vjplint.settings.config import Config
    from vjplint.project.index import build_index
    from vjplint.server.indexing import _python_files
    from vjplint.server.project_index import FolderFacts

    root = tmp_path / "proj"
    shutil.copytree(DATA / "shop", root / "shop")
    files = sorted((root / "shop").glob("*.py"))
    for path in files:  # older than the racy-mtime window
        os.utime(path, (time.time() - 60, time.time() - 60))
    run = build_index(files, Config(), use_cache=False, base=str(root), cross_module=True)
    python = _python_files(build_index(files, Config(), use_cache=False, base=str(root)), files, str(root))
    anchor = Config(cache_dir=str(tmp_path / "cache"))

    class Counting(FolderFacts):
        reads = 0

        def _read(self, key):
            Counting.reads += 1
            return super()._read(key)

    first = Counting(python, cache=(anchor, str(root)))
    first.build()
    assert first.external == run.external and Counting.reads >= len(files)
    Counting.reads = 0
    second = Counting(python, cache=(anchor, str(root)))
    second.build()
    assert second.external == run.external
    assert Counting.reads < len(files) // 2  # only rows that read another module's bindings are redone


def test_a_method_closure_over_self_arrays_in_another_module_is_a_may(tmp_path):
    pkg = tmp_path / "fit"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "solver.py").write_text(
        "from functools import partial\n\nimport jax\n\n\n"
        "@partial(jax.custom_jvp, nondiff_argnums=(0,))\n"
        "def euler(field, y0):\n"
        "    return jax.lax.fori_loop(0, 10, lambda _, y: y + 0.1 * field(y), y0)\n\n\n"
        "@euler.defjvp\n"
        "def euler_jvp(field, primals, tangents):\n"
        "    return jax.jvp(lambda y: euler.fun(field, y), primals, tangents)\n")
    model = ("import equinox as eqx\nimport jax\n\nfrom fit.solver import euler\n\n\n"
             "class Decay(eqx.Module):\n"
             "    rate: {annotation}\n\n"
             "    def __call__(self, y0):\n"
             "        return euler(lambda y: -self.rate * y, y0)\n")
    (pkg / "model.py").write_text(model.format(annotation="jax.Array"))
    found = _check(tmp_path, "--no-cache", "fit")
    assert [(f, r, c, code) for f, r, c, code, _ in found] == [("fit/solver.py", 6, 2, "VJP105")]
    message = found[0][4]
    assert message.startswith("the callable `lambda y: -self.rate * y` (the lambda at fit/model.py:11) passed as "
                              "nondiff `field` of `euler` at "
                              "fit/model.py:11 captures `self`, a `Decay` whose field `rate` is annotated "
                              "`jax.Array` (fit/model.py:8): if a caller differentiates")
    assert "JAX may raise UnexpectedTracerError" in message and "CustomVJPException" not in message
    (pkg / "model.py").write_text(model.format(annotation="float"))  # a Python number: nothing to differentiate
    assert _check(tmp_path, "--no-cache", "fit") == []


LAYER_LIBRARY = ("from functools import partial\n\nimport jax\nimport jax.numpy as jnp\n\n\n"
                 "@partial(jax.custom_vjp, nondiff_argnums=(0,))\n"
                 "def apply_layer(layer, h):\n"
                 "    return jnp.maximum(layer(h), 0.0)\n\n\n"
                 "def _fwd(layer, h):\n"
                 "    return apply_layer(layer, h), h\n\n\n"
                 "def _bwd(layer, h, ct):\n"
                 "    return jax.vjp(lambda v: jnp.maximum(layer(v), 0.0), h)[1](ct)\n\n\n"
                 "apply_layer.defvjp(_fwd, _bwd)\n")
LAYER_DRIVER = ("import jax\nimport jax.numpy as jnp\n\nfrom nets.lib import apply_layer\n\n\n"
                "class Scale:\n"
                "    def __init__(self, params, steps=2):\n"
                "        self.gain = params[\"gain\"]\n"
                "        self.steps = steps\n\n"
                "    def __call__(self, v):\n"
                "        for _ in range(self.steps):\n"
                "            v = {use}\n"
                "        return v\n\n\n"
                "{decorator}def objective(gain, h):\n"
                "    net = Scale({{\"gain\": gain}})\n"
                "    return jnp.sum(apply_layer(net, h))\n")


def _layer_package(root: Path, use: str, decorator: str) -> None:
    pkg = root / "nets"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "lib.py").write_text(LAYER_LIBRARY)
    (pkg / "train.py").write_text(LAYER_DRIVER.format(use=use, decorator=decorator))


def test_a_layer_object_built_from_traced_parameters_in_another_module(tmp_path):
    _layer_package(tmp_path, "self.gain * v", "@jax.jit\n")
    assert _check(tmp_path, "--no-cache", "nets") == [(
        "nets/lib.py", 7, 2, "VJP105",
        "the callable `net` (`net` = `Scale({\"gain\": gain})` at nets/train.py:20) passed as nondiff `layer` of "
        "`apply_layer` at nets/train.py:21 holds `Scale.gain`, a traced value (`self.gain` = `params[\"gain\"]` at "
        "nets/train.py:9; `params` receives `{\"gain\": gain}` at nets/train.py:20; `gain` is a parameter of "
        "`objective`, which is traced by `jax.jit`): differentiating with respect to it raises "
        "UnexpectedTracerError ('Encountered an unexpected tracer') or CustomVJPException ('Detected "
        "differentiation of a custom_vjp function with respect to a closed-over value'), and grad of a jit fails "
        "with 'No constant handler'. Use `jax.closure_convert` and pass the constants as arguments")]


def test_a_layer_object_holding_a_parameter_in_another_module_is_a_may(tmp_path):
    _layer_package(tmp_path, "self.gain * v", "")
    found = _check(tmp_path, "--no-cache", "nets")
    assert [(f, r, c, code) for f, r, c, code, _ in found] == [("nets/lib.py", 7, 2, "VJP105")]
    assert found[0][4].startswith(
        "the callable `net` (`net` = `Scale({\"gain\": gain})` at nets/train.py:19) passed as nondiff `layer` of "
        "`apply_layer` at nets/train.py:20 holds `Scale.gain`, which comes from `gain`, a parameter of `objective` "
        "(`self.gain` = `params[\"gain\"]` at nets/train.py:9; `params` receives `{\"gain\": gain}` at "
        "nets/train.py:19; `gain` is a parameter of `objective`), used as array data in `self.gain * v` at "
        "nets/train.py:14: if a caller differentiates")


def test_a_layer_object_holding_only_configuration_in_another_module_is_silent(tmp_path):
    _layer_package(tmp_path, "jnp.tanh(v)", "")  # `gain` stored but never computed with; `steps` a loop bound
    assert _check(tmp_path, "--no-cache", "nets") == []


def _table_package(root: Path, table_body: str) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "params.py").write_text("import jax.numpy as jnp\n\nGRID = jnp.linspace(0.0, 1.0, 5)\n\n\n"
                                            f"def init_table():\n    {table_body}\n")
    (root / "pkg" / "lib.py").write_text(
        "from functools import partial\n\nimport jax\n\n\n"
        "@partial(jax.custom_vjp, nondiff_argnums=(0,))\n"
        "def warp(table, x):\n    return helper(table, x)\n\n\n"
        "def helper(table, x):\n    return x * table[1]\n\n\n"
        "warp.defvjp(lambda table, x: (warp(table, x), None), lambda table, _, g: (helper(table, g),))\n")
    (root / "pkg" / "model.py").write_text(
        "import jax\n\nfrom pkg.lib import warp\nfrom .params import init_table\n\n\n"
        "@jax.jit\ndef forward(x):\n    t = init_table()\n    return warp(t, x)\n")


def test_an_array_built_by_a_function_of_another_module_inside_jit_is_traced(tmp_path):
    """`from .params import init_table`, then `t = init_table(); warp(t, x)` inside `jax.jit`: the
    table is a new jax array built under the trace, so a tracer (confirmed on JAX: the eval case
    nondiff-array/jax20889_imported_table_xmod)."""
    _table_package(tmp_path, "return jnp.linspace(0.5, 2.5, 5)")
    found = _check(tmp_path, "--no-cache", "pkg")
    assert [(f, r, c, code) for f, r, c, code, _ in found] == [("pkg/lib.py", 6, 2, "VJP104"),
                                                              ("pkg/lib.py", 7, 10, "VJP101")]
    assert found[0][4] == (
        "`warp` receives a traced value in its nondiff position 0 (`table`) from another module: at "
        "pkg/model.py:10 `forward` passes `t` (`t` = `init_table()` at pkg/model.py:9; `init_table()` builds a new "
        "jax array (`jnp.linspace(0.5, 2.5, 5)` at pkg/params.py:7) inside `forward`, which is traced by "
        "`jax.jit`), so JAX raises UnexpectedTracerError there. Mark it static in that transformation, pass a "
        "Python constant, or move `table` out of nondiff_argnums")
    assert _check(tmp_path, "--no-cache", "pkg/lib.py") == []  # alone: nothing says what `table` holds


def test_a_stored_array_returned_by_another_module_is_an_array_but_no_tracer(tmp_path):
    """`init_table()` returning the module constant `GRID` gives the same concrete array at every
    call, under jit too: an array in a nondiff slot (VJP101), never a traced one (no VJP104)."""
    _table_package(tmp_path, "return GRID")
    found = _check(tmp_path, "--no-cache", "pkg")
    assert [(f, r, c, code) for f, r, c, code, _ in found] == [("pkg/lib.py", 7, 10, "VJP101")]
    assert "pkg/model.py:10" in found[0][4]


LIB_VJP = ("import jax\nimport jax.numpy as jnp\n\n\n@jax.custom_vjp\ndef soft_cos(x):\n    return jnp.cos(x)\n\n\n"
           "def soft_cos_fwd(x):\n    return jnp.cos(x), jnp.sin(x)\n\n\n"
           "def soft_cos_bwd(s, g):\n    return (-s * g,)\n\n\nsoft_cos.defvjp(soft_cos_fwd, soft_cos_bwd)\n")
JVP_ON_VJP = ("pushes tangents through `soft_cos`, a custom_vjp function: JAX raises TypeError \"can't apply "
              "forward-mode autodiff (jvp) to a custom_vjp function.\". Use reverse mode there (`jax.vjp`, "
              "`jax.jacrev`), or give `soft_cos` a custom_jvp")


@pytest.mark.parametrize("use, expected", [
    ("import jax\n\nfrom pkg import lib\n\n\ndef tangent(x, v):\n    y, lin = jax.linearize(lib.soft_cos, x)\n"
     "    return lin(v)\n",
     "at pkg/use.py:7, the linear function that `jax.linearize` returns (applied at line 8) " + JVP_ON_VJP),
    ("import jax\n\nfrom pkg.lib import soft_cos\n\n\ndef tangent(x, v):\n    return jax.jvp(soft_cos, (x,), (v,))\n",
     "at pkg/use.py:7, `jax.jvp` " + JVP_ON_VJP),
    ("import jax\n\nfrom pkg import lib\n\n\ndef value(x):\n    y, _ = jax.linearize(lib.soft_cos, x)\n"
     "    return jax.jacrev(lib.soft_cos)(x) + y\n", None),  # the linear function is never applied
])
def test_forward_mode_applied_in_another_module_is_reported_at_the_custom_vjp(tmp_path, use, expected):
    """VJP315 across modules (eval/cases/forward-mode/pr2026_linearize_apply_xmod.py runs it on JAX):
    a registered custom_vjp is summarised only for forward mode applied to it by name."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "lib.py").write_text(LIB_VJP)
    (tmp_path / "pkg" / "use.py").write_text(use)
    found = _check(tmp_path, "--no-cache", "--select", "VJP315", "pkg")
    assert found == ([("pkg/lib.py", 5, 2, "VJP315", expected)] if expected else [])
    assert _check(tmp_path, "--no-cache", "--select", "VJP315", "pkg/lib.py") == []  # alone: nothing to see


ROOT_LIBRARY = ("from functools import partial\n\nimport jax\nimport jax.numpy as jnp\n\n\n"
                "@partial(jax.custom_vjp, nondiff_argnums=(0,))\n"
                "def find_root(residual, x0):\n"
                "    return jax.lax.fori_loop(0, 20, lambda _, x: x - residual(x), x0)\n\n\n"
                "def _fwd(residual, x0):\n"
                "    x = find_root(residual, x0)\n"
                "    return x, x\n\n\n"
                "def _bwd(residual, x, g):\n"
                "    return (jnp.zeros_like(x),)\n\n\n"
                "find_root.defvjp(_fwd, _bwd)\n")
ROOT_DRIVER = ("import functools\n\nimport jax\nimport jax.numpy as jnp\n\nfrom roots.lib import find_root\n\n\n"
               "def cubic({param}, x):\n"
               "    return x ** 3 + stiffness * x - 1.0\n\n\n"
               "{decorator}def equilibrium(stiffness):\n"
               "    return find_root(functools.partial(cubic, stiffness), jnp.ones_like(stiffness))\n")


def _root_package(root: Path, param: str, decorator: str) -> None:
    pkg = root / "roots"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "lib.py").write_text(ROOT_LIBRARY)
    (pkg / "driver.py").write_text(ROOT_DRIVER.format(param=param, decorator=decorator))


def test_a_partial_binding_a_parameter_in_another_module_is_a_may(tmp_path):
    _root_package(tmp_path, "stiffness", "")
    assert _check(tmp_path, "--no-cache", "roots") == [(
        "roots/lib.py", 7, 2, "VJP105",
        "the callable `functools.partial(cubic, stiffness)` passed as nondiff `residual` of `find_root` at "
        "roots/driver.py:14 binds `stiffness` to `stiffness` of `cubic`, which uses it as array data in "
        "`stiffness * x` at roots/driver.py:10 (`stiffness` is a parameter of `equilibrium`): if `equilibrium` is "
        "differentiated with respect to `stiffness`, JAX may raise UnexpectedTracerError, or CustomVJPException "
        "('Detected differentiation of a custom_vjp function with respect to a closed-over value'), or the "
        "gradient may go around the custom rule. Pass the bound value as a differentiable argument, or "
        "`jax.closure_convert` the callable and pass the constants as arguments")]


def test_a_partial_binding_a_traced_parameter_in_another_module(tmp_path):
    _root_package(tmp_path, "stiffness", "@jax.jit\n")
    found = _check(tmp_path, "--no-cache", "roots")
    assert [(f, r, c, code) for f, r, c, code, _ in found] == [("roots/lib.py", 7, 2, "VJP105")]
    assert "a traced value (`stiffness` is a parameter of `equilibrium`, which is traced by `jax.jit`)" in found[0][4]


def test_a_partial_binding_a_python_number_in_another_module_is_silent(tmp_path):
    _root_package(tmp_path, "stiffness: float", "")  # the wrapped function takes a Python number
    assert _check(tmp_path, "--no-cache", "roots") == []


_SMOOTH_MIN = (
    "import functools\n\nimport jax\n\n\n"
    "@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))\n"
    "def smooth_min(x, gamma, axis):\n"
    "    return -gamma * jax.scipy.special.logsumexp(x / -gamma, axis=axis)\n\n\n"
    "smooth_min.defvjp(\n"
    "    lambda x, gamma, axis: (smooth_min(x, gamma, axis), (x / -gamma, axis)),\n"
    "    lambda axis, res, g: (jax.nn.softmax(res[0], axis=axis) * g, None),\n"
    ")\n")


@pytest.mark.parametrize("use, fires", [
    ("def row_min(x, gamma):\n    return smooth_min(x, gamma, 1)\n", False),  # a bare untraced parameter
    ("def row_min(x, log_gamma):\n    return smooth_min(x, jnp.exp(log_gamma), 1)\n", True),  # computed
    ("@jax.jit\ndef row_min(x, gamma):\n    return smooth_min(x, gamma, 1)\n", True),  # traced
    ("def row_min(x, gamma):\n    return smooth_min(x, gamma, 1)\n\n\nd_gamma = jax.grad(smooth_min, 1)\n", True),
])
def test_vjp602_reads_the_calls_of_another_module(tmp_path, use, fires):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "lib.py").write_text(_SMOOTH_MIN)
    (tmp_path / "pkg" / "use.py").write_text(
        "import jax\nimport jax.numpy as jnp\n\nfrom pkg.lib import smooth_min\n\n\n" + use)
    found = _check(tmp_path, "--no-cache", "--select", "VJP602", "pkg")
    assert [(f, code) for f, _, _, code, _ in found] == ([("pkg/lib.py", "VJP602")] if fires else [])
    # alone, nothing shows what is passed (no call but its fwd's): a library API, reported as a 'may'
    assert [code for *_, code, _ in _check(tmp_path, "--no-cache", "--select", "VJP602", "pkg/lib.py")] == ["VJP602"]
