"""The pip command that adds an extra (`lsp`, `verify`) to vjplint *as it was installed*.

vjplint is not on PyPI, so `pip install 'vjplint[lsp]'` fails for anyone who installed it from a
clone, a git URL or a wheel. pip records how a distribution was installed in `direct_url.json`
(PEP 610): an editable or plain local directory, a VCS URL with the commit, or an archive (a
wheel). No `direct_url.json` means an index install, or vjplint imported straight from a source
tree on `sys.path`.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Protocol
from urllib.parse import unquote, urlparse

DIST = "vjplint"


class _Dist(Protocol):  # the part of importlib.metadata.Distribution used here
    def read_text(self, filename: str) -> Optional[str]: ...


def install_hint(extra: str, dist: Optional[_Dist] = None, python: Optional[str] = None,
                 package_dir: Optional[Path] = None) -> str:
    """A shell command that installs vjplint's `extra` into the running interpreter.

    `dist`, `python` and `package_dir` default to the installed distribution, `sys.executable`
    and the directory vjplint is imported from (tests pass their own)."""
    pip = f"{shlex.quote(python or sys.executable)} -m pip install"
    if dist is None:
        dist = _installed()
    info = _direct_url(dist)
    url = str(info.get("url", ""))
    if "vcs_info" in info:
        vcs = info["vcs_info"]
        ref = f"{vcs.get('vcs', 'git')}+{url}"
        if vcs.get("commit_id"):
            ref += f"@{vcs['commit_id']}"
        if info.get("subdirectory"):
            ref += f"#subdirectory={info['subdirectory']}"
        return f"{pip} {shlex.quote(f'{DIST}[{extra}] @ {ref}')}"
    path = _local_path(url)
    if "dir_info" in info and path is not None and path.is_dir():
        editable = "-e " if info["dir_info"].get("editable") else ""
        return f"{pip} {editable}{shlex.quote(f'{path}[{extra}]')}"
    if "archive_info" in info and (path is None or path.is_file()):
        return f"{pip} {shlex.quote(f'{DIST}[{extra}] @ {url}')}"
    generic = f"{pip} {shlex.quote(f'{DIST}[{extra}]')}"
    if not info:
        checkout = _source_checkout(package_dir or Path(__file__).resolve().parent)
        # No record: imported from a checkout, or installed from an index (where the extra is too).
        return f"{pip} -e {shlex.quote(f'{checkout}[{extra}]')}" if checkout is not None else generic
    return f"{generic} (from the clone, URL or wheel vjplint was installed from: {url or 'unknown'} is gone)"


def _installed() -> Optional[_Dist]:
    """The vjplint distribution that has a direct_url.json, else any (a stray `*.egg-info` in the
    working directory is found before the real one in site-packages)."""
    from importlib import metadata

    found = None
    for dist in metadata.distributions(name=DIST):
        if dist.read_text("direct_url.json"):
            return dist
        found = found or dist
    return found


def _direct_url(dist: Optional[_Dist]) -> Dict[str, Any]:
    try:
        text = dist.read_text("direct_url.json") if dist is not None else None
        data = json.loads(text) if text else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _local_path(url: str) -> Optional[Path]:
    parsed = urlparse(url)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def _source_checkout(package_dir: Path) -> Optional[Path]:
    """The checkout vjplint is imported from (PYTHONPATH=checkout), when it is one."""
    root = package_dir.parent
    try:
        pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if f'name = "{DIST}"' in pyproject else None
