"""Speed machinery never changes results: cache on/off/warm and any --jobs give the same JSON;
the cache notices every change that matters; cheap runs import neither libcst nor JAX.

CLI tests run the real command on real files; in-process tests use jobs=1 (no fork inside pytest,
whose process may hold JAX's threads); the process pool is exercised in subprocesses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from tests.conftest import RULE_FIXTURES, ROOT, run_cli
from vjplint.batch import cache as cache_mod
from vjplint.batch import parallel
from vjplint.lint.session import LintSession
from vjplint.model.run_facts import NO_FACTS
from vjplint.settings.config import Config

NON_CANDIDATE = "import numpy as np\n\n\ndef f(x):\n    return np.sin(x) * 2\n"


def _tree(root: Path, small: bool = False) -> Path:
    """Real rule fixtures (2 firing + 1 silent per rule, or 1 firing of 6 rules when `small`)
    plus plain files and broken ones."""
    src = root / "src"
    for rule_dir in sorted(p for p in RULE_FIXTURES.iterdir() if p.is_dir())[: 6 if small else None]:
        chosen = sorted(rule_dir.glob("fire_*.py"))[: 1 if small else 2] + sorted(rule_dir.glob("silent_*.py"))[: 0 if small else 1]
        for path in chosen:
            target = src / rule_dir.name.lower() / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    for i in range(5):
        (src / f"plain_{i}.py").write_text(NON_CANDIDATE)
    (src / "broken.py").write_text("import jax\n\n@jax.custom_vjp\ndef f(x:\n    return x\n")
    (src / "latin1.py").write_bytes(b"import jax\nf = jax.custom_vjp(lambda x: x)\ns = '\xe9'\n")
    (root / "pyproject.toml").write_text('[tool.vjplint]\nselect = ["ALL"]\n')
    return src


def _json(cwd: Path, *args: str) -> list:
    proc = run_cli("check", "--output-format", "json", "--exit-zero", *args, "src", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_json_identical_with_and_without_cache_and_for_any_jobs(tmp_path: Path) -> None:
    _tree(tmp_path)
    reference = _json(tmp_path, "--no-cache", "--jobs", "1")
    assert not (tmp_path / ".vjplint_cache").exists()
    codes = {d["code"] for d in reference}
    assert len(codes) >= 10 and "VJP900" in codes, codes  # a meaningful comparison
    assert any(d["fix"] for d in reference)  # fixes (edits) survive the cache too
    runs = {
        "no cache, 2 processes": ("--no-cache", "--jobs", "2"),
        "no cache, 3 processes": ("--no-cache", "-j", "3"),
        "cold cache, default jobs": (),
        "warm cache, default jobs": (),
        "warm cache, 2 processes": ("--jobs", "2"),
    }
    for label, args in runs.items():
        assert _json(tmp_path, *args) == reference, label
    cache_root = tmp_path / ".vjplint_cache"
    assert (cache_root / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (cache_root / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")


def test_cache_dir_option_and_config_key(tmp_path: Path) -> None:
    _tree(tmp_path, small=True)
    reference = _json(tmp_path, "--no-cache")
    assert _json(tmp_path, "--cache-dir", "elsewhere/c") == reference
    assert list((tmp_path / "elsewhere" / "c").glob("*/*.json"))
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nselect = ["ALL"]\ncache-dir = "from-config"\n')
    assert _json(tmp_path) == reference
    assert list((tmp_path / "from-config").glob("*/*.json"))
    assert not (tmp_path / ".vjplint_cache").exists()


def test_damaged_index_is_an_empty_cache(tmp_path: Path) -> None:
    _tree(tmp_path, small=True)
    reference = _json(tmp_path)
    files = list((tmp_path / ".vjplint_cache").glob("*/*.json"))
    indexes = [p for p in files if not p.name.startswith(("replay-", "config-"))]
    assert len(indexes) == 1 and any(p.name.startswith("replay-") for p in files)
    for garbage in (b"\x00not json", b'{"format": 1, "entries": {"src/plain_0.py": [1]}}',
                    b'{"format": 1, "entries": {"src/broken.py": [0, 0, "x", true, [{"$d": "Evil", "f": {}}], 0]}}'):
        indexes[0].write_bytes(garbage)
        for replay in (tmp_path / ".vjplint_cache").glob("*/replay-*.json"):
            replay.write_bytes(garbage)  # damaged too, and the index is what this run must read
        assert _json(tmp_path) == reference


# -- the cache, in process (jobs=1) ------------------------------------------------------------
FIRING = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp
    from functools import partial


    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def scale(x, w):
        return x * jnp.asarray(w)


    def scale_fwd(x, w):
        return scale(x, w), None


    def scale_bwd(w, res, g):
        return (g * w,)


    scale.defvjp(scale_fwd, scale_bwd)
    """)
CLEAN = textwrap.dedent("""\
    import jax


    @jax.custom_vjp
    def double(x):
        return x * 2


    def double_fwd(x):
        return double(x), None


    def double_bwd(res, g):
        return (2 * g,)


    double.defvjp(double_fwd, double_bwd)
    """)


class _Counter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.linted: List[str] = []
        real = parallel.lint_source

        def counting(display, data, config, path=None, **options):
            self.linted.append(display)
            return real(display, data, config, path=path, **options)

        monkeypatch.setattr(parallel, "lint_source", counting)

    def take(self) -> List[str]:
        taken, self.linted = sorted(self.linted), []
        return taken


