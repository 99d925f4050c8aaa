"""The libfgk shared library and its Python binding (python/libfgk), unit tier.

No kernel needed: ELF fixtures are compiled here from source (a plain
gcc program, and the FG-KASLR-shaped fixture of layout-tools/tests/fixtures
linked with its linker script).  Expected values come from binutils
(readelf, nm) and from the fgk command line tool, never from the binding.
"""
import ctypes
import json
import math
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

import libfgk
from libfgk import FgkError
from oracle import output as run, readelf_sections

REPO = Path(__file__).resolve().parent.parent
HEADER = REPO / "layout-tools" / "include" / "fgk" / "fgk.h"
FIXSRC = REPO / "layout-tools" / "tests" / "fixtures"
FGK = REPO / "build" / "bin" / "fgk"
SEED = bytes(range(32)).hex()

pytestmark = pytest.mark.skipif(
    not (REPO / "build" / "lib" / libfgk.SONAME).is_file() and not os.environ.get("FGK_LIBFGK"),
    reason=f"build/lib/{libfgk.SONAME} missing: run 'make tools'")


# --------------------------------------------------------------------------
# the shared library exports exactly the public header

def header_names():
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    funcs = set(re.findall(r"\b(fgk_\w+)\s*\(", text))
    data = set(re.findall(r"^extern\s+[^;(]*?\b(fgk_\w+)\s*(?:\[[^\]]*\])?\s*;", text, re.M))
    return funcs | data


def test_shared_library_exports_exactly_the_header():
    so = libfgk.library_path()
    out = run("nm", "-D", "--defined-only", so)
    exported = {line.split()[-1].split("@")[0] for line in out.splitlines()
                if line.split()[-2] != "A"}          # "A FGK_1": the version node
    want = header_names()
    assert len(want) > 50
    assert exported == want, (f"exported, not in fgk.h: {sorted(exported - want)}; "
                              f"in fgk.h, not exported: {sorted(want - exported)} "
                              "(edit layout-tools/libfgk.map)")
    dyn = run("readelf", "-d", so)
    assert f"Library soname: [{libfgk.SONAME}]" in dyn
    # every exported symbol carries the version node
    assert all("@@FGK_1" in line or line.split()[-2] == "A"
               for line in run("nm", "-D", "--defined-only", "--with-symbol-versions",
                               so).splitlines())


# --------------------------------------------------------------------------
# the binding's ctypes mirrors are the header's structs (ABI)

def header_struct_fields(text, name):
    """Field names of `struct name { ... };` in the header, in order."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    m = re.search(r"^struct " + name + r" \{(.*?)^\};", text, re.S | re.M)
    assert m, f"struct {name} not in {HEADER}"
    fields = []
    for decl in m.group(1).split(";"):
        decl = re.sub(r"\[[^\]]*\]", "", decl).strip()
        if decl:
            fields.append(re.findall(r"\w+", decl)[-1])
    return fields


def c_layout(tmp_path, structs):
    """{struct: (sizeof, {field: (offsetof, sizeof)})} as the C compiler
    lays out <fgk/fgk.h>."""
    prog = ["#include <stddef.h>", "#include <stdio.h>", "#include <fgk/fgk.h>",
            "int main(void) {"]
    for name, fields in structs.items():
        prog.append(f'printf("{name} - %zu\\n", sizeof(struct {name}));')
        for f in fields:
            prog.append(f'printf("{name} {f} %zu %zu\\n", offsetof(struct {name}, {f}), '
                        f"sizeof(((struct {name} *)0)->{f}));")
    prog.append("return 0; }")
    src = tmp_path / "abi.c"
    src.write_text("\n".join(prog) + "\n")
    run("cc", "-std=gnu11", "-I", HEADER.parent.parent, "-o", tmp_path / "abi", src)
    out = {}
    for line in run(tmp_path / "abi").splitlines():
        name, field, *nums = line.split()
        size, fields = out.setdefault(name, [0, {}])
        if field == "-":
            out[name][0] = int(nums[0])
        else:
            fields[field] = (int(nums[0]), int(nums[1]))
    return out


def test_ctypes_mirrors_match_header(tmp_path):
    """Each struct the binding mirrors has, in the compiled header, the
    mirror's fields in the mirror's order at the mirror's offsets and sizes,
    no field the mirror lacks, and the mirror's size."""
    mirrors = libfgk._MIRRORS
    declared = {v for k, v in vars(libfgk).items()
                if isinstance(v, type) and issubclass(v, ctypes.Structure)
                and v is not ctypes.Structure}
    assert declared == set(mirrors.values()), \
        "a ctypes Structure of the binding is missing from libfgk._MIRRORS"
    text = HEADER.read_text()
    names = {n: header_struct_fields(text, n) for n in mirrors}
    got = c_layout(tmp_path, names)
    for name, cls in mirrors.items():
        mine = [f[0] for f in cls._fields_]
        assert mine == names[name], f"struct {name}: header {names[name]}, binding {mine}"
        size, fields = got[name]
        for f in mine:
            d = getattr(cls, f)
            assert (d.offset, d.size) == fields[f], \
                f"struct {name}.{f}: C offset/size {fields[f]}, ctypes {(d.offset, d.size)}"
        assert ctypes.sizeof(cls) == size, f"sizeof(struct {name}) {size}, ctypes {ctypes.sizeof(cls)}"


def test_layout_is_opaque():
    """struct fgk_layout has no body in the public header (getters only)."""
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    assert "struct fgk_layout;" in text
    assert not re.search(r"struct fgk_layout\s*\{", text)


