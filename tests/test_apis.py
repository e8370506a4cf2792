"""The custom-derivative APIs beyond `jax.custom_vjp` (docs/facts/README.md): flax nnx and linen,
equinox, `jax.custom_gradient`, `jax.custom_vjp(self._f)` on bound methods.

`fixtures/apis/<api>/` holds firing cases (`fire_*.py`) and legal look-alikes (`silent_*.py`);
`expected.txt` lists every finding of all default rules there, one `path:row:col: CODE message`
line each (regenerate with VJPLINT_UPDATE_EXPECTED=1 and review the diff). Every fixture declares
what the real library does (`JAX_OUTCOME`, as in fixtures/rules/), and the `jax` layer runs it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List

import pytest

from conftest import FIXTURES, ROOT, lint, load_fixture_module

APIS = FIXTURES / "apis"
API_DIRS = sorted(p for p in APIS.iterdir() if p.is_dir())
CASES = sorted(APIS.rglob("*.py"))


def _findings(directory: Path) -> List[str]:
    lines = []
    for path in sorted(directory.glob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        for d in lint(path.read_text(encoding="utf-8"), filename=relative):
            lines.append(f"{relative}:{d.location.row}:{d.location.column}: {d.code} {d.message}")
    return lines


@pytest.mark.parametrize("directory", API_DIRS, ids=lambda p: p.name)
def test_api_fixtures_report_exactly_what_is_expected(directory):
    found = _findings(directory)
    expected_file = directory / "expected.txt"
    if os.environ.get("VJPLINT_UPDATE_EXPECTED"):
        expected_file.write_text("".join(f"{line}\n" for line in found), encoding="utf-8")
    assert found == expected_file.read_text(encoding="utf-8").splitlines()
    reported = {line.split(":", 1)[0].rsplit("/", 1)[-1] for line in found}
    names = {p.name for p in directory.glob("*.py")}
    assert {n for n in names if n.startswith("fire_")} <= reported, "a firing fixture reports nothing"
    assert not {n for n in names if n.startswith("silent_")} & reported, "a look-alike is reported"


def test_messages_name_the_api():
    """No rule applies JAX's wording to an API that differs: findings on library APIs say which."""
    labels = {"nnx": "nnx.custom_vjp", "linen": "nn.custom_vjp", "equinox": "eqx.filter_custom_",
              "custom_gradient": "jax.custom_gradient"}
    for directory in API_DIRS:
        label = labels.get(directory.name)
        for line in _findings(directory):
            if label is not None and " VJP1" not in line and " VJP315 " not in line and " VJP302 " not in line:
                assert label in line, line


@pytest.mark.jax
@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_api_fixture_behaves_on_the_real_library_as_declared(path, jax_cpu):
    module = load_fixture_module(path)
    outcome = module.JAX_OUTCOME
    if outcome == "raises":
        with pytest.raises(Exception) as info:
            module.trigger()
        assert type(info.value).__name__ == module.JAX_EXCEPTION, repr(info.value)
        assert module.JAX_ERROR in str(info.value)
    else:
        assert outcome == "runs", outcome
        module.trigger()
