"""The CLI's JSON writer (layout-tools/cli/json.c) and every command's --json.

The writer is driven directly by layout-tools/tests/json_driver.c, compiled
here against cli/json.c: its strings are checked against Python's UTF-8
decoder with errors="replace" (the Unicode standard's U+FFFD substitution
of maximal subparts, which json.h promises), and every document must parse
with Python's json module and with jq.  Unit tier: needs a C compiler and jq.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "layout-tools"
JQ = shutil.which("jq")


def jq(filter_, text, *args):
    """Real jq over text; its output (raw strings with -r)."""
    assert JQ, "jq missing: run 'make deps'"
    r = subprocess.run([JQ, *args, filter_], input=text, capture_output=True, text=True)
    assert r.returncode == 0, f"jq {filter_!r}: {r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    cc = os.environ.get("CC", "cc")
    out = tmp_path_factory.mktemp("json") / "json_driver"
    r = subprocess.run([cc, "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-D_GNU_SOURCE",
                        "-o", str(out), str(TOOLS / "tests" / "json_driver.c"),
                        str(TOOLS / "cli" / "json.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def drive(driver, strings, pretty=False):
    """The driver's raw output bytes for these byte strings."""
    r = subprocess.run([str(driver), *(["--pretty"] if pretty else []),
                        *(s.hex() for s in strings)], capture_output=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def values(out: bytes):
    """The top-level values of a JSON Lines / pretty stream, via Python."""
    text = out.decode("utf-8")          # strict: the writer emits only UTF-8
    dec, vals, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        v, i = dec.raw_decode(text, i)
        vals.append(v)
    return vals


STRINGS = [
    b"", b"plain ascii", b'"quoted" back\\slash /solidus',
    bytes(range(0x20)) + b"\x7f",                      # every control byte, DEL
    "é € 𝄞 \U0010ffff".encode(),                        # 2-, 3-, 4-byte forms, the top
    b"\x80", b"\xbf\x80",                              # stray continuation bytes
    b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf",   # overlong
    b"\xed\xa0\x80", b"\xed\xbf\xbf",                  # UTF-16 surrogates
    b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xfe\xff",   # beyond U+10FFFF, never bytes
    b"\xe2\x82", b"\xe2\x82A", b"\xf0\x9f\x98", b"x\xf0\x9f\x98",  # truncated
    b"\xe2\x82\xac\xe2\x82",                           # valid then truncated
    b"name\x1b[31m\x07",                               # a terminal escape in a name
]


def test_strings_follow_the_unicode_replacement_rules(driver):
    doc = values(drive(driver, STRINGS))[0]
    assert doc["strings"] == [s.decode("utf-8", "replace") for s in STRINGS]


def test_output_is_strict_json_without_raw_control_bytes(driver):
    out = drive(driver, STRINGS)
    out.decode("utf-8")                                 # strict UTF-8
    body = out.replace(b"\n", b"")
    assert not [c for c in body if c < 0x20 or c == 0x7f], out
    # RFC 8259 escapes: the short forms where they exist, \u00XX otherwise
    assert rb'"\u0000\u0001' in out and rb"\b\t\n\u000b\f\r" in out and rb"\u001f\u007f" in out
    assert json.loads(jq(".", out.decode(), "-c").splitlines()[0])["strings"] == \
        values(out)[0]["strings"]


def test_scalars_and_containers(driver):
    doc, second, third = values(drive(driver, [b"a"]))
    assert doc["u64_max"] == 2**64 - 1 and doc["u64_zero"] == 0
    assert doc["i64_min"] == -2**63
    assert (doc["hex"], doc["hex_zero"]) == ("0x1f", "0x0")
    assert (doc["addr"], doc["addr_low"]) == ("0xffffffff81000000", "0x0000000000001000")
    assert doc["yes"] is True and doc["no"] is False
    assert doc["nothing"] is None and doc["null_string"] is None
    assert doc['we"ird\nname'] == "v"
    assert doc["empty_object"] == {} and doc["empty_array"] == []
    assert doc["nested"] == [[{"a": [1, None]}], {}]
    assert second == ["second"] and third == 3


def test_compact_is_json_lines_and_pretty_the_same_values(driver):
    compact = drive(driver, STRINGS)
    pretty = drive(driver, STRINGS, pretty=True)
    lines = compact.decode().splitlines()
    assert len(lines) == 3 and compact.endswith(b"\n")
    assert [json.loads(line) for line in lines] == values(pretty)
    assert b"\n  \"strings\": [\n    \"\"," in pretty
    # jq reads both as the same stream of three values
    assert jq(".", compact.decode(), "-c") == jq(".", pretty.decode(), "-c")
    assert jq("select(type == \"object\") | .addr", pretty.decode(), "-r") == \
        "0xffffffff81000000\n"
