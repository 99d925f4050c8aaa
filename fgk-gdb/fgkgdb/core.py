"""fgk-gdb core: everything that does not need gdb.

This module never imports gdb, so it can be unit-tested with pytest
(fgk-gdb/tests/test_core.py).  It holds:

  * a small ELF64 little-endian reader (section headers with SHN_XINDEX,
    a symbol lookup for a handful of names, section bytes, build-id note,
    bytes at a link address);
  * the x86_64 IDT gate decoder and the parser of QEMU's
    ``monitor info registers``;
  * seed parsing (64 hex digits, ``fgkaslr_seed=...``, seed records);
  * the decoder of the kernel's ``struct fgkaslr_boot_info``;
  * the runner of the ``fgk`` command line tool and where to find it;
  * the code-match verification of a seed;
  * the ``add-symbol-file`` arguments for a module.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path


class FgkError(Exception):
    """A problem the user can fix; the message says what to do."""


# --------------------------------------------------------------------------
# ELF64 reader

SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_NOTE = 7
SHT_NOBITS = 8
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHN_XINDEX = 0xFFFF
NT_GNU_BUILD_ID = 3


@dataclass
class Section:
    index: int
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    addralign: int
    entsize: int

    @property
    def randomized(self) -> bool:
        """Randomized per docs/layout-spec.md section 3."""
        return (self.type == SHT_PROGBITS
                and self.flags & (SHF_ALLOC | SHF_EXECINSTR) == (SHF_ALLOC | SHF_EXECINSTR)
                and self.name.startswith(".text.") and self.size > 0)


@dataclass
class Symbol:
    name: str
    value: int
    size: int
    shndx: int


class Elf:
    """Read-only view of a 64-bit little-endian ELF file (e.g. vmlinux).

    Only what fgk-gdb needs: sections, a few symbols, bytes.  The file is
    read lazily with seek/read, never mapped whole.
    """

    def __init__(self, path):
        self.path = str(path)
        try:
            self._f = open(self.path, "rb")
        except OSError as e:
            raise FgkError(f"cannot open {self.path}: {e.strerror}") from None
        ehdr = self._f.read(64)
        if len(ehdr) < 64 or ehdr[:4] != b"\x7fELF":
            raise FgkError(f"{self.path}: not an ELF file")
        if ehdr[4] != 2 or ehdr[5] != 1:
            raise FgkError(f"{self.path}: not a 64-bit little-endian ELF file")
        self.type, self.machine = struct.unpack_from("<HH", ehdr, 16)
        shoff, = struct.unpack_from("<Q", ehdr, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ehdr, 0x3A)
        self.sections: list[Section] = []
        if shoff == 0:
            self._by_name = {}
            return
        if shentsize < 64:
            raise FgkError(f"{self.path}: bad section header size {shentsize}")
        self._f.seek(shoff)
        first = self._f.read(shentsize)
        if shnum == 0:                          # extended numbering
            shnum, = struct.unpack_from("<Q", first, 0x20)
        if shstrndx == SHN_XINDEX:
            shstrndx, = struct.unpack_from("<I", first, 0x28)
        self._f.seek(shoff)
        raw = self._f.read(shentsize * shnum)
        if len(raw) < shentsize * shnum:
            raise FgkError(f"{self.path}: truncated section header table")
        hdrs = [struct.unpack_from("<IIQQQQIIQQ", raw, i * shentsize) for i in range(shnum)]
        names = self._read(hdrs[shstrndx][4], hdrs[shstrndx][5]) if shstrndx < shnum else b""
        for i, h in enumerate(hdrs):
            end = names.find(b"\0", h[0])
            name = names[h[0]:end if end >= 0 else len(names)].decode("utf-8", "replace")
            self.sections.append(Section(i, name, h[1], h[2], h[3], h[4], h[5], h[6], h[7],
                                         h[8], h[9]))
        self._by_name = {}
        for s in self.sections:
            self._by_name.setdefault(s.name, s)
        self._symcache: dict[str, Symbol | None] = {}
        self._symtab_done = False

    def close(self):
        self._f.close()

    def _read(self, offset: int, size: int) -> bytes:
        self._f.seek(offset)
        return self._f.read(size)

    def section(self, name: str) -> Section | None:
        return self._by_name.get(name)

    def section_data(self, sec: Section) -> bytes:
        if sec.type == SHT_NOBITS:
            return b"\0" * sec.size
        return self._read(sec.offset, sec.size)

    def randomized_sections(self) -> list[Section]:
        return [s for s in self.sections if s.randomized]

    def is_fgkaslr(self) -> bool:
        """True if the file has at least one randomized .text.* section."""
        return any(s.randomized for s in self.sections)

    def section_at(self, addr: int) -> Section | None:
        """The allocated PROGBITS section that holds link address `addr`."""
        best = None
        for s in self.sections:
            if (s.flags & SHF_ALLOC and s.type == SHT_PROGBITS
                    and s.addr <= addr < s.addr + s.size):
                if best is None or s.size < best.size:
                    best = s
        return best

    def read_addr(self, addr: int, size: int) -> bytes:
        """`size` bytes of the file's image at link address `addr` (one section)."""
        s = self.section_at(addr)
        if s is None:
            raise FgkError(f"{self.path}: no section holds address {addr:#x}")
        size = min(size, s.addr + s.size - addr)
        return self._read(s.offset + addr - s.addr, size)

    # -- symbols -------------------------------------------------------
    def symbols(self, names) -> dict[str, Symbol]:
        """Look up `names` in .symtab (first defined, non-section symbol wins)."""
        want = {n for n in names if n not in self._symcache}
        if want:
            found = self._scan_symtab(want)
            for n in want:
                self._symcache[n] = found.get(n)
        return {n: self._symcache[n] for n in names if self._symcache.get(n)}

    def symbol(self, name: str) -> Symbol | None:
        return self.symbols([name]).get(name)

    def _scan_symtab(self, want: set) -> dict:
        symtab = next((s for s in self.sections if s.type == SHT_SYMTAB), None)
        if symtab is None:
            return {}
        strtab = self.sections[symtab.link]
        strs = self._read(strtab.offset, strtab.size)
        # find the string offsets of the wanted names first: one pass over
        # the string table instead of decoding every symbol's name
        offsets = {}
        for n in want:
            key = n.encode() + b"\0"
            pos = strs.find(b"\0" + key)
            while pos >= 0:
                offsets.setdefault(pos + 1, n)
                pos = strs.find(b"\0" + key, pos + 1)
            if strs.startswith(key):
                offsets.setdefault(0, n)
        # names may also be suffixes of longer strings (string merging)
        if not offsets:
            return {}
        data = self._read(symtab.offset, symtab.size)
        out: dict[str, Symbol] = {}
        ent = symtab.entsize or 24
        for off in range(0, len(data) - ent + 1, ent):
            st_name, st_info, _other, st_shndx, st_value, st_size = \
                struct.unpack_from("<IBBHQQ", data, off)
            n = offsets.get(st_name)
            if n is None or n in out:
                continue
            if st_shndx == SHN_UNDEF or (st_info & 0xF) == 3:     # STT_SECTION
                continue
            out[n] = Symbol(n, st_value, st_size, st_shndx)
        # string merging: a name may start in the middle of another
        # string; fall back to a full decode for names not found yet
        missing = want - out.keys()
        if missing:
            for off in range(0, len(data) - ent + 1, ent):
                st_name, st_info, _o, st_shndx, st_value, st_size = \
                    struct.unpack_from("<IBBHQQ", data, off)
                if st_shndx == SHN_UNDEF or (st_info & 0xF) == 3:
                    continue
                end = strs.find(b"\0", st_name)
                n = strs[st_name:end].decode("utf-8", "replace")
                if n in missing and n not in out:
                    out[n] = Symbol(n, st_value, st_size, st_shndx)
        return out

    # -- notes ---------------------------------------------------------
    def build_id(self) -> str | None:
        """The GNU build-id (lowercase hex) from any SHT_NOTE section."""
        for s in self.sections:
            if s.type != SHT_NOTE:
                continue
            for ntype, name, desc in parse_notes(self.section_data(s)):
                if ntype == NT_GNU_BUILD_ID and name == b"GNU":
                    return desc.hex()
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def parse_notes(data: bytes):
    """Yield (type, name without NULs, desc) for each ELF note in `data`."""
    pos = 0
    while pos + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
        pos += 12
        name = data[pos:pos + namesz].rstrip(b"\0")
        pos += (namesz + 3) & ~3
        desc = data[pos:pos + descsz]
        pos += (descsz + 3) & ~3
        yield ntype, name, desc


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
# seeds