def test_error_classes_per_code():
    """A C error comes back as the subclass for its code."""
    with pytest.raises(libfgk.SeedError) as e:
        libfgk.parse_seed("zz")
    assert e.value.code == libfgk.ERR_SEED and isinstance(e.value, FgkError)
    with pytest.raises(libfgk.FgkOSError) as e:
        libfgk.Vmlinux("/nonexistent/vmlinux")
    assert e.value.errno == 2 and e.value.path == "/nonexistent/vmlinux"
    assert len(set(libfgk._ERROR_CLASSES.values())) == libfgk.ERR_NO_VMCOREINFO


def test_library_path_search(tmp_path):
    fake = tmp_path / "libfgk.so.1"
    fake.write_bytes(b"")
    assert libfgk.library_path({"FGK_LIBFGK": str(fake)}) == str(fake)
    # a wrong $FGK_LIBFGK falls back to the repository's build/lib
    assert libfgk.library_path({"FGK_LIBFGK": str(tmp_path / "nope")}) == \
        str(REPO / "build" / "lib" / libfgk.SONAME)


# --------------------------------------------------------------------------
# ELF files through libfgk (what fgk-gdb's own reader used to do)

FIXTURE_C = r"""
const char linux_banner[] = "Linux version 6.1.0-fgk-test (fixture)\n";
int counter = 5;
unsigned char fgkaslr_boot_info[88] = { 0x21, 0x46, 0x47, 0x4b, 1 };
int alpha(int x) { return x + counter; }
int beta(int x) { return alpha(x) * 3; }
static int gamma_(int x) { return beta(x) - 1; }
int asm_exc_divide_error(int x) { return gamma_(x); }
void _start(void) { for (;;) asm_exc_divide_error(1); }
"""


@pytest.fixture(scope="module")
def plain_elf(tmp_path_factory):
    """A linked program: gcc merged .text.* into .text (not FG-KASLR)."""
    if not shutil.which("gcc"):
        pytest.skip("gcc not installed")
    d = tmp_path_factory.mktemp("elf")
    (d / "f.c").write_text(FIXTURE_C)
    out = d / "f.elf"
    run("gcc", "-O1", "-ffunction-sections", "-fdata-sections", "-nostdlib", "-static",
        "-fno-pie", "-no-pie", "-Wl,--build-id=sha1", "-o", out, d / "f.c")
    return out


@pytest.fixture(scope="module")
def fg_elf(tmp_path_factory):
    """layout-tools' FG-KASLR-shaped fixture (nokallsyms.elf of build.sh):
    .text.* orphans kept apart, _etext, build-id."""
    if not shutil.which("gcc") or not shutil.which("ld"):
        pytest.skip("gcc/ld not installed")
    d = tmp_path_factory.mktemp("fg")
    cflags = ["-O2", "-g", "-ffunction-sections", "-fno-pic", "-mcmodel=kernel",
              "-fno-asynchronous-unwind-tables", "-ffreestanding", "-fno-stack-protector",
              "-fno-toplevel-reorder", "-fcf-protection=none"]
    for n in ("funcs", "other"):
        run("gcc", *cflags, "-c", "-o", d / f"{n}.o", FIXSRC / f"{n}.c")
    out = d / "fg.elf"
    run("ld", "-T", FIXSRC / "fixture.lds", "--defsym=FGK_SLACK=0x1000", "--unique=.text.*",
        "--build-id=sha1", "--no-warn-rwx-segments", "-z", "noexecstack", "-o", out,
        d / "funcs.o", d / "other.o")
    return out


def test_sections_match_readelf(plain_elf):
    with libfgk.Vmlinux(plain_elf) as vm:
        ref = readelf_sections(plain_elf)
        assert ref
        for name, (idx, addr, size) in ref.items():
            s = vm.section(name)
            assert s is not None, name
            assert (s.index, s.addr, s.size) == (idx, addr, size), name
        assert vm.section(".no.such.section") is None
        # the whole table by index: readelf's count, names, and entsizes
        hdr = run("readelf", "-hW", plain_elf)
        assert vm.shnum == int(re.search(r"Number of section headers:\s+(\d+)", hdr).group(1))
        secs = vm.sections()
        assert [s.index for s in secs] == list(range(1, vm.shnum))
        for s in secs:
            if s.name in ref:
                assert ref[s.name][0] == s.index or vm.section(s.name).index < s.index
        symtab = vm.section(".symtab")
        assert symtab.entsize == 24 and secs[symtab.index - 1] == symtab
        with pytest.raises(libfgk.FgkLookupError):
            _check_section_at(vm, vm.shnum)


def _check_section_at(vm, i):
    info = libfgk._SectionInfo()
    libfgk._check(libfgk._L().fgk_vmlinux_section_at(vm._handle(), i, ctypes.byref(info)))


def test_symbols_match_nm(plain_elf):
    ref = {}
    for line in run("nm", "-S", plain_elf).splitlines():
        f = line.split()
        if len(f) == 4:
            ref[f[3]] = (int(f[0], 16), int(f[1], 16))
    vm = libfgk.Vmlinux(plain_elf)
    names = ["linux_banner", "alpha", "beta", "asm_exc_divide_error", "counter",
             "fgkaslr_boot_info"]
    got = vm.symbols(names + ["no_such_symbol"])
    assert "no_such_symbol" not in got and vm.symbol("no_such_symbol") is None
    for n in names:
        assert (got[n].addr, got[n].size) == ref[n], n


def test_read_and_build_id(plain_elf):
    vm = libfgk.Vmlinux(plain_elf)
    b = vm.symbol("linux_banner")
    assert vm.read(b.addr, b.size) == b"Linux version 6.1.0-fgk-test (fixture)\n\0"
    assert vm.release == "6.1.0-fgk-test"
    m = re.search(r"Build ID: ([0-9a-f]+)", run("readelf", "-n", plain_elf))
    assert vm.build_id == m.group(1)
    bi = vm.symbol("fgkaslr_boot_info")
    assert vm.read(bi.addr, 88)[:5] == bytes([0x21, 0x46, 0x47, 0x4b, 1])
    with pytest.raises(FgkError, match="no section holds") as e:
        vm.read(0x10, 4)
    assert e.value.path == str(plain_elf) and e.value.code == libfgk.ERR_LOOKUP
    with pytest.raises(FgkError, match="no section holds"):
        vm.read(b.addr, 1 << 20)                # runs past the section's end


