"""Property tests: the linter never raises on any input, and `--fix` output always parses, is
idempotent and changes nothing outside the custom_vjp families it rewrites.

Inputs are the fixtures under fixtures/, mutated (text and byte level), and programs from
hypothesmith spliced between their top-level statements. Examples are bounded and derandomized
so a run is fast and the same everywhere."""

from __future__ import annotations

import ast
import codecs
import io
import re
from functools import lru_cache
from typing import Callable, Dict, List, Set, Tuple

import hypothesmith
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURES
from vjplint.settings.config import Config
from vjplint.diagnostics import Applicability
from vjplint.lint.engine import LintResult, lint_source

SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.large_base_example, HealthCheck.filter_too_much])

SEED_PATHS = sorted(FIXTURES.rglob("*.py"))
SEEDS = [p.read_text(encoding="utf-8") for p in SEED_PATHS]
FIXABLE_CODES = ("VJP101", "VJP102", "VJP103", "VJP201", "VJP301", "VJP306", "VJP307", "VJP309", "VJP312", "VJP319",
                 "VJP323", "VJP401", "VJP402")
FIX_SEEDS = [text for path, text in zip(SEED_PATHS, SEEDS)
             if (path.parent.parent.name in ("fix", "fix_small", "fix_structure") and path.name == "input.py")
             or (path.parent.name in FIXABLE_CODES and path.name.startswith("fire_"))]

CONFIGS = [
    Config(),
    Config(select=("ALL",)),
    Config(target="vjp3"),
    Config(custom_vjp_aliases=(("mylib.custom_vjp", "static_argnums"),),
           custom_jvp_aliases=(("mylib.custom_jvp", "nondiff_argnums"),),
           array_names=frozenset({"x", "lo"}), static_names=frozenset({"n", "hi"})),
]
# Spellings the recogniser and the rules look for, and syntax that trips parsers.
TOKENS = [
    "custom_vjp", "jax.custom_vjp", "custom_jvp", "@jax.custom_jvp\n", "nondiff_argnums=", "nondiff_argnames=",
    "(0,)", "(0, 1)", "[1]", "range(0, 2)", "-1", "1.5", "'x'", "True", ".defvjp(", ".defjvp", ".defjvps(",
    "partial(jax.custom_vjp, nondiff_argnums=(0,))", "@partial(", "symbolic_zeros=True, optimize_remat=True",
    "lambda *a: a", "*args", "**kwargs", "None", "return", "yield", "async ", "await ", "global g\n",
    "nonlocal g\n", "self", "cls", "JVPTracer", "isinstance(x, JVPTracer)", "jax_use_direct_linearize",
    "jax.jit", "jax.vmap(", "jax.grad(", "jnp.clip(g, lo, hi)", "(", ")", "[", "]", "{", "}", ":", ",", "=",
    "\n", "\r", "\r\n", "\t", "    ", "\\\n", "#", "# noqa", "# noqa: VJP101", "# vjplint: skip-file",
    '"""', "'''", "\x00", "\ufeff", "\x0c", "\u2028", "é", "type X = int\n", "def g[T](x: T): pass\n",
    "class C[T]: pass\n", "match x:\n    case 1: pass\n", "f'{x!r:>{w}}'", "@", ";", "...",
]
BYTE_TOKENS = [b"\xff", b"\xc3", b"\xe9", b"\x00", codecs.BOM_UTF8, b"\r", b"\x80\x80", b"\xed\xa0\x80",
               b"custom_vjp"]
COOKIE_ENCODINGS = ["latin-1", "utf-8", "cp1252", "ascii", "utf-16", "utf-8-sig", "klingon", "rot13", "idna",
                    "punycode", "unicode_escape", "utf-7", "shift_jis", "euc-jp", "undefined"]


def _lines(text: str) -> List[str]:
    """Lines with their endings, split where Python splits them."""
    return io.StringIO(text, newline="").readlines()


# -- text mutations ------------------------------------------------------------------------------------
Mutation = Callable[[st.DataObject, str], str]


def _cut(data: st.DataObject, text: str) -> Tuple[int, int]:
    start = data.draw(st.integers(0, len(text)))
    return start, min(len(text), start + data.draw(st.integers(0, 60)))


def _delete(data, text):
    start, end = _cut(data, text)
    return text[:start] + text[end:]


def _duplicate(data, text):
    start, end = _cut(data, text)
    at = data.draw(st.integers(0, len(text)))
    return text[:at] + text[start:end] + text[at:]


def _insert_token(data, text):
    at = data.draw(st.integers(0, len(text)))
    return text[:at] + data.draw(st.sampled_from(TOKENS)) + text[at:]


def _insert_text(data, text):
    at = data.draw(st.integers(0, len(text)))
    return text[:at] + data.draw(st.text(max_size=8)) + text[at:]


