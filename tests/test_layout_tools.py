"""layout-tools: libfgk unit tests, reference comparison and the fgk CLI.

- test_make_check runs `make -C layout-tools check`: the Check unit tests
  (RFC 8439 + docs/layout-spec.md vectors, bounded draw, permutation,
  placement, seeds, seed records, ELF error paths) and
  layout-tools/tests/ref_compare.py (fgk vs docs/layout_ref.py and nm -n,
  computed at test time on ELF fixtures built from C source).
- The CLI tests below run build/bin/fgk on those fixtures: one-line errors,
  exit codes, no half-written files, seed records, addr round trips.
- The real-kernel tests use build/kernel/vmlinux: an unshuffled build must
  be refused clearly; an FG-KASLR build must match the reference.
The boot oracle (fgk map == /proc/kallsyms) is in tests/test_oracle.py.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "layout-tools"
FGK = REPO / "build" / "bin" / "fgk"
from conftest import KERNEL_DIR, KERNEL_NAME  # noqa: E402
import oracle  # noqa: E402
from oracle import readelf_build_id  # noqa: E402
VMLINUX = KERNEL_DIR / "vmlinux"
sys.path.insert(0, str(REPO / "docs"))
import layout_ref  # noqa: E402

S0102 = bytes(range(32)).hex()
S00 = "00" * 32
SFF = "ff" * 32


def fgk(*args, input=None, check=False):
    return oracle.fgk(*args, input=input, status=0 if check else None)


@pytest.fixture(scope="session")
def fixtures(elf_fixtures):
    """The tools built and the ELF fixtures generated into this session's own
    directory (conftest.elf_fixtures), not build/tools/fixtures: build.sh
    empties its directory first, and `make -C layout-tools check`
    (test_make_check), or any other pytest session in the same tree, refills
    that one while this session may be reading it."""
    return elf_fixtures


def test_make_check():
    r = subprocess.run(["make", "-C", str(TOOLS), "check"], capture_output=True,
                       text=True)
    print(r.stdout[-4000:])
    print(r.stderr[-4000:])
    assert r.returncode == 0
    assert "100%: Checks:" in r.stdout
    assert "ref_compare:" in r.stdout


# ------------------------------------------------------------------ help

@pytest.mark.parametrize("args", [["help"], ["--help"], ["help", "layout"],
                                  ["layout", "--help"], ["map", "--help"],
                                  ["help", "addr"], ["seed", "--help"]])
def test_help(fixtures, args):
    r = fgk(*args, check=True)
    assert "usage: fgk" in r.stdout


def test_help_lists_commands(fixtures):
    out = fgk("help", check=True).stdout
    for cmd in ("layout", "map", "addr", "seed"):
        assert re.search(rf"^  {cmd} ", out, re.M), cmd


def test_man_pages_exist():
    assert (REPO / "docs" / "fgk.1.md").is_file()
    for cmd in ("layout", "map", "addr", "seed"):
        assert (REPO / "docs" / f"fgk-{cmd}.1.md").is_file(), cmd


# ------------------------------------------------------------------ errors

def one_line_error(r, *needles):
    assert r.returncode != 0
    lines = r.stderr.splitlines()
    assert len(lines) == 1, f"want one error line, got: {r.stderr!r}"
    assert lines[0].startswith("fgk"), lines[0]
    for n in needles:
        assert n in lines[0], f"{n!r} not in {lines[0]!r}"
    assert r.stdout == "", "no partial output on error"


@pytest.mark.parametrize("name,needle", [
    ("notelf.txt", "not an ELF file"),
    ("truncated.elf", "truncated or corrupt ELF"),
    ("notext.elf", "not built with CONFIG_FG_KASLR"),
    ("stripped.elf", "no symbol table (stripped vmlinux?)"),
    ("missing.elf", "No such file"),
    ("overlap.elf", "vmlinux not laid out for FG-KASLR"),
    ("short.elf", "vmlinux not laid out for FG-KASLR"),
])
@pytest.mark.parametrize("cmd", ["layout", "map", "addr"])
def test_bad_vmlinux(fixtures, name, needle, cmd):
    args = [cmd, fixtures / name, "--seed", S0102]
    if cmd == "addr":
        args.append("fn_tiny")
    r = fgk(*args)
    one_line_error(r, f"fgk: {fixtures / name}: ", needle)


def test_directory_is_not_a_vmlinux(fixtures):
    one_line_error(fgk("layout", fixtures, "--seed", S0102), "not a regular file")


@pytest.mark.parametrize("seed,needle", [
    ("00" * 31, "62 hex digits, want exactly 64"),
    ("00" * 33, "66 hex digits, want exactly 64"),
    ("0" * 63 + "g", "non-hex character 'g' at position 64"),
    ("0x" + "00" * 31, "non-hex character 'x'"),
    ("", "0 hex digits"),
    ("disabled", "disabled"),
])
def test_bad_seed(fixtures, seed, needle):
    one_line_error(fgk("layout", fixtures / "fixture.elf", "--seed", seed), needle)
    one_line_error(fgk("seed", "parse", seed), needle)


def test_usage_errors(fixtures):
    r = fgk("layout", fixtures / "fixture.elf")
    assert r.returncode == 2 and "--seed" in r.stderr
    r = fgk("frobnicate")
    assert r.returncode == 2 and "unknown command" in r.stderr
    r = fgk("map", fixtures / "fixture.elf", "--seed", S0102, "--format", "elf")
    assert r.returncode == 2 and "unknown --format" in r.stderr
    r = fgk("map", fixtures / "fixture.elf", "--seed", S0102, "--offset", "zz")
    one_line_error(r, "--offset 'zz'")


def nofit_seed(path):
    """A seed for which docs/layout_ref.py says the layout does not fit."""
    out = subprocess.run(["readelf", "-SW", str(path)], capture_output=True,
                         text=True, check=True).stdout
    secs = []
    for m in re.finditer(r"\]\s+(\.text\.\S+)\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+"
                         r"([0-9a-f]+)\s+\S+\s+AX\s+\d+\s+\d+\s+(\d+)", out):
        secs.append((int(m.group(2), 16), int(m.group(3), 16), int(m.group(4))))
    nm = subprocess.run(["nm", str(path)], capture_output=True, text=True).stdout
    _, etext = oracle.region_end({m.group(2): int(m.group(1), 16) for m in
                                  re.finditer(r"^([0-9a-f]+) \S (\S+)$", nm, re.M)})
    start = min(a for a, s, al in secs)
    fit = None
    for k in range(256):
        seed = bytes([k]) + bytes(31)
        order = layout_ref.permutation(seed, len(secs))
        r = layout_ref.place([(s, al) for a, s, al in secs], order, start, etext)
        if r is None:
            return seed.hex(), fit
        fit = fit or seed.hex()
    pytest.fail("no seed that does not fit")


@pytest.mark.parametrize("name,limit", [("nofit.elf", "_etext"),
                                        ("entry-nofit.elf", "__fgkaslr_text_end")])
def test_layout_does_not_fit(fixtures, name, limit):
    """The error names the symbol the region ends at (entry-nofit.elf: the
    entry text lies between __fgkaslr_text_end and _etext)."""
    bad, _ = nofit_seed(fixtures / name)
    r = fgk("layout", fixtures / name, "--seed", bad)
    one_line_error(r, "layout does not fit", bad, f"beyond {limit} 0x", str(fixtures / name))
    one_line_error(fgk("map", fixtures / name, "--seed", bad), "layout does not fit")


def test_no_half_written_output(fixtures, tmp_path):
    out = tmp_path / "map.txt"
    out.write_text("previous content\n")
    r = fgk("map", fixtures / "notext.elf", "--seed", S0102, "-o", out)
    one_line_error(r, "not built with CONFIG_FG_KASLR")
    assert out.read_text() == "previous content\n"
    r = fgk("map", fixtures / "fixture.elf", "--seed", S0102, "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == fgk("map", fixtures / "fixture.elf", "--seed", S0102).stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["map.txt"], "temp file left"
    r = fgk("map", fixtures / "fixture.elf", "--seed", S0102, "-o", tmp_path / "no" / "x")
    one_line_error(r, "cannot create")


def test_write_error_on_full_disk(fixtures):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        r = subprocess.run([str(FGK), "map", str(fixtures / "fixture.elf"), "--seed", S0102],
                           stdout=full, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 1 and "write error" in r.stderr


# ------------------------------------------------------------------ output

def test_layout_deterministic_and_documented(fixtures):
    a = fgk("layout", fixtures / "fixture.elf", "--seed", S0102, check=True).stdout
    b = fgk("layout", fixtures / "fixture.elf", "--seed", S0102.upper(), check=True).stdout
    assert a == b
    lines = a.splitlines()
    assert lines[0] == "index\tname\tlink\tnew\tsize\talign"
    assert all(len(l.split("\t")) == 6 for l in lines)
    c = fgk("layout", fixtures / "fixture.elf", "--seed", SFF, check=True).stdout
    assert c != a


def test_map_offset(fixtures):
    base = fgk("map", fixtures / "fixture.elf", "--seed", S0102, check=True).stdout.splitlines()
    off = fgk("map", fixtures / "fixture.elf", "--seed", S0102, "--offset", "0x1a000000",
              check=True).stdout.splitlines()
    assert len(base) == len(off)
    b = {l.split()[2]: (int(l.split()[0], 16), l.split()[1]) for l in base}
    o = {l.split()[2]: (int(l.split()[0], 16), l.split()[1]) for l in off}
    for name, (addr, typ) in b.items():
        if typ == "A":        # absolute per-CPU: not offset
            assert o[name][0] == addr, name
        else:
            assert o[name][0] == addr + 0x1a000000, name


# ------------------------------------------------------------------ addr

def test_addr_round_trip(fixtures):
    """Every kallsyms line -> fgk addr -> the same symbol at offset 0."""
    fx = fixtures / "fixture.elf"
    lines = fgk("map", fx, "--seed", SFF, "--offset", "0x2000000", check=True).stdout.splitlines()
    names = [l.split()[2] for l in lines]
    funcs = [l for l in lines if l.split()[1] in "tTW" and names.count(l.split()[2]) == 1
             and not l.split()[2].startswith("_")]
    assert len(funcs) > 30
    stdin = "".join(l.split()[0] + "\n" for l in funcs)
    r = fgk("addr", fx, "--seed", SFF, "--offset", "0x2000000", input=stdin, check=True)
    out = r.stdout.splitlines()
    assert len(out) == len(funcs)
    for want, got in zip(funcs, out):
        addr, _, name = want.split()
        item, runtime, link, sym, sec = got.split("\t")
        assert item == addr and int(runtime, 16) == int(addr, 16)
        assert sym.startswith(name + "+0x0/"), (want, got)
    # and back: symbol -> runtime address
    r = fgk("addr", fx, "--seed", SFF, "--offset", "0x2000000",
            *[l.split()[2] for l in funcs], check=True)
    for want, got in zip(funcs, r.stdout.splitlines()):
        assert int(got.split("\t")[1], 16) == int(want.split()[0], 16), (want, got)


def test_addr_symbol_plus_offset_and_oops_syntax(fixtures):
    fx = fixtures / "fixture.elf"
    r = fgk("addr", fx, "--seed", S0102, "fn_big+0x10", check=True)
    item, runtime, link, sym, sec = r.stdout.strip().split("\t")
    assert item == "fn_big+0x10" and sym.startswith("fn_big+0x10/")
    assert sec == ".text.fn_big"
    r2 = fgk("addr", fx, "--seed", S0102, f"[<{runtime[2:]}>]", check=True)
    assert r2.stdout.split("\t")[3] == sym
    # not randomized: runtime == link + offset
    r = fgk("addr", fx, "--seed", S0102, "--offset", "0x1000", "head_func", check=True)
    f = r.stdout.split("\t")
    assert int(f[1], 16) == int(f[2], 16) + 0x1000 and f[4].strip() == "-"


def test_addr_errors(fixtures):
    fx = fixtures / "fixture.elf"
    r = fgk("addr", fx, "--seed", S0102, "0xffffffff00000000", "fn_tiny",
            "no_such_symbol", "0x10")
    assert r.returncode == 1
    err = r.stderr.splitlines()
    assert len(err) == 3, err
    assert "0xffffffff00000000: address outside the kernel image" in err[0]
    assert "no_such_symbol: no such symbol" in err[1]
    assert "0x10: address outside the kernel image" in err[2]
    assert len(r.stdout.splitlines()) == 1 and r.stdout.startswith("fn_tiny\t")


def test_addr_padding(fixtures):
    """An address in the int3 fill between shuffled functions is refused."""
    fx = fixtures / "fixture.elf"
    rows = [l.split("\t") for l in
            fgk("layout", fx, "--seed", S0102, check=True).stdout.splitlines()[1:]]
    placed = sorted((int(r[3], 16), int(r[4], 16)) for r in rows)
    gap = next(a + s for (a, s), (b, _) in zip(placed, placed[1:]) if a + s < b)
    r = fgk("addr", fx, "--seed", S0102, hex(gap))
    one_line_error(r, "int3 padding")


# ------------------------------------------------------------------ seeds

def test_seed_parse_forms(fixtures):
    for text in (S0102, S0102.upper(), "fgkaslr_seed=" + S0102, S0102 + "\n"):
        assert fgk("seed", "parse", text, check=True).stdout == S0102 + "\n"
    assert fgk("seed", "parse", input=S0102 + "\n", check=True).stdout == S0102 + "\n"


def test_seed_random(fixtures):
    a = fgk("seed", "random", check=True).stdout.strip()
    b = fgk("seed", "random", check=True).stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{64}", a) and a != b


def test_seed_record_round_trip(fixtures, tmp_path):
    fx = fixtures / "fixture.elf"
    rec = tmp_path / "x.seed"
    r = fgk("seed", "record", "--seed", SFF, "--vmlinux", fx, "--offset", "0x1a000000",
            "--note", "oops # in foo", "-o", rec, check=True)
    assert r.stdout == ""
    text = rec.read_text()
    assert text == (f"seed: {SFF}\nbuild-id: {readelf_build_id(fx)}\n"
                    "release: 6.1.0-fgktest\noffset: 0x1a000000\nnote: oops # in foo\n")
    # the Python side reads it through the libfgk binding (one parser)
    import libfgk
    parsed = libfgk.read_seed_record(rec)
    assert parsed.seed == SFF and parsed.build_id == readelf_build_id(fx)
    assert parsed.offset == 0x1a000000 and parsed.note == "oops # in foo"
    assert fgk("seed", "show", rec, "--vmlinux", fx, check=True).stdout == text
    # --seed-file gives the seed and the default offset
    a = fgk("map", fx, "--seed-file", rec, check=True).stdout
    b = fgk("map", fx, "--seed", SFF, "--offset", "0x1a000000", check=True).stdout
    assert a == b
    assert fgk("layout", fx, "--seed-file", rec, check=True).stdout == \
        fgk("layout", fx, "--seed", SFF, check=True).stdout


def test_seed_record_build_id_mismatch(fixtures, tmp_path):
    fx = fixtures / "fixture.elf"
    rec = tmp_path / "other.seed"
    rec.write_text(f"# a record for another build\nseed: {S00}\nbuild-id: 0123456789abcdef\n")
    want_id = readelf_build_id(fx)
    for cmd in (["layout", fx], ["map", fx], ["addr", fx]):
        r = fgk(*cmd, "--seed-file", rec, *(["fn_tiny"] if cmd[0] == "addr" else []))
        one_line_error(r, want_id, "0123456789abcdef", "does not match")
    r = fgk("seed", "show", rec, "--vmlinux", fx)
    one_line_error(r, want_id, "0123456789abcdef")


@pytest.mark.parametrize("text,needle", [
    ("seed: 00\n", "seed must be 64 hex digits"),
    (f"seed: {S00}\ncolour: red\n", "unknown key 'colour'"),
    (f"seed: {S00}\nseed: {S00}\n", "duplicate key 'seed'"),
    ("note: no seed\n", "no 'seed:' line"),
])
def test_seed_record_bad(fixtures, tmp_path, text, needle):
    rec = tmp_path / "bad.seed"
    rec.write_text(text)
    one_line_error(fgk("seed", "show", rec), str(rec), needle)
    one_line_error(fgk("layout", fixtures / "fixture.elf", "--seed-file", rec), needle)


def test_seed_record_no_half_written(fixtures, tmp_path):
    rec = tmp_path / "r.seed"
    r = fgk("seed", "record", "--seed", "00", "--vmlinux", fixtures / "fixture.elf", "-o", rec)
    one_line_error(r, "hex digits")
    assert not rec.exists()
    r = fgk("seed", "record", "--seed", S00, "--vmlinux", fixtures / "notelf.txt", "-o", rec)
    one_line_error(r, "not an ELF")
    assert not rec.exists()


# ------------------------------------------------------------------ real kernel

def vmlinux_has_fgkaslr_sections(path):
    out = subprocess.run(["readelf", "-SW", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return bool(re.search(r"\] \.text\.\S+\s+PROGBITS .* AX ", out))


@pytest.mark.k612
def test_real_vmlinux(fixtures):
    if not VMLINUX.is_file():
        pytest.skip(f"{KERNEL_NAME}/vmlinux missing: run 'make kernel' first")
    if not vmlinux_has_fgkaslr_sections(VMLINUX):
        print(f"{KERNEL_NAME}/vmlinux has no .text.* sections: expecting the clear refusal")
        r = fgk("layout", VMLINUX, "--seed", S0102)
        one_line_error(r, str(VMLINUX), "not built with CONFIG_FG_KASLR")
        r = fgk("map", VMLINUX, "--seed", S0102)
        one_line_error(r, "not built with CONFIG_FG_KASLR")
        return
    rec = fgk("seed", "record", "--seed", S0102, "--vmlinux", VMLINUX, check=True).stdout
    release = (VMLINUX.parent / "release").read_text().strip()
    assert f"release: {release}\n" in rec
    assert f"build-id: {readelf_build_id(VMLINUX)}\n" in rec
    r = subprocess.run([sys.executable, str(TOOLS / "tests" / "ref_compare.py"), str(VMLINUX)],
                       capture_output=True, text=True, env=dict(os.environ, FGK=str(FGK)))
    print(r.stdout, r.stderr)
    assert r.returncode == 0


# ------------------------------------------------------------------ robustness

def test_corrupt_elf_never_crashes(fixtures, tmp_path):
    """Random byte flips / truncations of a fixture: an error line or a
    result, never a signal, never a multi-line error."""
    import random
    data = (fixtures / "fixture.elf").read_bytes()
    shoff = int.from_bytes(data[0x28:0x30], "little")
    rnd = random.Random(4)
    bad = tmp_path / "corrupt.elf"
    outcomes = {"ok": 0, "error": 0}
    for it in range(120):
        b = bytearray(data)
        mode = it % 4
        if mode == 0:
            for _ in range(rnd.randrange(1, 20)):
                b[rnd.randrange(len(b))] = rnd.randrange(256)
        elif mode == 1:
            for _ in range(rnd.randrange(1, 8)):
                b[rnd.randrange(64)] = rnd.randrange(256)
        elif mode == 2:
            for _ in range(rnd.randrange(1, 8)):
                b[shoff + rnd.randrange(len(data) - shoff)] = rnd.randrange(256)
        else:
            b = b[:rnd.randrange(len(b))]
        bad.write_bytes(bytes(b))
        for args in (["layout"], ["map"], ["map", "--format", "system-map"]):
            r = subprocess.run([str(FGK), *args, str(bad), "--seed", S00],
                               capture_output=True)
            assert r.returncode >= 0, f"iteration {it} {args}: signal {-r.returncode}"
            if r.returncode:
                assert len(r.stderr.splitlines()) == 1, (it, args, r.stderr)
                assert r.stdout == b""
                outcomes["error"] += 1
            else:
                outcomes["ok"] += 1
    print(outcomes)
    assert outcomes["error"] > 0


def kallsyms_round_trip(vm, seed, tmp_path):
    """(capture, `fgk layout --kallsyms capture`, `fgk layout --seed`): the
    kallsyms fgk map predicts for seed at base offset 0x1c000000, and the
    layouts rebuilt from it and computed from the seed."""
    cap = tmp_path / "kallsyms"
    r = subprocess.run([FGK, "map", vm, "--seed", seed, "--offset", "0x1c000000", "-o", cap],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    a = subprocess.run([FGK, "layout", vm, "--kallsyms", cap], capture_output=True, text=True)
    b = subprocess.run([FGK, "layout", vm, "--seed", seed], capture_output=True, text=True)
    return cap, a, b


@pytest.mark.parametrize("seed", ["11" * 32, "5a" * 32, "c3" * 32])
def test_layout_from_kallsyms_fixture(fixtures, seed, tmp_path):
    """`--kallsyms`: the fixture's kallsyms at a seed's layout gives that
    layout back, except the two same-named, same-sized static functions
    (dup_static in funcs.c and other.c): any order of those gives the same
    kallsyms, and the tool names them instead of guessing silently."""
    vm = fixtures / "fixture.elf"
    cap, a, b = kallsyms_round_trip(vm, seed, tmp_path)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert "base offset 0x1c000000" in a.stderr
    assert re.search(r"2 sections are interchangeable \(.*\): \.text\.dup_static, \.text\.dup_static$",
                     a.stderr, re.M), a.stderr
    diff = [(x, y) for x, y in zip(a.stdout.splitlines(), b.stdout.splitlines()) if x != y]
    assert all(x.split("\t")[1] == ".text.dup_static" for x, _ in diff), diff
    assert len(a.stdout.splitlines()) == len(b.stdout.splitlines())
    m = subprocess.run([FGK, "map", vm, "--kallsyms", cap], capture_output=True, text=True)
    assert m.stdout == cap.read_text()


def test_base_offset_names_its_source(fixtures, tmp_path):
    """Issue 27 (5): the base offset says where it came from.  With
    --kallsyms and no record it came from the capture, not "from the seed
    record"; --offset wins over both; a record's offset is the record's."""
    vm = fixtures / "fixture.elf"
    seed = "5a" * 32
    cap, a, _ = kallsyms_round_trip(vm, seed, tmp_path)
    assert a.returncode == 0, a.stderr
    rec = tmp_path / "x.seed"
    fgk("seed", "record", "--seed", seed, "--vmlinux", vm, "--offset", "0x1c000000",
        "-o", rec, check=True)
    oops = " [<ffffffff9d000010>] fn_tiny+0x0/0x6\n"
    cases = [
        (["--kallsyms", cap], "base offset 0x1c000000 (from the --kallsyms capture)"),
        (["--kallsyms", cap, "--offset", "0x2000000"], "base offset 0x2000000 (from --offset)"),
        (["--seed-file", rec], "base offset 0x1c000000 (from the seed record)"),
        (["--seed", seed, "--offset", "0x1c000000"], "base offset 0x1c000000 (from --offset)"),
    ]
    for args, want in cases:
        r = fgk("symbolize", vm, *args, input=oops)
        assert want in r.stderr, (args, r.stderr)
        assert "seed record" not in r.stderr or "--seed-file" in args, (args, r.stderr)