def test_kind(plain_elf, fg_elf, tmp_path):
    assert libfgk.Vmlinux(plain_elf).kind == "plain"
    assert libfgk.Vmlinux(fg_elf).kind == "fgkaslr"
    # vmlinux.fgk order: the relinked file's .text.* sections are not in
    # address order; rewrite two section addresses by hand to get one
    data = bytearray(fg_elf.read_bytes())
    with open(fg_elf, "rb") as f:              # pyelftools, not the code under test
        elf = ELFFile(f)
        shoff, shentsize = elf["e_shoff"], elf["e_shentsize"]
    ref = readelf_sections(fg_elf)
    texts = sorted((v[0], v[1]) for k, v in ref.items() if k.startswith(".text.") and v[2])
    (i1, a1), (i2, a2) = texts[0], texts[1]
    struct.pack_into("<Q", data, shoff + i1 * shentsize + 16, a2)
    struct.pack_into("<Q", data, shoff + i2 * shentsize + 16, a1)
    swapped = tmp_path / "swapped.elf"
    swapped.write_bytes(bytes(data))
    assert libfgk.Vmlinux(swapped).kind == "relinked"


def test_open_errors(tmp_path):
    with pytest.raises(FgkError) as e:
        libfgk.Vmlinux(tmp_path / "missing")
    assert e.value.code == libfgk.ERR_OS and e.value.path == str(tmp_path / "missing")
    (tmp_path / "t").write_text("hello, not an ELF file" * 4)
    with pytest.raises(FgkError) as e:
        libfgk.Vmlinux(tmp_path / "t")
    assert e.value.code == libfgk.ERR_ELF and str(tmp_path / "t") in str(e.value)


def test_extended_section_numbering(tmp_path):
    """More than 0xff00 sections (e_shnum = 0, e_shstrndx = SHN_XINDEX) as
    vmlinux has."""
    if not shutil.which("gcc"):
        pytest.skip("gcc not installed")
    n = 65300
    src = "".join(f'.section .text.f{i},"ax",@progbits\nf{i}: ret\n' for i in range(n))
    (tmp_path / "big.s").write_text(src)
    obj = tmp_path / "big.o"
    run("gcc", "-c", "-o", obj, tmp_path / "big.s")
    shnum, shstrndx = struct.unpack_from("<HH", obj.read_bytes()[:64], 0x3C)
    assert shnum == 0 and shstrndx == 0xFFFF           # really extended
    vm = libfgk.Vmlinux(obj)
    s = vm.section(".text.f65299")
    assert s is not None and s.size == 1
    assert vm.kind == "fgkaslr"


# --------------------------------------------------------------------------
# layout and address translation, against `fgk layout --json`

@pytest.fixture(scope="module")
def cli_layout(fg_elf):
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")
    return json.loads(run(FGK, "layout", fg_elf, "--seed", SEED, "--json"))


def test_layout_matches_cli(fg_elf, cli_layout):
    lay = libfgk.Vmlinux(fg_elf).layout(SEED)
    got = [(s.index, s.name, s.addr, s.size, s.new_addr) for s in lay.sections]
    want = [(s["index"], s["name"], int(s["link"], 16), int(s["size"], 16),
             int(s["new"], 16)) for s in cli_layout["sections"]]
    assert got == want and lay.n == len(want)


