"""`vjplint --show-settings PATH`: which configuration applies to a file, and why.

The answer comes from the same Workspace that linting uses (so it cannot disagree with a run):
the pyproject.toml found (or --config), its `extend` chain and which file of the chain sets each
key, the command line's overrides, the per-file-ignores that match the file, whether `exclude`
matches it, and the rule codes that end up enabled for it.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from vjplint.settings.config import ACCUMULATED, Config, _matches, read_tool_table, shown, load_config
from vjplint.errors import UsageError
from vjplint.project.discover import _excluded, _root_and_patterns
from vjplint.rules.registry import ENGINE_CODES, all_rules, default_off

if TYPE_CHECKING:
    from vjplint.project.workspace import Workspace

# The keys shown, as [tool.vjplint] spells them, with the Config field that holds each.
KEYS = (
    ("select", "select"), ("ignore", "ignore"), ("extend-select", "extend_select"),
    ("extend-ignore", "extend_ignore"), ("fixable", "fixable"), ("unfixable", "unfixable"),
    ("extend-fixable", "extend_fixable"),
    ("per-file-ignores", "per_file_ignores"), ("exclude", "exclude"), ("extend-exclude", "extend_exclude"),
    ("respect-gitignore", "respect_gitignore"), ("notebooks", "notebooks"), ("array-names", "array_names"), ("static-names", "static_names"),
    ("custom-vjp-aliases", "custom_vjp_aliases"), ("custom-jvp-aliases", "custom_jvp_aliases"),
    ("target", "target"), ("docs-url", "docs_url"), ("cache-dir", "cache_dir"),
)


@dataclass
class Explained:
    path: str
    configuration: Optional[str]  # the pyproject.toml that applies, None: the defaults
    how: str  # "--config", "nearest" or "defaults"
    chain: List[str] = field(default_factory=list)  # the configuration, then each file it extends
    root: Optional[str] = None
    relative_path: str = ""
    settings: Dict[str, Any] = field(default_factory=dict)  # the file's values (before the command line)
    origin: Dict[str, List[str]] = field(default_factory=dict)  # key -> the files of the chain that set it
    command_line: Dict[str, Any] = field(default_factory=dict)
    per_file_ignores: List[Dict[str, Any]] = field(default_factory=list)  # the entries matching this file
    excluded_by: Optional[str] = None
    enabled: List[str] = field(default_factory=list)
    off_for_file: List[str] = field(default_factory=list)
    unfixable: List[str] = field(default_factory=list)  # enabled codes whose fixes are not offered

    def to_json(self) -> Dict[str, Any]:
        return {
            "path": self.path, "configuration": self.configuration, "how": self.how, "extend_chain": self.chain,
            "root": self.root, "relative_path": self.relative_path, "settings": self.settings,
            "set_by": self.origin, "command_line": self.command_line,
            "per_file_ignores_matching": self.per_file_ignores, "excluded_by": self.excluded_by,
            "enabled_codes": self.enabled, "disabled_for_this_file": self.off_for_file,
            "fixes_not_offered_for": self.unfixable,
        }


def _value(config: Config, attr: str) -> Any:
    value = getattr(config, attr)
    if attr == "per_file_ignores":
        return {pattern: list(codes) for pattern, codes in value}
    if attr in ("custom_vjp_aliases", "custom_jvp_aliases"):
        return dict(value)
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _chain(path: Path) -> List[Tuple[str, Dict[str, Any]]]:
    """(file, its own [tool.vjplint] table) along the `extend` chain (load_config has validated it)."""
    out: List[Tuple[str, Dict[str, Any]]] = []
    current: Optional[Path] = path
    while current is not None and len(out) < 64:
        table = read_tool_table(current) or {}
        out.append((os.path.normpath(str(current)), table))
        base = table.get("extend")
        if not isinstance(base, str):
            break
        current = current.parent / os.path.expanduser(base)
        if current.is_dir():
            current = current / "pyproject.toml"
    return out


def explain(target: str, workspace: "Workspace") -> Explained:
    if not os.path.lexists(target):
        raise UsageError(f"--show-settings {target}: no such file or directory")
    absolute = os.path.abspath(target)
    config = workspace.settings_for(absolute)
    source = config.source
    how = "--config" if workspace.config_file else "nearest" if source else "defaults"
    file_config = load_config(Path(source)) if source else Config()
    out = Explained(path=target, configuration=source, how=how, root=config.root,
                    relative_path=config.relative_path(absolute))
    if source:
        chain = _chain(Path(source))
        out.chain = [c for c, _ in chain]
        for key, _ in KEYS:
            setters = [c for c, table in chain if key in table]
            if setters:
                out.origin[key] = setters[::-1] if key in ACCUMULATED else setters[:1]  # base first, as merged
    out.settings = {key: _value(file_config, attr) for key, attr in KEYS}
    o = workspace.overrides
    out.command_line = {k: v for k, v in (("select", list(o.select) if o.select is not None else None),
                                          ("ignore", list(o.ignore)), ("extend-select", list(o.extend_select)),
                                          ("extend-ignore", list(o.extend_ignore)),
                                          ("fixable", list(o.fixable) if o.fixable is not None else None),
                                          ("unfixable", list(o.unfixable)),
                                          ("extend-fixable", list(o.extend_fixable)),
                                          ("exclude", list(o.exclude) if o.exclude is not None else None),
                                          ("extend-exclude", list(o.extend_exclude)),
                                          ("cache-dir", o.cache_dir)) if v}
    out.unfixable = sorted(c for c in config.enabled_codes([*all_rules(), *ENGINE_CODES], default_off())
                           if not config.fix_allowed(c))
    for pattern, codes in config.per_file_ignores:
        if Config(per_file_ignores=((pattern, codes),)).ignored_for(out.relative_path):
            out.per_file_ignores.append({"pattern": pattern, "codes": list(codes)})
    root, patterns = _root_and_patterns(config)
    real = Path(absolute).resolve()
    for pattern in patterns:
        if any(_excluded(p, root, (pattern,)) for p in (real, *real.parents)):
            out.excluded_by = pattern
            break
    codes = [*all_rules(), *ENGINE_CODES]
    enabled = config.enabled_codes(codes, default_off())
    ignored = config.ignored_for(out.relative_path)
    out.enabled = sorted(c for c in enabled if not _matches(c, ignored))
    out.off_for_file = sorted(c for c in enabled if _matches(c, ignored))
    return out


def render_text(e: Explained) -> str:
    def show(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    lines = [f"Settings for {e.path}"]
    if e.how == "defaults":
        lines.append("  configuration: none (no pyproject.toml with [tool.vjplint] in its directory or above): "
                     "the defaults")
    else:
        why = "given with --config" if e.how == "--config" else \
            "the nearest pyproject.toml with [tool.vjplint], searching upwards from the file"
        lines.append(f"  configuration: {shown(e.configuration or '')} ({why})")
    if len(e.chain) > 1:
        lines.append(f"  extends: {' -> '.join(shown(c) for c in e.chain)}")
    if e.root:
        lines.append(f"  patterns match paths relative to: {shown(e.root)} (here: {e.relative_path})")
    for key, value in e.settings.items():
        setters = e.origin.get(key)
        where = f"from {', '.join(shown(s) for s in setters)}" if setters else "default"
        lines.append(f"  {key} = {show(value)}  ({where})")
    if e.command_line:
        lines.append("  command line: " + " ".join(
            f"--{k} {','.join(v) if isinstance(v, list) else v}" for k, v in e.command_line.items()))
    else:
        lines.append("  command line: no overrides")
    for entry in e.per_file_ignores:
        lines.append(f"  per-file-ignores matching this file: {show(entry['pattern'])} = {show(entry['codes'])}")
    if e.excluded_by:
        lines.append(f"  excluded: yes, by {show(e.excluded_by)} (skipped when a directory above the excluded one is "
                     f"linted; named on the command line, the file or a directory in the excluded one is linted unless "
                     f"--force-exclude)")
    else:
        lines.append("  excluded: no")
    lines.append(f"  enabled rules ({len(e.enabled)}): {', '.join(e.enabled)}")
    if e.off_for_file:
        lines.append(f"  turned off for this file by per-file-ignores: {', '.join(e.off_for_file)}")
    if e.unfixable:
        lines.append(f"  fixes not offered (fixable/unfixable): {', '.join(e.unfixable)}")
    return "\n".join(lines) + "\n"


def run_show_settings(target: str, workspace: "Workspace", output_format: str) -> int:
    explained = explain(target, workspace)
    if output_format == "json":
        sys.stdout.write(json.dumps(explained.to_json(), indent=2, ensure_ascii=False) + "\n")
    elif output_format in ("text", "concise"):
        sys.stdout.write(render_text(explained))
    else:
        raise UsageError(f"--show-settings prints text or json, not {output_format!r}")
    return 0