# Seeds whose layouts of twins.elf sent the old gap search through every
# permutation of the 14 same-sized sections without a symbol (it gave up
# after MAX_STEPS and refused a real layout), and one that never did.
@pytest.mark.parametrize("seed", ["165f5e", "57e45f", "597d78", "caf367", "11" * 32])
def test_layout_from_kallsyms_many_unnamed_twins(fixtures, seed, tmp_path):
    """twins.elf: 17 .text.* sections have no kallsyms symbol (weak
    definitions overridden at link time, like Debian's syscall stubs), 14 of
    them of one size.  --kallsyms rebuilds the seed's layout: every other
    section exactly; the twins, which kallsyms cannot tell apart, wherever it
    allows, and named in the message; fgk map of the result is the capture.
    A section not named is where the seed put it."""
    vm = fixtures / "twins.elf"
    if not vm.is_file():
        pytest.skip("twins.elf not built (no scripts/kallsyms.c: see build.sh)")
    seed = seed.rjust(64, "0")
    cap, a, b = kallsyms_round_trip(vm, seed, tmp_path)
    assert a.returncode == 0, a.stderr
    assert b.returncode == 0, b.stderr
    assert "17 without a kallsyms symbol by elimination" in a.stderr, a.stderr
    named = set(re.search(r"interchangeable \(.*\): (.*)$", a.stderr, re.M).group(1).split(", "))
    assert {f".text.tw_{i}" for i in range(1, 15)} <= named, a.stderr
    rows = lambda out: [l.split("\t") for l in out.splitlines()[1:]]  # noqa: E731
    ra, rb = rows(a.stdout), rows(b.stdout)
    assert len(ra) == len(rb)
    for x, y in zip(ra, rb):
        assert x[1] == y[1]
        if x[1] not in named:
            assert x == y
    # the named ones may sit elsewhere (a 17- and a 30-byte section both
    # fill 32 bytes between two symbols; the padding before a 4096-aligned
    # section holds any of them or none): consistent with the capture
    m = subprocess.run([FGK, "map", vm, "--kallsyms", cap], capture_output=True, text=True)
    assert m.returncode == 0 and m.stdout == cap.read_text()


