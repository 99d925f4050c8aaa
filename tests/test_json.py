"""The CLI's JSON writer (layout-tools/cli/json.c) and every command's --json.

The writer is driven directly by layout-tools/tests/json_driver.c, compiled
here against cli/json.c: its strings are checked against Python's UTF-8
decoder with errors="replace" (the Unicode standard's U+FFFD substitution
of maximal subparts, which json.h promises), and every document must parse
with Python's json module and with jq.  Unit tier: needs a C compiler and jq.
"""
import functools
import json
import os
import shutil
import re
import subprocess
from pathlib import Path

import pytest

import oracle

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "layout-tools"
JQ = shutil.which("jq")


def jq(filter_, text, *args):
    """Real jq over text; its output (raw strings with -r)."""
    assert JQ, "jq missing: run 'make deps'"
    r = subprocess.run([JQ, *args, filter_], input=text, capture_output=True, text=True)
    assert r.returncode == 0, f"jq {filter_!r}: {r.stderr}"
    return r.stdout


def build_driver(out, *flags):
    cc = os.environ.get("CC", "cc")
    return subprocess.run([cc, "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-D_GNU_SOURCE",
                           *flags, "-o", str(out), str(TOOLS / "tests" / "json_driver.c"),
                           str(TOOLS / "cli" / "json.c")], capture_output=True, text=True)


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    out = tmp_path_factory.mktemp("json") / "json_driver"
    r = build_driver(out)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def asan_driver(tmp_path_factory):
    d = tmp_path_factory.mktemp("json")
    san = ["-g", "-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    (d / "t.c").write_text("int main(void) { return 0; }\n")
    r = subprocess.run([os.environ.get("CC", "cc"), *san, "-o", str(d / "t"), str(d / "t.c")],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"no ASan/UBSan with this compiler: {r.stderr.strip()[:200]}")
    r = build_driver(d / "json_driver_asan", *san)
    assert r.returncode == 0, r.stderr
    return d / "json_driver_asan"


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


def test_random_bytes_under_asan(asan_driver):
    """4000 random byte strings, mostly high bytes and truncated sequences
    at the very end of exactly-sized buffers: ASan/UBSan stay quiet and
    every string reads back as Python's replacement decoding."""
    import random
    rnd = random.Random(27)
    alphabet = [0x00, 0x1f, 0x22, 0x41, 0x5c, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1,
                0xf3, 0xf4, 0xf5, 0xff]
    for _ in range(4):
        strings = [bytes(rnd.choice(alphabet) if rnd.random() < 0.8 else rnd.randrange(256)
                         for _ in range(rnd.randrange(0, 9))) for _ in range(1000)]
        doc = values(drive(asan_driver, strings))[0]
        assert doc["strings"] == [s.decode("utf-8", "replace") for s in strings]


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


# ---------------------------------------------------------------- commands
#
# Every command's --json against its own text output: the same facts, and
# jq answers what a reader of the text answers.

FGK = REPO / "build" / "bin" / "fgk"
SEED = "5a" * 32
OFFSET = "0x1c000000"


fgk = functools.partial(oracle.fgk, status=0)


def parse_one(text):
    vals = values(text.encode())
    assert len(vals) == 1, text[:300]
    return vals[0]


@pytest.fixture(scope="module")
def vm(elf_fixtures):
    return elf_fixtures / "fixture.elf"


def tsv(out):
    lines = out.splitlines()
    head = lines[0].split("\t")
    return [dict(zip(head, line.split("\t"))) for line in lines[1:]]


@pytest.mark.parametrize("pretty", [False, True])
def test_layout_json_is_the_tsv(vm, pretty):
    rows = tsv(fgk("layout", vm, "--seed", SEED).stdout)
    out = fgk("layout", vm, "--seed", SEED, "--pretty" if pretty else "--json").stdout
    assert (out.count("\n") > 1) == pretty
    j = parse_one(out)
    assert j["seed"] == SEED
    assert [{k: str(v) for k, v in s.items()} for s in j["sections"]] == rows
    assert j["start"] <= j["end"] <= j["limit"]
    # spec section 3: the domains partition sections[] (fixture.elf has
    # no .sched.text.* domain), the .text.* one is start/limit/end's
    assert len(j["domains"]) == 6       # spec version 3: five range domains, .text.*
    d0, d1 = j["domains"][0], j["domains"][-1]
    assert all(d["sections"] == 0 and d["start"] is None for d in j["domains"][:-1])
    assert (d0["prefix"], d0["sections"], d0["start"], d0["first"]) == (".sched.text.", 0, None, 0)
    assert (d1["prefix"], d1["sections"], d1["first"]) == (".text.", len(rows), 0)
    assert (d1["start"], d1["limit"], d1["end"]) == (j["start"], j["limit"], j["end"])
    assert (d0["nonce"], d1["nonce"]) == ("fgkaslr-schd", "fgkaslr-text")
    # jq: where did fn_tiny's section go, how many sections moved
    want = next(r["new"] for r in rows if r["name"] == ".text.fn_tiny")
    assert jq('.sections[] | select(.name == ".text.fn_tiny") | .new', out, "-r") == want + "\n"
    assert jq("[.sections[] | select(.link != .new)] | length", out) == \
        f"{sum(r['link'] != r['new'] for r in rows)}\n"


def test_layout_json_from_kallsyms_has_no_seed(vm, tmp_path):
    cap = tmp_path / "kallsyms"
    fgk("map", vm, "--seed", SEED, "--offset", OFFSET, "-o", cap)
    j = parse_one(fgk("layout", vm, "--kallsyms", cap, "--json").stdout)
    assert j["seed"] is None and j["sections"]


def test_layout_json_of_a_module():
    from conftest import KERNEL_DIR
    ko = next((KERNEL_DIR / "modules").rglob("fgk_test.ko"), None) \
        if (KERNEL_DIR / "modules").is_dir() else None
    if ko is None:
        pytest.skip("no fgk_test.ko: run 'make kernel' first")
    rows = tsv(fgk("layout", ko, "--seed", SEED).stdout)
    out = fgk("layout", ko, "--seed", SEED, "--json").stdout
    j = parse_one(out)
    assert j["module"] == "fgk_test" and j["seed"] == SEED
    assert j["vermagic"] and j["build_id"]
    got = [{**{k: str(v) for k, v in s.items()},
            "randomized": "yes" if s["randomized"] else "no"} for s in j["sections"]]
    assert got == rows
    assert jq("[.sections[] | select(.randomized)] | length", out) == \
        f"{sum(r['randomized'] == 'yes' for r in rows)}\n"
    assert parse_one(fgk("layout", ko, "--json").stdout)["seed"] is None


@pytest.mark.parametrize("fmt", ["kallsyms", "system-map"])
def test_map_json_is_the_map(vm, fmt, tmp_path):
    text = fgk("map", vm, "--seed", SEED, "--offset", OFFSET, "--format", fmt).stdout
    out = fgk("map", vm, "--seed", SEED, "--offset", OFFSET, "--format", fmt, "--json").stdout
    j = parse_one(out)
    assert (j["format"], j["seed"], j["offset"]) == (fmt, SEED, OFFSET)
    lines = [line.split(" ", 2) for line in text.splitlines()]
    assert [[s["address"], s["type"], s["name"]] for s in j["symbols"]] == \
        [["0x" + a, t, n] for a, t, n in lines]
    # jq: the address of fn_tiny, the symbols of type T
    want = next(a for a, t, n in lines if n == "fn_tiny")
    assert jq('.symbols[] | select(.name == "fn_tiny") | .address', out, "-r") == f"0x{want}\n"
    assert jq('[.symbols[] | select(.type == "T")] | length', out) == \
        f"{sum(t == 'T' for _, t, _ in lines)}\n"
    # -o FILE: the JSON goes to FILE, private like the text map
    o = tmp_path / "map.json"
    r = fgk("map", vm, "--seed", SEED, "--offset", OFFSET, "--format", fmt, "--pretty", "-o", o)
    assert r.stdout == "" and (o.stat().st_mode & 0o777) == 0o600
    assert values(o.read_bytes()) == [j]


def test_addr_json_lines_are_the_items(vm):
    runtime = fgk("addr", vm, "--seed", SEED, "--offset", OFFSET, "fn_tiny").stdout.split("\t")[1]
    items = ["fn_tiny", "fn_tiny+0x2", runtime, "no_such_fn", "0x10", "fn_big+0x10/0x11f"]
    text = fgk("addr", vm, "--seed", SEED, "--offset", OFFSET, *items, status=1)
    js = fgk("addr", vm, "--seed", SEED, "--offset", OFFSET, "--json", *items, status=1)
    assert js.stderr == text.stderr                 # the same errors, one line each
    lines = js.stdout.splitlines()
    assert len(lines) == len(items)                 # one object per item, in order
    objs = [json.loads(line) for line in lines]
    ok = [o for o in objs if o["error"] is None]
    bad = [o for o in objs if o["error"] is not None]
    assert [o["item"] for o in bad] == ["no_such_fn", "0x10"]
    assert ["fgk: " + o["error"] for o in bad] == text.stderr.splitlines()
    assert all(o["runtime"] is None and o["symbol"] is None for o in bad)
    rows = [line.split("\t") for line in text.stdout.splitlines()]
    assert [[o["item"], o["runtime"], o["link"],
             f"{o['symbol']}+{o['offset']}/{o['size']}", o["section"] or "-"] for o in ok] == rows
    # stdin gives the same stream; jq -s gathers it
    stdin = fgk("addr", vm, "--seed", SEED, "--offset", OFFSET, "--json",
                input="\n".join(items) + "\n", status=1)
    assert stdin.stdout == js.stdout
    # a blank line is no item; an overlong one an item with its error
    long = fgk("addr", vm, "--seed", SEED, "--json", input="fn_tiny\n\n" + "x" * 2000 + "\n",
               status=1)
    objs = [json.loads(line) for line in long.stdout.splitlines()]
    assert [o["error"] is None for o in objs] == [True, False]
    assert "fgk: " + objs[1]["error"] == long.stderr.strip()
    assert jq("map(select(.error == null)) | length", js.stdout, "-s") == f"{len(ok)}\n"
    assert jq('select(.item == "fn_tiny") | .runtime', js.stdout, "-r") == runtime + "\n"


def test_seed_parse_json():
    text = "fgkaslr_seed=" + SEED.upper()
    for args, inp in ([(text,), None], [(), text + "\n"]):
        canon = fgk("seed", "parse", *args, input=inp).stdout
        out = fgk("seed", "parse", "--json", *args, input=inp).stdout
        assert jq(".seed", out, "-r") == canon
    fgk("seed", "parse", "--json", "00", status=1)


def test_seed_random_json():
    a, b = (parse_one(fgk("seed", "random", "--json").stdout)["seed"] for _ in range(2))
    assert a != b
    for s in (a, b):
        assert fgk("seed", "parse", s).stdout == s + "\n"      # canonical already


def test_seed_record_json(vm, tmp_path):
    rec = tmp_path / "r.seed"
    args = ["seed", "record", "--seed", SEED, "--vmlinux", vm, "--offset", OFFSET]
    text = fgk(*args).stdout
    j = parse_one(fgk(*args, "--json", "-o", rec).stdout)
    assert rec.read_text() == text
    want = record_dict(text)
    assert {k.replace("-", "_"): v for k, v in want.items()} == \
        {k: v for k, v in j.items() if k in want or k == "build_id"}
    assert j["note"] is None and j["vmlinux"] == str(vm) and j["output"] == str(rec)
    assert jq(".build_id", fgk(*args, "--json").stdout, "-r").strip() == want["build-id"]


def record_dict(text):
    return dict(line.split(": ", 1) for line in text.splitlines() if line)


def test_seed_show_json(vm, tmp_path):
    rec = tmp_path / "x.seed"
    fgk("seed", "record", "--seed", SEED, "--vmlinux", vm, "--offset", OFFSET,
        "--note", "tab\tless \u00e9", "-o", rec)
    want = record_dict(fgk("seed", "show", rec).stdout)
    j = parse_one(fgk("seed", "show", rec, "--vmlinux", vm, "--json").stdout)
    assert {k.replace("-", "_"): v for k, v in want.items()} == \
        {k: v for k, v in j.items() if k in ("seed", "build_id", "release", "offset", "note")}
    assert j["vmlinux"] == str(vm)
    assert parse_one(fgk("seed", "show", rec, "--json").stdout)["vmlinux"] is None
    # absent keys are null
    example = parse_one(fgk("seed", "show", REPO / "seeds" / "example.seed", "--json").stdout)
    assert example["build_id"] is None and example["offset"] is None
    # a record of another vmlinux: the error, no JSON
    r = fgk("seed", "show", rec, "--vmlinux", vm.parent / "relocs.elf", "--json", status=1)
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1


def test_seed_capture_json(vm, tmp_path):
    log = tmp_path / "console.log"
    log.write_text(f"[    0.000000] Linux version 6.1.0-fgk (x@y)\r\n{SEED}\r\n"
                   "Kernel Offset: 0x1c000000 from 0xffffffff81000000\r\n")
    rec = tmp_path / "c.seed"
    out = fgk("seed", "capture", "--text", log, "--vmlinux", vm, "--note", "n",
              "--json", "-o", rec).stdout
    j = parse_one(out)
    want = record_dict(rec.read_text())
    assert {k.replace("-", "_"): v for k, v in want.items()} == \
        {k: v for k, v in j.items() if k in ("seed", "build_id", "release", "offset", "note")}
    assert j["source"] == {"kind": "text", "path": str(log)} and j["output"] == str(rec)
    # without -o: JSON only, the same record
    j2 = parse_one(fgk("seed", "capture", "--text", log, "--vmlinux", vm, "--note", "n",
                       "--json").stdout)
    assert {**j2, "output": str(rec)} == j
    assert jq(".offset", out, "-r") == OFFSET + "\n"


def test_hostile_section_name_stays_valid_json(vm, tmp_path):
    """A section name with a byte that is not UTF-8, a terminal escape and a
    quote (a crafted vmlinux): --json is still valid JSON, the name read
    back as the Unicode standard's replacement of the same bytes."""
    data = vm.read_bytes()
    old, new = b".text.fn_tiny\0", b'.text.\xff\x1b"tiny\0'
    assert data.count(old) == 1 and len(old) == len(new)
    bad = tmp_path / "hostile.elf"
    bad.write_bytes(data.replace(old, new))
    out = subprocess.run([FGK, "layout", bad, "--seed", SEED, "--json"],
                         capture_output=True).stdout
    assert b"\x1b" not in out
    names = [s["name"] for s in values(out)[0]["sections"]]
    assert new[:-1].decode("utf-8", "replace") in names
    assert jq(".sections | length", out.decode()) == f"{len(names)}\n"


@pytest.mark.k612
def test_symbolize_json_is_addr2line():
    """fgk symbolize --json on the built kernel: a symbolic frame, a "[<ADDR>]
    ? func" frame, a raw address in the unshuffled entry code (decoded through
    "Kernel Offset: disabled") and a module frame: the frame fields are what
    the trace printed and nm gives, the locations addr2line -i's (-j for the
    module), the text annotation the same chains; jq reads the schema."""
    from conftest import KERNEL_DIR
    from test_modules import addr2line_one, elf_sections, module_ko, same_chain
    ko = module_ko()
    vmlinux = KERNEL_DIR / "vmlinux"
    nm = {}
    for line in subprocess.run(["nm", "-S", str(vmlinux)], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tT":
            nm.setdefault(f[3], []).append((int(f[0], 16), int(f[1], 16)))
        elif len(f) == 3 and f[1] in "tT":
            nm.setdefault(f[2], []).append((int(f[0], 16), 0))
    (vr, vr_size), = nm["vfs_read"]
    (entry, _), = nm["entry_SYSCALL_64_after_hwframe"]
    _, funcs, _ = elf_sections(ko)
    (_, sec, value, fsize), = [f for f in funcs if f[0] == "fgk_test_fire"]
    trace = (f"[    1.000000]  [<{vr + 0x10:016x}>] ? vfs_read+0x10/0x{vr_size:x}\n"
             f"[    1.000000] RIP: 0010:vfs_read+0x5/0x{vr_size:x}\n"
             f"[    1.000000] RAX: {entry + 0x1c:016x}\n"
             f"[    1.000000]  fgk_test_fire+0x8/0x{fsize:x} [fgk_test]\n"
             "[    1.000000] Kernel Offset: disabled\n")
    args = ["symbolize", vmlinux, "--modules", ko.parent]
    out = fgk(*args, "--json", input=trace).stdout
    j = parse_one(out)
    assert values(fgk(*args, "--pretty", input=trace).stdout.encode()) == [j]
    assert (j["base_offset"], j["seeded"]) == ("0x0", False)
    assert j["base_offset_source"] == '"Kernel Offset: disabled"'
    fr = j["frames"]
    assert [(f["line"], f["source"], f["function"], f["offset"], f["module"]) for f in fr] == [
        (1, "symbol", "vfs_read", "0x10", None),
        (2, "symbol", "vfs_read", "0x5", None),
        (3, "address", "entry_SYSCALL_64_after_hwframe", "0x1c", None),
        (4, "symbol", "fgk_test_fire", "0x8", "fgk_test")]
    assert [f["reliable"] for f in fr] == [False, True, True, True]
    assert [f["address"] for f in fr] == [f"0x{vr + 0x10:016x}", None,
                                          f"0x{entry + 0x1c:016x}", None]
    assert [f["link"] for f in fr] == [f"0x{vr + 0x10:016x}", f"0x{vr + 5:016x}",
                                       f"0x{entry + 0x1c:016x}", hex(value + 8)]
    assert fr[3]["section"] == sec and fr[0]["size"] == hex(vr_size)
    text_lines = trace.splitlines()
    assert all(text_lines[f["line"] - 1][f["column"]:].startswith(f["text"]) for f in fr)
    for f in fr:
        if f["module"]:
            truth = addr2line_one(ko, sec, value + 8)
        else:
            r = subprocess.run(["addr2line", "-i", "-e", str(vmlinux), f["link"]],
                               capture_output=True, text=True, check=True)
            truth = [tuple(re.sub(r" \(discriminator \d+\)", "", l).rsplit(":", 1))
                     for l in r.stdout.splitlines()]
        ours = [(loc["file"], str(loc["line"])) for loc in f["locations"]]
        assert same_chain(ours, truth), (f, truth)
        assert [loc["inlined"] for loc in f["locations"]] == \
            [True] * (len(ours) - 1) + [False]
    # the text output annotates the same chains
    text = fgk(*args, input=trace).stdout
    for f in fr:
        chain = " ".join(f"{loc['file']}:{loc['line']}" for loc in f["locations"])
        assert f"({chain})" in text, (chain, text)
    from oracle import readelf_build_id
    assert jq('.frames[] | select(.module == "fgk_test") | .build_id', out, "-r") == \
        readelf_build_id(ko) + "\n"
    assert jq('[.frames[] | select(.reliable | not)] | length', out) == "1\n"
    # an error leaves no JSON behind
    r = fgk(*args, "--json", input=f" vfs_read+0x5/0x{vr_size - 1:x}\n", status=1)
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1


# f ends with a call (a noreturn callee: nothing after it), g starts where
# f ends: f's return address is g's first byte, at another line.
ENDCALL_S = """\
	.file 1 "endcall.c"
	.section .text.f,"ax",@progbits
	.globl f
	.type f, @function
f:
	.loc 1 10 1
	nop
	.loc 1 11 1
	call g
	.size f, .-f
	.section .text.g,"ax",@progbits
	.globl g
	.type g, @function
g:
	.loc 1 20 1
	nop
	.loc 1 21 1
	ret
	.size g, .-g
"""


def test_symbolize_frame_at_the_end_of_its_function(tmp_path):
    """f+0x6/0x6, f being 6 bytes (a return address right after the call
    that ends f, as %pB prints it): the line is the call's (f+5, line 11),
    not that of f+6, the first byte of g (line 20), which followed f at
    link time only; in the text and in --json alike.  Past f's own size
    (f+0x7/0x8) no line; inside f and in g, the line of the address.  An
    assembled and linked ELF (gas writes the DWARF): no kernel needed."""
    (tmp_path / "endcall.s").write_text(ENDCALL_S)
    subprocess.run(["as", "--64", "-o", "endcall.o", "endcall.s"], check=True, cwd=tmp_path)
    subprocess.run(["ld", "-o", "endcall.elf", "-Ttext=0xffffffff81000000", "-e", "f",
                    "endcall.o"], check=True, cwd=tmp_path)
    elf = tmp_path / "endcall.elf"
    a2l = subprocess.run(["addr2line", "-e", str(elf), "0xffffffff81000005",
                          "0xffffffff81000006"], capture_output=True, text=True,
                         check=True).stdout.split()
    assert [x.rsplit(":", 1)[1] for x in a2l] == ["11", "20"], a2l
    frames = {" f+0x6/0x6": "(endcall.c:11)", " f+0x7/0x8": None,
              " f+0x0/0x6": "(endcall.c:10)", " f+0x1/0x6": "(endcall.c:11)",
              " g+0x0/0x2": "(endcall.c:20)"}
    trace = "".join(k + "\n" for k in frames)
    out = fgk("symbolize", elf, "--offset", "0", input=trace).stdout
    assert out.splitlines() == [k + (f" {v}" if v else "") for k, v in frames.items()], out
    j = parse_one(fgk("symbolize", elf, "--offset", "0", "--json", input=trace).stdout)
    got = [[(x["file"], x["line"]) for x in f["locations"]] for f in j["frames"]]
    assert got == [[("endcall.c", 11)], [], [("endcall.c", 10)], [("endcall.c", 11)],
                   [("endcall.c", 20)]], j["frames"]
    assert j["frames"][0]["link"] == "0xffffffff81000006"
