"""fgk-gdb commands: the gdb side, split by topic as the kernel's
scripts/gdb is.  Logic that does not need gdb lives in core.py
(unit-tested); the commands live in

  state.py      what `fgk attach` found (STATE), caches, shared helpers
  guest.py      the guest: registers, memory, boot info, build-id, debuginfod
  symbols.py    vmlinux symbols, source directories, vmlinux-gdb.py
  modules.py    module symbols and `fgk modules`
  attach.py     `fgk attach` (vmlinux.fgk through libfgk's relink cache), `fgk info`
  addresses.py  `fgk addr`, $fgk_runtime(), $fgk_link()

This file registers them (fgkgdb.load()) and keeps the names other code
used from it (commands.attach, commands.STATE)."""

from __future__ import annotations

import gdb

from .addresses import FgkAddr, FgkLink, FgkRuntime, addr_cmd  # noqa: F401
from .attach import FgkAttach, FgkInfo, attach, relink  # noqa: F401
from .modules import FgkModules, load_all_modules, modules_cmd  # noqa: F401
from .state import STATE, State, _clear_caches, _on_exited, elf, say  # noqa: F401


class FgkPrefix(gdb.Command):
    """Debug kernels built with function-granular KASLR (FG-KASLR).

fgk attach   load the shuffled kernel's symbols for the connected guest
fgk info     what fgk attach found: files, seed, offset, counts
fgk addr     translate addresses and symbols (as 'fgk addr')
fgk modules  reload the symbols of loaded modules

See docs/fgk-gdb.md in the fgk repository."""

    def __init__(self):
        super().__init__("fgk", gdb.COMMAND_USER, gdb.COMPLETE_NONE, True)


_registered = False


def register():
    """Register the commands and event handlers (once per gdb)."""
    global _registered
    if _registered:
        return
    _registered = True
    FgkPrefix()
    FgkAttach()
    FgkInfo()
    FgkAddr()
    FgkModules()
    FgkRuntime()
    FgkLink()
    gdb.events.new_objfile.connect(_clear_caches)
    gdb.events.exited.connect(_on_exited)
