"""fgk-gdb: `fgk addr`, $fgk_runtime() and $fgk_link()."""

from __future__ import annotations

import gdb

from .core import FgkError
from .state import STATE, _run, elf


def addr_cmd(argv):
    s = STATE
    if s.vmlinux is None:
        raise FgkError("not attached: run 'fgk attach' first")
    if not argv:
        raise FgkError("usage: fgk addr ADDR|SYMBOL[+OFF]...")
    if not s.seed:
        raise FgkError("the guest's layout is link order (no seed): use 'info symbol'")
    layout = s.layout or elf(s.vmlinux).layout(s.seed)
    # libfgk's fgk_addr_translate, as `fgk addr`: the same lines; an item
    # that cannot be translated is an error, the others are still shown
    errors = []
    for item in argv:
        try:
            a = layout.addr(item, s.offset)
        except FgkError as e:
            errors.append(str(e))
            continue
        if a is not None:
            gdb.write(a.line + "\n")
    if errors:
        raise FgkError("; ".join(errors))


class FgkAddr(gdb.Command):
    """Translate runtime addresses and symbols of the attached kernel.

Usage: fgk addr ADDR|SYMBOL[+OFF]...
What 'fgk addr VMLINUX --seed SEED --offset OFFSET ARGS' prints, with the
seed and offset of the last 'fgk attach' (libfgk, in this gdb).  Output
columns: item, runtime address, link address, symbol+offset/size, shuffled
section ('-' if not moved)."""

    def __init__(self):
        super().__init__("fgk addr", gdb.COMMAND_USER, gdb.COMPLETE_SYMBOL)

    def invoke(self, arg, from_tty):
        _run(addr_cmd, arg, "addr")


def _ulong(x):
    return gdb.Value(x).cast(gdb.lookup_type("unsigned long"))


class FgkRuntime(gdb.Function):
    """$fgk_runtime(LINK): the runtime address in the attached guest of the
link-time address LINK of vmlinux (shuffled by the seed, plus the base
offset).  E.g. p/x $fgk_runtime(0xffffffff8155a250)"""

    def __init__(self):
        super().__init__("fgk_runtime")

    def invoke(self, link):
        try:
            return _ulong(STATE.runtime(int(link) & 0xFFFFFFFFFFFFFFFF))
        except FgkError as e:
            raise gdb.GdbError(f"$fgk_runtime: {e}") from None


class FgkLink(gdb.Function):
    """$fgk_link(ADDR): the link-time address in vmlinux (System.map,
addr2line -e vmlinux) of the runtime address ADDR of the attached guest.
E.g. p/x $fgk_link($pc)"""

    def __init__(self):
        super().__init__("fgk_link")

    def invoke(self, addr):
        try:
            return _ulong(STATE.link(int(addr) & 0xFFFFFFFFFFFFFFFF))
        except FgkError as e:
            raise gdb.GdbError(f"$fgk_link: {e}") from None
