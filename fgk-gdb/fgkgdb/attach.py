"""fgk-gdb: `fgk attach` (the layout, vmlinux.fgk through libfgk's relink
cache, the checks against the guest) and `fgk info`."""

from __future__ import annotations

import os
import tempfile
import time

import gdb

from . import core
from .core import FgkError
from .guest import (_vmlinux_from_debuginfod, check_banner, check_build_id,
                    check_connected, kernel_offset_from_guest, monitor_registers,
                    read_boot_info, read_guest, verify_seed)
from .modules import arm_module_breakpoint, load_all_modules
from .state import STATE, State, _Parser, _relink_memo, _run, elf, say
from .symbols import (add_source_dir, index_enabled, load_kernel_scripts, load_symbols,
                      write_index_in_background)


# --------------------------------------------------------------------------
# attach

def relink(vm, seed):
    """(path of vmlinux.fgk, libfgk.Layout), in this process through libfgk:
    the layout of the opened vmlinux, and vmlinux.fgk from the relink cache
    that 'fgk relink' shares (written now if it is not there).  Remembered
    for the gdb session while vmlinux and the result are unchanged."""
    st = os.stat(vm.path)
    key = (os.path.realpath(vm.path), st.st_mtime_ns, st.st_size, seed)
    hit = _relink_memo.get(key)
    if hit and os.path.isfile(hit[0]):
        return hit
    layout = vm.layout(seed)
    # the relink cache 'fgk relink' and 'fgk crash' share; without a usable
    # one, $TMPDIR/fgk-gdb-UID, which libfgk makes a 0700 directory of this
    # user (vmlinux.fgk is the layout)
    res = layout.relink_through_cache(
        os.path.join(tempfile.gettempdir(), f"fgk-gdb-{os.geteuid()}"))
    if res["cache_error"]:
        gdb.write(f"fgk: {res['cache_error']}; not caching\n")
    relinked = res["path"]
    _relink_memo[key] = (relinked, layout)
    return relinked, layout


def current_vmlinux():
    """The vmlinux of the last attach if its symbols are still loaded, else
    the file gdb has loaded."""
    pf = gdb.current_progspace().filename
    if STATE.loaded and STATE.vmlinux:
        loaded = os.path.realpath(STATE.loaded)
        names = [o.filename for o in gdb.objfiles() if o.filename]
        if any(os.path.realpath(n) == loaded for n in names + [pf or ""]):
            return STATE.vmlinux
    return pf


def _attach_args(argv):
    p = _Parser(prog="fgk attach", add_help=False)
    p.add_argument("--vmlinux")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--seed")
    g.add_argument("--seed-file")
    p.add_argument("--offset")
    p.add_argument("--build-id")
    p.add_argument("--no-modules", action="store_true")
    return p.parse_args(argv)


def _vmlinux_path(given):
    vmlinux = given or current_vmlinux()
    if not vmlinux:
        raise FgkError("no vmlinux: pass --vmlinux PATH or load it first with "
                       "'file PATH/vmlinux'")
    vmlinux = os.path.abspath(os.path.expanduser(vmlinux))
    if not os.path.isfile(vmlinux):
        raise FgkError(f"no vmlinux: {vmlinux} does not exist (run 'make kernel' or "
                       "pass --vmlinux PATH)")
    return vmlinux


def _kernel_up(syms, offset):
    """(registers or None, is the kernel up: its IDT set?).  Early boot
    (-S) has IDT base 0; without the monitor, linux_banner must be readable
    at the given offset."""
    try:
        regs = monitor_registers()
        return regs, regs["IDT"][0] >= core.KERNEL_HALF
    except FgkError:
        if offset is None:
            raise
    up = "linux_banner" in syms and \
        read_guest(syms["linux_banner"].addr + offset, 1) is not None
    return None, up


def _check_image(st, vm, syms, offset, early):
    """The build-id note and linux_banner of vm must be in guest memory at
    link address + offset (not checkable before the kernel runs)."""
    if early:
        say("the guest has not started the kernel yet: build-id, offset and seed NOT "
            "verified (loading as told)")
        st.verified = "not verified (early boot)"
        return
    msg = check_build_id(vm, offset, st.offset_source is not None
                         and "IDT" not in st.offset_source)
    if "linux_banner" in syms:
        check_banner(vm, syms["linux_banner"], offset)
        msg += ", linux_banner found"
    st.offset_source += f" ({msg})"


def _load_link_order(st, vmlinux, offset, why):
    st.shuffled = False
    load_symbols(vmlinux, offset)
    st.loaded = vmlinux
    say(why)