def test_runtime_and_link(fg_elf, cli_layout):
    off = 0x1e000000
    lay = libfgk.Vmlinux(fg_elf).layout(SEED)
    secs = [(int(s["link"], 16), int(s["new"], 16), int(s["size"], 16))
            for s in cli_layout["sections"]]
    covered = set()
    for link, new, size in secs:
        for k in (0, size // 2, size - 1):
            assert lay.runtime(link + k, off) == new + k + off
            assert lay.link(new + k + off, off) == link + k
        covered.update(range(new, new + size))
    # padding between placed sections: no function there
    start = min(n for _, n, _ in secs)
    hole = next(a for a in range(start, max(n + s for _, n, s in secs)) if a not in covered)
    with pytest.raises(FgkError, match="padding"):
        lay.link(hole + off, off)
    assert lay.unmap(hole) is None
    # outside the region: the offset only
    outside = lay.limit + 0x100
    assert lay.runtime(outside, off) == outside + off
    assert lay.link(outside + off, off) == outside
    assert lay.section_at(secs[0][0]).new_addr == secs[0][1]


def test_addr_matches_cli(fg_elf, cli_layout):
    """Layout.addr (fgk-gdb's `fgk addr`) gives `fgk addr`'s lines and errors."""
    off = 0x1e000000
    lay = libfgk.Vmlinux(fg_elf).layout(SEED)
    secs = cli_layout["sections"]
    items = []
    for s in secs[:6]:
        new, size = int(s["new"], 16), int(s["size"], 16)
        items += [s["name"].removeprefix(".text."), f"{new + off:#x}",
                  f"[<{new + off + size - 1:016x}>]"]
    # runtime addresses outside the shuffled region, SYMBOL+OFF[/SIZE], errors
    items += [f"{lay.limit + 0x100 + off:#x}", f"{secs[0]['name'][6:]}+0x1/0x99",
              f"{secs[0]['name'][6:]}+1", "no_such_symbol", "0x10", "a+b+c",
              f"{secs[0]['name'][6:]}+0xffffffffffffffff", "x" * 2000]
    covered = set()
    for s in secs:
        covered.update(range(int(s["new"], 16), int(s["new"], 16) + int(s["size"], 16)))
    start = min(covered)
    items.append(hex(next(a for a in range(start, max(covered)) if a not in covered) + off))
    for item in items:
        r = subprocess.run([str(FGK), "addr", str(fg_elf), "--seed", SEED, "--offset",
                            hex(off), item], capture_output=True, text=True)
        try:
            a = lay.addr(item, off)
        except FgkError as e:
            assert r.returncode == 1 and r.stdout == "", (item, r.stdout)
            assert r.stderr == f"fgk: {e}\n", item
            continue
        assert r.returncode == 0, (item, r.stderr)
        assert r.stdout == a.line + "\n", item
        fields = a.line.split("\t")
        assert fields[0] == a.item and int(fields[1], 16) == a.runtime
        assert int(fields[2], 16) == a.link
        assert fields[4] == (a.section or "-")
        assert (fields[3] == "-") == (a.symbol is None)
    assert lay.addr("   ", off) is None


def test_layout_errors(plain_elf):
    with pytest.raises(FgkError) as e:
        libfgk.Vmlinux(plain_elf).layout(SEED)
    assert e.value.code == libfgk.ERR_NOT_FGKASLR and e.value.path == str(plain_elf)
    with pytest.raises(FgkError, match="want exactly 64"):
        libfgk.Vmlinux(plain_elf).layout("0x" + SEED)


def test_relink_cache_path(fg_elf, tmp_path, monkeypatch):
    vm = libfgk.Vmlinux(fg_elf)
    monkeypatch.setenv("FGK_CACHE_DIR", str(tmp_path / "c"))
    assert vm.relink_cache_path(SEED) == f"{tmp_path}/c/{vm.build_id}/{SEED}.vmlinux.fgk"
    monkeypatch.delenv("FGK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert vm.relink_cache_path(SEED) == f"{tmp_path}/x/fgk/{vm.build_id}/{SEED}.vmlinux.fgk"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert vm.relink_cache_path(SEED) == \
        f"{tmp_path}/h/.cache/fgk/{vm.build_id}/{SEED}.vmlinux.fgk"
    monkeypatch.delenv("HOME")
    assert vm.relink_cache_path(SEED) is None


# --------------------------------------------------------------------------
# console text, VMCOREINFO

@pytest.mark.parametrize("text,want", [
    ("[    1.5] Kernel Offset: 0x1c000000 from 0xffffffff81000000 (relocation range: x)\n",
     0x1c000000),
    ("Kernel Offset: disabled\n", 0),
    ("Kernel Offset: 0x1c000000 from x\nKernel Offset: 0x2a000000 from y\n", 0x2a000000),
    ("Kernel Offset: 0x1c000000 from x\nKernel Offset: disabled\n", 0),
    ("Kernel Offset: 1c000000\n", None),            # no 0x: not the kernel's format
    ("Kernel Offset: 0X1C000000\n", None),
    ("Kernel Offset: 0x\n", None),
    ("Kernel Offset: 0x10000000000000000\n", None),  # 17 digits
    ("Kernel offset: 0x1c000000\n", None),
    ("no offset here\n", None),
    ("", None),
])
def test_kernel_offset_scan(text, want):
    assert libfgk.kernel_offset_scan(text) == want


def test_parse_vmcoreinfo():
    seed = "ab" * 32
    v = libfgk.parse_vmcoreinfo(f"OSRELEASE=6.1.192\nBUILD-ID=ABCDEF01\nPAGESIZE=4096\n"
                                f"KERNELOFFSET=1c000000\nFGKASLR_SEED={seed}\n")
    assert (v.format, v.osrelease, v.build_id, v.offset, v.seed_state, v.seed) == \
        ("text", "6.1.192", "abcdef01", 0x1c000000, "present", seed)
    assert v.fields()["PAGESIZE"] == "4096"
    v = libfgk.parse_vmcoreinfo("OSRELEASE=6.1.192\nFGKASLR_SEED=disabled\n")
    assert (v.offset, v.seed_state, v.seed) == (None, "disabled", None)


def test_seed_scan():
    a, b = "ab" * 32, "cd" * 32
    assert libfgk.seed_scan(f"fgkaslr seed: {a.upper()}\n") == (a, False)
    assert libfgk.seed_scan(f"Command line: console=ttyS0 fgkaslr_seed={a}\r\n") == (a, False)
    assert libfgk.seed_scan(f"FGKASLR_SEED={a}\n{a}\n") == (a, False)      # the same twice
    assert libfgk.seed_scan("FGKASLR_SEED=disabled\n") == (None, True)
    assert libfgk.seed_scan(f"seed={a}\n0x{a}\n{a}0\n{a[:-1]}g\n") == (None, False)
    assert libfgk.seed_scan("") == (None, False)
    with pytest.raises(FgkError, match="several different seeds") as e:
        libfgk.seed_scan(f"{a}\n{b}\n")
    assert e.value.code == libfgk.ERR_SEED
    # 'fgk seed capture --text' finds the same (until it calls fgk_seed_scan too)
    if FGK.is_file():
        for text, want in ((f"fgkaslr seed: {a.upper()}\n", a), (f"seed={a}\n", None),
                           (f"x fgkaslr_seed={b} y\n", b)):
            r = subprocess.run([FGK, "seed", "capture", "--text", "-"], input=text,
                               capture_output=True, text=True)
            assert (r.stdout == f"seed: {want}\n") if want else r.returncode != 0, r


# --------------------------------------------------------------------------
# build-id notes in memory, boot info, build-id and offset text (lib/notes.c,
# lib/bootinfo.c)

def _elf_build_id(path):
    """The build-id pyelftools reads from an ELF file (the oracle)."""
    with open(path, "rb") as f:
        for sec in ELFFile(f).iter_sections():
            if sec["sh_type"] == "SHT_NOTE":
                for n in sec.iter_notes():
                    if n["n_type"] == "NT_GNU_BUILD_ID":
                        return n["n_desc"]
    return None


def test_find_build_id_notes_in_the_kernel_image(vmlinux):
    """Scanning the kernel's loaded image (.rodata through .notes, as guest
    memory would show it) finds the kernel's own build-id as the one note
    outside an ELF image, and the vDSO's build-id inside one."""
    want = _elf_build_id(vmlinux)
    assert want
    with libfgk.Vmlinux(vmlinux) as vm:
        secs = {s.name: s for s in vm.sections()}
        notes = secs[".notes"]
        got = libfgk.find_build_id_notes(vm.read(notes.addr, notes.size), notes.addr)
        assert [(n.build_id, n.embedded) for n in got] == [(want, False)]
        assert got[0].addr >= notes.addr
        rodata = secs[".rodata"]
        inside = libfgk.find_build_id_notes(vm.read(rodata.addr, rodata.size), rodata.addr)
    vdso = REPO / "build" / "kernel" / "build" / "arch/x86/entry/vdso/vdso64.so.dbg"
    assert inside and all(n.embedded for n in inside), inside
    if vdso.is_file() and os.environ.get("KVERSION", "6.1") == "6.1":
        assert _elf_build_id(vdso) in [n.build_id for n in inside]


def test_find_build_id_notes_hostile():
    # random bytes, "GNU" tails with wild sizes, ELF magic with huge tables:
    # no crash, only complete well-formed notes
    rnd = bytearray(os.urandom(1 << 16))
    tail = struct.pack("<I", 3) + b"GNU\0"
    for at in range(0, len(rnd) - 16, 997 * 4):
        rnd[at + 8:at + 16] = tail
    rnd[0:5] = b"\x7fELF\x02"
    rnd[0x1000:0x1005] = b"\x7fELF\x01"
    for base in (0, 1, 2, 0xffffffffffff0000):
        for n in libfgk.find_build_id_notes(bytes(rnd), base):
            at = n.addr - base
            namesz, descsz = struct.unpack_from("<II", rnd, at)
            assert namesz == 4 and 8 <= descsz <= 64 and n.addr % 4 == 0
            assert n.build_id == rnd[at + 16:at + 16 + descsz].hex()
    assert libfgk.find_build_id_notes(b"") == []
    assert libfgk.find_build_id_notes(None) == []


def test_boot_info_hostile():
    with pytest.raises(libfgk.InvalidError, match=r"^dump\.elf: fgkaslr_boot_info: need "
                       r"at least 88 bytes, got 40$"):
        libfgk.decode_boot_info(bytes(40), "dump.elf")
    bi = libfgk.decode_boot_info(b"\xff" * 4096)
    assert bi.size == libfgk.BOOT_INFO_SIZE_MAX and bi.flags == 0xffffffff
    assert bi.flag_names().startswith("shuffled, seed given, seed bad, nofgkaslr")
    assert list(bi.phase_cycles) == ["layout", "relocs", "kallsyms", "mcount", "text",
                                     "tables"]


@pytest.mark.parametrize("text,want", [
    ("0x1e000000", 0x1e000000), ("1e000000", 0x1e000000), ("0", 0), ("0X200000", 0x200000)])
def test_parse_offset_matches_cli(text, want, fg_elf):
    """The binding's offset parser is the one the CLI's --offset uses: both
    take the same text to the same value."""
    assert libfgk.parse_offset(text, 0) == want

    def runtime(off):
        r = subprocess.run([str(FGK), "addr", str(fg_elf), "--seed", SEED, "--offset", off,
                            "--json", "_start"], capture_output=True, text=True, check=True)
        return int(json.loads(r.stdout)["runtime"], 16)
    assert runtime(text) - runtime("0") == want


@pytest.mark.parametrize("text", ["zz", "0x", "", "1 2", "0x10000000000000000"])
def test_parse_offset_bad(text):
    with pytest.raises(libfgk.InvalidError, match=r"^bad offset '.*': expected a hex number"):
        libfgk.parse_offset(text)
    with pytest.raises(libfgk.InvalidError, match="not a multiple of 0x200000"):
        libfgk.parse_offset("0x1000")


def test_parse_build_id():
    assert libfgk.parse_build_id(" 0xABCDEF0123456789\n") == "abcdef0123456789"
    for bad in ("abc", "abcdef01234567", "x" * 16, "ab" * 65, "0123456789abcdef\0"):
        with pytest.raises(libfgk.InvalidError):
            libfgk.parse_build_id(bad)


def test_layout_from_kallsyms_binding(elf_fixtures):
    """Layout.from_kallsyms (fgk_layout_from_kallsyms): a capture of the
    fixture at a base offset (what `fgk map --offset` prints, the format of
    root's /proc/kallsyms) gives back that offset and the seed's layout,
    section for section; a line that is not kallsyms is a KallsymsError
    naming the file."""
    fx = elf_fixtures / "fixture.elf"
    seed, offset = "5a" * 32, 0x2a00000
    capture = run(FGK, "map", fx, "--seed", seed, "--offset", hex(offset))
    with libfgk.Vmlinux(fx) as vm:
        by_seed = vm.layout(seed)
        rebuilt = vm.layout_from_kallsyms(capture, "capture.txt")
        assert rebuilt.seed is None and by_seed.origin is None
        assert rebuilt.origin.offset == offset
        assert rebuilt.origin.by_symbol + rebuilt.origin.by_elimination == len(by_seed.sections)
        guessed = set(rebuilt.origin.guessed)
        assert [(s.name, s.new_addr) for s in rebuilt.sections if s.name not in guessed] == \
            [(s.name, s.new_addr) for s in by_seed.sections if s.name not in guessed]
        with pytest.raises(libfgk.KallsymsError, match=r"^capture\.txt: line 1: "):
            vm.layout_from_kallsyms("garbage\n", "capture.txt")


# --------------------------------------------------------------------------
# the end of the randomized region (spec section 3): __fgkaslr_text_end, the
# first address of the fixed entry text placed after the region (kernel
# series patch 22 on 6.1, 23 on 6.12), else _etext.  entry*.elf are built
# by layout-tools/tests/fixtures/build.sh from entry.lds and entry.S.

def nm_values(path):
    return {p[2]: int(p[0], 16) for p in (ln.split() for ln in run("nm", path).splitlines())
            if len(p) == 3}


def readelf_funcs(path):
    """{address: largest size} of the sized FUNC symbols (readelf -sW)."""
    f = {}
    for ln in run("readelf", "-sW", path).splitlines():
        p = ln.split()
        if len(p) >= 8 and p[3] == "FUNC" and p[6] != "UND" and int(p[2], 0):
            a = int(p[1], 16)
            f[a] = max(f.get(a, 0), int(p[2], 0))
    return f


def randomized_extents(path):
    """[(addr, end)] of the spec section 3 sections, by readelf -SW."""
    out = []
    for ln in run("readelf", "-SW", path).splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\.text\.\S+)\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+"
                     r"([0-9a-f]+)\s+\S+\s+AX\s", ln)
        if m and int(m.group(3), 16):
            out.append((int(m.group(2), 16), int(m.group(2), 16) + int(m.group(3), 16)))
    return out


