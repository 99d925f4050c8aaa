"""fgkelf: what the QEMU runner reads of ELF files (see fgkrun).

Only vmlinux's build-id, through libfgk (the one reader of ELF files, notes
and kernel structures); the runner needs nothing else of an ELF file.  The
tests' independent views of ELF files (sections, machine, core notes) are
pyelftools and binutils, in tests/oracle.py.
"""

from __future__ import annotations

import fgkbase  # noqa: F401  (puts the libfgk binding on sys.path)
import libfgk  # noqa: E402


def elf_build_id(path) -> str | None:
    """The GNU build-id of an ELF file as lowercase hex, or None (libfgk)."""
    with libfgk.Vmlinux(path) as vm:
        return vm.build_id
