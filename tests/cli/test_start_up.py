"""What a check of one file (a pre-commit run on a few changed modules) spends outside the
analysis: the way out of the process, and the modules it imports (docs/performance.md, "One file
and the cold tree"). Real CLI in subprocesses; no timing is asserted, only what the run does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import ROOT, RULE_FIXTURES, pythonpath

FIRING = RULE_FIXTURES / "VJP101" / "fire_clip_gradient.py"


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": pythonpath(ROOT), "NO_COLOR": "1"}
    env.pop("VJPLINT_OUTPUT_FORMAT", None)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)


def test_the_way_out_keeps_exit_time_work_and_the_whole_output(tmp_path: Path) -> None:
    """`run()` ends the process without the interpreter's shutdown only when nothing waits for it:
    an `atexit` callback registered before still runs, and the exit code is the check's."""
    code = textwrap.dedent(f"""\
        import atexit, sys
        atexit.register(lambda: print("exit-time work ran", flush=True))
        sys.argv = ["vjplint", "check", "--no-cache", {str(FIRING)!r}]
        from vjplint.cli import run
        sys.exit(run())
        """)
    done = _python(code, tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[-1] == "exit-time work ran"
    assert "VJP101" in done.stdout


def test_a_hard_exit_loses_no_output(tmp_path: Path) -> None:
    """Without exit-time work the process ends at once, after the output is flushed: the JSON of
    every finding of the rule fixtures (hundreds of kilobytes through a pipe) arrives whole, and
    no exit-time callback registered after the check would have run."""
    code = textwrap.dedent(f"""\
        import sys
        sys.argv = ["vjplint", "check", "--no-cache", "--jobs", "1", "--output-format", "json", {str(RULE_FIXTURES)!r}]
        import vjplint.cli as cli
        leave = cli._leave_now

        def spy(rc):
            import atexit
            print("callbacks", atexit._ncallbacks(), file=sys.stderr, flush=True)
            leave(rc)
            print("still here", file=sys.stderr, flush=True)

        cli._leave_now = spy
        sys.exit(cli.run())
        """)
    done = _python(code, tmp_path)
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)
    assert len(findings) > 300
    assert "still here" not in done.stderr
    assert "callbacks 0" in done.stderr


# -- the code dataclasses write, compiled once per install (vjplint.batch.class_code) --------------
_CHECK = textwrap.dedent("""\
    import sys
    sys.argv = ["vjplint", "check", "--no-cache", "--jobs", "1", "--output-format", "json", FILE]
    import vjplint.cli as cli
    from vjplint.batch import class_code
    keep = class_code.keep

    def spy():
        print("grown" if class_code._STATE["grown"] else "kept", file=sys.stderr, flush=True)
        keep()

    class_code.keep = spy
    sys.exit(cli.run())
    """)


def _check_with_table(tmp_path: Path, write: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": pythonpath(ROOT), "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("VJPLINT_OUTPUT_FORMAT", None)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run([sys.executable, "-c", _CHECK.replace("FILE", repr(str(FIRING)))], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)


def _table(tmp_path: Path) -> Path:
    found = sorted((tmp_path / "pycache").rglob("dataclass-code.*.marshal"))
    assert len(found) <= 1, found
    return found[0] if found else tmp_path / "none"


def test_the_methods_code_is_compiled_once_and_read_back(tmp_path: Path) -> None:
    """The first run compiles the dataclasses' methods and writes the table where Python keeps the
    package's .pyc files; the next run compiles none of them and prints the same JSON; a damaged
    table (not marshal data, the wrong type, a text mapped to a number) counts as empty and is
    written again; with bytecode writing off nothing is written."""
    import marshal

    first = _check_with_table(tmp_path)
    assert first.returncode == 1, first.stderr
    assert first.stderr.splitlines()[-1] == "grown"
    table = _table(tmp_path)
    kept = marshal.loads(table.read_bytes())
    assert isinstance(kept, dict) and len(kept) > 100
    assert all(text.startswith("def __create_fn__(") for text in kept)
    again = _check_with_table(tmp_path)
    assert again.stderr.splitlines()[-1] == "kept"
    assert again.stdout == first.stdout and again.returncode == 1
    assert json.loads(again.stdout)[0]["code"] == "VJP101"
    for damage in (b"not marshal data", marshal.dumps([1, 2]), marshal.dumps({"def f(): pass": 1})):
        table.write_bytes(damage)
        damaged = _check_with_table(tmp_path)
        assert (damaged.returncode, damaged.stdout) == (1, first.stdout), damaged.stderr
        assert damaged.stderr.splitlines()[-1] == "grown"
        assert marshal.loads(table.read_bytes()).keys() == kept.keys()
    table.unlink()
    off = _check_with_table(tmp_path, write=False)
    assert (off.returncode, off.stdout) == (1, first.stdout)
    assert not table.exists()


def test_kept_code_makes_the_same_methods(tmp_path: Path) -> None:
    """A frozen, ordered dataclass with defaults, a factory, a ClassVar and string annotations made
    through the table twice (compiled, then read back from it) has methods of the same code,
    defaults and annotations as one `dataclasses` makes with the builtin `exec`."""
    code = textwrap.dedent("""\
        import builtins, dataclasses, sys, types
        from typing import ClassVar, List
        from vjplint.batch import class_code

        def make(module):
            namespace = types.ModuleType(module)
            sys.modules[module] = namespace

            @dataclasses.dataclass(frozen=True, order=True)
            class Point:
                __module__ = module  # the module dataclasses takes its globals from
                x: int
                y: "float" = 0.5
                tags: List[str] = dataclasses.field(default_factory=list)
                limit: ClassVar[int] = 3

            return Point

        def described(cls):
            out = []
            for name in ("__init__", "__repr__", "__eq__", "__lt__", "__hash__", "__setattr__", "__delattr__"):
                fn = getattr(cls, name)
                c = fn.__code__
                out.append((name, c.co_code, c.co_consts, c.co_names, c.co_varnames, fn.__defaults__,
                            fn.__kwdefaults__, sorted(map(str, getattr(fn, "__annotations__", {}).items()))))
            return out

        plain = described(make("vjplint.example_plain"))
        class_code.table_path = lambda: None  # an empty table, never written
        class_code.use_kept_code()
        assert dataclasses.exec is class_code._exec
        compiled = described(make("vjplint.example_plain"))
        assert class_code._STATE["grown"]
        read_back = described(make("vjplint.example_plain"))
        print(plain == compiled == read_back, len(class_code._STATE["table"]))
        """)
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "10"]  # __init__, __repr__, four comparisons, __eq__, __hash__, two frozen