def test_region_ends_at_fgkaslr_text_end_else_etext(elf_fixtures, fg_elf, tmp_path):
    """The limit is __fgkaslr_text_end when the vmlinux has it (the entry
    text after the region starts there, _etext is past it), _etext
    otherwise; the layout stays below it and relinking leaves the entry
    text as it was."""
    fx = elf_fixtures / "entry.elf"
    nm, secs = nm_values(fx), readelf_sections(fx)
    end = nm["__fgkaslr_text_end"]
    # the fixture as entry.lds builds it
    assert secs[".entry.text"][1] == end < nm["__entry_text_start"] < nm["_etext"]
    assert max(e for _, e in randomized_extents(fx)) <= end
    j = json.loads(run(FGK, "layout", fx, "--seed", SEED, "--json"))
    assert int(j["limit"], 16) == end
    assert all(int(s["new"], 16) + int(s["size"], 16) <= end for s in j["sections"])
    with libfgk.Vmlinux(fx) as vm:
        assert vm.layout(SEED).limit == end
    # the layout before: no __fgkaslr_text_end, the region ends at _etext
    old = nm_values(fg_elf)
    assert "__fgkaslr_text_end" not in old
    assert int(json.loads(run(FGK, "layout", fg_elf, "--seed", SEED, "--json"))["limit"],
               16) == old["_etext"]
    # relinked: the randomized sections moved, the entry text untouched
    out = tmp_path / "entry.fgk"
    run(FGK, "relink", fx, "--seed", SEED, "-o", out, "--no-cache")
    text = {}
    for f in (fx, out):
        raw = tmp_path / "entry.bin"
        run("objcopy", "-O", "binary", "-j", ".entry.text", f, raw)
        text[f] = raw.read_bytes()
    assert len(text[fx]) == secs[".entry.text"][2] and text[out] == text[fx]
    assert readelf_sections(out)[".entry.text"][1:] == secs[".entry.text"][1:]


