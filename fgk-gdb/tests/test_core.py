"""Unit tests for fgk-gdb/fgkgdb/core.py (no gdb, no guest).

IDT gate vectors are written out by hand from the Intel SDM gate layout
(Vol. 3A, figure 6-8).  ELF reading is libfgk's (python/tests/); seeds and
seed records are libfgk's too, and tests/test_seed_corpus.py feeds one
corpus to every entry point, fgk-gdb's included.  Imports as everywhere:
tests/pytest.ini puts python/, fgk-gdb/ and qemu-profiles/ on sys.path.
"""
import errno
import re
import struct
from pathlib import Path

import pytest

import libfgk
from fgkgdb import core
from fgkgdb.core import FgkError

HERE = Path(__file__).resolve().parent

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
    SEED, SEED.upper(), f"fgkaslr_seed={SEED}", f"{SEED}\n", f"  {SEED}  "])
def test_parse_seed_ok(text):
    assert core.parse_seed(text) == SEED


# a 0x prefix is refused: docs/layout-spec.md section 2 ("no 0x")
@pytest.mark.parametrize("text", ["", "12", SEED[:-1], SEED + "0", SEED[:-1] + "g",
                                  f"fgkaslr_seed={SEED} x", f"0x{SEED}"])
def test_parse_seed_bad(text):
    with pytest.raises(FgkError, match="want exactly 64"):
        core.parse_seed(text)


def test_parse_seed_disabled():
    with pytest.raises(FgkError, match="disabled"):
        core.parse_seed("disabled\n")


def test_seed_from_args(tmp_path):
    p = tmp_path / "r.seed"
    p.write_text(f"# a record\nseed: {SEED.upper()}\nbuild-id: ABCD\n"
                 "release: 6.1.192\noffset: 0x1e000000\nnote: x\n")
    assert core.seed_from_args(seed_file=p) == (
        SEED, f"seed record {p}", 0x1e000000, f"seed record {p}")
    assert core.seed_from_args(seed_file=p, build_id="abcd")[0] == SEED
    with pytest.raises(FgkError, match=f"seed record {p} is for build-id abcd, but "
                       "the vmlinux has 1234"):
        core.seed_from_args(seed_file=p, build_id="1234")
    assert core.seed_from_args(seed=f"fgkaslr_seed={SEED}") == (SEED, "--seed", None, None)
    assert core.seed_from_args() == (None, None, None, None)
    p.write_text(f"seed: {SEED}\nsede: x\n")
    with pytest.raises(FgkError, match="unknown key 'sede'"):
        core.seed_from_args(seed_file=p)
    p.write_text(f"seed: {SEED}\nseed: {SEED}\n")
    with pytest.raises(FgkError, match="duplicate"):
        core.seed_from_args(seed_file=p)
    p.write_text("build-id: abcd\n")
    with pytest.raises(FgkError, match="no 'seed:'"):
        core.seed_from_args(seed_file=p)
    # decimal offsets are refused (docs/seed-records.md)
    p.write_text(f"seed: {SEED}\noffset: 16777216\n")
    with pytest.raises(FgkError, match="offset must be 0x-prefixed hex"):
        core.seed_from_args(seed_file=p)
    with pytest.raises(FgkError) as e:
        core.seed_from_args(seed_file=tmp_path / "missing")
    assert e.value.path == str(tmp_path / "missing")
    assert (e.value.code, e.value.errnum) == (libfgk.ERR_OS, errno.ENOENT)


def test_errors_are_libfgk_errors():
    """One exception type: fgk-gdb's FgkError is the binding's."""
    assert FgkError is libfgk.FgkError


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


