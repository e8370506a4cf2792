"""The cross-module planner in-process (vjplint.fixes.cross_module.plan_run) on packages written
to disk: what it rewrites, and each refusal with its reason."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

from vjplint.settings.config import Config
from vjplint.fixes.cross_module import plan_run
from vjplint.project.modules import RunModules

PRIMAL = '''from functools import partial
import jax
{imports}

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def scale(w: jax.Array, x):
    return w * x

scale.defvjp({fwd}, {bwd})
'''
RULES = '''def scale_fwd(w, x):
    return w * x, None

def scale_bwd(w, _, g):
    return (w * g,)
'''


def _write(root: Path, files: Dict[str, str]) -> list:
    paths = []
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def _plan(root: Path, files: Dict[str, str]):
    paths = _write(root, files)
    items = [(p, Config()) for p in paths]
    return plan_run(items, lambda p: p.read_text(encoding="utf-8"), RunModules(p for p, _ in items))


def test_rules_in_a_parent_package_through_a_relative_import(tmp_path):
    result = _plan(tmp_path, {
        "pkg/__init__.py": "", "pkg/rules.py": RULES, "pkg/sub/__init__.py": "",
        "pkg/sub/ops.py": PRIMAL.format(imports="from ..rules import scale_fwd, scale_bwd", fwd="scale_fwd",
                                        bwd="scale_bwd")})
    assert result.refused == []
    assert sorted(p.relative_to(tmp_path).as_posix() for p in result.texts) == ["pkg/rules.py", "pkg/sub/ops.py"]
    ops, rules = (result.texts[tmp_path / n][1] for n in ("pkg/sub/ops.py", "pkg/rules.py"))
    assert "@jax.custom_vjp\ndef scale(w: jax.Array, x):" in ops and "from functools" not in ops
    assert "return w * x, w\n" in rules and "def scale_bwd(w, g):\n    return (None, w * g)  # noqa: VJP602\n" in rules
    assert [sorted(p.name for p in g) for g in result.groups()] == [["ops.py", "rules.py"]]
    assert result.plans[0].unsafe_reasons[0].startswith("fwd/bwd are defined in ")


def test_refusals_say_why(tmp_path):
    cases = {
        "used_in_rules": ({"rules.py": RULES + "\ny = scale_fwd(1.0, 2.0)\n"},
                          "fwd `scale_fwd` is also used in {root}/rules.py, and the rewrite changes what it returns"),
        "not_in_run": ({}, "fwd `scale_fwd` is not defined in a module of this run"),
        "bound_twice": ({"rules.py": RULES + "\nscale_fwd = scale_bwd\n"},
                        "fwd `scale_fwd` is not a function defined once at the top level of {root}/rules.py"),
        "called_in_primal_file": ({"rules.py": RULES}, "fwd `scale_fwd` is also called or referenced outside "
                                                       "`defvjp`, and the rewrite changes what it returns"),
    }
    for name, (extra, why) in cases.items():
        root = tmp_path / name
        primal = PRIMAL.format(imports="from rules import scale_fwd, scale_bwd", fwd="scale_fwd", bwd="scale_bwd")
        if name == "called_in_primal_file":
            primal += "\nz = scale_fwd(1.0, 2.0)\n"
        result = _plan(root, {"ops.py": primal, **extra})
        assert result.texts == {}, name
        assert [(p.name, f, r) for p, f, r in result.refused] == [("ops.py", "scale", why.format(root=root))], name


def test_attribute_spelling_and_a_rule_beside_the_primal(tmp_path):
    primal = PRIMAL.format(imports="import rules as R\n\ndef scale_bwd(w, _, g):\n    return (w * g,)\n",
                           fwd="R.scale_fwd", bwd="scale_bwd")
    result = _plan(tmp_path, {"ops.py": primal, "rules.py": RULES.split("def scale_bwd")[0]})
    assert result.refused == []
    ops = result.texts[tmp_path / "ops.py"][1]
    assert "def scale_bwd(w, g):\n    return (None, w * g)  # noqa: VJP602\n" in ops  # as the in-file fix marks it
    assert "return w * x, w\n" in result.texts[tmp_path / "rules.py"][1]


def test_the_two_real_code_regressions_across_modules(tmp_path):
    """Issue 15's failures with the rules in another module: a jit-static moved parameter is
    refused; a fwd that another module calls through functools.partial (which would receive a
    tuple) makes the rewrite unsafe, saying which module and how it uses fwd (issue 37: as an
    in-file fix says it, not a refusal)."""
    static = PRIMAL.format(imports="from rules import scale_fwd, scale_bwd", fwd="scale_fwd", bwd="scale_bwd") \
        .replace("@partial(jax.custom_vjp", '@partial(jax.jit, static_argnames="w")\n@partial(jax.custom_vjp')
    result = _plan(tmp_path / "static", {"ops.py": static, "rules.py": RULES})
    assert [r for _, _, r in result.refused] == [
        "`w` is marked static in the `jax.jit` decorating it, so callers pass a Python value there, which a "
        "differentiable position rejects"]
    direct = {"ops.py": PRIMAL.format(imports="from rules import scale_fwd, scale_bwd", fwd="scale_fwd",
                                      bwd="scale_bwd"),
              "rules.py": RULES,
              "layers.py": "from functools import partial\nfrom rules import scale_fwd\n\n"
                           "def act(w, x):\n    y, _ = partial(scale_fwd, w)(x)\n    return y\n"}
    result = _plan(tmp_path / "direct", direct)
    assert result.refused == []
    layers = tmp_path / "direct" / "layers.py"
    assert sorted(p.name for p in result.texts) == ["ops.py", "rules.py"]
    [cp] = result.plans
    reason = f"{layers} imports `scale_fwd`, and the rewrite changes fwd's return"
    assert cp.elsewhere_reason() == reason and reason in cp.unsafe_reasons
    assert cp.elsewhere_reason(lambda p: p.name) == "layers.py imports `scale_fwd`, and the rewrite changes fwd's return"


def test_other_files_are_read_for_imports_not_for_the_word(tmp_path):
    """Issue 37: a module with its own function named like fwd (`def scale_fwd` in inf/m.py, not
    imported from the rules' module) is not a use: no refusal and no unsafe reason; one that
    calls both rules through the primal's module, which re-exports them, is one."""
    files = {"inf/__init__.py": "", "inf/rules.py": RULES,
             "inf/ops.py": PRIMAL.format(imports="from .rules import scale_fwd, scale_bwd", fwd="scale_fwd",
                                         bwd="scale_bwd"),
             "inf/m.py": "def scale_fwd(a):\n    return a + 1\n\n\ndef use():\n    return scale_fwd(2)\n",
             "inf/notes.py": '"""scale_fwd and scale_bwd are the rules of inf.ops.scale."""\n'}
    result = _plan(tmp_path / "own", files)
    assert result.refused == []
    [cp] = result.plans
    assert cp.used_elsewhere is None and cp.elsewhere_reason() == ""
    assert len(cp.unsafe_reasons) == 1 and cp.unsafe_reasons[0].startswith("fwd/bwd are defined in ")
    files["inf/test_ops.py"] = ("from inf import ops\n\n\ndef test_rules():\n"
                                "    y, r = ops.scale_fwd(2.0, 3.0)\n    assert ops.scale_bwd(2.0, r, 1.0) == (2.0,)\n")
    result = _plan(tmp_path / "reexported", files)
    [cp] = result.plans
    assert cp.elsewhere_reason(lambda p: p.relative_to(tmp_path / "reexported").as_posix()) == (
        "inf/test_ops.py calls `scale_fwd` and `scale_bwd`, and the rewrite changes fwd's return and bwd's parameters")


def test_a_module_name_two_files_of_the_run_have_is_not_guessed(tmp_path):
    """Outside packages a file's module name is its stem: which `rules.py` an import means
    depends on sys.path, so neither is rewritten."""
    primal = PRIMAL.format(imports="from rules import scale_fwd, scale_bwd", fwd="scale_fwd", bwd="scale_bwd")
    result = _plan(tmp_path, {"a/ops.py": primal, "a/rules.py": RULES, "b/rules.py": RULES})
    assert result.texts == {}
    assert [r for _, _, r in result.refused] == [
        f"fwd `scale_fwd` may come from several files: `rules` names 2 files of this run "
        f"({tmp_path / 'a' / 'rules.py'}, {tmp_path / 'b' / 'rules.py'}, ...)"]


def _refusals(path: Path) -> set:
    """The refusal texts a module raises (`raise Refusal("...")`, an f-string's literal parts joined
    with `{}`), to find a refusal the cross-module planner repeats instead of asking the planner."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and getattr(node.exc.func, "id", "") == "Refusal":
            arg = node.exc.args[0] if node.exc.args else None
            if isinstance(arg, ast.Constant):
                found.add(arg.value)
            elif isinstance(arg, ast.JoinedStr):
                found.add("{}".join(v.value for v in arg.values if isinstance(v, ast.Constant)))
    return found


def test_the_cross_module_plan_repeats_none_of_the_planner_s_refusals() -> None:
    """One planner: what the in-file planner refuses (the derivative, its registration, a partial, a
    static argument, fwd's and bwd's returns and parameters) the cross-module plan asks it
    (`residual_plan.check_derivative`, `check_not_partial`, `check_not_static`, `plan_rules`); it
    raises only what concerns other files (where a rule is defined, who else uses it)."""
    from tests.conftest import ROOT

    planner = _refusals(ROOT / "vjplint" / "plans" / "residual_plan.py")
    cross = _refusals(ROOT / "vjplint" / "fixes" / "cross_plan.py")
    assert len(planner) >= 30 and cross
    assert planner & cross == set()