def _run(files: List[Path], config: Config) -> List[list]:
    outcomes = parallel.lint_many([(f, config) for f in files], config, jobs=1, use_cache=True)
    return [[(d.code, d.location.row, d.message) for d in o.result.diagnostics] for o in outcomes]


def _age(path: Path, seconds: float = 3600) -> None:
    """Make the file look old enough for its size and mtime to be trusted."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - int(seconds * 1e9)))


@pytest.mark.unit
@pytest.mark.parametrize("stat_first", [True, False], ids=["stat-first (big runs)", "read-first (small runs)"])
def test_cache_hits_and_invalidation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stat_first: bool) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(parallel, "STAT_FIRST_MIN_FILES", 0 if stat_first else 10**9)
    counter = _Counter(monkeypatch)
    firing, plain = tmp_path / "firing.py", tmp_path / "plain.py"
    firing.write_text(FIRING)
    plain.write_text(NON_CANDIDATE)
    _age(firing)
    _age(plain)
    files = [Path("firing.py"), Path("plain.py")]
    config = Config(cache_dir=str(tmp_path / "cache"))

    first = _run(files, config)
    assert counter.take() == ["firing.py"]  # the plain file never reaches the engine
    index = json.loads(next((tmp_path / "cache").glob("*/*.json")).read_text())["entries"]
    assert sorted(index) == (["firing.py", "plain.py"] if stat_first else ["firing.py"])
    assert first[0] and first[0][0][0] == "VJP101" and first[1] == []
    assert _run(files, config) == first and counter.take() == []  # warm: nothing linted

    # Same content, new mtime: the hash says unchanged.
    os.utime(firing)
    assert _run(files, config) == first and counter.take() == []

    # A real change, same size, in the same clock tick as the recorded mtime ("racy"): the mtime is
    # too recent to trust, so the content hash is checked and the file is linted again.
    recorded = firing.stat().st_mtime_ns
    changed = FIRING.replace("(g * w,)", "(g * 2,)")
    assert len(changed) == len(FIRING)
    firing.write_text(changed)
    os.utime(firing, ns=(recorded, recorded))
    assert _run(files, config) == first and counter.take() == ["firing.py"]

    # A change that removes the finding.
    firing.write_text(CLEAN)
    assert _run(files, config) == [[], []] and counter.take() == ["firing.py"]

    # Another configuration, another tool build: never the old results.
    firing.write_text(FIRING)
    _age(firing)
    assert _run(files, config) == first and counter.take() == ["firing.py"]
    assert _run(files, Config(cache_dir=config.cache_dir, ignore=("VJP101",))) == [[], []]
    assert counter.take() == ["firing.py"]
    monkeypatch.setattr(cache_mod, "code_fingerprint", lambda: "another-build")
    assert _run(files, config) == first and counter.take() == ["firing.py"]

    # Big runs trust an old file's size and mtime without reading it (ruff's rule, what makes a
    # warm run cheap): an edit that keeps both, backdated on purpose, is not seen; small runs
    # read every file and see it.
    st = firing.stat()
    firing.write_text(FIRING.replace("(g * w,)", "(g * 2,)"))
    os.utime(firing, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _run(files, config) == first
    assert counter.take() == ([] if stat_first else ["firing.py"])


@pytest.mark.unit
@pytest.mark.parametrize("use_cache", [False, True], ids=["--no-cache", "cache"])
def test_the_lint_reads_again_only_the_candidates_the_index_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 use_cache: bool) -> None:
    """A file without a trigger name costs the run one read and one scan: the project index reads
    every file, and the lint that follows reads again only the candidates (to lint them), with
    the same outcomes; a file changed since the index read it is read again (for the cache:
    another mtime than the index saw)."""
    from vjplint.project.index import with_wrappers

    monkeypatch.chdir(tmp_path)
    (tmp_path / "firing.py").write_text(FIRING)
    (tmp_path / "plain.py").write_text(NON_CANDIDATE)
    (tmp_path / "other.py").write_text(NON_CANDIDATE + "# another\n")
    for p in tmp_path.glob("*.py"):
        _age(p)
    config = Config(cache_dir=str(tmp_path / "cache"))
    reads: List[str] = []
    real = Path.read_bytes

    def counting(self: Path) -> bytes:
        if self.suffix == ".py":
            reads.append(self.name)
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    found: dict = {}
    items = with_wrappers([(Path(n), config) for n in ("firing.py", "other.py", "plain.py")], config,
                          use_cache=use_cache, reads=found)
    assert sorted(reads) == ["firing.py", "other.py", "plain.py"]  # the index: each once
    assert {n: r[3] for n, r in found.items()} == {"firing.py": True, "other.py": False, "plain.py": False}
    assert all(bool(r[2]) is use_cache and (r[1] > 0) is use_cache for r in found.values())  # digest, mtime: the cache's
    reads.clear()
    outcomes = parallel.lint_many(items, config, jobs=1, use_cache=use_cache, reads=found)
    assert reads == ["firing.py"]  # only the candidate, by its lint
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)
    reads.clear()
    alone = parallel.lint_many(items, config, jobs=1, use_cache=use_cache)  # without the index's reads
    assert sorted(reads) == ["firing.py", "firing.py", "other.py", "plain.py"]
    assert [[(d.code, d.location, d.message) for d in o.result.diagnostics] for o in outcomes] == \
        [[(d.code, d.location, d.message) for d in o.result.diagnostics] for o in alone] != [[], [], []]
    if use_cache:  # changed since the index read it: read again
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)
        _age(tmp_path / "plain.py", 7200)
        reads.clear()
        parallel.lint_many(items, config, jobs=1, use_cache=True, reads=found)
        assert sorted(reads) == ["firing.py", "plain.py"]


@pytest.mark.unit
def test_cache_entries_of_deleted_files_are_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(FIRING)
    config = Config(cache_dir=str(tmp_path / "cache"))
    parallel.lint_many([(Path("a.py"), config), (Path("b.py"), config)], config, jobs=1)
    (tmp_path / "b.py").unlink()
    parallel.lint_many([(Path("a.py"), config)], config, jobs=1)
    (index,) = (tmp_path / "cache").glob("*/*.json")
    assert sorted(json.loads(index.read_text())["entries"]) == ["a.py"]


@pytest.mark.unit
def test_worker_count_policy() -> None:
    small = [(i, f"f{i}.py", f"f{i}.py", 1000, False, 0) for i in range(10)]
    big = [(i, f"f{i}.py", f"f{i}.py", 200_000, False, 0) for i in range(10)]
    assert parallel.worker_count(None, small) == 1  # not worth a process
    assert parallel.worker_count(None, big) == min(parallel.available_cpus(), 10)
    assert parallel.worker_count(3, small) == 3  # an explicit --jobs is honoured
    assert parallel.worker_count(8, small[:2]) == 2
    assert parallel.worker_count(4, small[:1]) == 1
    assert parallel.worker_count(1, big) == 1


# -- processes and imports, in subprocesses ----------------------------------------------------
def _python(code: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_progress_and_a_dying_worker_with_processes(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(FIRING)
    (tmp_path / "boom.py").write_text(FIRING)
    (tmp_path / "plain.py").write_text(NON_CANDIDATE)
    code = textwrap.dedent("""\
        import json, os
        from pathlib import Path
        from vjplint.batch import parallel
        from vjplint.settings.config import Config

        real = parallel.lint_source
        def lint_source(display, data, config, path=None, **options):
            if display == "boom.py" and os.getpid() != PARENT:
                os._exit(3)  # a parser crash or the OOM killer
            return real(display, data, config, path=path, **options)
        PARENT = os.getpid()
        parallel.lint_source = lint_source
        calls = []
        files = sorted(Path(".").glob("*.py"))
        outcomes = parallel.lint_many([(f, Config()) for f in files], Config(), jobs=2, use_cache=False,
                                      progress=lambda done, total: calls.append([done, total]))
        print(json.dumps({"calls": calls, "outcomes": {o.display: [o.result.errors,
              [(d.code, d.location.row) for d in o.result.diagnostics]] for o in outcomes}}))
        """)
    data = json.loads(_python(code, tmp_path))
    assert data["calls"] == [[i, 8] for i in range(1, 9)]
    outcomes = data["outcomes"]
    assert outcomes["boom.py"] == [["boom.py: internal error: the worker process died while linting this file"], []]
    assert outcomes["plain.py"] == [[], []]
    for i in range(6):
        assert outcomes[f"m{i}.py"] == [[], [["VJP101", 7]]]


@pytest.mark.unit
def test_progress_printer_drives_from_lint_many(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture) -> None:
    import time

    from vjplint.cli import check as cli

    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    show = cli._progress_printer()
    show(1, 4)
    assert capsys.readouterr().err == ""  # quiet during the first seconds
    now[0] += 3
    show(2, 4)
    show(4, 4)
    assert capsys.readouterr().err == "\r\033[Kvjplint: 2/4 files\r\033[Kvjplint: 4/4 files\r\033[K"


_IMPORTS = textwrap.dedent("""\
    import sys
    from vjplint.cli import main
    try:
        rc = main(ARGS)
    except SystemExit as exc:
        rc = exc.code
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"libcst", "jax", "jaxlib", "numpy"})
    heavy += sorted(m for m in sys.modules if m.startswith("vjplint.rules"))  # the analysis machinery
    print(rc, heavy)
    """)


@pytest.mark.parametrize("args, runs, files", [(["--version"], 1, 0), (["check", "--no-cache", "."], 1, 3),
                                               (["check", "."], 1, 3), (["check", "."], 2, 3), (["check", "."], 2, 70)])
def test_cheap_runs_import_neither_libcst_nor_jax(tmp_path: Path, args: List[str], runs: int, files: int) -> None:
    """`--version`, and runs over files without custom derivatives (cold, or warm from the cache),
    import no libcst, no JAX and not even the rules."""
    for i in range(files):
        (tmp_path / f"plain_{i}.py").write_text(NON_CANDIDATE)
    for _ in range(runs):
        out = _python(_IMPORTS.replace("ARGS", repr(args)), tmp_path)
    assert out.splitlines()[-1] == ("0 []"), out


# -- the newer-syntax fallback: the tokenizer's split is libcst's ------------------------------
NEWER = textwrap.dedent("""\
    # header comment
    import jax


    @jax.custom_vjp
    # a comment between decorator and def
    def f(x):
        return x


    def first[T](xs: list[T]) -> T:  # PEP 695: `ast` before 3.12 rejects this statement
        return xs[0]
    # a comment at column 0 before the next statement
    class Box[T]:
        def get(self) -> T: ...
    type Alias = list[int]
    try:
        pass
    except ValueError:
        pass
    else:
        y = 1; z = 2
    if f:
        w = (1,
    2)
    f.defvjp(lambda x: (x, None), lambda r, g: (g,))
    """)


@pytest.mark.unit
def test_statement_splits_blank_what_libcst_blanks(monkeypatch: pytest.MonkeyPatch) -> None:
    import ast

    from vjplint.syntax import source

    def dump(text):
        return ast.dump(ast.parse(text), include_attributes=True)

    assert source._statement_starts(NEWER) == [1, 4, 10, 13, 15, 16, 22, 25]
    # Column 0 splits inside the brackets of `w = (1,\n2)`: the tokenizer decides that file.
    assert source._blank_statements(NEWER, source._column_zero_starts(NEWER)) is None
    clean = NEWER.replace("(1,\n2)", "(1,\n     2)")
    assert source._column_zero_starts(clean) == source._statement_starts(clean)
    in_string = clean + 'DOC = """\nat column 0\n"""\n'
    assert source._blank_statements(in_string, source._column_zero_starts(in_string)) is None
    for text in (NEWER, clean, in_string):
        fast = source._blank_newer_syntax(text)
        with monkeypatch.context() as patched:
            patched.setattr(source, "_blank_statements", lambda text, starts: None)
            patched.setattr(source, "_statement_starts", lambda text: None)
            slow = source._blank_newer_syntax(text)  # libcst splits
        assert fast is not None and slow is not None
        assert dump(fast) == dump(slow)
        # parse() first blanks where the parser stops, one statement at a time: the same tree.
        assert ast.dump(source.parse(text), include_attributes=True) == dump(slow)
        # A real syntax error is never blanked away, whichever way the file is split.
        assert source._blank_newer_syntax(text.replace("y = 1; z = 2", "y = 1 $ 2")) is None


TYPE_PARAMETERS = """\
import jax
type Scalar = float
def first[T](xs: list[T]) -> T:
    return xs[0]
