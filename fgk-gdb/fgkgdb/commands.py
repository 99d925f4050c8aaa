"""fgk-gdb commands: the gdb side.  Logic that does not need gdb lives in
core.py (unit-tested); this file talks to gdb and the guest."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import gdb

from . import core
from .core import FgkError

KERNEL_SCRIPT = "vmlinux-gdb.py"


class State:
    """What the last `fgk attach` found and loaded."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.vmlinux = None          # the vmlinux given or found
        self.vmlinux_source = None   # how it was found when fetched (debuginfod)
        self.loaded = None           # the file passed to symbol-file
        self.relinked = None         # vmlinux.fgk, when shuffled
        self.seed = None
        self.seed_source = None
        self.offset = None
        self.offset_source = None
        self.shuffled = None         # True / False / None (unknown)
        self.nsections = 0
        self.verified = None         # text, how the seed was checked
        self.modules = {}            # name -> (ko path or None, nsections)
        self.layout = None           # libfgk.Layout, when shuffled
        self.timings = {}

    def runtime(self, link: int) -> int:
        """Runtime address of a link address of vmlinux."""
        if self.offset is None:
            raise FgkError("not attached: run 'fgk attach' first")
        if self.layout is None:                 # link order
            return (link + self.offset) & 0xFFFFFFFFFFFFFFFF
        return self.layout.runtime(link, self.offset)

    def link(self, runtime: int) -> int:
        """Link address of a runtime address; FgkError in the padding."""
        if self.offset is None:
            raise FgkError("not attached: run 'fgk attach' first")
        if self.layout is None:
            return (runtime - self.offset) & 0xFFFFFFFFFFFFFFFF
        return self.layout.link(runtime, self.offset)


STATE = State()
_MODULE_BP = None
_elf_cache: dict = {}        # (path, mtime, size) -> libfgk.Vmlinux
_ko_cache: dict = {}
_relink_memo: dict = {}      # (vmlinux, mtime, size, seed) -> (vmlinux.fgk, layout)
_ko_fetched: dict = {}       # module build-id -> (.ko path or None, message)


def _clear_caches(_event=None):
    """Caches of opened files: dropped whenever gdb loads or drops files
    (a file closes when nothing uses it any more: a layout keeps its
    vmlinux open)."""
    _elf_cache.clear()


def _on_exited(_event=None):
    _clear_caches()
    _ko_cache.clear()
    _ko_fetched.clear()
    STATE.modules.clear()


def elf(path):
    """libfgk.Vmlinux of path, opened once while the file is unchanged."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_mtime_ns, st.st_size)
    e = _elf_cache.get(key)
    if e is None:
        e = _elf_cache[key] = core.need_libfgk().Vmlinux(path)
    return e


def say(msg):
    gdb.write(f"fgk: {msg}\n")
    gdb.flush()


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise FgkError(f"{message} (see 'help {self.prog}')")

    def exit(self, status=0, message=None):
        raise FgkError(message or "bad arguments")


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
    data = read_guest(sym.addr + offset, core.BOOT_INFO_SIZE)
    if data is None:
        raise FgkError(f"seed unreadable: cannot read fgkaslr_boot_info at "
                       f"{sym.addr + offset:#x}: pass --seed")
    return core.decode_boot_info(data)


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


def module_roots(vmlinux):
    d = os.path.dirname(os.path.abspath(vmlinux))
    roots = [p for p in os.environ.get("FGK_MODULE_PATH", "").split(":") if p]
    roots += [os.path.join(d, "modules"), os.path.join(d, "build"), d]
    return roots


def find_ko(vmlinux, name):
    """NAME.ko for module `name`: the roots are indexed one at a time, in
    order, so the big kernel tree is walked only if the modules directory
    does not have it."""
    key = name.replace("-", "_")
    for root in module_roots(vmlinux):
        idx = _ko_cache.get(root)
        if idx is None:
            idx = _ko_cache[root] = core.find_module_files([root])
        if key in idx:
            return idx[key]
    return None


def module_sections(mod):
    sa = mod["sect_attrs"]
    secs = {}
    if int(sa) == 0:
        return secs
    for i in range(int(sa["nsections"])):
        attr = sa["attrs"][i]
        name = attr["battr"]["attr"]["name"].string()
        secs[name] = int(attr["address"])
    return secs


def module_build_id(mod):
    """The build-id of a loaded module, from its notes in guest memory
    (mod->notes_attrs: one bin_attribute per SHT_NOTE section, .private the
    note data, .size its size; /sys/module/M/notes), or None."""
    try:
        na = mod["notes_attrs"]
        if int(na) == 0:
            return None
        for i in range(min(int(na["notes"]), 64)):
            attr = na["attrs"][i]
            size = int(attr["size"])
            if not 0 < size <= 4096:
                continue
            bid = core.build_id_from_notes(read_guest(int(attr["private"]), size))
            if bid:
                return bid
    except gdb.error:           # no notes_attrs (CONFIG_SYSFS or CONFIG_KALLSYMS off)
        return None
    return None


def fetch_ko(mod, name):
    """(.ko path or None, message): the module's .ko fetched by its build-id
    from debuginfod ($DEBUGINFOD_URLS), once per build-id and gdb session."""
    lib = core.need_libfgk()
    if not lib.debuginfod_enabled():
        return None, None
    bid = module_build_id(mod)
    if bid is None:
        return None, "its build-id is not readable in guest memory (mod->notes_attrs)"
    hit = _ko_fetched.get(bid)
    if hit is not None:
        return hit
    try:
        path, url = lib.fetch_module(bid, name)
    except FgkError as e:
        hit = (None, str(e))
    else:
        hit = (path, f"build-id {bid} fetched from {url} into {path}" if url else
               f"build-id {bid} from the debuginfod cache: {path}")
    _ko_fetched[bid] = hit
    return hit


def load_module(mod, vmlinux, quiet=False):
    name = mod["name"].string()
    secs = module_sections(mod)
    ko, msg = find_ko(vmlinux, name), None
    if ko is None:
        ko, msg = fetch_ko(mod, name)
        if msg and not quiet:
            if ko is None:
                say(f"module {name}: no {name}.ko under "
                    f"{', '.join(module_roots(vmlinux))} (set FGK_MODULE_PATH); {msg}")
            else:
                say(f"module {name}: {msg}")
    if ko is None:
        STATE.modules[name] = (None, len(secs))
        if not quiet and not msg:
            say(f"module {name}: no {name}.ko under {', '.join(module_roots(vmlinux))} "
                "(set FGK_MODULE_PATH)")
        return False
    cmd = core.add_symbol_file_command(ko, secs)
    confirm = gdb.parameter("confirm")
    gdb.execute("set confirm off")
    try:
        gdb.execute(cmd, to_string=True)
    finally:
        if confirm:
            gdb.execute("set confirm on")
    STATE.modules[name] = (ko, sum(1 for a in secs.values() if a))
    if not quiet:
        say(f"module {name}: {ko} ({STATE.modules[name][1]} sections)")
    return True


def each_module():
    try:
        head = gdb.parse_and_eval("modules")
    except gdb.error:
        return
    mtype = gdb.lookup_type("struct module")
    off = next(f.bitpos // 8 for f in mtype.fields() if f.name == "list")
    charp = gdb.lookup_type("char").pointer()
    node = head["next"]
    end = head.address
    n = 0
    while int(node) != int(end) and n < 10000:
        yield (node.cast(charp) - off).cast(mtype.pointer()).dereference()
        node = node["next"]
        n += 1


def load_all_modules(vmlinux):
    STATE.modules.clear()
    count = 0
    for mod in each_module():
        if load_module(mod, vmlinux):
            count += 1
    return count


class ModuleBreakpoint(gdb.Breakpoint):
    """Loads a module's symbols when the kernel initializes it."""

    def __init__(self):
        super().__init__("do_init_module", internal=True)
        self.silent = True

    def stop(self):
        try:
            mod = gdb.parse_and_eval("mod").dereference()
            if STATE.vmlinux:
                load_module(mod, STATE.vmlinux)
        except Exception as e:          # never stop the guest for this
            gdb.write(f"fgk: module symbols: {e}\n")
        return False