def _kernel_boot_info_fields(header: Path):
    """[(name, offset, size, count)] of struct fgkaslr_boot_info in a
    patched kernel's include/linux/fgkaslr.h (natural alignment, x86_64)."""
    text = header.read_text()
    m = re.search(r"struct fgkaslr_boot_info \{(.*?)\};", text, re.S)
    if not m:
        pytest.skip(f"{header} has no struct fgkaslr_boot_info")
    consts = {"FGKASLR_SEED_SIZE": 32}
    enum = re.search(r"enum fgkaslr_phase \{(.*?)\};", text, re.S)
    if enum:
        names = re.findall(r"^\s*(FGKASLR_\w+)", enum.group(1), re.M)
        consts.update({n: i for i, n in enumerate(names)})
    consts.update({n: int(v) for n, v in
                   re.findall(r"^#define\s+(FGKASLR_\w+)\s+(\d+)\s*$", text, re.M)})
    sizes = {"u8": 1, "u32": 4, "u64": 8}
    out, off = [], 0
    for t, name, arr in re.findall(r"^\s*(u8|u32|u64)\s+(\w+)(?:\[(\w+)\])?;",
                                   m.group(1), re.M):
        size = sizes[t]
        count = (consts[arr] if not arr.isdigit() else int(arr)) if arr else 1
        off = (off + size - 1) // size * size
        out.append((name, off, size, count))
        off += size * count
    return out


@pytest.mark.parametrize("kver", ["6.1", "6.12"])
def test_boot_info_decoder_matches_kernel_header(kver):
    """libfgk's decoder reads every field of the struct in the kernel
    series' header at the header's offset: a buffer with a distinct value
    in each field, laid out from the header, decodes to those values."""
    repo = HERE.parent.parent
    kdir = "kernel" if kver == "6.1" else "kernel-6.12"
    header = repo / "build" / kdir / "build" / "include/linux/fgkaslr.h"
    if not header.is_file():
        pytest.skip(f"no patched {kver} kernel tree ({header} missing: make kernel)")
    fields = _kernel_boot_info_fields(header)
    assert [f[0] for f in fields][:2] == ["magic", "flags"]
    end = fields[-1][1] + fields[-1][2] * fields[-1][3]
    assert end == core.BOOT_INFO_SIZE_MAX, \
        f"{header}: struct is {end} bytes, libfgk knows {core.BOOT_INFO_SIZE_MAX}"
    raw = bytearray(end)
    want = {}
    for k, (name, off, size, count) in enumerate(fields):
        vals = [(0x11 * (k + 1) + i) % (1 << (8 * size)) for i in range(count)]
        for i, v in enumerate(vals):
            raw[off + i * size:off + (i + 1) * size] = v.to_bytes(size, "little")
        want[name] = vals
    bi = core.decode_boot_info(bytes(raw))
    assert bi.size == end
    for name, vals in want.items():
        if name.startswith("pad"):  # explicit padding, no field
            continue
        if name == "seed":
            assert bi.seed == bytes(vals).hex()
        elif name == "phase_cycles":
            assert list(bi.phase_cycles.values()) == vals
        elif name.startswith("dom_"):
            assert getattr(bi, name) == vals, name
        else:
            assert getattr(bi, name) == vals[0], name
    # each older version is a prefix: the fields it lacks are None
    seed_end = [f for f in fields if f[0] == "seed"][0][1] + 32
    assert seed_end == core.BOOT_INFO_SIZE
    old = core.decode_boot_info(bytes(raw[:seed_end]))
    assert old.size == seed_end and old.mcount_cycles is None and old.phase_cycles is None
    assert old.text_used == bi.text_used and old.seed == bi.seed


def test_boot_info_versions_and_hostile_sizes():
    raw = bytes(range(256)) * 2
    sizes = {n: core.decode_boot_info(raw[:n]).size for n in range(88, 400)}
    assert set(sizes.values()) == {88, 96, 104, 152, 184, 328}
    assert sizes[95] == 88 and sizes[96] == 96 and sizes[151] == 104 and sizes[183] == 152
    assert sizes[184] == 184 and sizes[327] == 184 and sizes[328] == 328 and sizes[399] == 328
    assert core.decode_boot_info(raw[:327]).dom_sections is None
    assert core.decode_boot_info(raw[:328]).dom_sections == \
        [int.from_bytes(raw[184 + 4 * i:188 + 4 * i], "little") for i in range(5)]
    for n in (0, 1, 87):
        with pytest.raises(FgkError, match="need at least 88 bytes, got %d" % n) as e:
            core.decode_boot_info(raw[:n], "fgkaslr_boot_info at 0xffffffff82000000")
        assert str(e.value).startswith("fgkaslr_boot_info at 0xffffffff82000000: ")
        assert "\n" not in str(e.value)
    assert core.boot_info_read_size(None) == 88
    assert core.boot_info_read_size(152) == 152
    assert core.boot_info_read_size(4096) == 328
    assert "0x80000000" in core.decode_boot_info(b"\0\0\0\0\0\0\0\x80" + bytes(80)).flag_names()