SEED_HEX_RE = re.compile(r"[0-9a-fA-F]{64}")


def parse_seed(text: str) -> str:
    """Seed text (64 hex digits, optionally ``fgkaslr_seed=...``, or
    /proc/fgkaslr_seed contents) -> 64 lowercase hex digits."""
    t = text.strip()
    if t.startswith("fgkaslr_seed="):
        t = t[len("fgkaslr_seed="):]
    if t.lower().startswith("0x"):
        t = t[2:]
    if t == "disabled":
        raise FgkError("the seed text says 'disabled': the kernel did not shuffle; "
                       "attach without --seed")
    if not SEED_HEX_RE.fullmatch(t):
        raise FgkError(f"bad seed {text.strip()!r}: expected exactly 64 hex digits")
    return t.lower()


SEED_RECORD_KEYS = ("seed", "build-id", "release", "offset", "note")


def parse_seed_record(text: str, name: str = "<record>") -> dict:
    """A seed record (docs/seed-records.md): ``key: value`` lines."""
    rec = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or not key:
            raise FgkError(f"{name}:{lineno}: expected 'key: value'")
        if key not in SEED_RECORD_KEYS:
            raise FgkError(f"{name}:{lineno}: unknown key {key!r} "
                           f"(known: {', '.join(SEED_RECORD_KEYS)})")
        if key in rec:
            raise FgkError(f"{name}:{lineno}: duplicate key {key!r}")
        rec[key] = value.strip()
    if "seed" not in rec:
        raise FgkError(f"{name}: no 'seed:' line (not a seed record)")
    rec["seed"] = parse_seed(rec["seed"])
    if "offset" in rec:
        try:
            rec["offset"] = int(rec["offset"], 0)
        except ValueError:
            raise FgkError(f"{name}: bad offset {rec['offset']!r}") from None
    if "build-id" in rec:
        rec["build-id"] = rec["build-id"].lower()
    return rec


