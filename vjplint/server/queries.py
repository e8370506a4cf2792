"""The answers to requests on a document: code actions and their resolution, hover, the
diagnostics as LSP, the debug information."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from vjplint import __version__
from vjplint.diagnostics import Applicability, Diagnostic, Position
from vjplint import links
from vjplint.output import lsp as lspfmt
from vjplint.syntax.positions import source_lines
from vjplint.syntax.source import SourceError, decode
from vjplint.server import actions
from vjplint.rules.docs import render_rule
from vjplint.rules.registry import all_rules
from vjplint.server.state import FIX_ALL_KIND, Analysis, _capability

log = logging.getLogger("vjplint.server")


class Queries:
    """Mixed into VjplintServer: what requests on a document answer."""

    def lsp_dicts(self, analysis: Analysis) -> List[Dict[str, Any]]:
        """The diagnostics as LSP JSON (what vjplint.output.lsp writes)."""
        lines = analysis.lines()
        encoding = self.encoding()
        docs_url = links.docs_url(analysis.config.docs_url)
        return [lspfmt.diagnostic_to_lsp(d, lines, encoding, docs_url) for d in analysis.diagnostics]

    def lsp_diagnostics(self, analysis: Analysis) -> List[types.Diagnostic]:
        return [self.converter.structure(d, types.Diagnostic) for d in self.lsp_dicts(analysis)]
    # -- code actions ------------------------------------------------------------------
    def code_actions(self, params: types.CodeActionParams,
                     should_stop: Optional[Any] = None) -> List[types.CodeAction]:
        uri = params.text_document.uri
        text = self.document(uri)
        if text is None or not self.lintable(uri):
            return []
        if self.far_document(uri):  # a big document: its last analysis, never a new one
            analysis, stale = self.last_analysis(uri, text)
            if analysis is None:
                return []  # being analysed: its actions come with its diagnostics
            if stale:
                return self.stale_actions(uri, analysis, params)
        else:
            analysis = self.current_analysis(uri, text, should_stop)
        only = params.context.only
        lazy = self.resolve_edits_supported()
        lines = analysis.lines()
        encoding = self.encoding()
        start = lspfmt.from_lsp_position(lines, params.range.start.line, params.range.start.character, encoding)
        end = lspfmt.from_lsp_position(lines, params.range.end.line, params.range.end.character, encoding)
        out: List[types.CodeAction] = []
        if actions.kind_wanted(types.CodeActionKind.QuickFix, only):
            here = [d for d in analysis.diagnostics if actions.overlaps(d, start, end)]
            if not lazy:  # only the fixes of the requested range
                self.attach_fixes(analysis, uri, here, should_stop)
            for index, d in enumerate(analysis.diagnostics):
                if d not in here or not d.fixable:
                    continue
                if not lazy and not d.fix.resolved:
                    continue
                title = f"{d.code}: {d.fix.message}"
                why = d.fix.unsafe_because
                if why is not None:  # another module would feel it (vjplint.fixes.named_elsewhere)
                    title += f" (unsafe fix: {why})"
                elif d.fix.applicability is Applicability.UNSAFE:
                    title += " (unsafe fix)"
                action = types.CodeAction(
                    title=title, kind=types.CodeActionKind.QuickFix,
                    diagnostics=[self.one_diagnostic(d, lines, encoding, analysis.config.docs_url)],
                    is_preferred=d.fix.applicability is Applicability.SAFE,
                    data={"uri": uri, "action": "quickfix", "index": index, "code": d.code,
                          "row": d.location.row, "column": d.location.column})
                if not lazy:
                    action.edit = self.workspace_edit(uri, [lspfmt.text_edit(lines, e, encoding) for e in d.fix.edits])
                out.append(action)
            out.extend(self.elsewhere_actions(uri, here, lines, encoding, analysis.config.docs_url))
            if self.settings.disable_rule_comment:
                seen = set()
                for d in here:
                    if d.noqa_row is None or (d.noqa_row, d.code) in seen:
                        continue
                    seen.add((d.noqa_row, d.code))
                    edit = actions.noqa_edit(text, lines, d.noqa_row, d.code)
                    if edit is not None:
                        out.append(types.CodeAction(
                            title=f"Disable {d.code} for this line", kind=types.CodeActionKind.QuickFix,
                            diagnostics=[self.one_diagnostic(d, lines, encoding, analysis.config.docs_url)],
                            edit=self.workspace_edit(uri, [lspfmt.text_edit(lines, edit, encoding)])))
        if self.settings.fix_all and actions.kind_wanted(FIX_ALL_KIND, only) and self.has_fix_all(analysis):
            action = types.CodeAction(title="vjplint: Fix all auto-fixable problems", kind=FIX_ALL_KIND,
                                      data={"uri": uri, "action": "fixAll"})
            if not lazy:
                action.edit = self.fix_all_edit(uri, analysis, should_stop)
                if action.edit is None:
                    return out
            out.append(action)
        return out

    def elsewhere_actions(self, uri: str, here: Sequence[Diagnostic], lines: Sequence[str], encoding: str,
                          docs_url: Optional[str]) -> List[types.CodeAction]:
        """The quick fixes of findings in a rule registered in this document and defined in another
        file of its folder (`Diagnostic.elsewhere`): each edits that file, named in the title."""
        out: List[types.CodeAction] = []
        for d in here:
            elsewhere = d.elsewhere
            if elsewhere is None or not elsewhere.fix.edits:
                continue
            target = self.elsewhere_target(uri, elsewhere.path)
            if target is None:
                continue
            other, other_lines = target
            title = f"{d.code}: {elsewhere.fix.message} (in {elsewhere.path})"
            if elsewhere.fix.applicability is Applicability.UNSAFE:
                title += " (unsafe fix)"
            out.append(types.CodeAction(
                title=title, kind=types.CodeActionKind.QuickFix,
                diagnostics=[self.one_diagnostic(d, lines, encoding, docs_url)],
                is_preferred=elsewhere.fix.applicability is Applicability.SAFE,
                edit=self.workspace_edit(other, [lspfmt.text_edit(other_lines, e, encoding)
                                                 for e in elsewhere.fix.edits])))
        return out

    def elsewhere_target(self, uri: str, display: str) -> Optional[Tuple[str, List[str]]]:
        """(uri, lines) of the file `display` names (relative to the folder of the document at
        `uri`, as its project index shows it): the editor's text when it is open, else the disk's;
        None when it cannot be read."""
        path = to_fs_path(uri)
        folder = self.folder_of(Path(path)) if path else None
        if folder is None:
            return None
        target = os.path.normpath(os.path.join(folder, display))
        other = from_fs_path(target)
        if other is None:
            return None
        text = self.document(other)
        if text is None:
            try:
                with open(target, "rb") as handle:
                    text = decode(handle.read()).text
            except (OSError, SourceError):
                return None
        return other, source_lines(text)

    def has_fix_all(self, analysis: Analysis) -> bool:
        """Whether fix-all has something to apply (never the fixes another module makes unsafe)."""
        return any(d.fix is not None and (d.fix.applicability is Applicability.SAFE or self.settings.unsafe_fixes)
                   and d.fix.unsafe_because is None for d in analysis.diagnostics)

    def one_diagnostic(self, d: Diagnostic, lines: Sequence[str], encoding: str,
                       docs_url: Optional[str] = None) -> types.Diagnostic:
        return self.converter.structure(lspfmt.diagnostic_to_lsp(d, lines, encoding, links.docs_url(docs_url)),
                                        types.Diagnostic)

    def stale_actions(self, uri: str, analysis: Analysis, params: types.CodeActionParams) -> List[types.CodeAction]:
        """A big document edited since its last analysis: the quick fixes that analysis offers in
        the range, each disabled, saying why (its edits would land on the old text)."""
        if not actions.kind_wanted(types.CodeActionKind.QuickFix, params.context.only):
            return []
        lines, encoding = analysis.lines(), self.encoding()
        start = lspfmt.from_lsp_position(lines, params.range.start.line, params.range.start.character, encoding)
        end = lspfmt.from_lsp_position(lines, params.range.end.line, params.range.end.character, encoding)
        reason = (f"{analysis.filename} changed since its last analysis (over lintOnChangeMaxSize, it is "
                  f"analysed when saved): save it for this fix")
        return [types.CodeAction(title=f"{d.code}: {d.fix.message}", kind=types.CodeActionKind.QuickFix,
                                 disabled=types.CodeActionDisabled(reason=reason))
                for d in analysis.diagnostics if d.fixable and d.fix is not None and actions.overlaps(d, start, end)]

    def fix_all_edit(self, uri: str, analysis: Analysis, should_stop: Optional[Any] = None) -> Optional[types.WorkspaceEdit]:
        new_text = self.fix_all_text(analysis, self.settings.unsafe_fixes, should_stop)
        edit = actions.whole_text_edit(analysis.text, new_text) if new_text is not None else None
        if edit is None:
            return None
        lines = analysis.lines()
        return self.workspace_edit(uri, [lspfmt.text_edit(lines, edit, self.encoding())])

    def workspace_edit(self, uri: str, edits: List[Dict[str, Any]]) -> types.WorkspaceEdit:
        text_edits = [self.converter.structure(e, types.TextEdit) for e in edits]
        if _capability(self.client_capabilities, "workspace", "workspace_edit", "document_changes"):
            identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=self.versions.get(uri))
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(identifier, text_edits)])
        return types.WorkspaceEdit(changes={uri: text_edits})

    def resolve_edits_supported(self) -> bool:
        support = _capability(self.client_capabilities, "text_document", "code_action", "resolve_support")
        return bool(support is not None and "edit" in (support.properties or []))

    def resolve(self, action: types.CodeAction, should_stop: Optional[Any] = None) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri")
        text = self.document(uri) if isinstance(uri, str) else None
        if text is None:
            return action
        if self.far_document(uri):  # a big document: its last analysis, if the text is still that
            analysis, stale = self.last_analysis(uri, text)
            if analysis is None or stale:
                return action
        else:
            analysis = self.current_analysis(uri, text, should_stop)
        if data.get("action") == "fixAll":
            action.edit = self.fix_all_edit(uri, analysis, should_stop)
        elif data.get("action") == "quickfix":
            target = Position(int(data.get("row", 0)), int(data.get("column", 0)))
            chosen = [d for d in analysis.diagnostics if d.code == data.get("code") and d.location == target]
            self.attach_fixes(analysis, uri, chosen, should_stop)
            for d in chosen:
                if d.fix and d.fix.edits:
                    lines, encoding = analysis.lines(), self.encoding()
                    action.edit = self.workspace_edit(uri, [lspfmt.text_edit(lines, e, encoding) for e in d.fix.edits])
                    break
        return action

    # -- hover: a rule's documentation over its code in a `# noqa:` comment ---------------
    def hover(self, params: types.HoverParams, should_stop: Optional[Any] = None) -> Optional[types.Hover]:
        """In a requests' thread, over the document's current analysis (as code actions read it): the
        table may be between an analysis and its re-lint when another module's use of the rules
        changed (`current_analysis`), and a hover then read no finding."""
        text = self.document(params.text_document.uri)
        if text is None:
            return None
        lines = source_lines(text)
        if not 0 <= params.position.line < len(lines):
            return None
        where = lspfmt.from_lsp_position(lines, params.position.line, params.position.character, self.encoding())
        code = actions.noqa_code_at(lines[params.position.line], where.column - 1)

        rule = all_rules().get(code or "")
        if rule is not None:
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=render_rule(rule)))
        # Over a finding: its message, then its rule's documentation (each rule once).
        uri = params.text_document.uri
        if self.far_document(uri):  # a big document: its last analysis, if the text is still that
            analysis, stale = self.last_analysis(uri, text)
            analysis = None if stale else analysis
        else:
            analysis = self.current_analysis(uri, text, should_stop) if self.lintable(uri) else None
        found = [d for d in (analysis.diagnostics if analysis else ())
                 if d.code in all_rules() and d.location <= where <= max(d.end_location, d.location)]
        if not found:
            return None
        parts = [f"**{d.code}** {d.message}" for d in found]
        parts += [render_rule(all_rules()[c]) for c in dict.fromkeys(d.code for d in found)]
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)))

    def debug_information(self) -> str:
        import sys

        import gc

        rows = [f"vjplint {__version__} language server", f"python {sys.version.split()[0]}",
                f"objects frozen out of the cyclic collector: {gc.get_freeze_count()}",
                f"diagnostics: {'pull' if self.pull else 'push'}; position encoding: {self.encoding()}",
                f"settings: {self.settings}",
                self.helper.describe() if self.helper is not None else "lint helper: none", self.far.describe()]
        for uri in sorted(self.versions):
            analysis = self.analyses.get(uri)
            source = analysis.config.source if analysis else None
            linter = self.linters.get(uri)
            state = "" if linter is None else "; families: priming" if linter.unprimed else \
                f"; families: {linter.stats.get('seeded', 0)} seeded, {linter.stats['linted']} linted, " \
                f"{linter.stats['reused']} reused"
            rows.append(f"{uri}: config {source or '(defaults)'}; "
                        f"{len(analysis.diagnostics) if analysis else '?'} diagnostics{state}")
        return "\n".join(rows)
