"""Unit tests for fgk-gdb/fgkgdb/core.py (no gdb, no guest).

ELF fixtures are compiled with gcc at test time; expected values come from
readelf/nm, not from the code under test.  IDT gate vectors are written
out by hand from the Intel SDM gate layout (Vol. 3A, figure 6-8).
"""
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fgkgdb import core  # noqa: E402
from fgkgdb.core import FgkError  # noqa: E402

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


def readelf(*args):
    return subprocess.run(["readelf", *args], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def fixture_elf(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("gcc not installed")
    d = tmp_path_factory.mktemp("elf")
    (d / "f.c").write_text(FIXTURE_C)
    out = d / "f.elf"
    subprocess.run(["gcc", "-O1", "-ffunction-sections", "-fdata-sections", "-nostdlib",
                    "-static", "-fno-pie", "-no-pie", "-Wl,--build-id=sha1",
                    "-o", str(out), str(d / "f.c")], check=True)
    return out


@pytest.fixture(scope="module")
def fixture_obj(tmp_path_factory):
    """A relocatable object: keeps its .text.* sections separate."""
    if not shutil.which("gcc"):
        pytest.skip("gcc not installed")
    d = tmp_path_factory.mktemp("obj")
    (d / "f.c").write_text(FIXTURE_C)
    out = d / "f.o"
    subprocess.run(["gcc", "-O1", "-ffunction-sections", "-c", "-o", str(out),
                    str(d / "f.c")], check=True)
    return out


def nm_symbols(path):
    out = subprocess.run(["nm", "-S", str(path)], capture_output=True, text=True,
                         check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4:
            syms[f[3]] = (int(f[0], 16), int(f[1], 16))
    return syms


# --------------------------------------------------------------------------
# ELF reader

def test_elf_sections_match_readelf(fixture_elf):
    e = core.Elf(fixture_elf)
    ref = {}
    for line in readelf("-SW", str(fixture_elf)).splitlines():
        m = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)",
                     line)
        if m and m.group(2) != "NULL":
            ref[m.group(2)] = (int(m.group(1)), int(m.group(4), 16), int(m.group(5), 16),
                               int(m.group(6), 16))
    assert ref
    for name, (idx, addr, off, size) in ref.items():
        s = e.section(name)
        assert s is not None, name
        assert (s.index, s.addr, s.offset, s.size) == (idx, addr, off, size), name


def test_elf_symbols_match_nm(fixture_elf):
    e = core.Elf(fixture_elf)
    ref = nm_symbols(fixture_elf)
    names = ["linux_banner", "alpha", "beta", "asm_exc_divide_error", "counter",
             "fgkaslr_boot_info"]
    got = e.symbols(names + ["no_such_symbol"])
    assert "no_such_symbol" not in got
    for n in names:
        assert (got[n].value, got[n].size) == ref[n], n
    # lookups are cached and stable
    assert e.symbol("alpha").value == ref["alpha"][0]


def test_elf_read_addr_and_build_id(fixture_elf):
    e = core.Elf(fixture_elf)
    b = e.symbol("linux_banner")
    assert e.read_addr(b.value, b.size) == b"Linux version 6.1.0-fgk-test (fixture)\n\0"
    m = re.search(r"Build ID: ([0-9a-f]+)", readelf("-n", str(fixture_elf)))
    assert e.build_id() == m.group(1)
    bi = e.symbol("fgkaslr_boot_info")
    info = core.decode_boot_info(e.read_addr(bi.value, 88))
    assert info.valid and info.shuffled and info.seed == "00" * 32
    with pytest.raises(FgkError, match="no section holds"):
        e.read_addr(0x10, 4)


def test_elf_randomized_sections(fixture_obj, fixture_elf):
    # in a relocatable object the .text.* sections have SHF_ALLOC|EXECINSTR
    o = core.Elf(fixture_obj)
    names = sorted(s.name for s in o.randomized_sections())
    assert ".text.alpha" in names and ".text.beta" in names
    assert o.is_fgkaslr()
    # the linked executable merged them into .text: nothing to shuffle
    assert not core.Elf(fixture_elf).is_fgkaslr()


def test_elf_errors(tmp_path):
    with pytest.raises(FgkError, match="cannot open"):
        core.Elf(tmp_path / "missing")
    (tmp_path / "t").write_text("hello, not an ELF file" * 4)
    with pytest.raises(FgkError, match="not an ELF"):
        core.Elf(tmp_path / "t")
    (tmp_path / "e32").write_bytes(b"\x7fELF\x01\x01" + b"\0" * 60)
    with pytest.raises(FgkError, match="64-bit little-endian"):
        core.Elf(tmp_path / "e32")


def test_elf_extended_section_numbering(tmp_path):
    """An object with more than 0xff00 sections (e_shnum = 0, the count in
    section 0's sh_size; e_shstrndx = SHN_XINDEX) as vmlinux has."""
    if not shutil.which("gcc"):
        pytest.skip("gcc not installed")
    n = 65300
    src = "".join(f'.section .text.f{i},"ax",@progbits\nf{i}: ret\n' for i in range(n))
    (tmp_path / "big.s").write_text(src)
    obj = tmp_path / "big.o"
    subprocess.run(["gcc", "-c", "-o", str(obj), str(tmp_path / "big.s")], check=True)
    hdr = obj.read_bytes()[:64]
    shnum, shstrndx = struct.unpack_from("<HH", hdr, 0x3C)
    assert shnum == 0 and shstrndx == 0xFFFF           # really extended
    e = core.Elf(obj)
    assert e.section(".text.f65299") is not None
    assert len(e.randomized_sections()) == n
    sec = e.section(".text.f12345")
    assert e.section_data(sec)[:1] != b""


# --------------------------------------------------------------------------
# IDT gate decoding (Intel SDM Vol. 3A, 6.14.1, figure 6-8):
#   bytes 0-1  offset 15..0      bytes 2-3  segment selector
#   byte  4    IST (bits 2..0)   byte  5    type (3..0), DPL (6..5), P (7)
#   bytes 6-7  offset 31..16     bytes 8-11 offset 63..32   12-15 reserved

GATE_VECTORS = [
    # handler ffffffff81a00a30, selector 0x10 (__KERNEL_CS), P=1 DPL0 type E
    (bytes([0x30, 0x0a, 0x10, 0x00, 0x00, 0x8e, 0xa0, 0x81,
            0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]), 0xffffffff81a00a30, True),
    # handler ffffffffa3400a30 (offset 0x21a00000 applied), IST 0, trap gate F
    (bytes([0x30, 0x0a, 0x10, 0x00, 0x00, 0x8f, 0x40, 0xa3,
            0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]), 0xffffffffa3400a30, True),
    # every offset byte distinct: 0x8877665544332211
    (bytes([0x11, 0x22, 0xee, 0xee, 0x03, 0x8e, 0x33, 0x44,
            0x55, 0x66, 0x77, 0x88, 0xde, 0xad, 0xbe, 0xef]), 0x8877665544332211, True),
    # not present (byte 5 bit 7 clear)
    (bytes([0x00] * 16), 0, False),
]


@pytest.mark.parametrize("gate,handler,present", GATE_VECTORS)
def test_decode_idt_gate(gate, handler, present):
    assert core.decode_idt_gate(gate) == handler
    assert core.gate_present(gate) is present


def test_decode_idt_gate_short():
    with pytest.raises(FgkError):
        core.decode_idt_gate(b"\0" * 8)


def test_kernel_offset_from_idt():
    link = 0xffffffff81a00a30
    assert core.kernel_offset_from_idt(0xffffffff81a00a30, link) == 0
    assert core.kernel_offset_from_idt(0xffffffffa3400a30, link) == 0x21a00000
    with pytest.raises(FgkError, match="not a multiple"):
        core.kernel_offset_from_idt(0xffffffff81a00a40, link)


MONITOR_OUTPUT = """\
RAX=0000000000000000 RBX=0000000000000000 RCX=0000000000000001 RDX=0000000000013c3e
RSI=0000000000000083 RDI=0000000000013c3c RBP=ffffffff92c03e48 RSP=ffffffff92c03e28
R8 =0000000000000000 R9 =0000000000000001 R10=0000000000000000 R11=0000000000000000
R12=0000000000000000 R13=0000000000000000 R14=0000000000000000 R15=0000000000000000
RIP=ffffffff9302409e RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=1
ES =0000 0000000000000000 ffffffff 00c00000
CS =0010 0000000000000000 ffffffff 00a09b00 DPL=0 CS64 [-RA]
SS =0018 0000000000000000 ffffffff 00c09300 DPL=0 DS   [-WA]
DS =0000 0000000000000000 ffffffff 00c00000
FS =0000 0000000000000000 ffffffff 00c00000
GS =0000 ffff88801f200000 ffffffff 00c00000
LDT=0000 0000000000000000 00000000 00008200 DPL=0 LDT
TR =0040 fffffe0000003000 00004087 00008900 DPL=0 TSS64-avl
GDT=     fffffe0000001000 0000007f
IDT=     fffffe0000000000 00000fff
CR0=80050033 CR2=0000000000000000 CR3=000000000340a000 CR4=000006f0
DR0=0000000000000000 DR1=0000000000000000 DR2=0000000000000000 DR3=0000000000000000
DR6=00000000ffff0ff0 DR7=0000000000000400
EFER=0000000000000d01
"""

MONITOR_RESET = """\
EAX=00000000 EBX=00000000 ECX=00000000 EDX=00000663
ESI=00000000 EDI=00000000 EBP=00000000 ESP=00000000
EIP=0000fff0 EFL=00000002 [-------] CPL=0 II=0 A20=1 SMM=0 HLT=0
ES =0000 00000000 0000ffff 00009300
CS =f000 ffff0000 0000ffff 00009b00
GDT=     00000000 0000ffff
IDT=     00000000 0000ffff
CR0=60000010 CR2=00000000 CR3=00000000 CR4=00000000
EFER=0000000000000000
"""


def test_parse_monitor_registers():
    r = core.parse_monitor_registers(MONITOR_OUTPUT)
    assert r["IDT"] == (0xfffffe0000000000, 0xfff)
    assert r["GDT"] == (0xfffffe0000001000, 0x7f)
    assert r["RIP"] == 0xffffffff9302409e
    assert r["CR0"] == 0x80050033
    assert r["CR3"] == 0x340a000
    assert r["R8"] == 0
    assert "CS" not in r and "TR" not in r
    assert r["IDT"][0] >= core.KERNEL_HALF


def test_parse_monitor_registers_reset_and_garbage():
    r = core.parse_monitor_registers(MONITOR_RESET)
    assert r["IDT"] == (0, 0xffff) and r["EIP"] == 0xfff0
    assert r["IDT"][0] < core.KERNEL_HALF
    with pytest.raises(FgkError, match="IDT="):
        core.parse_monitor_registers("unknown command: 'info regs'\n")


# --------------------------------------------------------------------------
# seeds, offsets, boot info

SEED = bytes(range(32)).hex()


@pytest.mark.parametrize("text", [
    SEED, SEED.upper(), f"fgkaslr_seed={SEED}", f"{SEED}\n", f"  {SEED}  ", f"0x{SEED}"])
def test_parse_seed_ok(text):
    assert core.parse_seed(text) == SEED


@pytest.mark.parametrize("text", ["", "12", SEED[:-1], SEED + "0", SEED[:-1] + "g",
                                  f"fgkaslr_seed={SEED} x"])
def test_parse_seed_bad(text):
    with pytest.raises(FgkError, match="64 hex digits"):
        core.parse_seed(text)


def test_parse_seed_disabled():
    with pytest.raises(FgkError, match="disabled"):
        core.parse_seed("disabled\n")


def test_seed_record(tmp_path):
    p = tmp_path / "r.seed"
    p.write_text(f"# a record\nseed: {SEED.upper()}\nbuild-id: ABCD\n"
                 "release: 6.1.192\noffset: 0x1e000000\nnote: x\n")
    rec = core.read_seed_record(p)
    assert rec["seed"] == SEED and rec["build-id"] == "abcd"
    assert rec["offset"] == 0x1e000000
    p.write_text(f"seed: {SEED}\nsede: x\n")
    with pytest.raises(FgkError, match="unknown key 'sede'"):
        core.read_seed_record(p)
    p.write_text(f"seed: {SEED}\nseed: {SEED}\n")
    with pytest.raises(FgkError, match="duplicate"):
        core.read_seed_record(p)
    p.write_text("build-id: abcd\n")
    with pytest.raises(FgkError, match="no 'seed:'"):
        core.read_seed_record(p)
    with pytest.raises(FgkError, match="seed unreadable"):
        core.read_seed_record(tmp_path / "missing")


def test_parse_offset():
    assert core.parse_offset("0") == 0
    assert core.parse_offset("0x12000000") == 0x12000000
    assert core.parse_offset("0X200000") == 0x200000
    with pytest.raises(FgkError, match="not a multiple"):
        core.parse_offset("0x1000")
    with pytest.raises(FgkError, match="bad offset"):
        core.parse_offset("zz")


def test_decode_boot_info():
    # struct fgkaslr_boot_info: u32 magic, flags, nr_sections, heap_used;
    # u64 heap_size, cycles, text_start, text_end, text_used; u8 seed[32]
    raw = (b"\x21\x46\x47\x4b" + b"\x03\x00\x00\x00" + (13600).to_bytes(4, "little")
           + b"\0" * 4 + b"\0" * 16
           + (0xffffffff81200000).to_bytes(8, "little")
           + (0xffffffff81e00000).to_bytes(8, "little")
           + (0xffffffff81d00000).to_bytes(8, "little") + bytes(range(32)))
    assert len(raw) == 88 == core.BOOT_INFO_SIZE
    bi = core.decode_boot_info(raw)
    assert bi.valid and bi.shuffled and bi.magic == 0x4B474621
    assert bi.nr_sections == 13600 and bi.seed == SEED
    assert bi.text_start == 0xffffffff81200000 and bi.text_end == 0xffffffff81e00000
    assert "seed given" in bi.flag_names()
    off = core.decode_boot_info(b"\0" * 88)
    assert not off.valid and not off.shuffled
    with pytest.raises(FgkError):
        core.decode_boot_info(b"\0" * 10)


def test_boot_info_layout_matches_kernel_header():
    """The struct in the kernel series' header has the fields we decode."""
    repo = HERE.parent.parent
    cands = [p for p in (repo / "build" / "kernel" / "build" / "include/linux/fgkaslr.h",
                         repo / "build" / "linux-source-6.1" / "include/linux/fgkaslr.h")
             if p.is_file()]
    if not cands:
        pytest.skip("no patched kernel tree with include/linux/fgkaslr.h")
    text = cands[0].read_text()
    m = re.search(r"struct fgkaslr_boot_info \{(.*?)\};", text, re.S)
    if not m:
        pytest.skip("include/linux/fgkaslr.h has no struct fgkaslr_boot_info")
    fields = re.findall(r"^\s*(u8|u32|u64)\s+(\w+)(\[\w+\])?;", m.group(1), re.M)
    sizes = {"u8": 1, "u32": 4, "u64": 8}
    total = sum(sizes[t] * (32 if arr else 1) for t, _, arr in fields)
    assert [f[1] for f in fields][:2] == ["magic", "flags"]
    assert fields[-1][1] == "seed"
    assert total == core.BOOT_INFO_SIZE


# --------------------------------------------------------------------------
# fgk CLI discovery and running

def test_find_fgk(tmp_path):
    exe = tmp_path / "fgk"
    exe.write_text("#!/bin/sh\necho hi\n")
    exe.chmod(0o755)
    ext = tmp_path / "repo" / "fgk-gdb"
    ext.mkdir(parents=True)
    nowhere = lambda name: None  # noqa: E731
    assert core.find_fgk(ext, {"FGK": str(exe)}, nowhere) == str(exe)
    with pytest.raises(FgkError, match="make tools"):
        core.find_fgk(ext, {}, nowhere)
    with pytest.raises(FgkError, match=r"\$FGK=/nope"):
        core.find_fgk(ext, {"FGK": "/nope"}, nowhere)
    built = tmp_path / "repo" / "build" / "bin"
    built.mkdir(parents=True)
    (built / "fgk").write_text("#!/bin/sh\n")
    (built / "fgk").chmod(0o755)
    assert core.find_fgk(ext, {}, nowhere) == str(built / "fgk")
    (built / "fgk").unlink()
    assert core.find_fgk(ext, {}, lambda n: "/usr/bin/fgk") == "/usr/bin/fgk"


def test_run_fgk(tmp_path):
    exe = tmp_path / "fgk"
    exe.write_text("#!/bin/sh\nif [ \"$1\" = ok ]; then echo \"out $2\"; exit 0; fi\n"
                   "echo 'fgk: vmlinux: something is wrong' >&2; exit 1\n")
    exe.chmod(0o755)
    assert core.run_fgk(str(exe), "ok", "x") == "out x\n"
    with pytest.raises(FgkError, match="something is wrong"):
        core.run_fgk(str(exe), "bad")
    with pytest.raises(FgkError, match="make tools"):
        core.run_fgk(str(tmp_path / "missing"), "ok")


# --------------------------------------------------------------------------
# verification

def _sec(i, link, new, size=0x40):
    return {"index": i, "name": f".text.f{i}", "link": f"{link:#018x}",
            "new": f"{new:#018x}", "size": f"{size:#x}", "align": 16}


def test_pick_sections():
    secs = [_sec(i, 0x1000 + i * 0x40, 0x9000 - i * 0x40) for i in range(100)]
    secs.append(_sec(200, 0x5000, 0x5000))            # did not move
    secs.append(_sec(201, 0x6000, 0x7000, size=4))    # too small
    picked = core.pick_sections(secs, 32)
    assert len(picked) == 32
    assert len({p["name"] for p in picked}) == 32
    assert all(p["index"] < 100 for p in picked)
    assert picked[0]["index"] == 0 and picked[-1]["index"] > 90
    assert len(core.pick_sections(secs[:5], 32)) == 5


def test_match_bytes():
    good = [("a", b"\x55" * 32, b"\x55" * 30 + b"\x90\x90"),
            ("b", b"\x01\x02\x03\x04", b"\x01\x02\x03\x04")]
    r = core.match_bytes(good)
    assert (r.equal, r.total) == (34, 36) and r.ok()
    bad = [("a", bytes(range(32)), bytes(range(1, 33))),
           ("b", b"\xcc" * 32, None)]
    r = core.match_bytes(bad)
    assert r.equal == 0 and not r.ok()
    edge = [("a", b"\x00" * 100, b"\x00" * 75 + b"\x01" * 25)]
    assert core.match_bytes(edge).ok()
    edge = [("a", b"\x00" * 100, b"\x00" * 74 + b"\x01" * 26)]
    assert not core.match_bytes(edge).ok()
    assert not core.match_bytes([]).ok()


# --------------------------------------------------------------------------
# modules

def test_module_name_variants():
    assert core.module_name_variants("fgk_test") == ["fgk_test.ko", "fgk-test.ko"]
    assert core.module_name_variants("abc") == ["abc.ko"]


def test_find_module_files(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "fgk-test.ko").write_bytes(b"")
    (tmp_path / "a" / "other.ko").write_bytes(b"")
    (tmp_path / "a" / "notmod.o").write_bytes(b"")
    found = core.find_module_files([tmp_path / "missing", tmp_path])
    assert found == {"fgk_test": str(tmp_path / "a" / "b" / "fgk-test.ko"),
                     "other": str(tmp_path / "a" / "other.ko")}


def test_add_symbol_file_command():
    cmd = core.add_symbol_file_command("/m/fgk_test.ko", {
        ".text": 0xffffffffc0000000, ".text.f2": 0xffffffffc0000040,
        ".text.f1": 0xffffffffc0000010, ".data": 0xffffffffc0002000,
        ".note.gnu.build-id": 0, ".gnu.linkonce.this_module": 0xffffffffc0003000})
    assert cmd == ("add-symbol-file /m/fgk_test.ko 0xffffffffc0000000"
                   " -s .data 0xffffffffc0002000"
                   " -s .gnu.linkonce.this_module 0xffffffffc0003000"
                   " -s .text.f1 0xffffffffc0000010"
                   " -s .text.f2 0xffffffffc0000040")
    # no .text (every function in its own section): all with -s
    cmd = core.add_symbol_file_command("/m/x y.ko", {".text.a": 0x10})
    assert cmd == 'add-symbol-file "/m/x y.ko" -s .text.a 0x10'


# --------------------------------------------------------------------------
# address translation

def test_address_map():
    # three sections: A 0x1000+0x40 -> 0x1100, B 0x1040+0x20 -> 0x1000,
    # C 0x1060+0x10 -> 0x1060 (did not move); region [0x1000, 0x1140)
    secs = [_sec(0, 0x1000, 0x1100, 0x40), _sec(1, 0x1040, 0x1000, 0x20),
            _sec(2, 0x1060, 0x1060, 0x10)]
    m = core.AddressMap(secs, offset=0x200000)
    assert m.runtime(0x1000) == 0x201100
    assert m.runtime(0x103f) == 0x20113f
    assert m.runtime(0x1045) == 0x201005
    assert m.runtime(0x1065) == 0x201065
    assert m.runtime(0x5000) == 0x205000          # outside: only the offset
    assert m.link(0x201100) == 0x1000
    assert m.link(0x20113f) == 0x103f
    assert m.link(0x201005) == 0x1045
    assert m.link(0x205000) == 0x5000
    with pytest.raises(FgkError, match="padding"):
        m.link(0x201020)                            # new [0x1020, 0x1060) is a hole
    for a in range(0x1000, 0x1070):
        assert m.link(m.runtime(a)) == a
    assert core.AddressMap([], 0x400000).runtime(0x10) == 0x400010