# --------------------------------------------------------------------------
# verification

def _sec(i, link, new, size=0x40):
    return libfgk.Section(i, f".text.f{i}", link, size, 16, new)


def test_pick_sections():
    # link order 0..99; the new order reverses it: index i at 0x9000 - i*0x40
    secs = [_sec(i, 0x1000 + i * 0x40, 0x9000 - i * 0x40) for i in range(100)]
    secs.append(_sec(200, 0x5000, 0x5000))            # did not move
    secs.append(_sec(201, 0x6000, 0x7000, size=4))    # too small
    picked = core.pick_sections(secs, 32)
    assert len(picked) == 32
    assert len({p.name for p in picked}) == 32
    assert all(p.index < 100 for p in picked)
    # 4 runs of 8 neighbours in new-address order, at quarter points
    news = [p.new_addr for p in picked]
    assert news == sorted(news)
    runs = [news[i:i + 8] for i in range(0, 32, 8)]
    assert all(r[-1] - r[0] == 7 * 0x40 for r in runs)
    assert [r[0] for r in runs] == [0x9000 - i * 0x40 for i in (99, 74, 49, 24)]
    assert len(core.pick_sections(secs[:5], 32)) == 5


def test_read_plan():
    secs = [_sec(0, 0x1000, 0x9000, 0x10), _sec(1, 0x2000, 0x9010, 0x100),
            _sec(2, 0x3000, 0x9110, 0x40), _sec(3, 0x4000, 0xa000, 0x40),
            _sec(4, 0x5000, 0x20000, 0x8)]
    plan = core.read_plan(secs, 32, max_span=0x1000)
    assert [(hex(a), hex(n), [s.index for s in g]) for a, n, g in plan] == [
        ("0x9000", "0x130", [0, 1, 2]),      # up to 0x9110 + 32
        ("0xa000", "0x20", [3]),             # 0xa020 - 0x9000 > 0x1000
        ("0x20000", "0x8", [4])]
    # every pick's first bytes lie inside its read
    for start, n, group in plan:
        for s in group:
            assert start <= s.new_addr and s.new_addr + min(s.size, 32) <= start + n


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

def test_module_name_eq_and_find(tmp_path):
    assert libfgk.module_name_eq("fgk_test", "fgk-test")
    assert not libfgk.module_name_eq("fgk_test", "fgk_tes")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "fgk-test.ko").write_bytes(b"")
    assert libfgk.find_module([tmp_path], "fgk_test") == str(tmp_path / "d" / "fgk-test.ko")
    with pytest.raises(libfgk.FgkLookupError):
        libfgk.find_module([tmp_path], "absent")


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


def test_patch_free_start_skips_the_ftrace_site():
    call = bytes.fromhex("e8 00 00 00 00")
    assert core.patch_free_start(call + b"\x55\x48") == 5
    assert core.patch_free_start(core.ENDBR64 + call + b"\x55") == 9
    assert core.patch_free_start(b"\x55\x48\x89\xe5" + call) == 0
    assert core.patch_free_start(core.ENDBR64 + b"\x55") == 0
    assert core.patch_free_start(b"") == 0


# --------------------------------------------------------------------------
# the kernel's build-id note in guest memory (fgk attach without a vmlinux)

BID = bytes(range(0xa0, 0xb4))                  # a 20-byte (SHA-1) build-id


def _note(name: bytes, ntype: int, desc: bytes) -> bytes:
    """One ELF note (gABI): namesz, descsz, type, name and desc padded to 4."""
    pad = lambda b: b + b"\0" * (-len(b) % 4)   # noqa: E731
    return struct.pack("<III", len(name), len(desc), ntype) + pad(name) + pad(desc)


def _elf64_image(size=0x2000) -> bytearray:
    """An ELF64 image like the vDSO the kernel carries in .rodata: header
    at offset 0, section headers at its end, a build-id note at 0x4f0."""
    img = bytearray(size)
    img[:8] = b"\x7fELF\x02\x01\x01\x00"
    struct.pack_into("<QQ", img, 0x20, 64, size - 0x280)       # e_phoff, e_shoff
    struct.pack_into("<HHHH", img, 0x36, 56, 4, 64, 10)        # phent, phnum, shent, shnum
    n = _note(b"GNU\0", 3, bytes(20 * [0x55]))
    img[0x4f0:0x4f0 + len(n)] = n
    return img


