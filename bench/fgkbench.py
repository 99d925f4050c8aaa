"""What the benchmarks share: which kernels are built, and how big they are.

A benchmark runs on every built variant it applies to, in one run, so that
each number comes with its growth from the default test kernel to Debian's
configuration (docs/debian-kernel.md), beside the growth of what drives it:
function sections, relocations, bytes.

  variants()        [(label, dir)] of build/kernel and build/kernel-debian
                    that exist (KVARIANT=name: that one only)
  nofg_dir(dir)     the same configuration without FG_KASLR, or None
  scale(dir)        {sections, elf_sections, relocs, vmlinux, bzImage,
                     init_size, ...} of one build
  growth(a, b)      "x2.93" style ratio b/a
  share_autogroup_nice(pid)  give a QEMU fgkrun started the bench's
                    autogroup nice
"""
from __future__ import annotations

import os
import re
import struct
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build"
sys.path.insert(0, str(REPO / "qemu-profiles"))
import fgkrun  # noqa: E402,F401  (puts the libfgk binding on sys.path)
import libfgk  # noqa: E402

SHT_PROGBITS, SHT_RELA, SHF_EXECINSTR = 1, 4, 0x4   # <elf.h>


def share_autogroup_nice(pid):
    """fgkrun starts QEMU in a session of its own, i.e. an autogroup of its
    own at nice 0: give it the bench's own autogroup nice, so that `echo 19 >
    /proc/BENCH/autogroup` reaches QEMU as well (else the bench's console
    polling starves behind its own QEMU on a busy host)."""
    try:
        m = re.search(r"nice\s+(-?\d+)", Path("/proc/self/autogroup").read_text())
        if m:
            Path(f"/proc/{pid}/autogroup").write_text(m.group(1))
    except OSError:
        pass


def variants():
    want = os.environ.get("KVARIANT", "").strip()
    out = []
    kv = os.environ.get("KVERSION", "").strip()   # 6.12: build/kernel-6.12[-debian]
    kv = "" if kv in ("", "6.1") else "-" + kv
    for label, d in (("default", BUILD / f"kernel{kv}"), ("debian", BUILD / f"kernel{kv}-debian")):
        if want and label != want:
            continue
        if (d / "vmlinux").is_file() and (d / "bzImage").is_file():
            out.append((label, d))
        elif label == "debian" and not want:
            print("bench: build/kernel-debian missing ('make kernel KVARIANT=debian', about "
                  "35 min): Debian-config numbers skipped")
    return out


def nofg_dir(d: Path):
    n = d.parent / (d.name + "-nofg")
    return n if (n / "bzImage").is_file() else None


def init_size(bzimage: Path) -> int:
    """The setup header's init_size: the memory the decompressor and the
    kernel need from the load address (boot protocol 2.10+)."""
    with open(bzimage, "rb") as f:
        hdr = f.read(0x270)
    if hdr[0x202:0x206] != b"HdrS":
        raise SystemExit(f"bench: {bzimage}: no setup header")
    return struct.unpack_from("<I", hdr, 0x260)[0]


_scale_cache = {}


def scale(d: Path) -> dict:
    """Sizes of one build: function sections, ELF sections, relocations in
    vmlinux (.rela.*), the decompressor's relocation table (vmlinux.relocs
    entries), and the file sizes."""
    if d in _scale_cache:
        return _scale_cache[d]
    vmlinux = d / "vmlinux"
    text = rela = 0
    with libfgk.Vmlinux(vmlinux) as vm:
        shnum = vm.shnum
        for s in vm.sections():
            if s.name.startswith(".text.") and s.type == SHT_PROGBITS and \
                    s.flags & SHF_EXECINSTR and s.size:
                text += 1
            if s.type == SHT_RELA and s.entsize:
                rela += s.size // s.entsize
    out = {"sections": text, "elf_sections": shnum, "relocs": rela,
           "vmlinux": vmlinux.stat().st_size, "bzImage": (d / "bzImage").stat().st_size,
           "init_size": init_size(d / "bzImage")}
    vr = d / "build" / "arch" / "x86" / "boot" / "compressed" / "vmlinux.relocs"
    if vr.is_file():
        out["boot_relocs"] = vr.stat().st_size // 4
    _scale_cache[d] = out
    return out


def growth(a: float, b: float) -> str:
    return f"x{b / a:.2f}" if a else "-"


def scale_line(label: str, d: Path) -> str:
    s = scale(d)
    extra = f", {s['boot_relocs']:,} boot relocation entries" if "boot_relocs" in s else ""
    return (f"{label}: {s['sections']:,} function sections, {s['elf_sections']:,} ELF sections, "
            f"{s['relocs']:,} relocations in vmlinux{extra}, vmlinux {s['vmlinux'] / 2**20:.0f} MiB")


def growth_line(dirs: dict) -> str | None:
    """How the Debian build's drivers grow from the default one's."""
    if "default" not in dirs or "debian" not in dirs:
        return None
    a, b = scale(dirs["default"]), scale(dirs["debian"])
    parts = [f"sections {growth(a['sections'], b['sections'])}",
             f"relocations {growth(a['relocs'], b['relocs'])}",
             f"vmlinux bytes {growth(a['vmlinux'], b['vmlinux'])}"]
    if "boot_relocs" in a and "boot_relocs" in b:
        parts.append(f"boot relocation entries {growth(a['boot_relocs'], b['boot_relocs'])}")
    return "default -> debian: " + ", ".join(parts)