def _line_op(data, text):
    lines = _lines(text)
    if not lines:
        return text
    i = data.draw(st.integers(0, len(lines) - 1))
    j = data.draw(st.integers(0, len(lines) - 1))
    op = data.draw(st.sampled_from(["swap", "drop", "indent", "dedent", "graft"]))
    if op == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    elif op == "drop":
        del lines[i]
    elif op == "indent":
        lines[i] = "    " + lines[i]
    elif op == "dedent":
        lines[i] = lines[i][min(4, len(lines[i]) - len(lines[i].lstrip(" "))):]
    else:  # a line from another fixture
        other = _lines(data.draw(st.sampled_from(SEEDS)))
        lines.insert(i, other[j % len(other)] if other else "\n")
    return "".join(lines)


def _truncate(data, text):
    return text[: data.draw(st.integers(0, len(text)))]


TEXT_MUTATIONS: List[Mutation] = [_delete, _duplicate, _insert_token, _insert_token, _insert_text, _line_op,
                                  _line_op, _truncate]


@st.composite
def mutated_fixtures(draw) -> str:
    data = draw(st.data())
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        text = draw(st.sampled_from(TEXT_MUTATIONS))(data, text)
    return text


@st.composite
def mutated_bytes(draw) -> bytes:
    raw = draw(mutated_fixtures()).encode("utf-8", "surrogatepass")
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["flip", "insert", "cookie", "reencode"]))
        at = draw(st.integers(0, len(raw)))
        if op == "flip" and raw:
            at = min(at, len(raw) - 1)
            raw = raw[:at] + bytes([draw(st.integers(0, 255))]) + raw[at + 1:]
        elif op == "insert":
            raw = raw[:at] + draw(st.sampled_from(BYTE_TOKENS) | st.binary(max_size=6)) + raw[at:]
        elif op == "cookie":
            cookie = f"# -*- coding: {draw(st.sampled_from(COOKIE_ENCODINGS))} -*-\n".encode()
            raw = (codecs.BOM_UTF8 if draw(st.booleans()) else b"") + cookie + raw
        else:
            raw = raw.decode("utf-8", "replace").encode(draw(st.sampled_from(["latin-1", "utf-16", "cp1252"])),
                                                        "replace")
    return raw


