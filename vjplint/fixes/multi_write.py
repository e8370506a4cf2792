"""Write several files together or not at all: every new content goes to a temporary file
beside its target and is fsynced first; only when all are written are they renamed over their
targets. Any failure before the renames removes the temporary files and leaves every target as
it was; a rename failing midway (very rare: the directory became unwritable between two calls)
puts back the targets already replaced, from their old content."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Callable, List, Sequence, Tuple


class GroupWriteError(OSError):
    """Nothing of the group was written; the message names the file and the reason."""


class FileChanged(OSError):
    """A file's content on disk is no longer what was read and fixed: it is not written (its
    findings are no longer true either). Callers tell it by its type, never by its words."""

    def __init__(self) -> None:
        super().__init__("the file changed while it was being fixed")


def write_group(items: Sequence[Tuple[Path, bytes, bytes]], replace: Callable[[str, str], None] = os.replace) -> None:
    """`items`: (target, content it had when read, new content). Raises GroupWriteError."""
    staged: List[Tuple[str, str, bytes]] = []  # (temporary file, real target, old content)
    try:
        for path, old, new in items:
            target = os.path.realpath(path)
            try:
                mode = stat.S_IMODE(os.stat(target).st_mode)
                if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
                    raise PermissionError("the file is read-only")
                with open(target, "rb") as handle:
                    if handle.read() != old:
                        raise FileChanged()
                directory, name = os.path.split(target)
                fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".vjplint-tmp", dir=directory)
                staged.append((tmp, target, old))
                with os.fdopen(fd, "wb") as handle:
                    handle.write(new)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.chmod(tmp, mode)
            except OSError as exc:
                raise GroupWriteError(f"{path}: {exc.strerror or exc}") from exc
    except BaseException:
        _discard(staged)
        raise
    done: List[Tuple[str, bytes]] = []
    for index, (tmp, target, old) in enumerate(staged):
        try:
            replace(tmp, target)
        except OSError as exc:
            _discard(staged[index:])
            _restore(done)
            raise GroupWriteError(f"{target}: {exc.strerror or exc}") from exc
        done.append((target, old))


def _discard(staged: Sequence[Tuple[str, str, bytes]]) -> None:
    for tmp, _, _ in staged:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _restore(done: Sequence[Tuple[str, bytes]]) -> None:
    for target, old in done:
        try:
            with open(target, "wb") as handle:
                handle.write(old)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError:
            pass
