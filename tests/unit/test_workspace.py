"""The workspace layer: hierarchical configuration (each file's nearest [tool.vjplint], `extend`,
patterns relative to the configuration's directory), resolved identically by the command line and
the Language Server; plus the regressions that came from resolving settings elsewhere."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests.conftest import run_cli
from vjplint.errors import ConfigError
from vjplint.project.workspace import Overrides, Workspace

HAZARD = textwrap.dedent('''\
    from functools import partial
    import jax
    import jax.numpy as jnp


    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def clip(lo, x):
        return x


    def clip_fwd(lo, x):
        return x, None


    def clip_bwd(lo, _, g):
        return (jnp.clip(g, lo, 1.0),)


    clip.defvjp(clip_fwd, clip_bwd)
    ''')
# Fires VJP101 (an array in nondiff_argnums, with a residual fix) and VJP401 (the flag).
TWO_RULES = HAZARD + 'jax.config.update("jax_use_direct_linearize", False)\n'


def _tree(root: Path) -> None:
    """root: VJP401 ignored; root/pkg: its own config (extends root's, also ignores VJP101 in
    tests/); root/pkg/plain: no config of its own (pkg's applies)."""
    (root / "pyproject.toml").write_text('[tool.vjplint]\nignore = ["VJP401"]\n'
                                         'per-file-ignores = { "top/*" = ["VJP101"] }\n')
    for rel in ("a.py", "top/b.py", "pkg/c.py", "pkg/tests/d.py", "pkg/plain/e.py", "pkg/top/f.py"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(TWO_RULES)
    (root / "pkg" / "pyproject.toml").write_text('[tool.vjplint]\nextend = "../pyproject.toml"\n'
                                                 'per-file-ignores = { "tests/*" = ["VJP101"] }\n')


EXPECTED = {  # file -> the codes reported
    "a.py": ["VJP101"],
    "top/b.py": [],  # root's per-file-ignores, relative to root
    "pkg/c.py": ["VJP101"],  # VJP401 ignored by the inherited `ignore`
    "pkg/tests/d.py": [],  # pkg's per-file-ignores, relative to pkg/
    "pkg/plain/e.py": ["VJP101"],
    "pkg/top/f.py": ["VJP101"],  # root's "top/*" does not apply: pkg's table replaced it
}


def _codes_by_file(stdout: str, base: Path, cwd: Path) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for d in json.loads(stdout):
        rel = (cwd / d["filename"]).resolve().relative_to(base.resolve()).as_posix()
        out.setdefault(rel, []).append(d["code"])
    return out


@pytest.mark.cli
def test_each_file_uses_its_nearest_configuration_whatever_the_working_directory(tmp_path: Path) -> None:
    _tree(tmp_path)
    expected = {k: v for k, v in EXPECTED.items() if v}
    from_root = run_cli("--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert _codes_by_file(from_root.stdout, tmp_path, tmp_path) == expected, from_root.stderr
    from_pkg = run_cli("--no-cache", "--output-format", "json", ".", cwd=tmp_path / "pkg")
    assert _codes_by_file(from_pkg.stdout, tmp_path, tmp_path / "pkg") == {
        k: v for k, v in expected.items() if k.startswith("pkg/")}
    from_top = run_cli("--no-cache", "--output-format", "json", "b.py", cwd=tmp_path / "top")
    assert json.loads(from_top.stdout) == []  # "top/*" matched relative to root, not to the cwd


@pytest.mark.cli
def test_the_order_of_paths_does_not_change_the_settings(tmp_path: Path) -> None:
    _tree(tmp_path)
    one = run_cli("--no-cache", "--output-format", "json", "pkg/tests", "a.py", cwd=tmp_path)
    two = run_cli("--no-cache", "--output-format", "json", "a.py", "pkg/tests", cwd=tmp_path)
    assert json.loads(one.stdout) == json.loads(two.stdout)
    assert _codes_by_file(one.stdout, tmp_path, tmp_path) == {"a.py": ["VJP101"]}


def test_workspace_resolves_extend_and_patterns_relative_to_the_config(tmp_path: Path) -> None:
    _tree(tmp_path)
    workspace = Workspace()
    root = workspace.settings_for(str(tmp_path / "a.py"))
    pkg = workspace.settings_for(str(tmp_path / "pkg" / "plain" / "e.py"))
    assert root.source == str(tmp_path / "pyproject.toml")
    assert pkg.source == str(tmp_path / "pkg" / "pyproject.toml") and pkg.root == str(tmp_path / "pkg")
    assert pkg.ignore == ("VJP401",)  # inherited
    assert pkg.per_file_ignores == (("tests/*", ("VJP101",)),)  # replaced
    assert pkg.relative_path(str(tmp_path / "pkg" / "tests" / "d.py")) == "tests/d.py"
    assert pkg.ignored_for(pkg.relative_path(str(tmp_path / "pkg" / "tests" / "d.py"))) == ("VJP101",)
    files = {p.resolve().relative_to(tmp_path.resolve()).as_posix(): c.source
             for p, c in workspace.files([str(tmp_path)], [])}
    assert files == {rel: str(tmp_path / ("pkg/pyproject.toml" if rel.startswith("pkg/") else "pyproject.toml"))
                     for rel in EXPECTED}


def test_extend_accumulates_extend_keys_and_reports_cycles(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text('[tool.vjplint]\nextend-select = ["VJP106"]\nignore = ["VJP104"]\n')
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nextend = "base.toml"\nextend-select = ["VJP107"]\n')
    config = Workspace().settings_for(str(tmp_path / "x.py"))
    assert config.extend_select == ("VJP106", "VJP107") and config.ignore == ("VJP104",)
    (tmp_path / "base.toml").write_text('[tool.vjplint]\nextend = "pyproject.toml"\n')
    with pytest.raises(ConfigError, match="`extend` forms a cycle"):
        Workspace().settings_for(str(tmp_path / "x.py"))


def test_overrides_apply_on_top_of_every_file_and_are_checked_up_front(tmp_path: Path) -> None:
    _tree(tmp_path)
    workspace = Workspace(Overrides(select=("VJP4",)))
    assert workspace.settings_for(str(tmp_path / "pkg" / "c.py")).select == ("VJP4",)
    with pytest.raises(ConfigError, match="--select: unknown rule code or prefix 'VJP8'"):
        Workspace(Overrides(select=("VJP8",)))
    with pytest.raises(ConfigError, match="no rule codes given"):
        Workspace(Overrides(select=()))


def test_config_option_must_name_a_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory; give the path of a pyproject.toml"):
        Workspace(config_file=str(tmp_path))
    with pytest.raises(ConfigError, match="no such file"):
        Workspace(config_file=str(tmp_path / "missing.toml"))


def test_unknown_keys_suggest_the_known_one(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.vjplint]\nextend-selct = ["VJP106"]\n')
    with pytest.raises(ConfigError, match="extend-selct \\(did you mean 'extend-select'\\?\\)"):
        Workspace().settings_for(str(tmp_path / "x.py"))


# -- regressions ----------------------------------------------------------------------------------
@pytest.mark.cli
def test_quiet_keeps_each_diagnostic_whole_and_drops_only_the_summary(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(HAZARD)
    full = run_cli("--no-cache", "m.py", cwd=tmp_path)
    quiet = run_cli("--no-cache", "-q", "m.py", cwd=tmp_path)
    assert full.stdout.rstrip("\n").endswith("Found 1 problem (1 fixable with --fix).")
    body = full.stdout[:full.stdout.index("Found 1 problem")]
    assert quiet.stdout == body  # source row, caret row and help row all kept
    assert "   7 | def clip(lo, x):\n     |          ^^\n" in quiet.stdout


@pytest.mark.cli
def test_json_fix_edits_are_computed_with_the_runs_config(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import mylib\n\n" + HAZARD.replace("@partial(jax.custom_vjp,", "@partial(mylib.vjp,"))
    config = tmp_path / "settings" / "vjplint.toml"
    config.parent.mkdir()
    config.write_text('[tool.vjplint]\ncustom-vjp-aliases = { "mylib.vjp" = "nondiff_argnums" }\n')
    out = run_cli("--no-cache", "--config", str(config), "--output-format", "json", "m.py", cwd=tmp_path)
    (d,) = json.loads(out.stdout)
    assert d["code"] == "VJP101" and d["fix"] is not None and d["fix"]["edits"]  # unsafe: an in-house wrapper


def _server_codes(tmp_path: Path, files: List[Path]) -> Dict[str, List[Tuple[str, int, int, str]]]:
    """Open each file in a real Language Server session (pytest-lsp) and collect its diagnostics."""
    import asyncio

    from lsprotocol import types
    from tests.server.test_server import SERVER, published, stop

    async def go() -> Dict[str, List[Tuple[str, int, int, str]]]:
        client = await SERVER.start()
        await client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=tmp_path.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="ws")]))
        out = {}
        for path in files:
            uri = path.as_uri()
            client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=path.read_text())))
            found = await published(client, uri, 1)
            out[path.relative_to(tmp_path).as_posix()] = sorted(
                (d.code, d.range.start.line + 1, d.range.start.character + 1, d.message) for d in found)
        await stop(client)
        return out

    return asyncio.run(go())


@pytest.mark.server
def test_cli_and_server_give_identical_diagnostics_on_nested_configurations(tmp_path: Path) -> None:
    _tree(tmp_path)
    files = [tmp_path / rel for rel in EXPECTED]
    cli = run_cli("--no-cache", "--output-format", "json", ".", cwd=tmp_path / "pkg")  # another cwd
    by_cli: Dict[str, list] = {rel: [] for rel in EXPECTED}
    for d in json.loads(run_cli("--no-cache", "--output-format", "json", ".", cwd=tmp_path).stdout):
        by_cli[d["filename"]].append((d["code"], d["location"]["row"], d["location"]["column"], d["message"]))
    assert {k: sorted(v) for k, v in by_cli.items()} == _server_codes(tmp_path, files)
    assert {k: [c for c, *_ in v] for k, v in by_cli.items()} == EXPECTED
    assert len(json.loads(cli.stdout)) == 3
