"""JUnit XML, as CI test reports read it (GitLab `artifacts:reports:junit`, Jenkins, Azure).

One `<testsuite>` per file with findings, one failing `<testcase>` per finding (named after the
rule, `classname` the file, `file`/`line` where it is). A run without findings is one suite with
one passing case, so the report is never empty. Text is restricted to what XML 1.0 allows.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Dict, List

from vjplint.diagnostics import Diagnostic
from vjplint.output import OutputContext, cell_prefix

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _case(suite: ET.Element, d: Diagnostic, ctx: OutputContext) -> None:
    at = f"{cell_prefix(d)}{d.location.row}:{d.location.column}"  # `cell 3:5:12` in a notebook
    where = f"{d.filename}:{at}"
    case = ET.SubElement(suite, "testcase", name=f"{d.code} ({d.name}) at {at}",
                         classname=_xml_text(d.filename), file=_xml_text(d.filename), line=str(d.location.row))
    failure = ET.SubElement(case, "failure", message=_xml_text(d.message), type=d.code)
    failure.text = _xml_text(f"{where}: {d.code} {d.message}\n{ctx.url(d.code)}")


def render(diagnostics: List[Diagnostic], ctx: OutputContext) -> str:
    root = ET.Element("testsuites", name="vjplint", tests=str(max(len(diagnostics), 1)),
                      failures=str(len(diagnostics)), errors="0")
    if not diagnostics:
        suite = ET.SubElement(root, "testsuite", name="vjplint", tests="1", failures="0", errors="0", skipped="0")
        ET.SubElement(suite, "testcase", name="All checks passed", classname="vjplint")
    by_file: Dict[str, List[Diagnostic]] = {}
    for d in diagnostics:
        by_file.setdefault(d.filename, []).append(d)
    for filename, found in by_file.items():
        suite = ET.SubElement(root, "testsuite", name=_xml_text(filename), tests=str(len(found)),
                              failures=str(len(found)), errors="0", skipped="0")
        for d in found:
            _case(suite, d, ctx)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
