"""Kernel modules without a guest (issue 18, items 1 and 2): the built
kernel's fgk_test.ko (CONFIG_FG_KASLR_TEST_MODULE=m), read with pyelftools.

* `fgk layout fgk_test.ko --seed S` is the core text layout of
  docs/layout-spec.md section 8 as docs/layout_ref.py computes it, for
  several seeds (and index order without a seed);
* `fgk symbolize --modules` decodes module frames func+0xOFF/0xSIZE [mod]
  to what `addr2line -f -i -j .text.<func> -e fgk_test.ko OFF` says (file
  and line, every frame of the inline chain), for every byte of every
  function of the module, and raw addresses inside a captured
  /sys/module/fgk_test/sections layout to the same;
* bad input: a .ko of another kernel (vermagic), of another build
  (build-id, function size, capture), a truncated .ko, a missing module:
  one line naming the file, exit 1.

Skips when the kernel (and so fgk_test.ko) has not been built.
"""
import json
import os
import re
import secrets
import subprocess
import sys

import pytest

from conftest import KERNEL_DIR, KERNEL_NAME, REPO
from oracle import fgk

sys.path.insert(0, str(REPO / "docs"))
import layout_ref  # noqa: E402

from pathlib import Path

FGK = Path(os.environ.get("FGK_BIN", REPO / "build" / "bin" / "fgk"))
VMLINUX = KERNEL_DIR / "vmlinux"
MODULES = KERNEL_DIR / "modules"
SHF_ALLOC, SHF_EXECINSTR = 2, 4


def module_ko():
    ko = next(MODULES.rglob("fgk_test.ko"), None) if MODULES.is_dir() else None
    if ko is None or not VMLINUX.is_file():
        pytest.skip(f"{KERNEL_NAME}/modules has no fgk_test.ko: run 'make kernel' "
                    "(CONFIG_FG_KASLR_TEST_MODULE=m)")
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")
    return ko


def elf_sections(ko):
    from elftools.elf.elffile import ELFFile
    with open(ko, "rb") as f:
        e = ELFFile(f)
        secs = [(i, s.name, s["sh_type"], s["sh_flags"], s["sh_size"],
                 max(s["sh_addralign"], 1)) for i, s in enumerate(e.iter_sections())]
        funcs = []
        for sym in e.get_section_by_name(".symtab").iter_symbols():
            if sym["st_info"]["type"] == "STT_FUNC" and sym["st_size"] and \
               isinstance(sym["st_shndx"], int):
                funcs.append((sym.name, secs[sym["st_shndx"]][1], sym["st_value"],
                              sym["st_size"]))
        modinfo = e.get_section_by_name(".modinfo").data()
    vermagic = re.search(rb"vermagic=([^\0]*)", modinfo).group(1).decode()
    return secs, funcs, vermagic


def reference_layout(ko, seed):
    """Section 8 with docs/layout_ref.py: [(name, offset)] in layout order."""
    secs, _, vermagic = elf_sections(ko)
    unload = "mod_unload" in vermagic.split()
    core = [s for s in secs[1:] if s[3] & (SHF_ALLOC | SHF_EXECINSTR) ==
            SHF_ALLOC | SHF_EXECINSTR and not s[1].startswith(".init") and
            (unload or not s[1].startswith(".exit"))]
    rnd = [s for s in core if seed and s[2] == "SHT_PROGBITS" and
           s[1].startswith(".text.") and s[4] > 0]
    rest = [s for s in core if s not in rnd]
    out, end = [], 0
    if rest:
        addrs = layout_ref.place([(s[4], s[5]) for s in rest], range(len(rest)), 0, 2**64)
        out += [(s[1], a) for s, a in zip(rest, addrs)]
        end = addrs[-1] + rest[-1][4]
    if rnd:
        order = layout_ref.permutation(seed, len(rnd), layout_ref.module_nonce("fgk_test"))
        addrs = layout_ref.place([(s[4], s[5]) for s in rnd], order, end, 2**64)
        out += sorted(((s[1], a) for s, a in zip(rnd, addrs)), key=lambda x: x[1])
    return out


