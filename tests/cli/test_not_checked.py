"""Files (and statements) that could not be checked are named, never "All checks passed!"
(issue 47): UTF-16/UTF-32 files, and generic functions Python < 3.12 cannot parse."""

from __future__ import annotations

import codecs
import sys

import pytest
from tests.cli.test_ruff_flags import SAFE
from tests.conftest import run_cli

WIDE = ("cannot parse this file: the file is {} text, which Python cannot run (it reads source as UTF-8, "
        "PEP 3120, or the encoding a coding cookie names): save it as UTF-8")


@pytest.mark.parametrize("encoding, bom, shown", [
    ("utf-16", b"", "UTF-16"),  # Python's utf-16 writes a byte-order mark
    ("utf-16-be", codecs.BOM_UTF16_BE, "UTF-16"),
    ("utf-32", b"", "UTF-32"),
    ("utf-16-le", b"", "UTF-16 or UTF-32"),  # no mark: known by its NUL bytes
])
def test_a_wide_encoding_is_vjp900_whatever_the_file_holds(tmp_path, encoding, bom, shown):
    for name, text in (("derivative.py", SAFE), ("plain.py", "x = 1\n")):
        (tmp_path / name).write_bytes(bom + text.encode(encoding))
        # the pre-commit fast path (no options) and the full run answer the same
        proc = run_cli(name, cwd=tmp_path)
        assert proc.returncode == 1 and proc.stdout.startswith(f"{name}:1:1: VJP900 cannot parse this file: "), \
            proc.stdout
        proc = run_cli("--no-cache", "--output-format", "concise", name, cwd=tmp_path)
        assert (proc.returncode, proc.stdout) == (1, f"{name}:1:1: VJP900 {WIDE.format(shown)}\nFound 1 problem.\n")


def test_utf8_and_latin1_with_a_cookie_still_read(tmp_path):
    (tmp_path / "l1.py").write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + SAFE.encode())
    proc = run_cli("--no-cache", "--output-format", "concise", "l1.py", cwd=tmp_path)
    assert proc.stdout.splitlines()[0].startswith("l1.py:9:10: VJP101 [*]")


GENERIC = SAFE.replace("def clip(lo, x):", "def clip[T](lo, x: T):") + "\n\nclass Box[T]:\n    item: T\n"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 reads PEP 695 generics")
def test_generic_function_skipped_on_an_older_python_is_vjp900(tmp_path):
    (tmp_path / "g.py").write_text(GENERIC)
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    proc = run_cli("g.py", cwd=tmp_path)  # the fast path, then the full run
    assert proc.returncode == 1 and proc.stdout.startswith("g.py:7:1: VJP900 not checked: `clip` has type")
    proc = run_cli("--no-cache", "--output-format", "concise", "g.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (1, (
        f"g.py:7:1: VJP900 not checked: `clip` has type parameters (PEP 695), which Python {version} cannot parse, "
        f"so the custom-derivative code in it was skipped; run vjplint with Python 3.12 or newer to check it\n"
        f"Found 1 problem.\n"))
    # a generic class without custom-derivative code is skipped silently: nothing there to check
    (tmp_path / "h.py").write_text(SAFE + "\n\nclass Box[T]:\n    item: T\n")
    proc = run_cli("--no-cache", "--output-format", "concise", "h.py", cwd=tmp_path)
    assert [line.split(" ")[1] for line in proc.stdout.splitlines()[:-1]] == ["VJP101"]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="checks what Python 3.12 reads")
def test_generic_function_is_checked_on_python_312(tmp_path):
    (tmp_path / "g.py").write_text(GENERIC)
    proc = run_cli("--no-cache", "--output-format", "concise", "g.py", cwd=tmp_path)
    assert proc.stdout.splitlines()[0].startswith("g.py:7:10: VJP101 ")
