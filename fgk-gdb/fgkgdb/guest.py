"""fgk-gdb: talking to the guest (registers, memory, the IDT, the boot
info), and the guest's build-id and vmlinux from debuginfod."""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import gdb

from . import core
from .core import FgkError
from .state import say


# --------------------------------------------------------------------------
# talking to the guest

def check_connected():
    inf = gdb.selected_inferior()
    thr = gdb.selected_thread()
    if inf is None or inf.pid == 0 or thr is None:
        raise FgkError("no guest connected: start one with 'qemu-profiles/run debug "
                       "--gdb PORT' and connect with 'target remote 127.0.0.1:PORT' first")
    if thr.is_running():
        raise FgkError("the guest is running: stop it first (Ctrl-C or 'interrupt'), "
                       "then retry")
    return inf


def read_guest(addr, size):
    """Guest memory, or None if it cannot be read."""
    try:
        return bytes(gdb.selected_inferior().read_memory(addr, size))
    except gdb.MemoryError:
        return None


def monitor_registers(otherwise="pass --offset"):
    try:
        text = gdb.execute("monitor info registers", to_string=True)
    except gdb.error as e:
        raise FgkError(f"'monitor info registers' failed ({e}): is gdb connected to "
                       f"QEMU's gdbstub? Otherwise {otherwise}") from None
    return core.parse_monitor_registers(text)


def idt_gate0_handler(regs, otherwise="pass --offset"):
    """Runtime address of the handler of IDT gate 0 (asm_exc_divide_error)."""
    base, limit = regs["IDT"]
    if limit < 15:
        raise FgkError(f"the guest's IDT is empty (base {base:#x} limit {limit:#x})")
    gate = read_guest(base, 16)
    if gate is None:
        raise FgkError(f"cannot read IDT gate 0 at {base:#x}: {otherwise}")
    if not core.gate_present(gate):
        raise FgkError("IDT gate 0 is not present: the kernel has not set up its IDT "
                       f"yet; attach later or {otherwise}")
    return core.decode_idt_gate(gate)


def kernel_offset_from_guest(regs, divide_error):
    return core.kernel_offset_from_idt(idt_gate0_handler(regs), divide_error.addr)


def check_build_id(vm, offset, offset_given=False):
    notes = vm.section(".notes")
    if notes is None or not notes.addr:
        return "no .notes section: build-id not checked"
    want = vm.read(notes.addr, notes.size)
    have = read_guest(notes.addr + offset, len(want))
    bid = vm.build_id or "?"
    if have != want:
        if offset_given:
            raise FgkError(f"the build-id note of {vm.path} ({bid}) is not at "
                           f"{notes.addr + offset:#x} in guest memory: wrong --offset "
                           f"{offset:#x} (omit it to read the offset from the IDT) or "
                           "wrong vmlinux")
        raise FgkError(f"vmlinux build-id differs from the guest's: {vm.path} has "
                       f"{bid}, but its .notes are not at {notes.addr + offset:#x} in "
                       "guest memory; pass the vmlinux that the guest booted (--vmlinux)")
    return f"build-id {bid} matches"


def check_banner(vm, banner, offset):
    want = vm.read(banner.addr, banner.size or 64)
    have = read_guest(banner.addr + offset, len(want))
    if have != want:
        raise FgkError(f"linux_banner is not at {banner.addr + offset:#x} in guest memory "
                       f"with offset {offset:#x}: wrong offset or wrong vmlinux")


def read_boot_info(vm, sym, offset) -> core.BootInfo:
    data = read_guest(sym.addr + offset, core.boot_info_read_size(sym.size))
    if data is None:
        raise FgkError(f"seed unreadable: cannot read fgkaslr_boot_info at "
                       f"{sym.addr + offset:#x}: pass --seed")
    return core.decode_boot_info(data, f"fgkaslr_boot_info at {sym.addr + offset:#x}")


def verify_seed(relinked, layout, offset, seed):
    """The guest's code at 32 shuffled functions against vmlinux.fgk's (one
    guest read per run of neighbouring functions: a gdbstub round trip costs
    tens of milliseconds)."""
    picks = core.pick_sections(layout.sections, 32)
    pairs = []
    for start, length, group in core.read_plan(picks, 32):
        have = read_guest(start + offset, length)
        for s in group:
            want = relinked.read(s.new_addr, min(s.size, 32))
            lo = s.new_addr - start
            got = None if have is None else have[lo:lo + len(want)]
            k = core.patch_free_start(want)     # ftrace's nop is not a mismatch
            pairs.append((s.name, want[k:], None if got is None else got[k:]))
    res = core.match_bytes(pairs)
    if not res.ok():
        raise FgkError(f"the guest's code does not match seed {seed} (wrong seed or wrong "
                       f"vmlinux): {res.equal}/{res.total} bytes of {len(picks)} shuffled "
                       "functions agree; nothing loaded")
    return res


# --------------------------------------------------------------------------
# no vmlinux: the guest's build-id, and the vmlinux from debuginfod

MEMSAVE_CHUNK = 16 << 20
GDBSTUB_CHUNK = 1 << 20