@pytest.mark.k612
def test_module_layout_is_section_8():
    ko = module_ko()
    seeds = ["77" * 32, "00" * 32, bytes(range(32)).hex()] + \
        [secrets.token_hex(32) for _ in range(5)]
    orders = set()
    for seed in seeds:
        r = fgk("layout", ko, "--seed", seed, "--json")
        assert r.returncode == 0, r.stderr
        j = json.loads(r.stdout)
        assert j["module"] == "fgk_test" and j["seed"] == seed
        got = [(s["name"], int(s["offset"], 16)) for s in j["sections"]]
        want = reference_layout(ko, bytes.fromhex(seed))
        # zero-sized sections share an offset with their neighbour: compare
        # the order of the ones with a size, and every offset
        assert sorted(got, key=lambda x: (x[1], x[0])) == \
            sorted(want, key=lambda x: (x[1], x[0])), seed
        sized = [s["name"] for s in j["sections"] if int(s["size"], 16)]
        assert sized == [n for n, _ in want if n in sized], seed
        assert sum(s["randomized"] for s in j["sections"]) >= 4
        orders.add(tuple(sized))
        # the TSV says the same
        t = fgk("layout", ko, "--seed", seed)
        rows = [l.split("\t") for l in t.stdout.splitlines()[1:]]
        assert [(r[1], int(r[2], 16)) for r in rows] == \
            [(s["name"], int(s["offset"], 16)) for s in j["sections"]]
    assert len(orders) >= len(seeds) - 1, "the seed does not change the order"
    r = fgk("layout", ko, "--json")
    assert r.returncode == 0, r.stderr
    got = [(s["name"], int(s["offset"], 16)) for s in json.loads(r.stdout)["sections"]]
    assert got == reference_layout(ko, None)


def addr2line(ko, section, offsets):
    """[(file, line) chain] per offset, innermost first, from binutils."""
    r = subprocess.run(["addr2line", "-a", "-f", "-i", "-j", section, "-e", str(ko)] +
                       ["0x%x" % o for o in offsets], capture_output=True, text=True,
                       check=True)
    chains = []
    for line in r.stdout.splitlines():
        if re.fullmatch(r"0x[0-9a-f]+", line):
            chains.append([])
            fn = True
        elif fn:
            fn = False
        else:
            chains[-1].append(loc(line))
            fn = True
    assert len(chains) == len(offsets), r.stdout[:500]
    return chains


def addr2line_one(ko, section, off):
    r = subprocess.run(["addr2line", "-f", "-i", "-j", section, "-e", str(ko),
                        "0x%x" % off], capture_output=True, text=True, check=True)
    lines = r.stdout.splitlines()
    return [loc(lines[i + 1]) for i in range(0, len(lines), 2)]


def loc(text):
    text = re.sub(r" \(discriminator \d+\)", "", text)
    f, _, l = text.rpartition(":")
    return (f, l)


def same_chain(ours, theirs):
    """fgk prints paths relative to the build tree, addr2line absolute ones."""
    if len(ours) != len(theirs):
        return False
    return all(l1 == l2 and (f2 == f1 or f2.endswith("/" + f1))
               for (f1, l1), (f2, l2) in zip(ours, theirs))


def fgk_chain(text):
    return [tuple(x.rsplit(":", 1)) for x in text.split()]


def all_modules():
    return sorted(MODULES.rglob("*.ko")) if MODULES.is_dir() else []


@pytest.mark.k612
@pytest.mark.parametrize("ko", all_modules() or ["fgk_test.ko"],
                         ids=lambda p: getattr(p, "name", p))
