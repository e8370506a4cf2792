"""Shared test helpers: the real CLI in a subprocess, the core API, and fixture loading."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import List, Optional, Sequence

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
RULE_FIXTURES = FIXTURES / "rules"


def run_cli(*args: str, cwd: Optional[Path] = None, stdin: Optional[bytes] = None,
            env: Optional[dict] = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `python -m vjplint ARGS` as users do; returns text stdout/stderr."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **(env or {})}
    full_env.pop("VJPLINT_OUTPUT_FORMAT", None)
    proc = subprocess.run([sys.executable, "-m", "vjplint", *args], cwd=cwd or ROOT, input=stdin,
                          capture_output=True, env=full_env, timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode("utf-8", "replace"),
                                       proc.stderr.decode("utf-8", "replace"))


def lint(source: str, select: Optional[Sequence[str]] = None, filename: str = "example.py", **config):
    """The core API on a string; returns the diagnostics."""
    from vjplint.config import Config
    from vjplint.engine import lint_source

    cfg = Config(select=tuple(select) if select is not None else None, **config)
    return lint_source(filename, source, cfg).diagnostics


def load_fixture_module(path: Path) -> types.ModuleType:
    """Import a fixture file as a fresh module (for running it on real JAX)."""
    name = "fixture_" + "_".join(path.relative_to(FIXTURES).with_suffix("").parts).replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rule_fixture_dirs() -> List[Path]:
    return sorted(p for p in RULE_FIXTURES.iterdir() if p.is_dir()) if RULE_FIXTURES.exists() else []


@pytest.fixture(scope="session")
def jax_cpu():
    """Real JAX on CPU (or whatever JAX_PLATFORMS says)."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    jax = pytest.importorskip("jax") if os.environ.get("VJPLINT_ALLOW_NO_JAX") else __import__("jax")
    return jax