def test_build_id_from_notes():
    gnu = _note(b"GNU\0", 3, BID)
    linux = _note(b"Linux\0", 0x100, b"\0\0\0\0")
    assert core.build_id_from_notes(gnu) == BID.hex()
    assert core.build_id_from_notes(linux + gnu) == BID.hex()       # not the first note
    assert core.build_id_from_notes(linux) is None
    assert core.build_id_from_notes(_note(b"GNU\0", 1, BID)) is None     # ABI tag, not 3
    assert core.build_id_from_notes(_note(b"XEN\0", 3, BID)) is None
    assert core.build_id_from_notes(gnu[:-4]) is None                    # cut short
    assert core.build_id_from_notes(b"") is None
    assert core.build_id_from_notes(None) is None


def test_find_build_id_notes():
    base = 0xffffffff81bd0000
    mem = bytearray(b"\xcc" * 0x1000)
    note = _note(b"GNU\0", 3, BID)
    mem[0x0c8:0x0c8 + len(note)] = note         # aligned: found
    mem[0x202:0x202 + len(note)] = note         # not 4-byte aligned: no note there
    long = _note(b"GNU\0", 3, bytes(65))        # descsz 65: not a build-id
    mem[0x400:0x400 + len(long)] = long
    short = _note(b"GNU\0", 3, bytes(8))        # descsz 8: the smallest accepted
    mem[0x600:0x600 + len(short)] = short
    got = core.find_build_id_notes(bytes(mem), base)
    assert [(n.addr - base, n.build_id, n.embedded) for n in got] == [
        (0x0c8, BID.hex(), False), (0x600, "00" * 8, False)]
    # a note cut at the end of the data is not reported (the scan keeps a tail)
    assert core.find_build_id_notes(bytes(mem[:0x0c8 + len(note) - 1]), base) == []
    # alignment is in memory: at base + 2 only the note at 0x202 is aligned
    assert [n.addr - base - 2 for n in core.find_build_id_notes(bytes(mem), base + 2)] \
        == [0x202]


def test_find_build_id_notes_skips_embedded_elf_images():
    base = 0xffffffff81b9a000
    mem = bytearray(b"\0" * 0x1000) + _elf64_image() + bytearray(0x1000)
    kernel = 0x3000 + 0x0c8                     # after the image's extent
    n = _note(b"GNU\0", 3, BID)
    mem[kernel:kernel + len(n)] = n
    got = core.find_build_id_notes(bytes(mem), base)
    assert [(n.addr - base, n.embedded) for n in got] == [(0x14f0, True), (kernel, False)]
    # a 32-bit image (the compat vDSO) too
    img32 = bytearray(0x1000)
    img32[:8] = b"\x7fELF\x01\x01\x01\x00"
    struct.pack_into("<II", img32, 0x1c, 52, 0xe00)            # e_phoff, e_shoff
    struct.pack_into("<HHHH", img32, 0x2a, 32, 3, 40, 8)
    img32[0x200:0x200 + len(n)] = n
    assert [x.embedded for x in core.find_build_id_notes(bytes(img32), base)] == [True]
    # "\x7fELF" not on a page boundary is no image header
    mem2 = bytearray(0x1000)
    mem2[0x10:0x18] = b"\x7fELF\x02\x01\x01\x00"
    mem2[0x200:0x200 + len(n)] = n
    assert [x.embedded for x in core.find_build_id_notes(bytes(mem2), base)] == [False]


class FakeGuest:
    """Guest memory for scan_build_id: {address: bytes} regions, the rest
    unreadable; read() returns the readable prefix, as the gdb side does."""

    def __init__(self, regions):
        self.regions = regions
        self.reads = []

    def read(self, addr, size):
        self.reads.append((addr, size))
        for start, data in self.regions.items():
            if start <= addr < start + len(data):
                return bytes(data[addr - start:addr - start + size])
        return b""