class Box[T: (int, float)](object):
    def get(self) -> T: ...
def outer(f):
    def decorator[F: Callable[..., Any]](rule: F) -> F:
        return rule
    return decorator
f = jax.custom_vjp(lambda x: x)
"""


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="tests the fallback for syntax newer than `ast`")
def test_type_parameters_are_blanked_without_libcst(monkeypatch: pytest.MonkeyPatch) -> None:
    """PEP 695 statements are recognised by reading them without their type parameters: the
    tree is the one libcst's check gives, and libcst is not needed (its import would fail)."""
    import ast

    from vjplint.syntax import source

    def dump(tree):
        return ast.dump(tree, include_attributes=True)

    with monkeypatch.context() as patched:
        patched.setattr(source, "_without_type_parameters", lambda chunk: chunk)  # libcst decides
        by_libcst = dump(source.parse(TYPE_PARAMETERS))
    monkeypatch.setitem(sys.modules, "libcst", None)  # `import libcst` raises ImportError
    assert dump(source.parse(TYPE_PARAMETERS)) == by_libcst
    assert [type(s).__name__ for s in source.parse(TYPE_PARAMETERS).body] == ["Import", "Assign"]
    # A real error beside type parameters, or a list that is no signature, is still an error.
    for broken in ("def first[T](xs) -> T:\n    return xs +\n", "def first[T, /](xs):\n    return xs\n"):
        with pytest.raises(source.SourceError):
            source.parse(TYPE_PARAMETERS + broken)


