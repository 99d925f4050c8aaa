"""Generators of the inputs fgk reads, for the fuzz seed corpora and the
hostile-input tests (tests/test_hostile.py).  Everything is built from
parameters at run time: no opaque binaries.

  elf_core(vmcoreinfo)          ELF core (ET_CORE) with a VMCOREINFO PT_NOTE
  kdump(vmcoreinfo, ...)        kdump-compressed file (diskdump, header v6)
  flatten(data)                 makedumpfile's flattened stream of data
  vmcoreinfo(...)               VMCOREINFO text
  record(...)                   seed record text
  oops(...)                     oops text with frames of the given symbols
  Elf64                         section-table editing of an existing ELF64
"""
import struct

PAGE = 4096


def vmcoreinfo(release="6.1.0-fgk", build_id="ab" * 20, offset=0x1c000000,
               seed="5a" * 32, extra=""):
    lines = [f"OSRELEASE={release}", "PAGESIZE=4096"]
    if build_id is not None:
        lines.append(f"BUILD-ID={build_id}")
    if offset is not None:
        lines.append(f"KERNELOFFSET={offset:x}" if isinstance(offset, int)
                     else f"KERNELOFFSET={offset}")
    if seed is not None:
        lines.append(f"FGKASLR_SEED={seed}")
    text = "\n".join(lines) + "\n" + extra
    return text.encode()


def note(name, ntype, desc):
    """One ELF note: name NUL-terminated, name and desc padded to 4."""
    n = name.encode() + b"\0"
    pad = lambda b: b + b"\0" * (-len(b) % 4)  # noqa: E731
    return struct.pack("<III", len(n), len(desc), ntype) + pad(n) + pad(desc)


