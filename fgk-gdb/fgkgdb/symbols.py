"""fgk-gdb: loading vmlinux symbols, source directories and the kernel's
own gdb scripts (vmlinux-gdb.py)."""

from __future__ import annotations

import os

import gdb

from . import core
from .state import elf


KERNEL_SCRIPT = "vmlinux-gdb.py"


# --------------------------------------------------------------------------
# loading

def load_symbols(path, offset):
    """`symbol-file -o OFFSET PATH`; but the per-CPU section (linked at 0 on
    x86_64 SMP) is not moved by KASLR (docs/layout-spec.md section 9), so
    with a non-zero offset load it with `add-symbol-file -o OFFSET -s
    .data..percpu 0` instead: per_cpu()/$lx_current() stay right."""
    confirm = gdb.parameter("confirm")
    gdb.execute("set confirm off")
    try:
        percpu = elf(path).section(".data..percpu")
        if offset and percpu is not None and percpu.addr == 0:
            gdb.execute("symbol-file", to_string=True)      # drop the old symbols
            gdb.execute(f"add-symbol-file {core.quote(path)} -o {offset:#x} "
                        "-s .data..percpu 0", to_string=True)
        else:
            gdb.execute(f"symbol-file -o {offset:#x} {core.quote(path)}", to_string=True)
    finally:
        if confirm:
            gdb.execute("set confirm on")


def add_source_dir(vmlinux):
    """The kernel tree (<vmlinux dir>/build or the vmlinux's dir) on gdb's
    source path, for DWARF whose comp_dir moved."""
    d = os.path.dirname(os.path.abspath(vmlinux))
    for cand in (os.path.join(d, "build"), d):
        if os.path.isdir(os.path.join(cand, "kernel")) and \
                os.path.isdir(os.path.join(cand, "fs")):
            gdb.execute(f"directory {core.quote(os.path.realpath(cand))}", to_string=True)
            return os.path.realpath(cand)
    return None


def kernel_tree_from_dwarf():
    """The kernel tree the loaded symbols were built in (the source file of
    start_kernel without its relative name), when it exists here: where
    the scripts of a vmlinux fetched from debuginfod are."""
    try:
        sym = gdb.lookup_global_symbol("start_kernel")
        rel, full = sym.symtab.filename, sym.symtab.fullname()
    except (gdb.error, AttributeError):
        return None
    if not rel or os.path.isabs(rel) or not full.endswith("/" + rel):
        return None
    root = full[:-len(rel) - 1]
    return root if os.path.isdir(root) else None


def kernel_script_candidates(vmlinux):
    """Next to the vmlinux, then (looked up only if needed) in the kernel
    tree of its DWARF."""
    d = os.path.dirname(os.path.abspath(vmlinux))
    yield from (os.path.join(d, KERNEL_SCRIPT), os.path.join(d, "build", KERNEL_SCRIPT),
                os.path.join(d, "build", "scripts", "gdb", KERNEL_SCRIPT))
    tree = kernel_tree_from_dwarf()
    if tree:
        yield from (os.path.join(tree, KERNEL_SCRIPT),
                    os.path.join(tree, "scripts", "gdb", KERNEL_SCRIPT))


def _have_lx_commands():
    try:
        gdb.execute("help lx-dmesg", to_string=True)
        return True
    except gdb.error:
        return False


def load_kernel_scripts(vmlinux):
    """Source the kernel's scripts/gdb (lx-dmesg, lx-ps, ...) once."""
    if _have_lx_commands():
        return "already loaded"
    seen = set()
    for cand in kernel_script_candidates(vmlinux):
        real = os.path.realpath(cand)
        if not os.path.isfile(cand) or real in seen:
            continue
        seen.add(real)
        d = os.path.dirname(cand)
        gdb.execute(f"add-auto-load-safe-path {core.quote(d)}")
        try:
            gdb.execute(f"source {core.quote(cand)}", to_string=True)
        except gdb.error as e:
            return f"{cand} failed: {e}"
        if _have_lx_commands():     # not a user's hook that loads only fgk
            return f"loaded {cand}"
    return "not found (build with CONFIG_GDB_SCRIPTS)"
