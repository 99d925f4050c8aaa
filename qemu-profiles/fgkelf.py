"""fgkelf: what the QEMU runner and its tests read of ELF files (see fgkrun).

vmlinux's build-id through libfgk; section tables and core notes, which
libfgk does not list, through pyelftools (python3-pyelftools).
"""

from __future__ import annotations

import fgkbase  # noqa: F401  (puts the libfgk binding on sys.path)
import libfgk  # noqa: E402


def elf_sections(path) -> dict:
    """{name: (type, offset, size)} of an ELF file's section headers."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.enums import ENUM_SH_TYPE_BASE
    with open(path, "rb") as f:
        out = {}
        for sec in ELFFile(f).iter_sections():
            t = sec["sh_type"]
            out[sec.name] = (ENUM_SH_TYPE_BASE.get(t, t) if isinstance(t, str) else t,
                             sec["sh_offset"], sec["sh_size"])
        return out


def elf_machine(path) -> int:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.enums import ENUM_E_MACHINE
    with open(path, "rb") as f:
        m = ELFFile(f)["e_machine"]
    return ENUM_E_MACHINE.get(m, m) if isinstance(m, str) else m


def elf_build_id(path) -> str | None:
    """The GNU build-id of an ELF file as lowercase hex, or None (libfgk)."""
    with libfgk.Vmlinux(path) as vm:
        return vm.build_id


def elf_core_notes(path) -> list:
    """[(name, type, desc bytes)] from the PT_NOTE segments of an ELF core
    (e.g. a QEMU dump-guest-memory file)."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.enums import ENUM_CORE_NOTE_N_TYPE, ENUM_NOTE_N_TYPE
    notes = []
    with open(path, "rb") as f:
        for seg in ELFFile(f).iter_segments("PT_NOTE"):
            for n in seg.iter_notes():
                t = n["n_type"]
                if isinstance(t, str):
                    t = ENUM_CORE_NOTE_N_TYPE.get(t, ENUM_NOTE_N_TYPE.get(t, t))
                notes.append((n["n_name"], t, bytes(n["n_descdata"])))
    return notes
