"""install_hint: the pip command for an extra matches how vjplint was installed (PEP 610
direct_url.json), read from real dist-info directories."""

from __future__ import annotations

import json
import shlex
import sys
from importlib.metadata import PathDistribution
from pathlib import Path
from typing import Optional

import pytest
from tests.conftest import ROOT, run_cli

from vjplint.install_hint import install_hint

PY = "/opt/env/bin/python"


def dist(tmp_path: Path, direct_url: Optional[dict]) -> PathDistribution:
    """A real `vjplint-0.1.0.dist-info` directory, as pip writes it."""
    info = tmp_path / "site-packages" / "vjplint-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vjplint\nVersion: 0.1.0\n", encoding="utf-8")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url), encoding="utf-8")
    return PathDistribution(info)


def hint(tmp_path: Path, direct_url: Optional[dict], extra: str = "lsp", **kwargs) -> str:
    return install_hint(extra, dist(tmp_path, direct_url), python=PY, **kwargs)


def test_editable_clone(tmp_path):
    clone = tmp_path / "my clone"
    clone.mkdir()
    got = hint(tmp_path, {"url": clone.as_uri(), "dir_info": {"editable": True}})
    assert got == f"{PY} -m pip install -e '{clone}[lsp]'"
    assert shlex.split(got)[-1] == f"{clone}[lsp]"  # the space survives the shell


def test_plain_local_directory(tmp_path):
    clone = tmp_path / "checkout"
    clone.mkdir()
    assert hint(tmp_path, {"url": clone.as_uri(), "dir_info": {}}, "verify") == \
        f"{PY} -m pip install '{clone}[verify]'"


def test_git_url_pins_the_installed_commit(tmp_path):
    got = hint(tmp_path, {"url": "https://git.example.org/team/vjplint.git",
                          "vcs_info": {"vcs": "git", "requested_revision": "main",
                                       "commit_id": "0123456789abcdef0123456789abcdef01234567"}})
    assert got == (f"{PY} -m pip install 'vjplint[lsp] @ git+https://git.example.org/team/vjplint.git"
                   f"@0123456789abcdef0123456789abcdef01234567'")


def test_git_url_in_a_subdirectory(tmp_path):
    got = hint(tmp_path, {"url": "ssh://git@git.example.org/mono.git", "subdirectory": "tools/vjplint",
                          "vcs_info": {"vcs": "git", "commit_id": "abc123"}})
    assert got == f"{PY} -m pip install 'vjplint[lsp] @ git+ssh://git@git.example.org/mono.git@abc123#subdirectory=tools/vjplint'"


def test_local_wheel(tmp_path):
    wheel = tmp_path / "dist" / "vjplint-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"PK")
    got = hint(tmp_path, {"url": wheel.as_uri(), "archive_info": {"hashes": {"sha256": "00"}}})
    assert got == f"{PY} -m pip install 'vjplint[lsp] @ {wheel.as_uri()}'"


def test_remote_wheel(tmp_path):
    url = "https://files.example.org/vjplint-0.1.0-py3-none-any.whl"
    assert hint(tmp_path, {"url": url, "archive_info": {}}) == f"{PY} -m pip install 'vjplint[lsp] @ {url}'"


def test_the_source_is_gone(tmp_path):
    gone = tmp_path / "deleted"
    got = hint(tmp_path, {"url": gone.as_uri(), "dir_info": {"editable": True}})
    assert got == (f"{PY} -m pip install 'vjplint[lsp]' (from the clone, URL or wheel vjplint was installed "
                   f"from: {gone.as_uri()} is gone)")


def test_index_install(tmp_path):
    package = tmp_path / "site-packages" / "vjplint"
    assert hint(tmp_path, None, package_dir=package) == f"{PY} -m pip install 'vjplint[lsp]'"


def test_imported_from_a_checkout_without_an_install(tmp_path):
    checkout = tmp_path / "src"
    (checkout / "vjplint").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text('[project]\nname = "vjplint"\n', encoding="utf-8")
    assert hint(tmp_path, None, package_dir=checkout / "vjplint") == f"{PY} -m pip install -e '{checkout}[lsp]'"


def test_broken_direct_url_is_an_index_install(tmp_path):
    d = dist(tmp_path, None)
    (Path(str(d._path)) / "direct_url.json").write_text("{not json", encoding="utf-8")
    assert install_hint("lsp", d, python=PY, package_dir=tmp_path / "x" / "vjplint") == \
        f"{PY} -m pip install 'vjplint[lsp]'"


def test_this_environment():
    """The installed distribution's own record: an editable install names its directory."""
    from vjplint.install_hint import _direct_url, _installed, _local_path

    info = _direct_url(_installed())
    if not info.get("dir_info", {}).get("editable"):
        pytest.skip(f"vjplint is not installed editable here ({info or 'no direct_url.json'})")
    path = _local_path(info["url"])
    assert install_hint("lsp") == f"{shlex.quote(sys.executable)} -m pip install -e {shlex.quote(f'{path}[lsp]')}"


@pytest.mark.cli
def test_the_server_prints_the_hint(tmp_path):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "pygls.py").write_text("raise ImportError('blocked', name='pygls')\n", encoding="utf-8")
    proc = run_cli("server", env={"PYTHONPATH": f"{blocker}:{ROOT}"})
    assert proc.returncode == 2
    assert proc.stderr == ("vjplint server needs the `lsp` extra, which is not installed (no module named 'pygls').\n"
                           f"Install it with:  {install_hint('lsp')}\n")
