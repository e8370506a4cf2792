"""The Python versions vjplint claims agree everywhere they are written: pyproject.toml's
requires-python and test extras, the interpreters .ci/other-pythons tries, the README's
"Python versions" paragraph and the JAX-layer skip in conftest.py."""

from __future__ import annotations

import re
import sys

from tests.conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
CI = (ROOT / ".ci" / "other-pythons").read_text(encoding="utf-8")
INSTALL = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")  # moved from the README (issue 47)


def _minor(version: str) -> int:
    major, minor = version.split(".")[:2]
    assert major == "3"
    return int(minor)


def test_ci_tries_every_claimed_version_from_the_lowest():
    lowest = _minor(re.fullmatch(r">=(3\.\d+)", PROJECT["requires-python"]).group(1))
    tried = [_minor(v) for v in re.search(r"CI_PYTHONS-([\d. ]+)\}", CI).group(1).split()]
    assert tried == list(range(lowest, max(tried) + 1))
    paragraph = INSTALL[INSTALL.index("**Python versions.**"):]
    assert paragraph.startswith(f"**Python versions.** Linting and fixing run on Python 3.{lowest} to 3.{max(tried)}:")


def test_jax_test_dependencies_need_the_python_the_conftest_skip_names():
    extras = PROJECT["optional-dependencies"]
    assert "vjplint[test-unit]" in extras["test"]
    def name(requirement: str) -> str:
        return re.split(r"[<>=!~;\s\[]", requirement, maxsplit=1)[0]

    jax_deps = [d for d in extras["test"] if name(d) in ("jax", "jaxlib", "flax", "equinox")]
    assert len(jax_deps) == 4 and all(d.endswith("; python_version >= '3.11'") for d in jax_deps)
    assert not any(name(d) in ("jax", "jaxlib", "flax", "equinox") for d in extras["test-unit"])
    conftest = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    assert "if sys.version_info < (3, 11) and (item.get_closest_marker(\"jax\")" in conftest