def elf_core(vmci, load_size=PAGE, extra_notes=b""):
    """ELF64 x86_64 core: PT_NOTE (VMCOREINFO) + one PT_LOAD of load_size."""
    notes = extra_notes + (note("VMCOREINFO", 0, vmci) if vmci is not None else b"")
    ehsize, phentsize, phnum = 64, 56, 2
    note_off = ehsize + phentsize * phnum
    load_off = note_off + len(notes)
    load_off += -load_off % PAGE
    eh = bytearray(b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8))
    eh += struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, ehsize, 0, 0, ehsize,
                      phentsize, phnum, 64, 0, 0)
    ph = struct.pack("<IIQQQQQQ", 4, 0, note_off, 0, 0, len(notes), 0, 4)
    ph += struct.pack("<IIQQQQQQ", 1, 7, load_off, 0xffff888000000000, 0,
                      load_size, load_size, PAGE)
    out = bytes(eh) + ph + notes
    out += bytes(load_off - len(out))
    return out + bytes(range(256)) * (load_size // 256) + bytes(load_size % 256)


def kdump(vmci, pages=8, version=6, size_note=None, offset_vmcoreinfo=None,
          size_vmcoreinfo=None, max_mapnr=None, block_size=PAGE):
    """A kdump-compressed file (uncompressed pages) libkdumpfile reads."""
    bs = block_size
    notes = note("VMCOREINFO", 0, vmci) if vmci is not None else b""
    sub_struct = 104
    sub_blocks = -(-(sub_struct + len(notes) + 64) // bs)
    note_off = bs + sub_struct
    vmci_off = note_off + 12 + 12  # note header + "VMCOREINFO\0" padded
    mapnr = max_mapnr if max_mapnr is not None else pages
    bitmap_blocks = 2
    hdr = bytearray(464)
    hdr[0:8] = b"KDUMP   "
    struct.pack_into("<i", hdr, 8, version)
    for i, f in enumerate([b"Linux", b"fgk", b"6.1.0-fgk", b"#1", b"x86_64", b""]):
        hdr[12 + 65 * i:12 + 65 * i + len(f)] = f
    struct.pack_into("<IiiIIIIIIi", hdr, 424, 0, bs, sub_blocks, bitmap_blocks,
                     mapnr & 0xffffffff, pages, 0, pages, 0, 1)
    sub = bytearray(sub_struct)
    struct.pack_into("<QiiQQqQqQqQQQQ", sub, 0, 0, 0, 0, 0, pages,
                     offset_vmcoreinfo if offset_vmcoreinfo is not None else
                     (vmci_off if vmci is not None else 0),
                     size_vmcoreinfo if size_vmcoreinfo is not None else
                     (len(vmci) if vmci is not None else 0),
                     note_off if notes else 0,
                     size_note if size_note is not None else len(notes),
                     0, 0, 0, pages, mapnr)
    out = bytearray(hdr) + bytes(bs - len(hdr))
    out += sub + notes
    out += bytes((1 + sub_blocks) * bs - len(out))
    bitmap = bytearray(bs)
    for pfn in range(pages):
        bitmap[pfn // 8] |= 1 << (pfn % 8)
    out += bitmap + bitmap
    desc_off = len(out)
    data_off = desc_off + 24 * pages
    for pfn in range(pages):
        out += struct.pack("<qIIQ", data_off + pfn * bs, bs, 0, 0)
    for pfn in range(pages):
        out += bytes([pfn & 0xff]) * bs
    return bytes(out)


def flatten(data, chunk=PAGE * 3, end_marker=True):
    """makedumpfile -F: a 4 KiB header, (offset, size, bytes) records (BE)."""
    hdr = b"makedumpfile".ljust(16, b"\0") + struct.pack(">qq", 1, 1)
    out = bytearray(hdr.ljust(PAGE, b"\0"))
    for off in range(0, len(data), chunk):
        piece = data[off:off + chunk]
        out += struct.pack(">qq", off, len(piece)) + piece
    if end_marker:
        out += struct.pack(">qq", -1, -1)
    return bytes(out)


def record(seed="5a" * 32, build_id="ab" * 20, release="6.1.0-fgk",
           offset=0x1c000000, note=None):
    lines = [f"seed: {seed}"]
    if build_id:
        lines.append(f"build-id: {build_id}")
    if release:
        lines.append(f"release: {release}")
    if offset is not None:
        lines.append(f"offset: {offset:#x}")
    if note:
        lines.append(f"note: {note}")
    return ("\n".join(lines) + "\n").encode()


def oops(frames, offset=0x1c000000):
    """frames: (runtime address, 'func+0xoff/0xsize' or None) pairs."""
    out = ["BUG: kernel NULL pointer dereference, address: 0000000000000000",
           "RIP: 0010:fn_tiny+0x1/0x2", "Call Trace:", " <TASK>"]
    for addr, sym in frames:
        out.append(f" [<{addr:016x}>] {sym}" if sym else f" {addr:016x}")
    out += [" </TASK>", f"Kernel Offset: {offset:#x} from 0xffffffff81000000"
            if offset is not None else "Kernel Offset: disabled"]
    return ("\n".join(out) + "\n").encode()


class Elf64:
    """Minimal ELF64 little-endian section-table editor (no libelf)."""

    SHDR = "<IIQQQQIIQQ"
    FIELDS = ("name", "type", "flags", "addr", "offset", "size", "link",
              "info", "addralign", "entsize")

    def __init__(self, data):
        self.data = bytearray(data)
        (self.shoff,) = struct.unpack_from("<Q", self.data, 0x28)
        (self.shentsize, self.shnum, self.shstrndx) = struct.unpack_from(
            "<HHH", self.data, 0x3a)

    def shdr(self, i):
        vals = struct.unpack_from(self.SHDR, self.data, self.shoff + 64 * i)
        return dict(zip(self.FIELDS, vals))

    def set_shdr(self, i, **kw):
        h = self.shdr(i)
        h.update(kw)
        struct.pack_into(self.SHDR, self.data, self.shoff + 64 * i,
                         *[h[f] for f in self.FIELDS])

    def name(self, i):
        strtab = self.shdr(self.shstrndx)
        off = strtab["offset"] + self.shdr(i)["name"]
        return bytes(self.data[off:self.data.index(b"\0", off)]).decode()

    def find(self, name):
        for i in range(self.shnum):
            if self.name(i) == name:
                return i
        raise KeyError(name)

    def sections(self, type_=None):
        return [i for i in range(self.shnum)
                if type_ is None or self.shdr(i)["type"] == type_]

    def bytes(self):
        return bytes(self.data)


def sleb(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if (v == 0 and not b & 0x40) or (v == -1 and b & 0x40):
            return bytes(out + bytes([b]))
        out.append(b | 0x80)


def line_program(program, version=4):
    """A DWARF 4 .debug_line unit (no directories, no files) around program."""
    hdr = bytes([1, 1, 1, 0xfb, 14, 13]) + bytes([0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1]) + b"\0\0"
    body = struct.pack("<HI", version, len(hdr)) + hdr + program
    return struct.pack("<I", len(body)) + body