# -- splicing generated programs into fixtures ----------------------------------------------------------------
def _boundaries(text: str) -> List[int]:
    """0-based line indexes where a top-level statement (with its decorators) starts, and the end."""
    module = ast.parse(text)
    starts = [min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", ()))]) - 1 for s in module.body]
    return [*starts, len(_lines(text))]


def _splice(text: str, program: str, index: int) -> str:
    lines = _lines(text)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    bounds = _boundaries(text)
    at = bounds[index % len(bounds)]
    if program and not program.endswith(("\n", "\r")):
        program += "\n"
    return "".join(lines[:at]) + program + "".join(lines[at:])


POOLS = {"all": SEEDS, "fix": FIX_SEEDS}  # strategies take a pool's name: a short repr


@st.composite
def spliced_programs(draw, pool: str = "all") -> str:
    return _splice(draw(st.sampled_from(POOLS[pool])), draw(hypothesmith.from_grammar()), draw(st.integers(0, 50)))


# -- mutations that keep the module parseable (for the fix properties) ----------------------------------
def _parses(text: str) -> bool:
    try:
        ast.parse(text)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


@lru_cache(maxsize=None)
def _top_level(text: str) -> Tuple[Tuple[int, int], ...]:
    """(first, end) 0-based line ranges of the top-level statements."""
    bounds = _boundaries(text)
    return tuple(zip(bounds[:-1], bounds[1:]))


# "cr": old Mac line endings (the fix keeps a final lone \r: test_fix_keeps_a_final_lone_cr).
EXTRA_STRUCTURAL: List[str] = ["cr"]


def _structural(data: st.DataObject, text: str) -> str:
    """A mutation that keeps the module parseable (mostly: the caller filters)."""
    lines = _lines(text)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    spans = _top_level(text)
    op = data.draw(st.sampled_from(["comment", "duplicate", "delete", "swap", "crlf", "tabs", "argnums",
                                    "classify", "rename", "trailing", *EXTRA_STRUCTURAL]))
    if op in ("comment", "duplicate", "delete", "swap") and spans:
        i = data.draw(st.integers(0, len(spans) - 1))
        j = data.draw(st.integers(0, len(spans) - 1))
        (a0, a1), (b0, b1) = spans[i], spans[j]
        if op == "comment":
            note = data.draw(st.sampled_from(["# custom_vjp note\n", "\n\n", "# noqa\n", "#\x0c\n"]))
            return "".join(lines[:a0]) + note + "".join(lines[a0:])
        if op == "duplicate":
            return "".join(lines[:b0]) + "".join(lines[a0:a1]) + "".join(lines[b0:])
        if op == "delete":
            return "".join(lines[:a0]) + "".join(lines[a1:])
        if a0 > b0:
            (a0, a1), (b0, b1) = (b0, b1), (a0, a1)
        if a1 <= b0:
            return "".join(lines[:a0] + lines[b0:b1] + lines[a1:b0] + lines[a0:a1] + lines[b1:])
        return text
    if op in ("crlf", "cr"):  # Windows, or old Mac line endings (a lone \r ends a line for Python)
        return "".join(line.rstrip("\r\n") + ("\r\n" if op == "crlf" else "\r") for line in lines)
    if op == "tabs":
        return text.replace("    ", "\t")
    if op == "argnums":
        argnums = data.draw(st.lists(st.integers(0, 4), max_size=3, unique=True))
        return re.sub(r"nondiff_argnums=\([^()]*\)", f"nondiff_argnums=({', '.join(map(str, argnums))},)"
                      if argnums else "nondiff_argnums=()", text, count=1)
    if op == "classify":  # the whole module becomes a class body: functions become methods
        return "class Wrapper:\n" + "".join("    " + line if line.strip() else line for line in lines)
    if op == "rename":
        names = sorted(set(re.findall(r"\b(lo|hi|x|g|res|fwd|bwd|scale|eps)\b", text)))
        if names:
            name = data.draw(st.sampled_from(names))
            return re.sub(rf"\b{name}\b", name + "_renamed", text)
        return text
    i = data.draw(st.integers(0, max(len(lines) - 1, 0)))  # trailing: a comment at the end of a line
    return "".join(line.rstrip("\r\n") + "  # note" + line[len(line.rstrip("\r\n")):] if k == i else line
                   for k, line in enumerate(lines))


@st.composite
def parseable_mutations(draw, pool: str = "fix") -> str:
    data = draw(st.data())
    text = draw(st.sampled_from(POOLS[pool]))
    for _ in range(draw(st.integers(0, 3))):
        mutated = _structural(data, text)
        if _parses(mutated):
            text = mutated
    return text


# -- the linter never raises -------------------------------------------------------------------------------------
def _check_result(result: LintResult, text: str) -> None:
    from vjplint.rules.registry import ENGINE_CODES, all_rules

    assert isinstance(result, LintResult)
    assert result.errors == []
    known = set(all_rules()) | set(ENGINE_CODES)
    rows = len(_lines(text)) + 1
    for d in result.diagnostics:
        assert d.code in known
        assert 1 <= d.location.row <= rows and d.location.column >= 1, d
        assert (d.end_location.row, d.end_location.column) >= (d.location.row, d.location.column), d


@settings(max_examples=400, **SETTINGS)
@given(mutated_fixtures(), st.sampled_from(CONFIGS))
def test_lint_never_raises_on_mutated_fixtures(text, config):
    _check_result(lint_source("fuzz.py", text, config), text)


@settings(max_examples=300, **SETTINGS)
@given(mutated_bytes(), st.sampled_from(CONFIGS))
def test_lint_never_raises_on_mutated_bytes(data, config):
    result = lint_source("fuzz.py", data, config)
    _check_result(result, result.decoded.text if result.decoded else data.decode("latin-1"))


@settings(max_examples=150, **SETTINGS)
@given(parseable_mutations("all"), st.sampled_from(CONFIGS))
def test_lint_never_raises_on_parseable_mutations(text, config):
    _check_result(lint_source("fuzz.py", text, config), text)


@settings(max_examples=100, **SETTINGS)
@given(st.binary(max_size=300), st.integers(0, 300))
def test_lint_never_raises_on_arbitrary_bytes(data, at):
    data = data[:at] + b"jax.custom_vjp" + data[at:]  # past the byte prefilter, into the parser
    result = lint_source("fuzz.py", data, Config())
    _check_result(result, result.decoded.text if result.decoded else data.decode("latin-1"))


# -- --fix: parses, idempotent, local ---------------------------------------------------------------------------
def _statement_lines(stmt: ast.stmt) -> range:
    start = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
    return range(start, (stmt.end_lineno or stmt.lineno) + 1)


def _rewritable_lines(text: str, unsafe: bool) -> Set[int]:
    """1-based lines a fix may touch: each custom_vjp family (primal, its creation, fwd, bwd, the
    registration) that holds an offered fix, the range of every offered one-edit fix, and imports
    (the fix drops an unused `partial`), and the rows a fix's explicit edits name. Blank lines are
    not checked."""
    from vjplint.facts.collect import Recognizer, collect
    from vjplint.syntax.positions import source_lines

    module = ast.parse(text)
    parents: Dict[ast.AST, ast.AST] = {}
    for node in ast.walk(module):
        for child in ast.iter_child_nodes(node):
            parents[child] = node

    def statement(node: ast.AST) -> ast.stmt:
        while not isinstance(node, ast.stmt):
            node = parents[node]
        return node

    offered = [d for d in lint_source("fuzz.py", text, Config()).diagnostics
               if d.fix is not None and (d.fix.applicability is Applicability.SAFE or unsafe)]
    allowed = {row for d in offered for row in range(d.location.row, d.end_location.row + 1)}
    # a fix of explicit edits declares where it writes (VJP201's also passes the value at each call)
    allowed |= {row for d in offered for e in d.fix.edits for row in range(e.location.row, e.end_location.row + 1)}
    # a fix that adds a registration (VJP301) makes the rules it names part of the family, and the
    # next round of the fix loop may fix them (VJP307 on the now registered bwd)
    registered = {name.strip() for d in offered for e in d.fix.edits
                  for names in re.findall(r"\.def(?:vjp|jvp)\(([^)]*)\)", e.content) for name in names.split(",")}
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in registered:
            allowed.update(_statement_lines(node))
    model = collect(module, source_lines(text), Recognizer())
    defs = {node.name: node for node in module.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for derivative in model.derivatives:
        members = [derivative.anchor, derivative.creation, derivative.primal]
        for registration in derivative.registrations:
            members.append(registration.node)
            members.extend(rule.node for rule in registration.rules)
            # the functions the registration names: a fwd that only returns a helper's call is
            # collected as that helper, and the fix rewrites the one registered
            if isinstance(registration.node, ast.Call):
                members.extend(defs[a.id] for a in registration.node.args if isinstance(a, ast.Name) and a.id in defs)
        family = {row for node in members if node is not None for row in _statement_lines(statement(node))}
        if family & allowed:
            allowed |= family
    for node in ast.walk(module):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            allowed.update(_statement_lines(node))
    allowed.update(i for i, line in enumerate(_lines(text), start=1) if not line.strip())
    return allowed


def _assert_unchanged_outside(old: str, new: str, allowed: Set[int]) -> None:
    """Every run of consecutive lines outside `allowed` appears verbatim in `new`, in order."""
    runs: List[str] = []
    current: List[str] = []
    for i, line in enumerate(_lines(old), start=1):
        if i in allowed:
            if current:
                runs.append("".join(current))
            current = []
        else:
            current.append(line)
    if current:
        runs.append("".join(current))
    position = 0
    for run in runs:
        found = new.find(run, position)
        while found > 0 and new[found - 1] not in "\r\n":
            found = new.find(run, found + 1)
        assert found >= 0, f"changed outside the rewritten families:\n{run}"
        position = found + len(run)


def _check_fix(text: str, unsafe: bool) -> None:
    from vjplint.fixes.apply import fix_source

    new, fixed, _ = fix_source("fuzz.py", text, Config(), unsafe)
    event("fixed something" if fixed else "nothing to fix")
    assert _parses(new), new
    assert (fixed == 0) == (new == text)
    again, fixed_again, _ = fix_source("fuzz.py", new, Config(), unsafe)
    assert (again, fixed_again) == (new, 0), "a second --fix changed the file"
    if new != text:
        _assert_unchanged_outside(text, new, _rewritable_lines(text, unsafe))


@settings(max_examples=250, **SETTINGS)
@given(parseable_mutations(), st.booleans())
def test_fix_parses_is_idempotent_and_stays_in_the_family(text, unsafe):
    _check_fix(text, unsafe)


# hypothesmith needs about a second per program: few examples, each checked for lint and fix.
@settings(max_examples=15, **SETTINGS)
@given(spliced_programs("fix"), st.sampled_from(CONFIGS), st.booleans())
def test_generated_programs_around_the_families(text, config, unsafe):
    _check_result(lint_source("fuzz.py", text, config), text)
    if _parses(text):  # hypothesmith's programs compile alone; a few do not next to other code
        _check_fix(text, unsafe)


def test_seeds_cover_every_fix():
    """The fix properties see each fixable rule and each fix pair, so they cannot pass vacuously."""
    codes = {d.code for text in FIX_SEEDS for d in lint_source("seed.py", text, Config(select=("ALL",))).diagnostics
             if d.fixable}
    assert codes == set(FIXABLE_CODES)
    pairs = {p.read_text(encoding="utf-8") for group in ("fix", "fix_small", "fix_structure")
             for p in (FIXTURES / group).glob("*/input.py")}
    assert pairs and pairs <= set(FIX_SEEDS)


def test_fix_keeps_a_final_lone_cr():
    from vjplint.fixes.apply import fix_source

    text = (FIXTURES / "fix" / "safe_canonical" / "input.py").read_text(encoding="utf-8").replace("\n", "\r")
    new, fixed, _ = fix_source("fuzz.py", text, Config(), False)
    assert fixed == 2 and new.endswith("))}\r")