def _guest_seed(st, vm, syms, offset):
    """The seed from the guest's fgkaslr_boot_info, or None (and vmlinux
    loaded as it is) when the guest did not shuffle."""
    if "fgkaslr_boot_info" not in syms:
        raise FgkError(f"seed unreadable: {vm.path} has no fgkaslr_boot_info: "
                       "pass --seed")
    bi = read_boot_info(vm, syms["fgkaslr_boot_info"], offset)
    if not bi.valid:
        raise FgkError("seed unreadable: the decompressor has not run yet (early "
                       "boot?): pass --seed (fgkaslr_boot_info.magic is "
                       f"{bi.magic:#x}, not {core.FGKASLR_BOOT_MAGIC:#x})")
    if bi.shuffled:
        st.seed_source = "guest fgkaslr_boot_info"
        return bi.seed
    _load_link_order(st, vm.path, offset,
                     f"the guest did not shuffle (flags: {bi.flag_names()}): its layout "
                     f"is link order; loaded {vm.path} at offset {offset:#x}")
    return None


def _load_shuffled(st, vm, seed, offset, early):
    """Layout, vmlinux.fgk (relinked or from the cache), checked against the
    guest's code unless early, loaded at the offset."""
    st.seed = seed
    st.shuffled = True
    t = time.monotonic()
    relinked, layout = relink(vm, seed)
    st.timings["relink"] = time.monotonic() - t
    st.nsections = layout.n
    st.layout = layout
    st.relinked = relinked
    if not early:
        t = time.monotonic()
        res = verify_seed(elf(relinked), layout, offset, seed)
        st.timings["verify"] = time.monotonic() - t
        st.verified = (f"{res.equal}/{res.total} code bytes of "
                       f"{len(res.per_section)} shuffled functions match")
    t = time.monotonic()
    st.gdb_index = load_symbols(relinked, offset, index=True, build_id=vm.build_id)
    st.timings["symbol-file"] = time.monotonic() - t
    if st.gdb_index != "used" and index_enabled() and \
            write_index_in_background(relinked, vm.build_id):
        st.gdb_index = "being written in the background, for the next attach"
    st.loaded = relinked
    say(f"seed {seed} ({st.seed_source}); {st.verified}")
    say(f"loaded {relinked} at offset {offset:#x} ({st.nsections} shuffled sections)")


def _after_load(st, no_modules, early):
    """Sources, the kernel's gdb scripts, module symbols."""
    src = add_source_dir(st.vmlinux)
    say(f"kernel offset {st.offset:#x} from {st.offset_source}")
    if src:
        say(f"sources: {src}")
    t = time.monotonic()
    say(f"kernel gdb scripts: {load_kernel_scripts(st.vmlinux)}")
    st.timings["scripts"] = time.monotonic() - t
    if no_modules:
        return
    if not early:
        t = time.monotonic()
        n = load_all_modules(st.vmlinux)
        st.timings["modules"] = time.monotonic() - t
        armed = arm_module_breakpoint()
        say(f"modules: {n} loaded" + (", later ones on do_init_module" if armed else ""))
    else:
        armed = arm_module_breakpoint()
        say("modules: none yet" + (", loaded on do_init_module" if armed else ""))


def attach(argv):
    t0 = time.monotonic()
    a = _attach_args(argv)
    # the seed and offset arguments are checked before anything else
    seed, seed_source, offset, offset_source = core.seed_from_args(a.seed, a.seed_file)
    if a.offset is not None:
        offset, offset_source = core.parse_offset(a.offset), "--offset"

    build_id = core.parse_build_id(a.build_id) if a.build_id is not None else None

    check_connected()
    st = State()
    if a.vmlinux or current_vmlinux():
        vmlinux = _vmlinux_path(a.vmlinux)
    else:                               # none: by build-id from debuginfod
        vmlinux = _vmlinux_from_debuginfod(st, build_id)
    vm = elf(vmlinux)                   # opened once: everything below uses vm
    if build_id and vm.build_id != build_id:
        raise FgkError(f"{vmlinux} has build-id {vm.build_id or '(none)'}, not {build_id} "
                       "(--build-id): pass the vmlinux of that build-id, or omit --vmlinux "
                       "and 'file' to fetch it")
    fg = vm.kind != "plain"
    syms = vm.symbols(["asm_exc_divide_error", "linux_banner", "fgkaslr_boot_info"])
    if a.seed_file:                     # the record's build-id against this vmlinux
        core.seed_from_args(None, a.seed_file, vm.build_id)
    st.vmlinux = vmlinux
    st.seed_source, st.offset_source = seed_source, offset_source

    regs, kernel_up = _kernel_up(syms, offset)
    early = not kernel_up
    if early:
        if offset is None:
            rip = regs.get("RIP", 0) if regs else 0
            raise FgkError(f"the guest is not running the kernel yet (RIP {rip:#x}, no "
                           "kernel IDT): continue to a later point, or for a nokaslr "
                           "boot pass --offset 0 --seed SEED")
        if fg and seed is None:
            raise FgkError("seed unreadable: the kernel has not started yet (early boot): "
                           "pass --seed (the fgkaslr_seed= of the boot)")
    if offset is None:
        if "asm_exc_divide_error" not in syms:
            raise FgkError(f"{vmlinux} has no asm_exc_divide_error symbol: not an x86_64 "
                           "vmlinux? Pass --offset")
        offset = kernel_offset_from_guest(regs, syms["asm_exc_divide_error"])
        st.offset_source = "IDT gate 0 -> asm_exc_divide_error"
    st.offset = offset
    _check_image(st, vm, syms, offset, early)

    if not fg:
        _load_link_order(st, vmlinux, offset,
                         f"{vmlinux} is not an FG-KASLR build (no .text.* sections): "
                         f"loaded it at offset {offset:#x}")
    else:
        if seed is None:
            seed = _guest_seed(st, vm, syms, offset)
        if seed is not None:
            _load_shuffled(st, vm, seed, offset, early)

    STATE.__dict__.update(st.__dict__)
    _after_load(STATE, a.no_modules, early)
    STATE.timings["total"] = time.monotonic() - t0