@pytest.mark.unit
def test_indexes_of_builds_unused_for_a_week_are_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(FIRING)
    root = tmp_path / "cache"
    old, recent = root / "old-build", root / "recent-build"
    for directory in (old, recent):
        directory.mkdir(parents=True)
        (directory / "index.json").write_text("{}")
    week_ago = __import__("time").time() - cache_mod.STALE_BUILD_S - 60
    os.utime(old, (week_ago, week_ago))
    parallel.lint_many([(Path("a.py"), Config(cache_dir=str(root)))], Config(cache_dir=str(root)), jobs=1)
    current = cache_mod.short_name(cache_mod.code_fingerprint())
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == sorted(["recent-build", current])


@pytest.mark.unit
def test_index_name_collisions_never_share_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cache_mod, "short_name", lambda text: "same")  # every key, one file
    counter = _Counter(monkeypatch)
    (tmp_path / "firing.py").write_text(FIRING)
    _age(tmp_path / "firing.py")
    files = [Path("firing.py")]
    strict = Config(cache_dir=str(tmp_path / "cache"))
    lenient = Config(cache_dir=str(tmp_path / "cache"), ignore=("VJP101",))
    first = _run(files, strict)
    assert first[0] and counter.take() == ["firing.py"]
    assert _run(files, lenient) == [[]] and counter.take() == ["firing.py"]
    assert _run(files, strict) == first and counter.take() == ["firing.py"]
    assert _run(files, strict) == first and counter.take() == []


@pytest.mark.unit
def test_exclude_matchers_agree_with_fnmatch() -> None:
    """The per-directory matchers discovery uses are fnmatch of the name, of the relative path and
    of `pattern/*`, however the patterns are spelled."""
    import fnmatch

    from vjplint.settings.config import DEFAULT_EXCLUDE
    from vjplint.project.discover import _matchers

    patterns = DEFAULT_EXCLUDE + ("tests/data", "gen_*.py", "docs/", "*/fixtures/*", "a[bc].py", "x?y")
    match_name, match_relative = _matchers(patterns)
    relatives = ["build", "src/build", "build/x.py", ".venv/lib/a.py", "tests/data", "tests/data/f.py",
                 "tests/database.py", "gen_x.py", "pkg/gen_y.py", "docs", "docs/conf.py", "pkg/fixtures/a.py",
                 "ab.py", "ad.py", "xzy", "xy", "venvs/a.py", "my_build/b.py", "node_modules", "src/a.py"]
    for relative in relatives:
        name = relative.rsplit("/", 1)[-1]
        expected_name = any(fnmatch.fnmatch(name, p) for p in patterns)
        expected_relative = any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(relative, p.rstrip("/") + "/*")
                                for p in patterns)
        assert bool(match_name(name)) == expected_name, relative
        assert bool(match_relative(relative)) == expected_relative, relative