def test_module_frames_equal_addr2line(ko):
    """Every byte of every function of each built module (fgk_test.ko, and
    the others for inline chains and names with '-')."""
    module_ko()
    _, funcs, _ = elf_sections(ko)
    from elftools.elf.elffile import ELFFile
    with open(ko, "rb") as f:
        modinfo = ELFFile(f).get_section_by_name(".modinfo").data()
    mod = re.search(rb"(?:^|\0)name=([^\0]*)", modinfo).group(1).decode()
    frames, want = [], []
    for name, section, value, size in funcs:
        offs = list(range(size))
        for off, chain in zip(offs, addr2line(ko, section, [value + o for o in offs])):
            if chain[0][1] in ("0", "?"):
                continue
            frames.append(f" {name}+0x{off:x}/0x{size:x} [{mod}]")
            want.append((name, off, chain))
    if not frames:
        pytest.skip(f"{ko.name}: no function with line information")
    r = fgk("symbolize", VMLINUX, "--modules", MODULES, input="\n".join(frames) + "\n")
    assert r.returncode == 0, r.stderr
    got = r.stdout.splitlines()
    assert len(got) == len(frames)
    chains = 0
    for line, (name, off, chain) in zip(got, want):
        m = re.fullmatch(r" %s\+0x%x/0x[0-9a-f]+ \[%s\] \((.*)\)" %
                         (re.escape(name), off, re.escape(mod)), line)
        assert m, (line, chain)
        assert same_chain(fgk_chain(m.group(1)), chain), (line, chain)
        chains += len(chain) > 1
    print(f"{ko.name}: {len(frames)} frames of {len(funcs)} functions equal "
          f"addr2line -j; {chains} with an inline chain")
    if ko.name == "fgk_test.ko":
        assert len({w[0] for w in want}) >= 10


@pytest.mark.k612
def test_module_frame_at_the_end_of_its_function():
    """func+SIZE/SIZE [fgk_test], SIZE the function's ELF size (a return
    address right after a noreturn call that ends the function, as %pB
    prints it), for every function of fgk_test.ko: fgk's line, in the text
    and in --json, is addr2line -j's at value+SIZE-1 (the call).  Not the
    line at value+SIZE: past the end of the function's own section, which
    libdwfl lays out back to back with the next, so that address is another
    function's first byte for libdw (on 6.1, fgk_test_oops+0xb/0xb gave
    fgk_test_exit's line)."""
    ko = module_ko()
    _, funcs, _ = elf_sections(ko)
    names = [f[0] for f in funcs]
    frames, want = [], []
    for name, section, value, size in funcs:
        if names.count(name) != 1 or name.startswith("__pfx_"):
            continue            # __pfx_: padding, no line (test_symbolize)
        chain = addr2line_one(ko, section, value + size - 1)
        if chain[0][1] in ("0", "?"):
            continue
        frames.append(f" {name}+0x{size:x}/0x{size:x} [fgk_test]")
        want.append(chain)
    assert len(frames) >= 10, frames
    trace = "\n".join(frames) + "\n"
    r = fgk("symbolize", VMLINUX, "--modules", MODULES, input=trace)
    assert r.returncode == 0, r.stderr
    j = json.loads(fgk("symbolize", VMLINUX, "--modules", MODULES, "--json",
                       input=trace).stdout)
    assert len(j["frames"]) == len(frames)
    for line, frame, chain, f in zip(r.stdout.splitlines(), frames, want, j["frames"]):
        m = re.fullmatch(re.escape(frame) + r" \((.*)\)", line)
        assert m and same_chain(fgk_chain(m.group(1)), chain), (line, chain)
        assert [(x["file"], str(x["line"])) for x in f["locations"]] == \
            fgk_chain(m.group(1)), (f, line)


# f.cold's section comes first (libdwfl lays a .ko's sections out back to
# back, so it ends where f starts), its line sequence comes after f's, and it
# ends with two rows at its end address, as gcc writes inlined views after a
# function's last instruction.  libdw's merged table gives f+0 one of those.
COLD_BEFORE_F = """\
	.section .text.unlikely.f,"ax",@progbits
	.section .text.f,"ax",@progbits
	.type f, @function
f:
	.file 1 "coldfirst.c"
	.loc 1 10 1
	nop
	.loc 1 11 1
	nop
	nop
	.loc 1 12 1
	ret
	.size f, .-f
	.section .text.unlikely.f
	.type f.cold, @function
f.cold:
	.loc 1 20 1
	nop
	.loc 1 21 1
	ud2
	.loc 1 22 1 view .LVU1
	.loc 1 23 1 view .LVU2
	.size f.cold, .-f.cold
	.section .modinfo,"a",@progbits
	.asciz "name=coldfirst"
	.asciz "vermagic=%s"
"""


