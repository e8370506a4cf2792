"""One pass over a module's bytes for the project index (vjplint.project.text.scan): the same
answers as the searches it replaces, asked apart (the creators, the registrations, the lint's
byte prefilter), and the value summaries' exported names read from one list of top-level lines."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from vjplint.facts.crossmodule import exported_targets, forward_targets, top_statements
from vjplint.lint.engine import may_contain_findings
from vjplint.project.loops import file_info
from vjplint.project.text import creators, scan
from vjplint.syntax.names import PREFILTER_NAMES

pytestmark = pytest.mark.unit

CORPUS = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "tests" / "realworld").glob("*.py")) \
    + sorted((ROOT / "eval" / "cases").rglob("*.py")) + sorted((ROOT / "vjplint").rglob("*.py"))


def _apart(data: bytes):
    return creators(data), b"defvjp" in data or b"defjvp" in data, may_contain_findings(data, PREFILTER_NAMES)


@pytest.mark.parametrize("data, expected", [
    (b"x = 1\n", ((False, False), False, False)),
    (b"f = jax.custom_vjp(g)\n", ((True, False), False, True)),
    (b"f = custom_jvp_call_p\n", ((False, True), False, False)),  # a longer identifier: no prefilter hit
    (b"p = custom_vjp_call_p\nf = jax.custom_jvp(g)\n", ((True, True), False, True)),
    (b"ad.defjvp2(p, r)\n", ((False, False), True, False)),  # another API
    (b"f.defjvps(a, b)\n", ((False, False), True, True)),  # an extended name
    (b"jax.defvjp_all(f, r)\n", ((False, False), True, True)),
    (b"ad.defjvp2(p, r)\nf.defvjp(a, b)\n", ((False, False), True, True)),  # the second hit decides
    (b"s = 'custom_gradient'\n", ((False, False), False, True)),
    (b"x = custom_transforms_p\nt = JVPTracer\n", ((False, False), False, True)),  # a rarer name after
    (b"y = odeint(f, y0, t)\n", ((False, False), False, True)),
    (b"x = (\x00\n", ((False, False), False, True)),  # a NUL: always a candidate (VJP900 says why)
    (b"custom_", ((False, False), False, False)),  # at the end of the bytes
    (b"custom_vjp", ((True, False), False, True)),
])
def test_scan_gives_what_the_searches_asked_apart_give(data: bytes, expected) -> None:
    assert tuple(scan(data)) == expected == _apart(data)


def test_scan_over_the_corpus() -> None:
    """Every fixture, case, real-world module and the package's own sources, and each with its
    names made longer identifiers (`custom_vjp_x`) so the rarer names decide."""
    checked = candidates = 0
    for path in CORPUS:
        data = path.read_bytes()
        for variant in (data, data.replace(b"custom_vjp", b"custom_vjp_x").replace(b"defvjp", b"defvjp2")):
            assert tuple(scan(variant)) == _apart(variant), path
            checked += 1
            candidates += scan(variant).candidate
    assert checked > 1600 and 300 < candidates < checked


def test_exported_names_from_one_list_of_top_level_lines() -> None:
    for path in CORPUS:
        text = path.read_text(encoding="utf-8")
        if "custom_" not in text:
            continue
        tops = top_statements(text)
        names = exported_targets(text)
        assert exported_targets(text, tops) == names, path
        assert forward_targets(text, names, tops) == forward_targets(text, names), path


def test_file_info_with_the_scan_is_file_info_without_it() -> None:
    for path in CORPUS:
        data = path.read_bytes()
        found = scan(data)
        assert file_info(data, found.made, found.registers) == file_info(data), path