def test_codes_in_the_settings_are_checked_against_the_catalog_without_importing_every_rule(tmp_path: Path) -> None:
    """A check of one file with `per-file-ignores` in pyproject.toml and `--select` on the command
    line: the codes are checked against the rule catalog, so a module with only a custom_jvp still
    loads no rule that only custom_vjp code can fire (checking them imported every rule module
    before), its finding is the same, and an unknown code is still refused."""
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nper-file-ignores = { "m.py" = ["VJP901"] }\n')
    source = tmp_path / "m.py"
    source.write_text(textwrap.dedent("""\
        import jax
        import jax.numpy as jnp


        @jax.custom_jvp
        def f(x):
            return jnp.sin(x)


        @f.defjvp
        def f_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return f(x), jnp.cos(x) * t + 1.0
        """))
    code = textwrap.dedent(f"""\
        import json, sys
        sys.argv = ["vjplint", "check", "--no-cache", "--select", "VJP", "--output-format", "json", {str(source)!r}]
        import vjplint.cli as cli
        cli._leave_now = lambda code: None
        rc = cli.main(sys.argv[1:])
        from vjplint.rules.catalog import RULES
        loaded = sorted(c for c, e in RULES.items() if e[0] in sys.modules)
        vjp_only = sorted(c for c, e in RULES.items() if e[5] == (b"custom_vjp",))
        print(json.dumps([rc, sorted(set(loaded) & set(vjp_only)), len(vjp_only)]))
        """)
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    rc, vjp_rules_loaded, vjp_only = json.loads(done.stdout.splitlines()[-1])
    assert [f["code"] for f in json.loads("\n".join(done.stdout.splitlines()[:-1]))] == ["VJP601"]
    assert (rc, vjp_rules_loaded) == (1, [])
    assert vjp_only >= 20
    refused = subprocess.run([sys.executable, "-m", "vjplint", "check", "--no-cache", "--select", "VJP999",
                              str(source)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": pythonpath(ROOT)})
    assert refused.returncode == 2
    assert "--select: unknown rule code or prefix 'VJP999'" in refused.stderr


def test_a_profiled_run_keeps_its_report(tmp_path: Path) -> None:
    """`python -m cProfile -o FILE -m vjplint check ...` writes its report after the command
    returns: a profiled process takes the ordinary way out."""
    env = {**os.environ, "PYTHONPATH": pythonpath(ROOT), "NO_COLOR": "1"}
    report = tmp_path / "check.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(report), "-m", "vjplint", "check", "--no-cache",
                           str(FIRING)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert "VJP101" in done.stdout, done.stderr
    assert report.stat().st_size > 1000


def test_the_fast_path_declines_a_candidate_before_reading_pyproject(tmp_path: Path, monkeypatch, capsys) -> None:
    """A file holding a default prefilter name is a candidate whatever the configuration adds: the
    fast path gives it to the full run without reading pyproject.toml; a file without one is
    answered after the configuration is read."""
    from vjplint.batch import fastpath

    candidate, plain = tmp_path / "m.py", tmp_path / "plain.py"
    candidate.write_text("import jax\nf = jax.custom_vjp(lambda x: x)\n")
    plain.write_text("import numpy as np\n")
    asked: list = []

    def pyproject(directory: str):
        asked.append(directory)
        return [directory], None, None

    monkeypatch.setattr(fastpath, "_pyproject", pyproject)
    assert fastpath._no_candidates([str(candidate)]) is None
    assert fastpath._no_candidates([str(plain), str(candidate)]) is None
    assert asked == [str(tmp_path.resolve())]  # the plain file's, before the candidate was read
    assert fastpath._no_candidates([str(plain)]) == 0
    assert capsys.readouterr().out == "All checks passed!\n"


def _parsed(argv):
    from vjplint.cli.check import check_parser

    return vars(check_parser("vjplint check").parse_args(argv))


def test_plain_command_lines_are_read_as_argparse_reads_them() -> None:
    """Every flag without a value, alone and with paths before or after it, gives argparse's
    namespace; anything else is left to argparse."""
    from vjplint.cli.check import plain_arguments
    from vjplint.settings.options import CHECK_OPTIONS

    bare = [name for names, takes_value, _, _ in CHECK_OPTIONS if not takes_value for name in names]
    assert "--force-exclude" in bare and "-q" in bare and "--quiet" in bare
    lines = [[], ["a.py"], ["a.py", "b/c.py"], ["--no-cache", "--force-exclude", "-q", "x.py", "y.py"]]
    for flag in bare:
        lines += [[flag], [flag, "a.py", "b.py"], ["a.py", "b.py", flag], [flag, flag, "a.py"]]
    for argv in lines:
        fast = plain_arguments(argv)
        assert fast is not None and vars(fast) == _parsed(argv), argv
    for argv in (["--select", "VJP1"], ["--select=VJP1"], ["-"], ["--help"], ["--no-cach"], ["a.py", "-q", "b.py"],
                 [""], ["--", "a.py"], ["-j", "2", "a.py"], ["--output-format", "json"], ["-x"]):
        assert plain_arguments(argv) is None, argv


def test_the_rule_catalog_is_the_rules_own() -> None:
    """vjplint/rules/catalog.py says of every rule what its class says (module, defaults, stubs,
    runtime, trigger names, NEEDS), and each code's module holds that class. When a rule is added
    or changed, write it again: the assertion message says how."""
    from vjplint.rules import registry
    from vjplint.rules.catalog import RULES

    rules = registry.all_rules()
    assert list(RULES) == list(rules), registry.CATALOG_HOW
    for code, rule in rules.items():
        assert RULES[code] == registry.catalog_entry(rule), (code, registry.CATALOG_HOW)
        assert registry.rule_class(code) is rule
    assert registry.default_off() == frozenset(c for c, r in rules.items() if not r.DEFAULT_ENABLED)
    from vjplint.rules.catalog import DERIVATIVE_ONLY

    gated = {code: registry.derivative_gate(rule) for code, rule in rules.items()}
    assert DERIVATIVE_ONLY == {code: gate for code, gate in gated.items() if gate is not None}, registry.CATALOG_HOW


def test_a_lint_imports_only_the_rules_its_triggers_select(tmp_path: Path) -> None:
    """A module with a custom_jvp and no custom_vjp imports no rule that only custom_vjp code can
    fire, and its findings are the same as with every rule imported first."""
    source = tmp_path / "m.py"
    source.write_text(textwrap.dedent("""\
        import jax
        import jax.numpy as jnp


        @jax.custom_jvp
        def f(x):
            return jnp.sin(x)


        @f.defjvp
        def f_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return f(x), jnp.cos(x) * t + 1.0
        """))
    code = textwrap.dedent(f"""\
        import json, sys
        from vjplint.lint.engine import lint_source
        from vjplint.rules.catalog import RULES

        def run():
            return [(d.code, d.location.row) for d in lint_source("m.py", open({str(source)!r}, "rb").read()).diagnostics]

        found = run()
        loaded = sorted(c for c, e in RULES.items() if e[0] in sys.modules)
        vjp_only = sorted(c for c, e in RULES.items() if e[5] == (b"custom_vjp",))
        from vjplint.rules.registry import all_rules
        all_rules()
        print(json.dumps([found, run(), loaded, vjp_only]))
        """)
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    found, again, loaded, vjp_only = json.loads(done.stdout)
    assert found == again and [c for c, _ in found] == ["VJP601"]
    assert len(vjp_only) >= 20 and not set(loaded) & set(vjp_only)
    assert "VJP601" in loaded