@pytest.mark.k612
def test_module_line_where_a_cold_part_ends(tmp_path):
    """Line rows are read per sequence where one ends at the address the next
    starts at: every byte of f and f.cold of an assembled module (the shape
    of dm-mod.ko's dispatch_io in Debian's build) equals addr2line -j."""
    ko = module_ko()
    from elftools.elf.elffile import ELFFile
    with open(ko, "rb") as f:
        modinfo = ELFFile(f).get_section_by_name(".modinfo").data()
    vermagic = re.search(rb"(?:^|\0)vermagic=([^\0]*)", modinfo).group(1).decode()
    mods = tmp_path / "modules"
    mods.mkdir()
    (tmp_path / "coldfirst.s").write_text(COLD_BEFORE_F % vermagic)
    subprocess.run(["as", "--64", "-o", str(mods / "coldfirst.ko"), "coldfirst.s"],
                   check=True, cwd=tmp_path)
    frames, want = [], []
    for name, section, size in (("f", ".text.f", 4), ("f.cold", ".text.unlikely.f", 3)):
        for off, chain in enumerate(addr2line(mods / "coldfirst.ko", section, range(size))):
            frames.append(f" {name}+0x{off:x}/0x{size:x} [coldfirst]")
            want.append(chain)
    # what the assembler was told: f starts at line 10, the cold part at 20
    assert want[0] == [(str(tmp_path / "coldfirst.c"), "10")], want
    assert want[4][0][1] == "20", want
    r = fgk("symbolize", VMLINUX, "--modules", mods, input="\n".join(frames) + "\n")
    assert r.returncode == 0, r.stderr
    got = r.stdout.splitlines()
    assert len(got) == len(frames), r.stdout
    for line, frame, chain in zip(got, frames, want):
        m = re.fullmatch(re.escape(frame) + r" \((.*)\)", line)
        assert m and same_chain(fgk_chain(m.group(1)), chain), (line, chain)


def capture_for(ko, seed, base):
    """A /sys/module/fgk_test/sections capture for a module loaded at base."""
    lines = [f"/sys/module/fgk_test/sections/{n}:0x{base + off:x}"
             for n, off in reference_layout(ko, bytes.fromhex(seed))
             if n != ".text"]
    lines.append(f"/sys/module/fgk_test/sections/.rodata:0x{base + 0x8000:x}")
    return "\n".join(lines) + "\n"