# -- the pre-commit fast path (vjplint.batch.fastpath) -------------------------------------------------
@pytest.mark.unit
def test_fast_path_constants_match_the_engine_and_the_formatter() -> None:
    from vjplint.lint import engine
    from vjplint.batch import fastpath
    from vjplint.output import OutputContext
    from vjplint.output.text import render_full

    assert fastpath.PREFILTER_NAMES == engine.PREFILTER_NAMES
    assert fastpath.ALL_PASSED == render_full([], OutputContext())


def _both_paths(cwd: Path, args: List[str], env: dict) -> tuple:
    """(fast or not, full): the same command, and with `--output-format text` (which the fast path
    never takes) for the full run's answer."""
    fast = run_cli("check", *args, cwd=cwd, env=env)
    full = run_cli("check", "--output-format", "text", *args, cwd=cwd, env=env)
    return (fast.returncode, fast.stdout, fast.stderr), (full.returncode, full.stdout, full.stderr)


@pytest.mark.parametrize("case", ["plain", "quiet", "candidate", "missing", "directory", "alias-config",
                                  "bad-config", "bad-toml", "other-tool-config", "env-format"])
def test_fast_path_answers_exactly_as_the_full_run(tmp_path: Path, case: str) -> None:
    for i in range(3):
        (tmp_path / f"plain_{i}.py").write_text(NON_CANDIDATE)
    (tmp_path / "firing.py").write_text(FIRING)
    (tmp_path / "uses_alias.py").write_text(FIRING.replace("jax.custom_vjp", "mylib.cvjp").replace(
        "import jax\n", "import jax\nimport mylib\n"))
    files = ["plain_0.py", "plain_1.py", "plain_2.py"]
    args, env = ["--force-exclude", *files], {}
    if case == "quiet":
        args = ["-q", "--no-cache", *files]
    elif case == "candidate":
        args = [*files, "firing.py"]
    elif case == "missing":
        args = [*files, "nowhere.py"]
    elif case == "directory":
        args = [*files, "."]
    elif case == "alias-config":  # the alias makes a file without JAX's names a candidate
        (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\ncustom-vjp-aliases = ["mylib.cvjp"]\n'
                                                 'select = ["ALL"]\n')
        args = [*files, "uses_alias.py"]
    elif case == "bad-config":
        (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nselectt = ["VJP1"]\n')
    elif case == "bad-toml":
        (tmp_path / "pyproject.toml").write_text('[tool.vjplint\n')
    elif case == "other-tool-config":
        (tmp_path / "pyproject.toml").write_text('[tool.ruff]\nline-length = 99\n')
    elif case == "env-format":
        env = {"VJPLINT_OUTPUT_FORMAT": "json"}
    fast, full = _both_paths(tmp_path, args, env)
    assert fast == full
    expected_rc = {"plain": 0, "quiet": 0, "candidate": 1, "missing": 2, "directory": 1, "alias-config": 1,
                   "bad-config": 2, "bad-toml": 2, "other-tool-config": 0, "env-format": 0}[case]
    assert fast[0] == expected_rc, fast
    if case in ("plain", "other-tool-config"):
        assert fast[1:] == ("All checks passed!\n", "")
    if case == "quiet":
        assert fast[1:] == ("", "")


def test_fast_path_imports_no_machinery(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"plain_{i}.py").write_text(NON_CANDIDATE)
    code = textwrap.dedent("""\
        import sys
        from vjplint.cli import main
        rc = main(["check", "--force-exclude", "plain_0.py", "plain_1.py", "plain_2.py"])
        print(rc, sorted(m for m in ("argparse", "dataclasses", "tomllib", "vjplint.settings.config", "vjplint.lint.engine")
                         if m in sys.modules))
        """)
    assert _python(code, tmp_path).splitlines()[-1] == "0 []"


# -- replaying an unchanged run (vjplint.batch.fastpath.replay) -----------------------------------------
_RUN = textwrap.dedent("""\
    import io, json, sys
    from contextlib import redirect_stdout
    from vjplint.cli import main
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(ARGS)
    print(json.dumps({"rc": rc, "out": out.getvalue(), "replayed": "vjplint.lint.engine" not in sys.modules}))
    """)


def _run_in(cwd: Path, *args: str) -> dict:
    return json.loads(_python(_RUN.replace("ARGS", repr(["check", *args])), cwd).splitlines()[-1])


def _age_tree(root: Path, seconds: float = 3600) -> None:
    """Everything last modified an hour ago: old enough for the replay's racy rule."""
    for path in sorted(root.rglob("*"), key=lambda p: -len(p.parts)) + [root]:
        if ".vjplint_cache" not in path.parts:
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - int(seconds * 1e9)))


def _replay_tree(root: Path) -> None:
    (root / ".git").mkdir()
    (root / "pyproject.toml").write_text('[tool.vjplint]\nselect = ["ALL"]\n')
    (root / "pkg").mkdir()
    (root / "pkg" / "firing.py").write_text(FIRING)
    (root / "pkg" / "clean.py").write_text(CLEAN)
    (root / "plain.py").write_text(NON_CANDIDATE)