def test_randomized_section_past_the_region_end_is_refused(elf_fixtures):
    """entry-short.elf: __fgkaslr_text_end before the .text.* sections.  One
    line naming the file, the first such section (index order) and the
    symbol the limit came from; nothing on stdout."""
    fx = elf_fixtures / "entry-short.elf"
    end = nm_values(fx)["__fgkaslr_text_end"]
    past = [(a, e) for a, e in randomized_extents(fx) if e > end]
    assert past, "entry-short.elf has no section past __fgkaslr_text_end"
    a, e = past[0]
    for cmd in (["layout", fx, "--seed", SEED], ["audit", fx, "--seed", SEED],
                ["relink", fx, "--seed", SEED, "-o", fx.with_suffix(".fgk"), "--no-cache"]):
        r = subprocess.run([str(FGK), *map(str, cmd)], capture_output=True, text=True)
        assert r.returncode == 1 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.startswith(f"fgk: {fx}: vmlinux not laid out for FG-KASLR: section "), \
            r.stderr
        assert f"[{a:#x}, {e:#x}) extends beyond __fgkaslr_text_end {end:#x}\n" in r.stderr
    assert not fx.with_suffix(".fgk").exists()
    with libfgk.Vmlinux(fx) as vm, pytest.raises(libfgk.NotFgkaslrError,
                                                match="beyond __fgkaslr_text_end"):
        vm.layout(SEED)


