"""VJP372 on a notebook: its kernel runs every cell with `__name__ == "__main__"`, so a
registration under that guard runs there, while the same code as a module never registers it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import FIXTURES, run_cli

SOURCE = (FIXTURES / "rules" / "VJP372" / "fire_main_guard_decorator_jvp.py").read_text(encoding="utf-8")


def test_main_guard_registration_fires_in_a_module(tmp_path: Path) -> None:
    path = tmp_path / "softplus_module.py"
    path.write_text(SOURCE, encoding="utf-8")
    proc = run_cli("check", "--no-cache", "--select", "VJP372", "--output-format", "concise", str(path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{path}:21:5: VJP372 `softplus.defjvp` (the only registration of custom_jvp `softplus`) runs only " \
           f"under `if __name__ == \"__main__\":` (line 20)" in proc.stdout


def test_main_guard_registration_is_silent_in_a_notebook(tmp_path: Path) -> None:
    path = tmp_path / "softplus.ipynb"
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
            "source": SOURCE.splitlines(True)}
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                    encoding="utf-8")
    proc = run_cli("check", "--no-cache", "--select", "VJP372", "--output-format", "concise", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "All checks passed!"