def read_seed_record(path) -> dict:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise FgkError(f"seed unreadable: cannot read seed record {path}: "
                       f"{e.strerror}") from None
    return parse_seed_record(text, str(path))


def parse_offset(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        try:
            v = int(text, 16)
        except ValueError:
            raise FgkError(f"bad offset {text!r}: expected a number like 0x1e000000") from None
    if v % KASLR_ALIGN:
        raise FgkError(f"offset {v:#x} is not a multiple of {KASLR_ALIGN:#x}")
    return v


# struct fgkaslr_boot_info (include/linux/fgkaslr.h)
BOOT_INFO_FMT = "<IIIIQQQQQ32s"
BOOT_INFO_SIZE = struct.calcsize(BOOT_INFO_FMT)       # 88
FGKASLR_BOOT_MAGIC = 0x4B474621
FGKASLR_FLAGS = {0x01: "shuffled", 0x02: "seed given", 0x04: "seed bad",
                 0x08: "nofgkaslr", 0x10: "did not fit", 0x20: "no memory",
                 0x40: "bad ELF"}


@dataclass
class BootInfo:
    magic: int
    flags: int
    nr_sections: int
    text_start: int
    text_end: int
    text_used: int
    seed: str

    @property
    def valid(self) -> bool:
        return self.magic == FGKASLR_BOOT_MAGIC

    @property
    def shuffled(self) -> bool:
        return bool(self.flags & 0x01)

    def flag_names(self) -> str:
        return ", ".join(n for b, n in FGKASLR_FLAGS.items() if self.flags & b) or "none"


def decode_boot_info(data: bytes) -> BootInfo:
    if len(data) < BOOT_INFO_SIZE:
        raise FgkError(f"fgkaslr_boot_info: need {BOOT_INFO_SIZE} bytes, got {len(data)}")
    (magic, flags, nr, _heap_used, _heap_size, _cycles, start, end, used,
     seed) = struct.unpack_from(BOOT_INFO_FMT, data, 0)
    return BootInfo(magic, flags, nr, start, end, used, seed.hex())


# --------------------------------------------------------------------------
# the fgk CLI

def find_fgk(ext_dir, environ=None, which=shutil.which) -> str:
    """$FGK, then <repo>/build/bin/fgk next to the extension, then PATH."""
    environ = os.environ if environ is None else environ
    tried = []
    env = environ.get("FGK")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        tried.append(f"$FGK={env}")
    cand = Path(ext_dir).resolve().parent / "build" / "bin" / "fgk"
    if cand.is_file() and os.access(cand, os.X_OK):
        return str(cand)
    tried.append(str(cand))
    w = which("fgk")
    if w:
        return w
    tried.append("fgk on PATH")
    raise FgkError("the fgk tool is missing (tried " + ", ".join(tried) +
                   "): run 'make tools' in the fgk repository, or set $FGK")


def run_fgk(fgk: str, *args, env=None, timeout=600) -> str:
    """Run `fgk ARGS`; return stdout; FgkError with fgk's message on failure."""
    try:
        r = subprocess.run([fgk, *map(str, args)], capture_output=True, text=True,
                           env=env, timeout=timeout)
    except OSError as e:
        raise FgkError(f"cannot run {fgk}: {e.strerror} (run 'make tools')") from None
    except subprocess.TimeoutExpired:
        raise FgkError(f"'fgk {args[0]}' took more than {timeout} s") from None
    if r.returncode != 0:
        msg = r.stderr.strip() or f"exit status {r.returncode}"
        raise FgkError(msg)
    return r.stdout


# --------------------------------------------------------------------------
# seed verification

def pick_sections(sections: list, count: int = 32) -> list:
    """Up to `count` sections, spread evenly over the list, that moved
    (new != link) and have code; `sections` are dicts from
    ``fgk layout --json`` (link/new/size as "0x..." strings)."""
    moved = [s for s in sections
             if int(s["size"], 16) >= 8 and int(s["new"], 16) != int(s["link"], 16)]
    if len(moved) <= count:
        return moved
    step = len(moved) / count
    return [moved[int(i * step)] for i in range(count)]


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
# address translation through a layout (`fgk layout --json` sections)

class AddressMap:
    """Link address <-> runtime address for one layout and base offset.

    `sections` are the randomized sections of ``fgk layout --json``
    (link/new/size as "0x..." strings).  An address inside a randomized
    section moves with it (docs/layout-spec.md section 7); any other
    address keeps its link address.  Both then get the base offset.
    """

    def __init__(self, sections, offset: int = 0):
        import bisect
        self._bisect = bisect.bisect_right
        self.offset = offset
        secs = [(int(s["link"], 16), int(s["new"], 16), int(s["size"], 16))
                for s in sections if int(s["size"], 16) > 0]
        self._by_link = sorted(secs)
        self._by_new = sorted(secs, key=lambda t: t[1])
        self._link_keys = [t[0] for t in self._by_link]
        self._new_keys = [t[1] for t in self._by_new]
        if secs:
            self.start = min(min(t[0] for t in secs), min(t[1] for t in secs))
            self.end = max(max(t[0] + t[2] for t in secs), max(t[1] + t[2] for t in secs))
        else:
            self.start = self.end = 0

    def runtime(self, link: int) -> int:
        """Runtime address of link address `link`."""
        i = self._bisect(self._link_keys, link) - 1
        if i >= 0:
            a, n, size = self._by_link[i]
            if a <= link < a + size:
                return link - a + n + self.offset
        return link + self.offset

    def link(self, runtime: int) -> int:
        """Link address of runtime address `runtime`; FgkError inside the
        shuffled region but in no section (the int3 padding)."""
        x = runtime - self.offset
        i = self._bisect(self._new_keys, x) - 1
        if i >= 0:
            a, n, size = self._by_new[i]
            if n <= x < n + size:
                return x - n + a
        if self.start <= x < self.end:
            raise FgkError(f"{runtime:#x} is in the shuffled region but in no function "
                           "(padding between shuffled sections)")
        return x


# --------------------------------------------------------------------------
# modules

def module_name_variants(name: str) -> list:
    """File names a module called `name` may have ('-' vs '_')."""
    out = []
    for n in (name, name.replace("_", "-"), name.replace("-", "_")):
        if n + ".ko" not in out:
            out.append(n + ".ko")
    return out


def find_module_files(roots) -> dict:
    """{normalized name: path} of every *.ko under `roots` (first wins)."""
    found = {}
    for root in roots:
        root = str(root)
        if not os.path.isdir(root):
            continue
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for f in filenames:
                if f.endswith(".ko"):
                    found.setdefault(f[:-3].replace("-", "_"), os.path.join(dirpath, f))
    return found


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
