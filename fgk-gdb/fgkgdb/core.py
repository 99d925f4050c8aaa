"""fgk-gdb core: everything that does not need gdb.

This module never imports gdb, so it can be unit-tested with pytest
(fgk-gdb/tests/test_core.py).  It holds:

  * the x86_64 IDT gate decoder and the parser of QEMU's
    ``monitor info registers``;
  * where the seed and the offset of ``fgk attach`` come from (--seed,
    --seed-file, --offset), through libfgk's parsers;
  * the decoder of the kernel's ``struct fgkaslr_boot_info``;
  * the code-match verification of a seed;
  * the ``add-symbol-file`` arguments for a module;
  * the search of guest memory for the kernel's build-id note (no vmlinux
    at hand: the build-id names the one to fetch from debuginfod) and the
    decoding of a module's notes.

ELF files, seeds, seed records and the layout are libfgk's: this package
calls them through the ``libfgk`` binding (``<repo>/python``), never parses
them itself.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

try:
    import libfgk
    from libfgk import FgkError
except ImportError:                     # fgk-gdb copied away from its repository
    libfgk = None

    class FgkError(Exception):
        """A problem the user can fix (libfgk.FgkError when libfgk is there)."""


def need_libfgk():
    """The libfgk binding, or FgkError saying where it should be."""
    if libfgk is None:
        here = Path(__file__).resolve().parent.parent.parent / "python"
        raise FgkError(f"the libfgk Python binding is missing (no {here}/libfgk): use "
                       "fgk-gdb/fgk.py of the fgk repository and run 'make tools' there")
    return libfgk


# --------------------------------------------------------------------------
# x86_64 IDT and QEMU's monitor

def decode_idt_gate(gate: bytes) -> int:
    """Handler address of a 16-byte x86_64 interrupt/trap gate (Intel SDM
    Vol. 3A, figure 6-8 "64-Bit IDT Gate Descriptors"): offset 15..0 in
    bytes 0-1, 31..16 in bytes 6-7, 63..32 in bytes 8-11."""
    if len(gate) < 16:
        raise FgkError(f"IDT gate: need 16 bytes, got {len(gate)}")
    lo, = struct.unpack_from("<H", gate, 0)
    mid, = struct.unpack_from("<H", gate, 6)
    hi, = struct.unpack_from("<I", gate, 8)
    return lo | mid << 16 | hi << 32


def gate_present(gate: bytes) -> bool:
    """P bit (bit 47 of the first quadword: bit 7 of byte 5)."""
    return bool(gate[5] & 0x80)


_REG_RE = re.compile(r"\b([A-Z][A-Z0-9]*)\s*=\s*([0-9a-fA-F]+)(?:\s+([0-9a-fA-F]+))?")


def parse_monitor_registers(text: str) -> dict:
    """Parse QEMU's ``info registers`` (x86): {'RIP': int, 'IDT': (base,
    limit), 'GDT': (base, limit), 'CR0': int, 'CR3': int, ...}.

    Only the first CPU block is read (QEMU prints the monitor's current CPU).
    """
    regs: dict = {}
    for line in text.splitlines():
        m = re.match(r"\s*(IDT|GDT)\s*=\s*([0-9a-fA-F]+)\s+([0-9a-fA-F]+)", line)
        if m:
            regs.setdefault(m.group(1), (int(m.group(2), 16), int(m.group(3), 16)))
            continue
        if re.match(r"\s*(ES|CS|SS|DS|FS|GS|LDT|TR)\s*=", line):
            continue                           # segment lines: selector base limit flags
        for m in _REG_RE.finditer(line):
            name = m.group(1)
            if name in regs:
                continue
            try:
                regs[name] = int(m.group(2), 16)
            except ValueError:
                pass
    if "IDT" not in regs:
        raise FgkError("'monitor info registers' printed no IDT= line "
                       "(is this QEMU's gdbstub on an x86_64 guest?)")
    return regs


KERNEL_HALF = 0xFFFF800000000000
KASLR_ALIGN = 0x200000          # CONFIG_PHYSICAL_ALIGN of x86_64 kernels


def kernel_offset_from_idt(handler: int, divide_error_link: int) -> int:
    """Base KASLR offset from gate 0's handler; checks the 2 MiB alignment."""
    off = (handler - divide_error_link) & 0xFFFFFFFFFFFFFFFF
    if off >= 1 << 63:
        off -= 1 << 64
    if off % KASLR_ALIGN:
        raise FgkError(f"IDT gate 0 points to {handler:#x}, {off:#x} from "
                       f"asm_exc_divide_error: not a multiple of {KASLR_ALIGN:#x} "
                       "(wrong vmlinux, or the guest has not set up its IDT yet); "
                       "pass --offset")
    return off


# --------------------------------------------------------------------------
# seeds (docs/layout-spec.md section 2, docs/seed-records.md): libfgk's


def parse_seed(text: str) -> str:
    """Seed text -> 64 lowercase hex digits (libfgk's fgk_seed_parse)."""
    return need_libfgk().parse_seed(text)


def seed_from_args(seed=None, seed_file=None, build_id=None):
    """(seed, seed source, offset or None, offset source or None) of ``fgk
    attach --seed SEED`` or ``--seed-file RECORD``; (None, None, None, None)
    without either.  A record for another build-id than `build_id` is
    refused."""
    lib = need_libfgk()
    if seed is not None:
        return lib.parse_seed(seed), "--seed", None, None
    if seed_file is None:
        return None, None, None, None
    rec = lib.read_seed_record(seed_file)
    if rec.build_id and build_id and rec.build_id != build_id:
        raise FgkError(f"seed record {seed_file} is for build-id {rec.build_id}, "
                       f"but the vmlinux has {build_id}: pass the matching vmlinux")
    src = f"seed record {seed_file}"
    return rec.seed, src, rec.offset, (src if rec.offset is not None else None)


def parse_offset(text: str) -> int:
    """--offset BASE -> int: hex (0x optional), a multiple of KASLR_ALIGN
    (libfgk's fgk_offset_parse, the CLI's --offset)."""
    return need_libfgk().parse_offset(text, KASLR_ALIGN)


# struct fgkaslr_boot_info (include/linux/fgkaslr.h): libfgk's
# fgk_boot_info_decode knows its versions (88 bytes up to the seed, then
# mcount_cycles, entropy_bits/src, phase_cycles and the sched domain appended)
BOOT_INFO_SIZE = 88                     # FGK_BOOT_INFO_SIZE_MIN: every version has it
BOOT_INFO_SIZE_MAX = 328                # FGK_BOOT_INFO_SIZE_MAX
FGKASLR_BOOT_MAGIC = 0x4B474621


BootInfo = libfgk.BootInfo if libfgk is not None else None


def boot_info_read_size(symbol_size: int | None) -> int:
    """Bytes of fgkaslr_boot_info to read: its symbol's size (so the fields
    this kernel's series version appends are decoded), at least the
    stable prefix, at most what libfgk knows."""
    return min(max(symbol_size or 0, BOOT_INFO_SIZE), BOOT_INFO_SIZE_MAX)


def decode_boot_info(data: bytes, origin: str | None = None):
    """libfgk.BootInfo of a copy of the kernel's fgkaslr_boot_info
    (fgk_boot_info_decode); FgkError when it is too short."""
    return need_libfgk().decode_boot_info(data, origin)


# --------------------------------------------------------------------------
# seed verification

def pick_sections(sections: list, count: int = 32, runs: int = 4) -> list:
    """Up to `count` sections that moved (new != link) and have code, in
    `runs` runs of neighbours in the new layout spread evenly over it, in
    new-address order; `sections` are libfgk.Section values
    (``Layout.sections``).  Neighbours in the new layout come from unrelated
    places of the link order, so each is as good a check of the seed as any
    other function, and a run is read from the guest at once (read_plan)."""
    moved = sorted((s for s in sections if s.size >= 8 and s.new_addr != s.addr),
                   key=lambda s: s.new_addr)
    if len(moved) <= count:
        return moved
    per = count // runs
    out = []
    for k in range(runs):
        start = min(int(k * len(moved) / runs), len(moved) - per)
        out += moved[start:start + per]
    return out


def read_plan(picks: list, nbytes: int = 32, max_span: int = 4096) -> list:
    """[(start, length, [picks])]: guest reads covering the first `nbytes`
    bytes of every pick (sorted by new address), neighbours merged into one
    read of at most `max_span` bytes."""
    plan = []
    for s in sorted(picks, key=lambda s: s.new_addr):
        end = s.new_addr + min(s.size, nbytes)
        if plan and end - plan[-1][0] <= max_span and s.new_addr >= plan[-1][0]:
            start, _, group = plan[-1]
            plan[-1] = (start, max(end - start, plan[-1][1]), group + [s])
        else:
            plan.append((s.new_addr, end - s.new_addr, [s]))
    return plan


@dataclass
class MatchResult:
    equal: int = 0
    total: int = 0
    per_section: list = field(default_factory=list)   # (name, equal, total)

    @property
    def ratio(self) -> float:
        return self.equal / self.total if self.total else 0.0

    def ok(self, threshold: float = 0.75) -> bool:
        return self.total > 0 and self.ratio >= threshold


ENDBR64 = bytes.fromhex("f30f1efa")


def patch_free_start(code: bytes) -> int:
    """Where to start comparing a function's code with the guest's: after
    its ftrace site.  With DYNAMIC_FTRACE every traced function starts with
    "call __fentry__" (after ENDBR64 under IBT), which ftrace turns into a
    5-byte nop at boot, so those bytes never match the file."""
    i = len(ENDBR64) if code[:len(ENDBR64)] == ENDBR64 else 0
    return i + 5 if code[i:i + 1] == b"\xe8" else 0


def match_bytes(pairs) -> MatchResult:
    """pairs: iterable of (name, expected bytes, actual bytes or None).
    None (unreadable) counts as all bytes different."""
    res = MatchResult()
    for name, want, have in pairs:
        n = len(want)
        eq = 0 if have is None else sum(1 for a, b in zip(want, have) if a == b)
        res.equal += eq
        res.total += n
        res.per_section.append((name, eq, n))
    return res


# --------------------------------------------------------------------------
# modules

def find_module_files(roots) -> dict:
    """{normalized name: path} of every *.ko under the existing `roots`
    (first wins): libfgk's fgk_module_each."""
    return libfgk.module_files([str(r) for r in roots if os.path.isdir(str(r))])


def add_symbol_file_command(ko: str, sections: dict) -> str:
    """``add-symbol-file KO [TEXTADDR] -s SECT ADDR...`` for every section
    with a non-zero address (sorted by name; .text positional)."""
    parts = ["add-symbol-file", quote(ko)]
    if sections.get(".text"):
        parts.append(f"{sections['.text']:#x}")
    for name in sorted(sections):
        addr = sections[name]
        if not addr or name == ".text":
            continue
        parts += ["-s", quote(name), f"{addr:#x}"]
    return " ".join(parts)


def quote(s: str) -> str:
    """Quote a word for gdb's command line when needed."""
    if re.fullmatch(r"[A-Za-z0-9_./+:@%-]+", s):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --------------------------------------------------------------------------
# build-id notes (ELF gABI note format; NT_GNU_BUILD_ID of GNU ld --build-id)

BUILD_ID_MIN, BUILD_ID_MAX = 8, 64          # descriptor sizes accepted (FGK_BUILD_ID_*)
NOTE_HEADER = 12                            # namesz, descsz, type (u32 each)
PAGE = 0x1000
EMBEDDED_LOOKBACK = 0x10000                 # FGK_NOTES_LOOKBACK
SCAN_LIMIT = 64 << 20                       # bytes scanned from the start at most


def build_id_from_notes(data: bytes | None) -> str | None:
    """libfgk's fgk_notes_build_id (lib/notes.c)."""
    return need_libfgk().build_id_from_notes(data)


def find_build_id_notes(data: bytes, base: int = 0) -> list:
    """Every complete GNU build-id note in `data` (memory at address
    `base`), [libfgk.BuildIdNote] in address order, `embedded` marking the
    notes of ELF images the kernel carries as data (the vDSO): libfgk's
    fgk_notes_find_build_ids."""
    return need_libfgk().find_build_id_notes(data, base)


def _hole_end(read, addr: int, end: int):
    """First readable page after the unreadable page at `addr` (page
    aligned), before `end`, or None: probes 1, 2, 4, ... pages on, then
    bisects, so a hole of N pages costs about 2*log2(N) reads."""
    bad, step = addr, PAGE
    good = None
    while bad + step < end:
        if read(bad + step, 1):
            good = bad + step
            break
        bad += step
        step *= 2
    if good is None:
        return None
    while good - bad > PAGE:
        mid = (bad + (good - bad) // 2) & ~(PAGE - 1)
        if read(mid, 1):
            good = mid
        else:
            bad = mid
    return good


@dataclass
class BuildIdScan:
    note: object = None                             # libfgk.BuildIdNote
    skipped: list = field(default_factory=list)     # embedded notes passed over
    scanned: int = 0                                # readable bytes read
    holes: int = 0                                  # unreadable ranges skipped
    stop: int = 0                                   # where the scan ended


def scan_build_id(read, start: int, limit: int = SCAN_LIMIT, chunk: int = 1 << 20,
                  stop_at_first=True) -> BuildIdScan:
    """Scan memory forward from `start` (rounded down to its page) for the
    kernel's build-id note, at most `limit` bytes.  read(addr, size) returns
    the readable prefix of that range (b"" when addr itself is unreadable);
    unreadable ranges are skipped (_hole_end).  The first note that is not
    inside an embedded ELF image is the result (BuildIdScan.note, None if
    there was none in range)."""
    pos = start & ~(PAGE - 1)
    end = pos + limit
    res = BuildIdScan()
    buf, buf_base = b"", pos
    seen = set()
    while pos < end:
        want = min(chunk, end - pos)
        data = read(pos, want) or b""
        if data:
            if buf_base + len(buf) != pos:          # after a hole
                buf, buf_base = b"", pos
            buf += data
            res.scanned += len(data)
            for n in find_build_id_notes(buf, buf_base):
                if n.addr in seen:
                    continue
                seen.add(n.addr)
                if n.embedded:
                    res.skipped.append(n)
                    continue
                if res.note is None:
                    res.note = n
                if stop_at_first:
                    res.stop = pos + len(data)
                    return res
            # keep what the next chunk's notes may need: the look-back for
            # an ELF header and a note cut at the end of this chunk
            keep = EMBEDDED_LOOKBACK + PAGE + NOTE_HEADER + 4 + BUILD_ID_MAX
            if len(buf) > keep:
                cut = (len(buf) - keep) & ~(PAGE - 1)
                buf, buf_base = buf[cut:], buf_base + cut
            pos += len(data)
            if len(data) == want:
                continue
        # pos is unreadable
        res.holes += 1
        nxt = _hole_end(read, pos & ~(PAGE - 1), end)
        if nxt is None:
            break
        pos = nxt
    res.stop = min(pos, end)
    return res


def parse_build_id(text: str) -> str:
    """--build-id HEX -> lowercase hex (even length, 8 to 64 bytes):
    libfgk's fgk_build_id_parse."""
    return need_libfgk().parse_build_id(text)