def test_an_unchanged_run_is_replayed_and_any_change_is_seen(tmp_path: Path) -> None:
    _replay_tree(tmp_path)
    (tmp_path / ".vjplint_cache").mkdir()  # as after an earlier run: its creation is no change
    _age_tree(tmp_path)
    first = _run_in(tmp_path, ".")
    assert first["rc"] == 1 and "VJP101" in first["out"] and not first["replayed"]
    again = _run_in(tmp_path, ".")
    assert again == {**first, "replayed": True}

    def changed() -> dict:
        _age_tree(tmp_path)  # even old mtimes: what changed is what counts
        result = _run_in(tmp_path, ".")
        assert result == {**_run_in(tmp_path, ".", "--no-cache"), "replayed": False}
        return result

    # An edit of a linted file.
    (tmp_path / "pkg" / "firing.py").write_text(CLEAN)
    assert changed()["rc"] == 0
    (tmp_path / "pkg" / "firing.py").write_text(FIRING)
    assert changed()["out"] == first["out"]
    # A new file, then a removed one (their directory's mtime).
    (tmp_path / "pkg" / "second.py").write_text(FIRING)
    assert changed()["out"].count("VJP101") == 2
    (tmp_path / "pkg" / "second.py").unlink()
    assert changed()["out"] == first["out"]
    # A .gitignore that now hides the firing file, then the configuration.
    (tmp_path / ".gitignore").write_text("pkg/firing.py\n")
    assert changed()["rc"] == 0
    (tmp_path / ".gitignore").unlink()
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nselect = ["ALL"]\nignore = ["VJP101"]\n')
    assert "VJP101" not in changed()["out"]
    # Nothing changed since the last full run (which recorded the aged tree): replayed again.
    assert _run_in(tmp_path, ".") == {**_run_in(tmp_path, ".", "--no-cache"), "replayed": True}


def test_replay_needs_the_same_command_and_old_enough_files(tmp_path: Path) -> None:
    _replay_tree(tmp_path)
    (tmp_path / ".vjplint_cache").mkdir()
    _age_tree(tmp_path)
    text = _run_in(tmp_path, "pkg")
    assert not text["replayed"] and _run_in(tmp_path, "pkg")["replayed"]
    as_json = _run_in(tmp_path, "--output-format", "json", "pkg")  # another command line
    assert not as_json["replayed"] and json.loads(as_json["out"])[0]["code"] == "VJP101"
    # An edit that keeps size and mtime, made in the clock tick the last run began in: the racy
    # rule refuses to trust the mtime, so the run is not replayed.
    firing = tmp_path / "pkg" / "firing.py"
    recent = __import__("time").time_ns()
    for path in (firing, tmp_path / "pkg"):
        os.utime(path, ns=(recent, recent))
    assert not _run_in(tmp_path, "pkg")["replayed"]  # records with `recent` inside its racy window
    firing.write_text(FIRING.replace("(g * w,)", "(g * 7,)"))
    os.utime(firing, ns=(recent, recent))
    result = _run_in(tmp_path, "pkg")
    assert not result["replayed"] and result == {**_run_in(tmp_path, "--no-cache", "pkg"), "replayed": False}
    # --no-cache neither records nor replays; a run with a warning is never recorded.
    assert not _run_in(tmp_path, "--no-cache", "pkg")["replayed"]
    _age_tree(tmp_path)
    warned = [_run_in(tmp_path, "pkg", "missing.py") for _ in range(2)]
    assert warned[0]["rc"] == warned[1]["rc"] == 2 and not warned[1]["replayed"]