def test_padded_fixture_pfx_symbols_move_with_their_function(fixtures, tmp_path):
    """padded.elf has Linux 6.2+ function padding (CALL_PADDING): 16 bytes
    before each function inside its own .text.* section, named __pfx_FN
    (objtool's form), and the kallsyms tables of 6.12's scripts/kallsyms.c
    when the build found it.  For several seeds: every __pfx_FN sits 16
    bytes before FN in fgk's kallsyms map as in nm's link addresses (the
    padding moves with its function), the map is ref_compare's (layout_ref
    + nm), and a layout rebuilt from that map is the seed's."""
    vm = fixtures / "padded.elf"
    if not vm.is_file():
        pytest.skip("padded.elf not built (no scripts/kallsyms.c: see build.sh)")
    nm, seen = {}, set()
    for line in subprocess.run(["nm", "-n", str(vm)], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        a, t, n = line.split()
        if n in seen:          # two static functions of one name: not compared
            nm.pop(n, None)
        else:
            nm[n] = int(a, 16)
        seen.add(n)
    pfx = [n[6:] for n in nm if n.startswith("__pfx_") and n[6:] in nm]
    assert len(pfx) >= 10 and all(nm[f] - nm["__pfx_" + f] == 16 for f in pfx), pfx
    print(f"padded.elf: {len(pfx)} __pfx_ symbols; kallsyms_seqs_of_names "
          f"{'present' if 'kallsyms_seqs_of_names' in nm else 'absent'}, "
          f"kallsyms_addresses {'present' if 'kallsyms_addresses' in nm else 'absent'}")
    for seed in (S0102, "5a" * 32, "c3" * 32):
        cap, a, b = kallsyms_round_trip(vm, seed, tmp_path)
        assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
        got = {l.split()[2]: int(l.split()[0], 16) for l in cap.read_text().splitlines()}
        moved = 0
        for f in pfx:
            assert got[f] - got["__pfx_" + f] == 16, (seed, f)
            moved += got[f] - 0x1c000000 != nm[f]
        assert moved >= len(pfx) // 2, f"seed {seed}: only {moved} padded functions moved"
        diff = [(x, y) for x, y in zip(a.stdout.splitlines(), b.stdout.splitlines()) if x != y]
        assert all(x.split("\t")[1] in a.stderr for x, _ in diff), diff
    r = subprocess.run([sys.executable, str(TOOLS / "tests" / "ref_compare.py"), str(vm)],
                       capture_output=True, text=True, env=dict(os.environ, FGK=str(FGK)))
    print(r.stdout, r.stderr)
    assert r.returncode == 0


@pytest.mark.k612
def test_system_map_filter_is_the_kernels(fixtures):
    """`fgk map --format system-map` keeps the symbols the kernel's own
    scripts/mksysmap kept in the build's System.map (6.1's grep list, 6.12's
    sed script), with the same types: the same multiset of (type, name).
    The symbols outside the randomized region [first .text.* section,
    __fgkaslr_text_end, or _etext before kernel series patch 22 (6.12: 23))
    and outside every range domain keep System.map's addresses."""
    smap = KERNEL_DIR / "System.map"
    if not smap.is_file() or not VMLINUX.is_file():
        pytest.skip(f"{KERNEL_NAME}/System.map missing: run 'make kernel' first")
    if not vmlinux_has_fgkaslr_sections(VMLINUX):
        pytest.skip(f"{KERNEL_NAME}/vmlinux is not an FG-KASLR build: fgk map refuses it")
    from collections import Counter
    want = smap.read_text().splitlines()
    got = fgk("map", VMLINUX, "--seed", S0102, "--format", "system-map",
              check=True).stdout.splitlines()
    names = lambda ls: Counter(l.split(" ", 1)[1] for l in ls)  # noqa: E731
    w, g = names(want), names(got)
    print(f"{KERNEL_NAME}: System.map {len(want)} lines, fgk {len(got)}; "
          f"only in System.map {sum((w - g).values())}, only in fgk {sum((g - w).values())}")
    assert w == g, (list((w - g).items())[:5], list((g - w).items())[:5])
    secs = oracle.readelf_sections(VMLINUX)
    lo = min(v[1] for n, v in secs.items() if n.startswith(".text.") and v[2])
    addrs = {l.split()[2]: int(l.split()[0], 16) for l in want}
    _, hi = oracle.region_end(addrs)
    shuffled = [(lo, hi)]
    # spec §3 (versions 2 and 3): each range domain [its first section,
    # its limit symbol) moves too; what lies between the domains stays
    for prefix, limit_syms, _, _ in layout_ref.DOMAINS[:-1]:
        starts = [v[1] for n, v in secs.items() if n.startswith(prefix) and v[2]]
        limit = next((addrs[s] for s in limit_syms if s in addrs), None)
        if starts and limit is not None:
            shuffled.append((min(starts), limit))
    fixed = lambda ls: {l for l in ls  # noqa: E731
                        if not any(a <= int(l.split()[0], 16) < b for a, b in shuffled)}
    assert fixed(got) == fixed(want)


SCHED_SCRIPT = r"""
echo "seed=$(cat /proc/fgkaslr_seed 2>&1)"
echo kallsyms-begin
cat /proc/kallsyms
echo kallsyms-end
"""


# spec §3 (version 3): the range domains' prefixes and kernel bounds
RANGE_BOUNDS = [(".sched.text.", "__sched_text_start", "__sched_text_end"),
                (".spinlock.text.", "__lock_text_start", "__lock_text_end"),
                (".static_call.text.", "__static_call_text_start", "__static_call_text_end"),
                (".noinstr.text.", "__noinstr_text_start", "__fgkaslr_noinstr_end"),
                (".cpuidle.text.", "__cpuidle_text_start", "__cpuidle_text_end")]


@pytest.mark.k612
def test_map_equals_kallsyms_with_sched_domain():
    """Spec §3 version 2 and 3 on a booted kernel: `fgk map` equals the
    guest's /proc/kallsyms line for line (nokaslr replay, a fixed seed),
    including every symbol System.map puts in a range domain's bounds
    ([__sched_text_start, __sched_text_end), [__lock_text_start,
    __lock_text_end), ...): each stays inside its bounds, and the domains'
    sections do move."""
    from conftest import boot
    sections = subprocess.run(["readelf", "-SW", VMLINUX], capture_output=True,
                              text=True).stdout
    present = [d for d in RANGE_BOUNDS if f" {d[0]}" in sections]
    if not present:
        reason = (f"{KERNEL_NAME}/vmlinux has no .sched.text.* or other range domain "
                  "sections (no second shuffle domain): nothing to compare")
        print(reason)
        pytest.skip(reason)
    res = boot(SCHED_SCRIPT, profile="replay", seed=S0102, timeout=180)
    assert res.rc == 0, f"guest rc {res.rc}: {res.message}\n{res.log[-3000:]}"
    assert re.search(r"^seed=" + S0102 + "$", res.output, re.M), "not shuffled with the seed"
    got = re.search(r"^kallsyms-begin\n(.*?)^kallsyms-end$", res.output, re.S | re.M)
    got = [l for l in got.group(1).splitlines() if "\t" not in l]
    want = fgk("map", VMLINUX, "--seed", S0102, check=True).stdout.splitlines()
    assert len(got) > 1000 and want == got, \
        [(w, g) for w, g in zip(want, got) if w != g][:5]
    link = {}
    for line in (KERNEL_DIR / "System.map").read_text().splitlines():
        a, t, n = line.split(" ", 2)
        link.setdefault(n, int(a, 16))
    runtime = {}
    for line in got:
        a, t, n = line.split(" ", 2)
        runtime.setdefault(n, int(a, 16))
    all_moved = 0
    for prefix, start, end in present:
        lo, hi = link[start], link[end]
        inside = [n for n, a in link.items() if lo < a < hi]
        moved = [n for n in inside if runtime[n] != link[n]]
        all_moved += len(moved)
        print(f"{len(got)} kallsyms lines equal fgk map; {len(inside)} symbols in the "
              f"{prefix}* bounds [{start}, {end}), {len(moved)} moved, all inside")
        assert inside
        if prefix == ".sched.text.":
            assert len(inside) > 100 and moved
        assert all(lo < runtime[n] < hi for n in inside)
        outside = [n for n, a in runtime.items() if lo < a < hi and n not in inside]
        assert not outside, outside[:5]
    assert all_moved
