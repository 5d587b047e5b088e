"""Control and invisible characters in free text (a library's message, a case file's note, a
command line) are shown escaped in every report format and on the terminal, never as they are:
XML 1.0 cannot hold them, HTML reads them as parse errors, a terminal obeys an ESC sequence and a
bidi override reorders what follows it."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

from harness.core.text import printable
from harness.reporting import writers
from harness.reporting.html import render
from harness.reporting.run import ReportSettings, RunReporting
from harness.reporting.runs import Report, load_run
from harness.target import Target
from tests.reporting_fixtures import rec, write_run

REPO = Path(__file__).resolve().parents[1]
# what a library's error text or a note can carry: C0 and C1 controls, DEL, an ESC sequence, a
# bidi override, zero-width and BOM characters, a line separator, a lone surrogate (undecodable
# bytes read with surrogateescape), a private-use character, a non-breaking space
UNSEEN = "\x07\x1b\x00\x7f\x85\u202e\u200b\ufeff\u2028\udcff\U000f0000\xa0\r"
NASTY = "bell\x07 clear\x1b[2J nul\x00 del\x7f nel\x85 rtl\u202eevil zw\u200b bom\ufeff ls\u2028 " \
        "bad\udcff pua\U000f0000 nbsp\xa0x cr\r end"
SHOWN = ["\\x07", "\\x1b[2J", "\\x00", "\\x7f", "\\x85", "\\u202e", "\\u200b", "\\ufeff", "\\u2028", "\\udcff",
         "\\U000f0000", "\\xa0", "\\x0d"]


def _unseen(text: str, allowed: str = "\n") -> set[str]:
    return {c for c in text if not c.isprintable() and c not in allowed}


def _report(tmp_path) -> Report:
    run = load_run(write_run(tmp_path / "run", [
        rec("AvgPool2dBackward.g[float32-1]", "FAIL", reason="library said: " + NASTY, repro="./run suite 'x" + NASTY + "'",
            note="note " + NASTY),
        rec("AvgPool2dBackward.h[float32-2]", "PASS", note="note " + NASTY),
    ]))
    return Report("report " + NASTY, [run], run.records)


def test_printable_escapes_what_cannot_be_seen_and_keeps_the_rest():
    assert printable(NASTY).count("\\") == len(SHOWN)
    for shown in SHOWN:
        assert shown in printable(NASTY), shown
    assert not _unseen(printable(NASTY), allowed="")
    kept = "plain text, CJK 值仅支持1, accents é, quotes \"'<&>, a tab\tand\na line feed"
    assert printable(kept, lines=True) == kept
    assert printable(kept) == kept.replace("\t", "\\x09").replace("\n", "\\x0a")


def test_summary_md_shows_escapes(tmp_path):
    text = writers.summary_md(_report(tmp_path))
    assert not _unseen(text), sorted(map(ascii, _unseen(text)))
    line = next(ln for ln in text.splitlines() if "library said" in ln)
    for shown in SHOWN:
        assert shown in line, (shown, line)
    assert "repro: `./run suite 'xbell\\x07" in text


def test_junit_xml_is_well_formed_and_shows_escapes(tmp_path):
    data = writers.junit_xml(_report(tmp_path))
    text = data.decode("utf-8")                          # strict: no lone surrogate was written
    assert not _unseen(text, allowed="\n"), sorted(map(ascii, _unseen(text, allowed="\n")))
    root = ET.fromstring(data)
    failure = next(c.find("failure") for c in root.iter("testcase") if c.find("failure") is not None)
    for shown in SHOWN:
        assert shown in failure.get("message") and shown in failure.text, shown
    assert root.get("name") == "report " + printable(NASTY)


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.text = []

    def handle_data(self, data):
        self.text.append(data)


def test_report_html_shows_escapes(tmp_path):
    html = render(_report(tmp_path))
    assert not _unseen(html, allowed="\n\t"), sorted(map(ascii, _unseen(html, allowed="\n\t")))
    parser = _Text()
    parser.feed(html)
    text = "".join(parser.text)
    message = next(t for t in parser.text if "library said" in t)
    for shown in SHOWN:
        assert shown in message, (shown, message)
    assert "note bell\\x07" in text                      # the documentation-deviations table
    assert "<title>report bell\\x07" in html


def test_terminal_summary_lines_show_escapes(tmp_path):
    reporting = RunReporting(ReportSettings(None, 0, None, None, False, False, None), root=REPO, argv=[],
                             requested={}, worker=None)
    reporting.open_recorder(tmp_path / "rep", Target.from_wire({"backend": "torch", "simulated": "true"}))
    reporting.finish(1, [rec("AvgPool2dBackward.g[float32-1]", "FAIL", reason="library said: " + NASTY,
                             repro="./run suite x")])
    lines = reporting.summary_lines()
    said = next(ln for ln in lines if "library said" in ln)
    assert not any(_unseen(ln, allowed="") for ln in lines), [ascii(ln) for ln in lines if _unseen(ln, allowed="")]
    assert "bell\\x07 clear\\x1b[2J" in said


def test_merge_command_prints_escaped_gate_lines(tmp_path):
    run = write_run(tmp_path / "run", [rec("AvgPool2dBackward.g[float32-1]", "FAIL", reason="library said: " + NASTY)])
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "harness.reporting", "merge", "-o", str(tmp_path / "out"),
                           "--gate", str(baselines), str(run)], capture_output=True, env=env, timeout=120)
    out = proc.stdout.decode("utf-8")                    # strict: a lone surrogate would not encode
    assert "library said: bell\\x07 clear\\x1b[2J" in out, out
    assert not _unseen(out, allowed="\n"), sorted(map(ascii, _unseen(out, allowed="\n")))


def test_pytest_failure_lines_show_escapes(tmp_path):
    """pytest's own `FAILED ... reason` line of a case comes from the item's repr_failure: a library
    message with an ESC sequence is shown escaped there too (the torch backend's output is forced off
    by a planted golden that raises a message with control characters)."""
    import yaml
    from tests.test_casefile_errors import BASE
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "mp.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False))
    (tmp_path / "sitecustomize.py").write_text(
        "import harness.judge.runner as r\n"
        "_real = r.run_case\n"
        "def _broken(case, *a, **k):\n"
        "    out = _real(case, *a, **k)\n"
        "    return out.fail('library said: bell\\x07 clear\\x1b[2J end') if case.kind == 'valid' else out\n"
        "r.run_case = _broken\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "harness.plugin", str(cases), "--rootdir",
                           str(tmp_path), "-c", "/dev/null", "--report-dir", str(tmp_path / "rep"), "-rf"],
                          capture_output=True, env=env, timeout=300)
    out = proc.stdout.decode("utf-8", "surrogateescape")
    assert proc.returncode == 1 and "library said: bell\\x07 clear\\x1b[2J end" in out, out[-2000:]
    assert "\x1b[2J" not in out and "\x07" not in out