def test_fast_path_trusts_a_configuration_a_full_run_validated(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\ncustom-vjp-aliases = ["mylib.cvjp"]\n')
    for i in range(2):
        (tmp_path / f"plain_{i}.py").write_text(NON_CANDIDATE)
    (tmp_path / "aliased.py").write_text("import mylib\n\n\n@mylib.cvjp\ndef f(x):\n    return x\n")
    _age_tree(tmp_path)
    plain = ["--force-exclude", "plain_0.py", "plain_1.py"]
    first = _run_in(tmp_path, *plain)
    assert first == {"rc": 0, "out": "All checks passed!\n", "replayed": False}  # validated the table
    assert _run_in(tmp_path, *plain) == {**first, "replayed": True}  # the fast path, trusting it
    # The alias makes a file without JAX's names a candidate: the fast path must not answer.
    with_alias = _run_in(tmp_path, *plain, "aliased.py")
    assert not with_alias["replayed"] and with_alias == {**_run_in(tmp_path, "--no-cache", *plain, "aliased.py"),
                                                         "replayed": False}
    # An edited configuration is not trusted until a full run has validated it again.
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nselectt = ["VJP1"]\n')
    _age_tree(tmp_path)
    for _ in range(2):  # the fast path never answers "All checks passed!" for it
        broken = run_cli("check", *plain, cwd=tmp_path)
        assert broken.returncode == 2 and "selectt" in broken.stderr and broken.stdout == ""


def test_replay_survives_new_files_in_ancestor_directories_but_not_a_new_config(tmp_path: Path) -> None:
    """The record keeps what the answer depends on: the linted tree, and each pyproject.toml and
    .gitignore looked for above it (present or absent), not the mtimes of the ancestors."""
    project = tmp_path / "outer" / "project"
    project.mkdir(parents=True)
    (project / "m.py").write_text(FIRING)
    old = __import__("time").time() - 3600
    for path in (project / "m.py", project, tmp_path / "outer"):
        os.utime(path, (old, old))
    run = textwrap.dedent(f"""\
        import contextlib, io
        from vjplint.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            main(["{project}"])
        """)
    probe = textwrap.dedent(f"""\
        import contextlib, io, json
        from vjplint.batch import fastpath
        with contextlib.redirect_stdout(io.StringIO()):
            replayed = fastpath.replay(["{project}"])
        print(json.dumps(replayed is not None))
        """)
    _python(run, tmp_path)  # records the answer
    first = json.loads(_python(probe, tmp_path))
    (tmp_path / "outer" / "unrelated.txt").write_text("x")  # an ancestor's mtime changes
    second = json.loads(_python(probe, tmp_path))
    (tmp_path / "outer" / "pyproject.toml").write_text('[tool.vjplint]\nignore = ["VJP301"]\n')
    third = json.loads(_python(probe, tmp_path))
    assert (first, second, third) == (True, True, False)


def _findings(path: Path, focus: bool = True) -> List[tuple]:
    from vjplint.lint.engine import lint_source
    from vjplint.lint.session import LintSession

    result = lint_source(str(path), path.read_bytes(), Config(), session=LintSession(focus=focus))
    return [(d.code, d.location, d.end_location, d.message, d.fix and (d.fix.message, d.fix.edits, d.fix.plan))
            for d in result.diagnostics]


@pytest.mark.parametrize("tree", ["fixtures", "eval/cases"])
def test_analysing_only_the_regions_that_can_matter_changes_no_finding(tree: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """vjplint.syntax.regions: every file's findings are those of the whole module, also when the
    regions are chosen even in the smallest files."""
    from vjplint.syntax import regions

    paths = sorted((ROOT / tree).rglob("*.py"))
    assert len(paths) > 50
    whole = {p: _findings(p, focus=False) for p in paths}
    monkeypatch.setattr(regions, "MIN_STATEMENTS", 1)
    focused = {p: _findings(p) for p in paths}
    assert sum(map(len, whole.values())) > 30
    assert {p: f for p, f in focused.items() if f != whole[p]} == {}


def _summaries(files: List[Path], focus: bool = True) -> dict:
    from vjplint.project.index import build_index

    index = build_index(files, Config(), use_cache=False, cross_module=True, focus=focus)
    return index.external


def test_summaries_of_the_regions_that_can_matter_are_those_of_the_whole_modules(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """vjplint.project.summary models a caller (and a module a value is imported from) on its
    regions naming an import that leads to a target: the rows are those of the whole modules,
    also when the regions are chosen even in the smallest files."""
    from vjplint.syntax import regions

    runs = [sorted((ROOT / "tests" / "data" / "crossmodule" / "shop").glob("*.py"))]
    runs += [sorted(family.glob("*.py")) for family in sorted((ROOT / "eval" / "cases").iterdir())
             if family.is_dir() and any(family.glob("*_xmod.py"))]
    whole = [_summaries(files, focus=False) for files in runs]
    monkeypatch.setattr(regions, "MIN_STATEMENTS", 1)
    focused = [_summaries(files) for files in runs]
    assert sum(len(rows) for external in whole for rows in external.values()) > 10
    assert focused == whole


@pytest.mark.parametrize("elsewhere, kept", [
    ("", False),  # nothing else uses `partial`: the rewrite drops its import
    ("def helper(f):\n    return partial(f, 1)\n", True),  # a Name `ast` sees: the import stays
    ("NOTE = 'partial application'\n", False),  # only the word, in a string: the import goes
    ("# partial is imported for the decorator\n", False),  # in a comment
    ("def helper(obj):\n    return obj.partial(partial=1)\n", False),  # attribute and keyword, not uses
    ("import functools\nhelper = functools.partial(print, 1)\n", False),
    ("class C:\n    partial = None\n", True),  # a class attribute named like it: a Name
    ("def helper(partial):\n    return 1\n", True),  # a parameter of that name: kept
])
def test_other_mentions_of_a_dropped_import(elsewhere: str, kept: bool) -> None:
    """The rewrite drops `from functools import partial` when the collapsed decorator held its
    last use: a Name elsewhere (or a parameter of that name) keeps it; the word in a
    string, a comment, an attribute or a keyword argument's name does not."""
    from vjplint.lint.engine import lint_source
    from vjplint.fixes import apply

    text = ("from functools import partial\n\nimport jax\nimport jax.numpy as jnp\n\n\n"
            + elsewhere + "\n\n"
            "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(w, x):\n    return jnp.sin(x) * w\n\n\n"
            "def f_fwd(w, x):\n    return f(w, x), None\n\n\ndef f_bwd(w, res, g):\n    return (g * w,)\n\n\n"
            "f.defvjp(f_fwd, f_bwd)\n\n\ndef use(x):\n    return f(jnp.ones(3), x)\n")
    plans = list(dict.fromkeys(d.fix.plan for d in lint_source("m.py", text).diagnostics
                               if d.fix is not None and d.fix.plan is not None))
    assert plans
    fixed = apply._residual_rewrite(text, plans, Config())[0]
    assert fixed != text and "@jax.custom_vjp\ndef f(w, x):" in fixed
    expected_head = "from functools import partial\n\nimport jax\n" if kept else "import jax\n"
    assert fixed.startswith(expected_head)


def test_the_index_scans_find_what_their_regular_expressions_find() -> None:
    """The cross-module index reads registrations backwards from `.defvjp` and import lines from
    each `import`, instead of trying a regex at every word or line: same answers as the regexes."""
    import re

    from vjplint.facts.crossmodule import _CREATOR, _INNER_CREATOR, _TOP, _creators, _inner_creators, _registered
    from vjplint.syntax.positions import column_zero_matches
    from vjplint.project.cross_values import _IMPORT_LINE, _WORD, _imported_words
    from vjplint.model.wrappers import _TOP as _WRAPPER_TOP

    registered = re.compile(r"\b(\w+)\s*\.\s*(?:defvjp|defjvp|defjvps|def_fwd|def_bwd|def_jvp)\b")
    texts = [p.read_text(encoding="utf-8", errors="replace")
             for tree in ("fixtures", "eval/cases", "vjplint") for p in sorted((ROOT / tree).rglob("*.py"))]
    texts += ["f.defvjp.defvjp(a, b)", "f .\n defvjp(a)", "é_f.defjvps(x)", ".defvjp(x)", "(g) . def_fwd",
              "import\nfrom x import\rimport y\n  from a.b import c, d\nx = 'import z'\nimportlib.import_module('q')\n",
              "@d\ndef f(): pass\n\tx = 1\n#c\n)\nelse:\n  @custom_vjp  # custom_jvp\n def g(): pass\n\fy = 2\n"]
    assert sum(bool(registered.findall(t)) for t in texts) > 100
    for text in texts:
        assert _registered(text) == set(registered.findall(text)), text
        data = text.encode()
        expected = {w for groups in _IMPORT_LINE.findall(data) for g in groups for w in _WORD.findall(g)}
        assert _imported_words(data) == expected, text
        # Column-0 patterns tried only at lines starting with code, creators' lines only.
        for pattern in (_TOP, _WRAPPER_TOP):
            assert [m.span() for m in column_zero_matches(pattern, text)] == [m.span() for m in pattern.finditer(text)]
        assert [m.span() for m in _inner_creators(text)] == [m.span() for m in _INNER_CREATOR.finditer(text)]
        assert [m.span() for m in _creators(text)] == [m.span() for m in _CREATOR.finditer(text)]


def test_an_edited_rule_changes_the_code_fingerprint(tmp_path: Path) -> None:
    """The cache and the replay are keyed by every module of the package, rules included: a
    development checkout whose rule changed never reads what the old rule produced."""
    import vjplint

    shutil.copytree(Path(vjplint.__file__).parent, tmp_path / "vjplint",
                    ignore=shutil.ignore_patterns("__pycache__"))
    probe = [sys.executable, "-c", "from vjplint.batch.fastpath import code_fingerprint as f, short_name as s; print(s(f()))"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    before = subprocess.run(probe, env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    rule = next((tmp_path / "vjplint" / "rules").rglob("vjp602_*.py"))
    again = subprocess.run(probe, env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    rule.write_text(rule.read_text() + "\n# edited\n")
    after = subprocess.run(probe, env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert before.strip() and before == again and before != after


def test_a_worker_trusts_the_parents_prefilter_only_for_the_bytes_it_passed(tmp_path: Path) -> None:
    """A candidate's bytes are not searched again in the worker; a file that changed size since
    the parent read it is prefiltered anew (here: it no longer names a creator)."""
    path = tmp_path / "m.py"
    candidate = "import jax\nf = jax.custom_vjp(lambda x: x)\n"
    path.write_text(candidate)
    configs = [(Config(), NO_FACTS)]
    session = LintSession()
    result, _ = parallel._lint((0, "m.py", str(path), len(candidate), False, 0), configs, session)
    assert result.analysed
    path.write_text(NON_CANDIDATE)
    result, _ = parallel._lint((0, "m.py", str(path), len(candidate), False, 0), configs, session)
    assert not result.analysed and result.diagnostics == []
    result, _ = parallel._lint((0, "m.py", str(path), len(NON_CANDIDATE), False, 0), configs, session)
    assert result.analysed and result.diagnostics == []  # the same size: taken as the bytes the parent passed


def test_a_run_without_workers_freezes_what_its_first_small_lint_left(tmp_path: Path, monkeypatch) -> None:
    """The first lint of a run without workers (a one-file check) moves what lives then out of the
    collector's sight instead of having it scanned when the collector resumes; once per process,
    and only after a file of at most FREEZE_MAX_BYTES. The collector runs again afterwards."""
    import gc

    small, big = tmp_path / "small.py", tmp_path / "big.py"
    small.write_text("import jax\nf = jax.custom_vjp(lambda x: x)\n")
    big.write_text("import jax\nf = jax.custom_vjp(lambda x: x)\n" + "x = 1\n" * 40)
    frozen: List[bool] = []
    monkeypatch.setattr(parallel, "_FROZEN", frozen)
    monkeypatch.setattr(parallel, "FREEZE_MAX_BYTES", big.stat().st_size - 1)
    assert gc.isenabled()
    try:
        parallel.lint_many([(big, Config()), (small, Config())], Config(), jobs=1, use_cache=False)
        assert frozen == [] and gc.isenabled()  # the first task was too big; the second is not the first
        parallel.lint_many([(small, Config()), (big, Config())], Config(), jobs=1, use_cache=False)
        assert frozen == [True] and gc.isenabled() and gc.get_freeze_count() > 0
        count = gc.get_freeze_count()
        parallel.lint_many([(small, Config())], Config(), jobs=1, use_cache=False)
        assert frozen == [True] and gc.get_freeze_count() == count  # once per process
    finally:
        gc.unfreeze()