class FgkAttach(gdb.Command):
    """Load the symbols of the FG-KASLR kernel running in the connected guest.

Usage: fgk attach [--vmlinux PATH] [--build-id HEX]
                  [--seed SEED | --seed-file RECORD] [--offset BASE] [--no-modules]

With the guest stopped (target remote to QEMU's gdbstub):
 1. the base KASLR offset comes from IDT gate 0 (its handler minus
    asm_exc_divide_error), checked against the vmlinux's build-id note and
    linux_banner in guest memory; --offset BASE overrides it;
 2. the seed comes from the kernel's fgkaslr_boot_info; --seed or
    --seed-file override it;
 3. libfgk computes the layout and writes vmlinux.fgk, the vmlinux relinked
    in the guest's order, in this gdb (or reuses it from the relink cache it
    shares with 'fgk relink'); it is checked against the guest's code (32
    shuffled functions) and loaded with 'symbol-file -o OFFSET';
 4. every loaded module's .ko is loaded with all its section addresses, and
    a breakpoint on do_init_module loads modules inserted later.
The vmlinux is --vmlinux or the file gdb has loaded.  With neither, it is
fetched from the debuginfod servers of $DEBUGINFOD_URLS by the guest's
build-id: --build-id HEX, else the kernel's build-id note found in guest
memory after the IDT gate 0 handler; a module's .ko that is not found
locally is fetched by the build-id of its notes too.  Before the kernel has
started (QEMU -S, nokaslr fgkaslr_seed=S) use --offset 0 --seed S: nothing is
verified then, and hbreak works on shuffled functions from the first
instruction.  A vmlinux without .text.* sections is loaded at the offset."""

    def __init__(self):
        super().__init__("fgk attach", gdb.COMMAND_USER, gdb.COMPLETE_FILENAME)

    def invoke(self, arg, from_tty):
        _run(attach, arg, "attach")


class FgkInfo(gdb.Command):
    """Show what 'fgk attach' found.

Usage: fgk info
Prints the vmlinux, the relinked file, the seed, the base offset and where
each came from, the number of shuffled sections and of modules loaded."""

    def __init__(self):
        super().__init__("fgk info", gdb.COMMAND_USER, gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        s = STATE
        if s.vmlinux is None:
            gdb.write("fgk: not attached (run 'fgk attach')\n")
            return
        off = f"{s.offset:#x}" if s.offset is not None else "-"
        lines = [
            ("vmlinux", s.vmlinux + (f" ({s.vmlinux_source})" if s.vmlinux_source
                                     else "")),
            ("loaded", s.loaded or "-"),
            ("relinked", s.relinked or "- (layout is link order)"),
            ("seed", f"{s.seed} (from {s.seed_source})" if s.seed else "-"),
            ("offset", f"{off} (from {s.offset_source})"),
            ("verified", s.verified or "-"),
            ("gdb index", s.gdb_index or "-"),
            ("shuffled sections", str(s.nsections)),
            ("modules", f"{sum(1 for k, _ in s.modules.values() if k)} loaded, "
                        f"{sum(1 for k, _ in s.modules.values() if not k)} without .ko"),
            ("attach took", ", ".join(f"{k} {v:.2f} s" for k, v in
                                      sorted(s.timings.items())) or "-"),
        ]
        for k, v in lines:
            gdb.write(f"{k + ':':19} {v}\n")
        for name, (ko, n) in sorted(s.modules.items()):
            gdb.write(f"  {name}: {ko or 'no .ko found'} ({n} sections)\n")
