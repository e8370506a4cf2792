"""write_group: several files written together or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vjplint.fixes.multi_write import GroupWriteError, write_group


def _files(tmp_path: Path):
    a, b, c = (tmp_path / n for n in ("a.py", "b.py", "c.py"))
    for p in (a, b, c):
        p.write_bytes(f"old {p.name}\n".encode())
    return a, b, c


def _items(*paths: Path):
    return [(p, p.read_bytes(), f"new {p.name}\n".encode()) for p in paths]


def _leftovers(tmp_path: Path):
    return sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".vjplint-tmp"))


def test_all_written_and_modes_kept(tmp_path):
    a, b, c = _files(tmp_path)
    os.chmod(b, 0o640)
    write_group(_items(a, b, c))
    assert [p.read_bytes() for p in (a, b, c)] == [b"new a.py\n", b"new b.py\n", b"new c.py\n"]
    assert os.stat(b).st_mode & 0o777 == 0o640
    assert _leftovers(tmp_path) == []


def test_a_file_changed_since_read_writes_none(tmp_path):
    a, b, c = _files(tmp_path)
    items = _items(a, b, c)
    c.write_bytes(b"edited meanwhile\n")
    with pytest.raises(GroupWriteError, match="c.py: the file changed while it was being fixed"):
        write_group(items)
    assert [p.read_bytes() for p in (a, b, c)] == [b"old a.py\n", b"old b.py\n", b"edited meanwhile\n"]
    assert _leftovers(tmp_path) == []


def test_a_read_only_file_writes_none(tmp_path):
    a, b, c = _files(tmp_path)
    os.chmod(b, 0o444)
    with pytest.raises(GroupWriteError, match="b.py: the file is read-only"):
        write_group(_items(a, b, c))
    assert [p.read_bytes() for p in (a, b, c)] == [b"old a.py\n", b"old b.py\n", b"old c.py\n"]
    assert _leftovers(tmp_path) == []


def test_a_rename_failing_midway_puts_back_the_files_already_replaced(tmp_path):
    a, b, c = _files(tmp_path)
    calls = []

    def flaky_replace(src: str, dst: str) -> None:
        calls.append(os.path.basename(dst))
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        os.replace(src, dst)

    with pytest.raises(GroupWriteError, match="b.py: No space left on device"):
        write_group(_items(a, b, c), replace=flaky_replace)
    assert calls == ["a.py", "b.py"]
    assert [p.read_bytes() for p in (a, b, c)] == [b"old a.py\n", b"old b.py\n", b"old c.py\n"]
    assert _leftovers(tmp_path) == []