@pytest.mark.k612
def test_module_raw_addresses_through_a_capture(tmp_path):
    ko = module_ko()
    seed = secrets.token_hex(32)
    base = 0xffffffffc0200000 + 0x1000 * secrets.randbelow(256)
    cap = tmp_path / "sections"
    cap.write_text(capture_for(ko, seed, base))
    where = dict(reference_layout(ko, bytes.fromhex(seed)))
    _, funcs, _ = elf_sections(ko)
    text, want, seen = "", [], set()
    for name, section, value, size in funcs:
        if section not in where or (section, value) in seen:
            continue            # .init.text: freed after init, not captured here
        seen.add((section, value))
        # aliases (cleanup_module = fgk_test_exit): any of the names
        names = "|".join(re.escape(f[0]) for f in funcs if f[1:3] == (section, value))
        for off in sorted({0, size // 2, size - 1}):
            addr = base + where[section] + value + off
            text += f"RDI: {addr:016x}\n"
            want.append((addr, names, off, size, addr2line_one(ko, section, value + off)))
    r = fgk("symbolize", VMLINUX, "--seed", seed, "--modules", MODULES,
            "--module-sections", cap, input=text)
    assert r.returncode == 0, r.stderr
    pads = 0
    for addr, name, off, size, chain in want:
        if name.startswith("__pfx_"):
            # CALL_PADDING (6.2+): the 16 bytes before a function, in its
            # section; addr2line has no line there, and fgk names the
            # padding as the kernel's %pS does, with no source
            assert all(l == "?" for _, l in chain), (name, chain)
            assert re.search(r"^    %016x = %s\+0x%x/0x%x \[fgk_test\]$" % (addr, name, off, size),
                             r.stdout, re.M), (hex(addr), name, r.stdout)
            pads += 1
            continue
        m = re.search(r"^    %016x = (?:%s)\+0x%x/0x%x \[fgk_test\] \((.*)\)$" %
                      (addr, name, off, size), r.stdout, re.M)
        assert m, (hex(addr), name, r.stdout)
        assert same_chain(fgk_chain(m.group(1)), chain), (m.group(0), chain)
    print(f"{len(want)} raw addresses decoded, {pads} of them in __pfx_ padding")
    # the same capture with another seed's layout is refused, not used
    other = secrets.token_hex(32)
    r = fgk("symbolize", VMLINUX, "--seed", other, "--modules", MODULES,
            "--module-sections", cap, input=text)
    assert r.returncode == 1 and str(cap) in r.stderr and "another seed" in r.stderr


# ---- bad input ------------------------------------------------------------


def one_line_error(r, path, *needles):
    assert r.returncode == 1, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("fgk") and str(path) in lines[0], lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert r.stdout == "", f"output on error: {r.stdout[:200]!r}"


@pytest.mark.k612
def test_module_of_another_kernel_is_refused(tmp_path):
    ko = module_ko()
    data = ko.read_bytes()
    _, _, vermagic = elf_sections(ko)
    release = vermagic.split()[0]
    other = release[:-1] + ("0" if release[-1] != "0" else "1")
    bad = tmp_path / "mods" / "fgk-test.ko"          # '-' for '_' is the same module
    bad.parent.mkdir()
    bad.write_bytes(data.replace(b"vermagic=" + release.encode(),
                                 b"vermagic=" + other.encode()))
    r = fgk("symbolize", VMLINUX, "--modules", bad.parent,
            input=" vfs_read+0x5/0x1000\n fgk_test_leaf+0x5/0x25 [fgk_test]\n")
    one_line_error(r, bad, "vermagic mismatch", other)


@pytest.mark.k612
def test_module_of_another_build_is_refused(tmp_path):
    ko = module_ko()
    _, funcs, _ = elf_sections(ko)
    name, _, _, size = next(f for f in funcs if f[1].startswith(".text."))
    # a trace printed with the module's build-id (CONFIG_STACKTRACE_BUILD_ID)
    r = fgk("symbolize", VMLINUX, "--modules", MODULES,
            input=f" {name}+0x1/0x{size:x} [fgk_test {'ab' * 20}]\n")
    one_line_error(r, ko, "build-id")
    # a function larger than the trace says (the kernel prints the distance
    # to the next symbol: never less than the function)
    r = fgk("symbolize", VMLINUX, "--modules", MODULES,
            input=f" {name}+0x1/0x{size - 1:x} [fgk_test]\n")
    one_line_error(r, ko, "another build")
    # the oops's RIP line: "RIP: 0010:func+0xOFF/0xSIZE [mod]"
    r = fgk("symbolize", VMLINUX, "--modules", MODULES,
            input=f"RIP: 0010:{name}+0x1/0x{size:x} [fgk_test]\n")
    assert r.returncode == 0 and re.fullmatch(
        r"RIP: 0010:%s\+0x1/0x%x \[fgk_test\] \(\S+:\d+.*\)\n" % (name, size), r.stdout), \
        (r.stdout, r.stderr)
    # the padding before the next shuffled section is part of that distance
    r = fgk("symbolize", VMLINUX, "--modules", MODULES,
            input=f" {name}+0x1/0x{size + 0xc:x} [fgk_test]\n")
    assert r.returncode == 0 and re.search(r"\[fgk_test\] \(\S+:\d+", r.stdout), \
        (r.stdout, r.stderr)
    # a capture naming a section this .ko does not have
    cap = tmp_path / "sections"
    cap.write_text("/sys/module/fgk_test/sections/.text.no_such_fn:0xffffffffc0001000\n")
    r = fgk("symbolize", VMLINUX, "--modules", MODULES, "--module-sections", cap,
            input=f" {name}+0x1/0x{size:x} [fgk_test]\n")
    one_line_error(r, cap, ".text.no_such_fn")
    # a capture read as a user: addresses hidden
    cap.write_text("/sys/module/fgk_test/sections/.text.fgk_test_leaf:0x0000000000000000\n")
    r = fgk("symbolize", VMLINUX, "--modules", MODULES, "--module-sections", cap,
            input="x\n")
    one_line_error(r, cap, "root")


@pytest.mark.k612
def test_truncated_and_missing_modules(tmp_path):
    ko = module_ko()
    data = ko.read_bytes()
    mods = tmp_path / "mods"
    mods.mkdir()
    cut = mods / "fgk_test.ko"
    cut.write_bytes(data[:len(data) // 2])
    r = fgk("layout", cut, "--seed", "11" * 32)
    one_line_error(r, cut, "truncated")
    r = fgk("symbolize", VMLINUX, "--modules", mods,
            input=" fgk_test_leaf+0x5/0x25 [fgk_test]\n")
    one_line_error(r, cut, "truncated")
    missing = tmp_path / "nowhere" / "fgk_test.ko"
    r = fgk("layout", missing, "--seed", "11" * 32)
    one_line_error(r, missing)
    cap = tmp_path / "sections"
    cap.write_text("/sys/module/no_such_mod/sections/.text:0xffffffffc0001000\n")
    r = fgk("symbolize", VMLINUX, "--modules", MODULES, "--module-sections", cap,
            input="x\n")
    one_line_error(r, cap, "no_such_mod")
    # a module frame whose .ko is not there is left alone, not an error
    r = fgk("symbolize", VMLINUX, "--modules", mods,
            input=" vfs_read+0x5/0x1000\n foo+0x1/0x2 [no_such_mod]\n")
    assert r.returncode == 0, r.stderr
    assert " foo+0x1/0x2 [no_such_mod]\n" in r.stdout
    # a --modules directory that does not exist is an error naming it
    r = fgk("symbolize", VMLINUX, "--modules", tmp_path / "none",
            input=" vfs_read+0x5/0x1000\n")
    one_line_error(r, tmp_path / "none")


@pytest.mark.k612
def test_module_relinked_in_layout_order(tmp_path):
    """`fgk layout MODULE.ko --seed S --relink OUT`: OUT has the core text
    as one .text at the layout's offsets; every function symbol moved
    there, and addr2line on OUT at the new offset says what addr2line -j
    says on the original (the DWARF moved along)."""
    from elftools.elf.elffile import ELFFile
    ko = module_ko()
    seed = secrets.token_hex(32)
    out = tmp_path / "fgk_test.ko"
    r = fgk("layout", ko, "--seed", seed, "--json", "--relink", out)
    assert r.returncode == 0, r.stderr
    assert os.stat(out).st_mode & 0o777 == 0o600
    layout = {s["name"]: int(s["offset"], 16) for s in json.loads(r.stdout)["sections"]}
    size = int(json.loads(r.stdout)["size"], 16)
    _, funcs, _ = elf_sections(ko)
    with open(out, "rb") as f:
        e = ELFFile(f)
        text = e.get_section_by_name(".text")
        assert text["sh_size"] == size
        assert not [s.name for s in e.iter_sections() if s.name in layout and s.name != ".text"]
        got = {s.name: (s["st_shndx"], s["st_value"]) for s in
               e.get_section_by_name(".symtab").iter_symbols()
               if s["st_info"]["type"] == "STT_FUNC"}
        text_index = e.get_section_index(".text")
    checked = 0
    for name, section, value, fsize in funcs:
        if section not in layout:
            continue
        assert got[name] == (text_index, layout[section] + value), name
        for off in sorted({0, fsize // 2, fsize - 1}):
            want = addr2line_one(ko, section, value + off)
            have = addr2line_one(out, ".text", layout[section] + value + off)
            assert have == want, (name, off, have, want)
        checked += 1
    assert checked >= 10
    print(f"relinked fgk_test.ko: {checked} functions at their layout offsets in .text, "
          f"addr2line equal to -j on the original")
    # bad use: no seed; a vmlinux; the input as OUT
    r = fgk("layout", ko, "--relink", tmp_path / "x.ko")
    assert r.returncode == 2 and "--relink needs --seed" in r.stderr
    r = fgk("layout", VMLINUX, "--seed", seed, "--relink", tmp_path / "x.ko")
    assert r.returncode == 2 and "MODULE.ko" in r.stderr
    assert not (tmp_path / "x.ko").exists()