def test_audit_counts_the_entry_text_after_the_region(elf_fixtures):
    """fgk audit on the layout with the entry text after the region: the
    output section holding it is a fixed region of its own (from
    __fgkaslr_text_end), the kernel's .entry.text bounds nested in it, and
    every function counts once, in the innermost region (readelf -sW); the
    moving share of the resident function bytes is readelf's."""
    fx = elf_fixtures / "entry.elf"
    nm, secs, funcs = nm_values(fx), readelf_sections(fx), readelf_funcs(fx)
    a = json.loads(run(FGK, "audit", fx, "--json"))
    named = {r["name"]: r for r in a["regions"]}
    assert len(named) == len(a["regions"]), "two regions of one name"
    sec, ent = named[".entry.text section"], named[".entry.text"]
    s0, s1 = secs[".entry.text"][1], secs[".entry.text"][1] + secs[".entry.text"][2]
    assert (int(sec["start"], 16), int(sec["end"], 16)) == (nm["__fgkaslr_text_end"], s1)
    assert sec["start_symbol"] == "__fgkaslr_text_end" and s0 == nm["__fgkaslr_text_end"]
    assert (int(ent["start"], 16), int(ent["end"], 16)) == \
        (nm["__entry_text_start"], nm["__entry_text_end"])
    assert sec["class"] == ent["class"] == "fixed" and not sec["moves"]
    assert "PTI" in sec["why"] and "user page tables" in sec["why"]
    # entry.S: entry_fixture (48 bytes) inside the bounds, srso_fixture (16) after
    assert (ent["functions"], ent["function_bytes"]) == (1, 48)
    assert (sec["functions"], sec["function_bytes"]) == (1, 16)
    assert funcs[nm["entry_fixture"]] == 48 and funcs[nm["srso_fixture"]] == 16
    assert sec["bytes"] + ent["bytes"] == s1 - s0
    # totals: moving = in a randomized section, fixed = every other function
    ext = randomized_extents(fx)
    mv = sum(n for f, n in funcs.items() if any(x <= f < y for x, y in ext))
    fx_bytes = sum(funcs.values()) - mv
    assert a["totals"]["moving"]["function_bytes"] == mv
    assert a["totals"]["fixed"]["function_bytes"] == fx_bytes
    assert a["totals"]["resident_moving_percent"] == pytest.approx(100 * mv / (mv + fx_bytes),
                                                                   abs=0.006)
    txt = run(FGK, "audit", fx)
    assert re.search(r"^  \.entry\.text section: .*PTI", txt, re.M), txt


# spec section 3 (version 3): (prefix, first layout version, limit symbol)
# of each range domain, address order; .text.* after them
RANGE_DOMAINS = [(".sched.text.", 2, "__sched_text_end"),
                 (".spinlock.text.", 3, "__lock_text_end"),
                 (".static_call.text.", 3, "__static_call_text_end"),
                 (".noinstr.text.", 3, "__fgkaslr_noinstr_end"),
                 (".cpuidle.text.", 3, "__cpuidle_text_end")]
PREFIXES = [d[0] for d in RANGE_DOMAINS] + [".text."]


def domain_sections(path):
    """Spec section 3 by readelf -SW alone: per domain (RANGE_DOMAINS, then
    .text.*), [(index, name, addr, size)] of its sections, non-empty
    PROGBITS AX, index order; a range domain's only from its layout version
    on (__fgkaslr_layout_version by nm)."""
    doms = [[] for _ in PREFIXES]
    for ln in run("readelf", "-SW", path).splitlines():
        m = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+"
                     r"([0-9a-f]+)\s+\S+\s+(\S+)\s", ln)
        if not m or not int(m.group(4), 16) or not {"A", "X"} <= set(m.group(5)):
            continue
        e = (int(m.group(1)), m.group(2), int(m.group(3), 16), int(m.group(4), 16))
        for k, p in enumerate(PREFIXES):
            if e[1].startswith(p):
                doms[k].append(e)
                break
    version = nm_values(path).get("__fgkaslr_layout_version", 1)
    for k, (_, since, _) in enumerate(RANGE_DOMAINS):
        if version < since:
            doms[k] = []
    return doms


def check_domains(path, seed=SEED):
    """Layout.domains against readelf -SW and nm (domain_sections), and
    against `fgk layout --json`'s domains; the layout itself."""
    nm = nm_values(path)
    want = domain_sections(path)
    with libfgk.Vmlinux(path) as vm:
        lay = vm.layout(seed)
        ds = lay.domains
        assert [d.prefix for d in ds] == PREFIXES
        assert [d.name for d in ds] == [p + "*" for p in PREFIXES]
        assert [d.nonce for d in ds] == [b"fgkaslr-schd", b"fgkaslr-lock", b"fgkaslr-scal",
                                         b"fgkaslr-noin", b"fgkaslr-idle", b"fgkaslr-text"]
        assert [d.index for d in ds] == list(range(6))
        first = 0
        for d, secs in zip(ds, want):
            assert (d.first, d.n) == (first, len(secs)), d
            first += d.n
            mine = lay.sections[d.first:d.first + d.n]
            assert [(s.index, s.name, s.addr, s.size) for s in mine] == secs, d.prefix
            assert d.log2_orderings == pytest.approx(math.lgamma(len(secs) + 1) / math.log(2))
            if not secs:
                assert (d.start, d.limit, d.end, d.limit_symbol) == (None,) * 4
                continue
            sym = RANGE_DOMAINS[d.index][2] if d.index < 5 else \
                "__fgkaslr_text_end" if "__fgkaslr_text_end" in nm else "_etext"
            assert d.limit_symbol == sym and d.limit == nm[sym]
            assert d.start == min(s[2] for s in secs)
            assert d.start <= d.end <= d.limit
            assert all(d.start <= s.new_addr and s.new_addr + s.size <= d.end for s in mine)
        assert first == lay.n
        assert (ds[-1].start, ds[-1].limit, ds[-1].end) == (lay.start, lay.limit, lay.end)
        # address order, a gap between domains with sections
        used = [d for d in ds if d.n]
        assert all(a.limit < b.start for a, b in zip(used, used[1:]))
        # fgk layout --json says the same
        j = json.loads(run(FGK, "layout", path, "--seed", seed, "--json"))
        assert j["domains"] == [
            {"prefix": d.prefix, "sections": d.n,
             "log2_orderings": round(d.log2_orderings, 1),
             "start": None if d.start is None else f"{d.start:#018x}",
             "limit": None if d.limit is None else f"{d.limit:#018x}",
             "end": None if d.end is None else f"{d.end:#018x}",
             "limit_symbol": d.limit_symbol, "nonce": d.nonce.decode(), "first": d.first}
            for d in ds]
        return ds


