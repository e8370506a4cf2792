"""The figures the README quotes are what they count (issue 47: the environment size and the
real-world counts had gone stale). The quick start's counts and the number of tests are checked in
tests/unit/test_docs.py; docs/development.md says where each figure is checked."""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import sys
from typing import Dict, List, Set

import pytest

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
ENVIRONMENT = re.compile(r"brings JAX and jaxlib \(about ([\d,]+) MB of the\s+([\d,]+) MB the extra installs\)")
REALWORLD = re.compile(r"\[real code bases\]\(docs/realworld\.md\) \((\w+), ([\d,]+) files, ([\d,]+) custom derivatives\)")
NUMBERS = {"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20}


def _extra_requirements(extra: str) -> List[str]:
    """The checkout's own `[project.optional-dependencies]` (not an installed copy's metadata)."""
    tomllib = __import__("tomllib") if sys.version_info >= (3, 11) else __import__("tomli")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    out = []
    for requirement in extras[extra]:
        own = re.fullmatch(r"vjplint\[([\w,-]+)\]", requirement)
        out += [r for e in own.group(1).split(",") for r in _extra_requirements(e)] if own else [requirement]
    return out


def _installed_closure(requirements: List[str]) -> Set[str]:
    """The distributions the requirements install, their dependencies followed through the installed
    metadata, environment markers evaluated for this interpreter."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: Set[str] = set()
    todo = [(Requirement(r), "") for r in requirements]
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        extras = sorted(requirement.extras)
        key = f"{name}[{','.join(extras)}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            pytest.skip(f"{name}, which the test extra installs, is not installed here")
        todo += [(Requirement(r), e) for r in requires for e in ("", *extras)]
    return {key.split("[")[0] for key in seen}


def _installed_bytes(name: str) -> int:
    dist = metadata.distribution(name)
    total = 0
    for file in dist.files or []:
        try:
            total += os.stat(dist.locate_file(file)).st_size
        except OSError:
            pass
    return total


def test_environment_size_is_what_the_test_extra_installs():
    """`about J MB of the T MB`: JAX and jaxlib, and every distribution the test extra installs
    (its files as pip recorded them), within 15%: byte-compiled files and wheels for another
    platform move it a little, a new dependency or a JAX release more."""
    jax_mb, total_mb = (int(n.replace(",", "")) for n in ENVIRONMENT.search(README).groups())
    closure = _installed_closure(_extra_requirements("test"))
    if "jax" not in closure:
        pytest.skip("the test extra installs no JAX on this Python (JAX 0.10.2 needs 3.11+)")
    sizes: Dict[str, float] = {name: _installed_bytes(name) / 1e6 for name in closure}
    measured_jax, measured_total = sizes["jax"] + sizes["jaxlib"], sum(sizes.values())
    assert abs(measured_jax - jax_mb) <= 0.15 * measured_jax, f"README: about {jax_mb} MB for JAX; {measured_jax:.0f} MB"
    assert abs(measured_total - total_mb) <= 0.15 * measured_total, \
        f"README: {total_mb} MB in all; the test extra installs {measured_total:.0f} MB here"


def test_real_world_counts_are_the_table_of_docs_realworld():
    bases, files, derivatives = REALWORLD.search(README).groups()
    table = (ROOT / "docs" / "realworld.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([\w.-]+/[\w.-]+) \| (\d+) \| \d+ \| (\d+) \|", table, re.M)
    total = re.search(r"^\| \*\*total\*\* \| \*\*(\d+)\*\* \| \*\*\d+\*\* \| \*\*(\d+)\*\* \|", table, re.M).groups()
    assert (NUMBERS[bases], int(files.replace(",", "")), int(derivatives.replace(",", ""))) == (
        len(rows), sum(int(f) for _, f, _ in rows), sum(int(d) for _, _, d in rows))
    assert (int(total[0]), int(total[1])) == (int(files.replace(",", "")), int(derivatives.replace(",", "")))
