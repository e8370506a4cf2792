"""Rules, fixes and the run read another rule's judgement as data (`Diagnostic.evidence`), never
by the words of its message: no code under vjplint/ outside the output formats compares an
evidence text (a `.message`, a `.reason`, a fact's `.why`, a caught exception's `str(exc)`) with
text or searches it, save to compose a message's own words (ALLOWED) or to compare an evidence
field with one of its declared `Literal` tags. And the evidence a fix reads is there: each consumer's finding
is found on the rewrite it predicts."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

import pytest

from tests.conftest import ROOT
from vjplint.diagnostics import DroppedCotangent, NoAutomaticFix, NoneTangentRule
from vjplint.lint.engine import lint_source
from vjplint.settings.config import Config

pytestmark = pytest.mark.unit

TEXT_TESTS = {"startswith", "endswith", "find", "rfind", "index", "rindex", "count", "partition", "rpartition",
              "split", "rsplit"}
REGEX = {"match", "search", "fullmatch", "findall", "finditer", "sub", "subn", "split"}

# Packages that read the words of exceptions raised by JAX, Python or a codec (not the project's own)
FOREIGN_ERRORS = {"gradcheck", "verify", "syntax", "record.py"}

# (file, function): why reading the message's text there is output formatting, not a judgement
WORDING = "composing a message's words: whether the fact's `why` already quotes the expression (no decision)"
ALLOWED = {
    ("vjplint/facts/infer.py", "_record_evidence"): WORDING,
    ("vjplint/facts/infer.py", "_call_site_kind"): WORDING,
    ("vjplint/facts/structure.py", "fwd_outputs"): WORDING,
    ("vjplint/project/summary.py", "_summarize_arg"): WORDING,
    ("vjplint/rules/nondiff/vjp105_nondiff_callable_captures.py", "_callable_object"): WORDING,
    ("vjplint/rules/structure/vjp321_jvp_tangent_rank.py", "_shown"): WORDING,
    ("vjplint/rules/structure/vjp322_bwd_cotangent_rank.py", "_primal_rank"): WORDING,
    ("vjplint/rules/structure/vjp333_jvp_tangent_structure.py", "_report"): WORDING + "; a literal's is not said",
    ("vjplint/rules/structure/vjp338_jvp_primal_out_structure.py", "_check_rule"): WORDING + "; a literal's is not said",
    ("vjplint/model/wrappers.py", "__eq__"): "an inferred keyword's value equality (all its fields), not its words",
    ("vjplint/gradcheck/api.py", "_import_failures"): "the same reason said once, the others pointing to it "
                                                      "(the report's wording; which failed is `import_failure`)",
    ("vjplint/lint/incremental.py", "_seed"): "whether a message cites line numbers, so a shift of lines makes "
                                              "its own text stale (a re-lint, not a judgement)",
    ("vjplint/lint/incremental.py", "_lint_module"): "the same, for a module linted again",
}


# The texts that carry a judgement in words: a diagnostic's or fix's `.message`, a refusal's or a
# report's `.reason`, a fact's `.why` (the evidence a message quotes)
EVIDENCE_TEXTS = {"message", "reason", "why"}


def _is_message(node: ast.AST, caught: frozenset = frozenset()) -> bool:
    """An evidence text (`.message`, `.reason`, `.why`), or the text of a caught exception (`str(exc)`)."""
    if isinstance(node, ast.Attribute) and node.attr in EVIDENCE_TEXTS:
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str"
            and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id in caught)


def evidence_tags() -> Dict[str, Set[str]]:
    """Per field name, the values an `Evidence` field declared `Literal[...]` takes: a tag, not
    words (`DroppedCotangent.why == "output"`)."""
    import typing

    from vjplint import diagnostics

    tags: Dict[str, Set[str]] = {}
    for kind in vars(diagnostics).values():
        if isinstance(kind, type) and issubclass(kind, diagnostics.Evidence):
            for name, hint in typing.get_type_hints(kind, vars(diagnostics)).items():
                if typing.get_origin(hint) is typing.Literal:
                    tags.setdefault(name, set()).update(typing.get_args(hint))
    return tags


def _is_tag(node: ast.Compare, tags: Dict[str, Set[str]]) -> bool:
    """`e.why == "output"`: an evidence field compared with one of its declared tags."""
    sides = [node.left, *node.comparators]
    if len(sides) != 2 or not all(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
        return False
    attrs = [s for s in sides if isinstance(s, ast.Attribute)]
    consts = [s.value for s in sides if isinstance(s, ast.Constant)]
    return len(attrs) == 1 and len(consts) == 1 and consts[0] in tags.get(attrs[0].attr, set())


def message_reads(source: str, exceptions: bool = True) -> List[tuple]:
    """(line, enclosing function, what) for every comparison of a `.message` (or of a caught
    exception's text, `str(exc)`, unless `exceptions` is off) with text (`in`, `not in`, `==`,
    `!=`), string test on it (`.startswith`, `.index`, ...) or regex over it."""
    tree = ast.parse(source)
    found = []
    tags = evidence_tags()

    def visit(node: ast.AST, function: str, caught: frozenset) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
            caught = frozenset(h.name for h in ast.walk(node) if isinstance(h, ast.ExceptHandler) and h.name
                               and exceptions)
        if isinstance(node, ast.Compare) and any(_is_message(x, caught) for x in [node.left, *node.comparators]) \
                and any(isinstance(op, (ast.In, ast.NotIn, ast.Eq, ast.NotEq)) for op in node.ops) \
                and not _is_tag(node, tags):
            found.append((node.lineno, function, "compares a message"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in TEXT_TESTS and _is_message(node.func.value, caught):
                found.append((node.lineno, function, f"message.{node.func.attr}()"))
            elif node.func.attr in REGEX and any(_is_message(a, caught) for a in node.args):
                found.append((node.lineno, function, f"{node.func.attr}() over a message"))
        for child in ast.iter_child_nodes(node):
            visit(child, function, caught)

    visit(tree, "<module>", frozenset())
    return found


def test_the_check_sees_each_way_of_reading_a_message() -> None:
    source = ("def a(d, code, phrase):\n    return d.code == code and phrase in d.message\n"
              "def b(d):\n    return d.message.index(' (no automatic fix: ')\n"
              "def c(d):\n    return _KEPT.match(d.message)\n"
              "def e(d):\n    return d.message != 'x' or d.message.startswith('bwd')\n"
              "def f(write):\n    try:\n        write()\n    except OSError as exc:\n"
              "        return 'changed while' in str(exc) or str(exc).startswith('x')\n"
              "def ok(d, exc, value):\n    d.message += ' (unsafe fix: x)'\n    return f'{d.code} {d.message}', exc.message, "
              "'x' in str(value)\n")
    assert message_reads(source) == [(2, "a", "compares a message"), (4, "b", "message.index()"),
                                     (6, "c", "match() over a message"), (8, "e", "compares a message"),
                                     (8, "e", "message.startswith()"), (13, "f", "compares a message"),
                                     (13, "f", "message.startswith()")]


def test_the_check_sees_reasons_and_whys_but_not_declared_tags() -> None:
    source = ("def a(r):\n    return r.reason.startswith('the module cannot be imported')\n"
              "def b(kind, quoted):\n    return kind.why != quoted or 'array' in kind.why\n"
              "def c(e):\n    return e.why == 'output' and e.returned != 'zero' and e.why == 'outputs'\n")
    assert evidence_tags()["why"] == {"output", "bwd", "dead"}
    assert message_reads(source) == [(2, "a", "message.startswith()"), (4, "b", "compares a message"),
                                     (4, "b", "compares a message"), (6, "c", "compares a message")]


def test_no_message_text_is_read_outside_the_output_formats() -> None:
    found = {}
    scanned = set()
    for path in sorted((ROOT / "vjplint").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("vjplint/output/"):
            continue
        scanned.add(rel.split("/")[1])
        # what JAX, Python or a codec raises is read by its words where nothing else tells
        # (check-grads, verify, decoding); the project's own exceptions are told by their type
        foreign = rel.split("/")[1] in FOREIGN_ERRORS
        for line, function, what in message_reads(path.read_text(encoding="utf-8"), exceptions=not foreign):
            if (rel, function) not in ALLOWED:
                found[f"{rel}:{line}"] = f"{function}: {what}"
    assert found == {}
    # the fixes and their plans decide a fix's safety: both are read, with every other layer
    assert {"fixes", "plans", "rules", "facts", "cli", "server", "lint"} <= scanned
    # each allowance still names a function that reads a message (else it is stale)
    for rel, function in ALLOWED:
        assert any(f == function for _, f, _ in message_reads((ROOT / rel).read_text(encoding="utf-8"))), (rel, function)


BWD_DROPS = '''import jax


@jax.custom_vjp
def scale(x, y):
    return x * y


def scale_fwd(x, y):
    return x * y, (x, y)


def scale_bwd(res, g):
    x, y = res
    return (g * y, None)


scale.defvjp(scale_fwd, scale_bwd)
'''


def _only(code: str, text: str) -> list:
    config = Config(select=(code,))
    return [d for d in lint_source("m.py", text, config).diagnostics if d.code == code]


def test_vjp602_says_what_it_found_as_evidence() -> None:
    (d,) = _only("VJP602", BWD_DROPS)
    assert (d.location.row, d.location.column) == (15, 20)
    assert d.evidence == DroppedCotangent("scale_bwd", "scale", ("y",), "none", "output")


DEFJVPS = '''import jax


@jax.custom_jvp
def mul(x, y):
    return x * y


mul.defjvps(lambda x_dot, out, x, y: x_dot * y, None)


def loss(x, y):
    return jax.grad(mul, argnums=1)(x, y)
'''


def test_vjp609_says_what_it_found_as_evidence() -> None:
    (d,) = _only("VJP609", DEFJVPS)
    assert d.evidence == NoneTangentRule("mul", "y")


def test_a_finding_without_a_fix_says_why_as_evidence() -> None:
    """VJP101 offers no fix for a bwd returning a bare value: its evidence holds the reason and
    where the message says it (what `vjplint.cli.fix_cross` replaces when both files are in the run)."""
    text = (ROOT / "fixtures" / "fix" / "refuse_bare_bwd_return" / "input.py").read_text(encoding="utf-8")
    (d,) = _only("VJP101", text)
    assert d.fix is None
    reason = "a bwd `return` is a bare value, not a tuple (see VJP307)"
    assert d.evidence == NoAutomaticFix(reason, d.message.index(" (no automatic fix: "))
    assert d.message[d.evidence.head:] == f" (no automatic fix: {reason})"


def test_a_fixable_finding_carries_no_refusal() -> None:
    text = (ROOT / "fixtures" / "fix" / "refuse_bare_bwd_return" / "expected.py").read_text(encoding="utf-8")
    text = text.replace("return g * scale", "return (g * scale,)")
    (d,) = _only("VJP101", text)
    assert d.fix is not None and d.evidence is None and "no automatic fix" not in d.message


def test_evidence_survives_the_result_cache() -> None:
    """A finding revived from the result cache carries its evidence (a cross-module run reads it
    from cached outcomes, vjplint.cli.fix_cross)."""
    from vjplint.batch.cache import _allowed, decode, encode

    (d,) = _only("VJP602", BWD_DROPS)
    (back,) = decode(encode([d]), _allowed())
    assert back.evidence == DroppedCotangent("scale_bwd", "scale", ("y",), "none", "output")
    assert back == d