def arm_module_breakpoint():
    global _MODULE_BP
    if _MODULE_BP is not None and _MODULE_BP.is_valid():
        _MODULE_BP.delete()
    _MODULE_BP = None
    try:
        gdb.lookup_global_symbol("do_init_module") or gdb.parse_and_eval("do_init_module")
    except gdb.error:
        return False
    _MODULE_BP = ModuleBreakpoint()
    return True


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
    of IDT gate 0 (asm_exc_divide_error, in the main .text, which .notes
    follows in .rodata), skipping the notes of the vDSO images the kernel
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
        res = verify_seed(elf(relinked), layout, offset, seed)
        st.verified = (f"{res.equal}/{res.total} code bytes of "
                       f"{len(res.per_section)} shuffled functions match")
    t = time.monotonic()
    load_symbols(relinked, offset)
    st.timings["symbol-file"] = time.monotonic() - t
    st.loaded = relinked
    say(f"seed {seed} ({st.seed_source}); {st.verified}")
    say(f"loaded {relinked} at offset {offset:#x} ({st.nsections} shuffled sections)")


def _after_load(st, no_modules, early):
    """Sources, the kernel's gdb scripts, module symbols."""
    src = add_source_dir(st.vmlinux)
    say(f"kernel offset {st.offset:#x} from {st.offset_source}")
    if src:
        say(f"sources: {src}")
    say(f"kernel gdb scripts: {load_kernel_scripts(st.vmlinux)}")
    if no_modules:
        return
    if not early:
        n = load_all_modules(st.vmlinux)
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


# --------------------------------------------------------------------------
# commands

def _run(fn, arg, name):
    try:
        return fn(gdb.string_to_argv(arg))
    except FgkError as e:
        raise gdb.GdbError(f"fgk {name}: {e}") from None


class FgkPrefix(gdb.Command):
    """Debug kernels built with function-granular KASLR (FG-KASLR).

fgk attach   load the shuffled kernel's symbols for the connected guest
fgk info     what fgk attach found: files, seed, offset, counts
fgk addr     translate addresses and symbols (as 'fgk addr')
fgk modules  reload the symbols of loaded modules

See docs/fgk-gdb.md in the fgk repository."""

    def __init__(self):
        super().__init__("fgk", gdb.COMMAND_USER, gdb.COMPLETE_NONE, True)


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


def modules_cmd(argv):
    if STATE.vmlinux is None:
        raise FgkError("not attached: run 'fgk attach' first")
    check_connected()
    _ko_cache.clear()
    n = load_all_modules(STATE.vmlinux)
    arm_module_breakpoint()
    say(f"modules: {n} loaded")


class FgkModules(gdb.Command):
    """Reload the symbols of every module loaded in the guest.

Usage: fgk modules
Walks the kernel's module list; for each module finds NAME.ko (under
$FGK_MODULE_PATH, <vmlinux dir>/modules and the kernel build tree) and runs
'add-symbol-file' with the address of every section (a shuffled module has
one .text.* section per function).  Also re-arms the do_init_module
breakpoint that loads modules inserted later."""

    def __init__(self):
        super().__init__("fgk modules", gdb.COMMAND_USER, gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        _run(modules_cmd, arg, "modules")


_registered = False


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