class GuestMemory:
    """Reads long ranges of guest memory for the build-id scan.

    Through the gdbstub a read costs one round trip per 2 KiB (QEMU's
    PacketSize is 4096 hex digits), and with QEMU 7.2 a round trip takes
    about 40 ms: some 20 s per MiB.  So QEMU's `monitor memsave ADDR SIZE
    "FILE"` is tried first: QEMU itself writes the guest's virtual memory
    to FILE, in a private temporary directory of this user (0700), which
    works when QEMU runs on this machine as this user; the file is read and
    removed at once.  Otherwise (another host, not QEMU) the gdbstub, in
    GDBSTUB_CHUNK reads.  read() returns the readable prefix of a range."""

    def __init__(self):
        self.method = None          # "memsave" or "gdbstub", once known
        self._dir = None

    def close(self):
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def detect(self, addr):
        """Which way to read (one small memsave at addr); the chunk size
        for it."""
        if self.method is None:
            self.method = "memsave" if self._memsave(addr, 16) is not None else "gdbstub"
            if self.method == "gdbstub":
                say("QEMU's 'monitor memsave' is not usable here: reading guest memory "
                    "through the gdbstub instead, which is slow (about 20 s per MiB); "
                    "'fgk attach --build-id HEX' skips this")
        return MEMSAVE_CHUNK if self.method == "memsave" else GDBSTUB_CHUNK

    def read(self, addr, size):
        if self.method != "gdbstub":
            data = self._memsave(addr, size)
            if data is not None:
                return data
        return self._gdbstub(addr, size)

    def _memsave(self, addr, size):
        try:
            if self._dir is None:
                self._dir = tempfile.mkdtemp(prefix="fgk-gdb-mem-")
            path = os.path.join(self._dir, "mem")
            if os.path.lexists(path):
                os.unlink(path)
            qpath = path.replace("\\", "\\\\").replace('"', '\\"')
            gdb.execute(f'monitor memsave {addr:#x} {size} "{qpath}"', to_string=True)
            with open(path, "rb") as f:     # the readable prefix (QEMU stops there)
                data = f.read(size)
            os.unlink(path)
            return data
        except (gdb.error, OSError):
            return None

    def _gdbstub(self, addr, size):
        try:
            return bytes(gdb.selected_inferior().read_memory(addr, size))
        except gdb.MemoryError:
            pass
        out = []                            # the readable pages up to the first hole
        page = core.PAGE - addr % core.PAGE
        while size > 0:
            n = min(page, size)
            part = read_guest(addr, n)
            if part is None:
                break
            out.append(part)
            addr, size, page = addr + n, size - n, core.PAGE
        return b"".join(out)


def guest_build_id(regs):
    """(build-id, where, how it was found) of the running kernel, from its
    NT_GNU_BUILD_ID note in guest memory: scanned forward from the handler
    of IDT gate 0 (asm_exc_divide_error, in the fixed entry text, which
    .notes follows in .rodata), skipping the notes of the vDSO images the kernel
    carries.  The vmlinux fetched for it is then checked like any other
    (its .notes at link address + offset), so a wrong match is refused."""
    otherwise = "pass --vmlinux PATH or --build-id HEX"
    handler = idt_gate0_handler(regs, otherwise)
    mem = GuestMemory()
    t = time.monotonic()
    try:
        chunk = mem.detect(handler)
        res = core.scan_build_id(mem.read, handler, core.SCAN_LIMIT, chunk)
    finally:
        mem.close()
    dt = time.monotonic() - t
    skipped = (f"; skipped {len(res.skipped)} note(s) inside embedded ELF images (vDSO)"
               if res.skipped else "")
    if res.note is None:
        raise FgkError(f"no kernel build-id note in guest memory: scanned {res.scanned >> 10} "
                       f"KiB from IDT gate 0 ({handler:#x}) to {res.stop:#x}{skipped}; "
                       f"{otherwise}")
    where = f"build-id read from guest memory at {res.note.addr:#x}"
    how = (f"{(res.note.addr - handler) / (1 << 20):.1f} MiB after the IDT gate 0 handler; "
           f"{res.scanned >> 10} KiB read through {mem.method} in {dt:.2f} s{skipped}")
    return res.note.build_id, where, how


def fetch_vmlinux(st, build_id, where):
    """Path of the vmlinux of build_id from debuginfod (or its cache)."""
    lib = core.need_libfgk()
    t = time.monotonic()
    try:
        path, url = lib.fetch_vmlinux(build_id)
    except FgkError as e:
        raise FgkError(f"{e} ({where}); pass --vmlinux PATH") from None
    st.timings["fetch"] = time.monotonic() - t
    if url:
        st.vmlinux_source = f"fetched from {url}"
        say(f"vmlinux build-id {build_id} fetched from {url} into {path} "
            f"({st.timings['fetch']:.2f} s)")
    else:
        st.vmlinux_source = "from the debuginfod cache"
        say(f"vmlinux build-id {build_id} from the debuginfod cache: {path}")
    return path


def _vmlinux_from_debuginfod(st, build_id):
    """No vmlinux given or loaded: the guest's, by build-id (--build-id, or
    read from guest memory), from the servers of $DEBUGINFOD_URLS."""
    lib = core.need_libfgk()
    if not lib.debuginfod_enabled():
        if build_id:
            raise FgkError(f"no vmlinux with build-id {build_id} here: pass --vmlinux PATH, "
                           "or set DEBUGINFOD_URLS to fetch it from a debuginfod server")
        raise FgkError("no vmlinux: pass --vmlinux PATH or load it first with 'file "
                       "PATH/vmlinux', or set DEBUGINFOD_URLS to fetch the guest's by its "
                       "build-id from a debuginfod server")
    if build_id:
        return fetch_vmlinux(st, build_id, "build-id given by --build-id")
    regs = monitor_registers("pass --vmlinux PATH or --build-id HEX")
    if regs["IDT"][0] < core.KERNEL_HALF:
        raise FgkError("no vmlinux, and the guest has not started the kernel yet (no "
                       "kernel IDT), so its build-id cannot be read from its memory: pass "
                       "--vmlinux PATH or --build-id HEX")
    t = time.monotonic()
    build_id, where, how = guest_build_id(regs)
    st.timings["build-id scan"] = time.monotonic() - t
    say(f"{where}: {build_id} ({how})")
    return fetch_vmlinux(st, build_id, where)