def test_layout_domains_of_fixtures(elf_fixtures, fg_elf):
    """Layout.domains (fgk_layout_domain*) on fixtures without a .sched.text.*
    domain (fixture.elf; sched-v1.elf: its sections, but layout version 1)
    and with one (sched.elf: three sections)."""
    for path in (elf_fixtures / "fixture.elf", elf_fixtures / "sched-v1.elf", fg_elf):
        ds = check_domains(path)
        assert [d.n for d in ds[:5]] == [0] * 5 and ds[5].n > 3, path
    for name in ("sched.elf", "sched-v3.elf"):
        ds = check_domains(elf_fixtures / name)
        assert [d.n for d in ds[:5]] == [3, 0, 0, 0, 0] and ds[0].limit < ds[5].start
    # layout version 3: every range domain (domains.elf)
    ds = check_domains(elf_fixtures / "domains.elf")
    assert [d.n for d in ds[:5]] == [3, 3, 2, 4, 2]


@pytest.mark.k612
def test_layout_domains_of_the_kernel(vmlinux):
    """Layout.domains of the built kernel: with the .sched.text.* domain
    (kernel series 6.1 patch 27, 6.12 patch 28) a dozen sections below the
    .text.* ones, else none."""
    ds = check_domains(vmlinux)
    print(f"{vmlinux}: " + "; ".join(f"{d.name} {d.n} sections, log2(n!) "
                                     f"{d.log2_orderings:.1f}" for d in ds))
    d0, d1 = ds[0], ds[-1]
    assert d1.n > 1000
    if d0.n:
        assert d0.limit < d1.start and d0.limit_symbol == "__sched_text_end"


def test_audit_gadgets_outside_functions(elf_fixtures, tmp_path):
    """fgk audit --gadgets counts, per region and class, the gadgets that
    start outside every function symbol's [value, value + size) (readelf
    -sW's sized FUNC symbols): gadget lines at each function's first,
    last and one-past-the-end byte and at each region's ends of entry.elf
    (its .entry.text section has code and padding without functions)."""
    fx = elf_fixtures / "entry.elf"
    funcs = readelf_funcs(fx)
    regions = json.loads(run(FGK, "audit", fx, "--json"))["regions"]
    ext = [(int(r["start"], 16), int(r["end"], 16)) for r in regions]
    addrs = sorted({x for a, n in funcs.items() for x in (a, a + n - 1, a + n)} |
                   {x for a, e in ext if e > a for x in (a, e - 1)})
    g = tmp_path / "gadgets.txt"
    g.write_text("Gadgets information\n" + "".join(f"{x:#018x} : nop ; ret\n" for x in addrs))
    a = json.loads(run(FGK, "audit", fx, "--gadgets", g, "--json"))

    def innermost(x):
        inside = [k for k, (s, e) in enumerate(ext) if s <= x < e]
        return min(inside, key=lambda k: ext[k][1] - ext[k][0]) if inside else None

    want = [0] * len(regions)
    for x in addrs:
        k = innermost(x)
        if k is not None and not any(f <= x < f + n for f, n in funcs.items()):
            want[k] += 1
    got = [r["gadgets"]["outside_functions"] for r in a["regions"]]
    assert got == want and sum(want) > 3
    for c in ("moving", "fixed", "init"):
        assert a["gadgets"][c]["outside_functions"] == \
            sum(w for w, r in zip(want, regions) if r["class"] == c)
    assert a["gadgets"]["fixed"]["outside_functions"] > 0
    assert a["gadgets"]["moving"]["outside_functions"] > 0


def production_python():
    """The project's Python outside python/ that ships or runs for users:
    fgk-gdb, the QEMU runner, the benches and the Python scripts."""
    files = [*(REPO / "fgk-gdb").rglob("*.py"), *(REPO / "qemu-profiles").glob("*.py"),
             REPO / "qemu-profiles" / "run", *(REPO / "bench").glob("*.py")]
    files += [p for p in (REPO / "scripts").iterdir() if p.is_file() and
              p.read_text(errors="replace").startswith(("#!/usr/bin/python3",
                                                        "#!/usr/bin/env python3"))]
    return [p for p in files if "tests" not in p.relative_to(REPO).parts]


# struct in production Python, each for something that is not an ELF file, a
# note or a kernel structure libfgk reads: file -> why
STRUCT_ALLOWED = {
    "fgk-gdb/fgkgdb/core.py": "x86 IDT gate descriptors read over the gdbstub (CPU format)",
    "bench/fgkbench.py": "the bzImage setup header's init_size (boot protocol 2.10)",
}


def test_no_elf_reader_outside_libfgk():
    """libfgk is the only reader of ELF files, notes and kernel structures
    (issue 26): no pyelftools, no readelf output parsed, no struct
    unpacking outside the listed exceptions in production Python."""
    files = production_python()
    assert len(files) > 20 and REPO / "scripts" / "demo" in files
    bad = []
    for p in files:
        text = p.read_text()
        rel = str(p.relative_to(REPO))
        if re.search(r"^\s*(from|import)\s+elftools", text, re.M):
            bad.append(f"{rel}: imports pyelftools")
        if re.search(r"""["']readelf["']""", text):
            bad.append(f"{rel}: runs readelf")
        if re.search(r"^\s*import struct\b|struct\.unpack", text, re.M) and rel not in STRUCT_ALLOWED:
            bad.append(f"{rel}: unpacks bytes with struct")
    assert not bad, "\n".join(bad)