def test_scan_build_id_finds_the_kernel_note_after_the_vdso():
    handler = 0xffffffffb0000990                # IDT gate 0 (asm_exc_divide_error)
    text = bytearray(b"\xcc" * 0x300000)
    n = _note(b"GNU\0", 3, BID)
    rodata = bytearray(0x200000)                # after a hole (text/rodata gap)
    rodata[0x100000:0x102000] = _elf64_image()                  # the vDSO
    at = 0x1e0000 - 12                          # the kernel's .notes, across the
    rodata[at:at + len(n)] = n                  # boundary of two chunks of 0x10000
    text_end = 0xffffffffb0000000 + len(text)
    rodata_start = 0xffffffffb0400000           # the gap: 1 MiB unreadable
    g = FakeGuest({0xffffffffb0000000: text, rodata_start: rodata})
    res = core.scan_build_id(g.read, handler, chunk=0x10000)
    assert res.note is not None and res.note.build_id == BID.hex()
    assert res.note.addr == rodata_start + at
    assert [s.addr for s in res.skipped] == [rodata_start + 0x1004f0]
    assert res.holes == 1
    # the hole was skipped with few probes, not page by page
    probes = [a for a, size in g.reads if size == 1]
    assert all(a >= text_end for a in probes)
    assert len(probes) <= 2 * 9, len(probes)
    assert (rodata_start, 0x10000) in g.reads            # resumed where the hole ends
    # the same with one big chunk
    res = core.scan_build_id(FakeGuest(g.regions).read, handler, chunk=16 << 20)
    assert res.note.addr == rodata_start + at


def test_scan_build_id_not_found_and_bounded():
    handler = 0xffffffff81200990
    g = FakeGuest({0xffffffff81200000: bytes(0x300000)})
    res = core.scan_build_id(g.read, handler, limit=0x800000, chunk=0x100000)
    assert res.note is None and res.skipped == []
    assert res.scanned == 0x300000
    assert all(a < 0xffffffff81200000 + 0x800000 for a, _ in g.reads)
    # only vDSO notes: none is taken for the kernel's
    g = FakeGuest({0xffffffff81200000: bytes(0x1000) + _elf64_image()})
    res = core.scan_build_id(g.read, handler, limit=0x100000)
    assert res.note is None and len(res.skipped) == 1
    # nothing readable at all
    res = core.scan_build_id(FakeGuest({}).read, handler, limit=0x100000)
    assert res.note is None and res.scanned == 0


@pytest.mark.k612
def test_scan_build_id_on_the_kernel_image():
    """The built vmlinux's loaded image, from asm_exc_divide_error on, as it
    is in memory: its own build-id, past the vDSO's (the kernel under test:
    build/kernel, or $KVERSION's)."""
    from fgkbase import KERNEL_DIR, KERNEL_NAME
    vmlinux = KERNEL_DIR / "vmlinux"
    if not vmlinux.is_file():
        pytest.skip(f"{KERNEL_NAME}/vmlinux missing: run 'make kernel'")
    from elftools.elf.elffile import ELFFile
    with libfgk.Vmlinux(vmlinux) as vm:
        want = vm.build_id
        start = vm.symbol("asm_exc_divide_error")
        if start is None:
            pytest.skip("not an x86_64 vmlinux")
        start = start.addr
    regions = {}
    with open(vmlinux, "rb") as f:
        for seg in ELFFile(f).iter_segments():
            if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] + seg["p_memsz"] > start \
                    and seg["p_vaddr"] < start + core.SCAN_LIMIT:
                regions[seg["p_vaddr"]] = seg.data()
    res = core.scan_build_id(FakeGuest(regions).read, start)
    assert res.note is not None and res.note.build_id == want
    print(f"build-id note {res.note.addr - start:#x} after asm_exc_divide_error, "
          f"{len(res.skipped)} embedded note(s) skipped")


def test_parse_build_id():
    assert core.parse_build_id(" F5D0995713CD49C69176AF47371DB9BAFB70A620\n") == \
        "f5d0995713cd49c69176af47371db9bafb70a620"
    assert core.parse_build_id("0x0011223344556677") == "0011223344556677"
    for bad in ("", "abc", "00112233445566", "zz" * 10, "0" * 130, "0" * 41):
        with pytest.raises(FgkError, match="bad build-id"):
            core.parse_build_id(bad)
