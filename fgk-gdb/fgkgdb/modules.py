"""fgk-gdb: module symbols (the .ko files, their sections in the guest,
the do_init_module breakpoint) and `fgk modules`."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile

import gdb

from . import core
from .core import FgkError
from .guest import check_connected, read_guest
from .state import STATE, _ko_cache, _ko_fetched, _run, elf, say

_MODULE_BP = None           # the do_init_module breakpoint
_ZEROED = {}                # (.ko, mtime, size) -> (path gdb loads, note)
_ZERO_DIR = None            # this gdb's private directory of those copies


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


def _zero_dir():
    global _ZERO_DIR
    if _ZERO_DIR is None or not os.path.isdir(_ZERO_DIR):
        _ZERO_DIR = tempfile.mkdtemp(prefix="fgk-gdb-ko-")
        atexit.register(shutil.rmtree, _ZERO_DIR, True)
    return _ZERO_DIR


def gdb_loadable_ko(ko, name=None):
    """(file to give add-symbol-file, note or None); a copy is called
    NAME.ko (gdb names it in `info symbol`), else as `ko`.

    gdb places a relocatable file's sections itself and relocates its DWARF
    with those addresses only when every section of the file has address 0
    (gdb's symfile.c, default_symfile_offsets: "skip this step if the
    relocatable file has a section with an assigned VMA").  Otherwise
    every DWARF address stays an offset in its own section plus .text's
    address: functions, lines and breakpoints by name land at
    0x10-and-so-on while the ELF symbols are right.  Linux 6.12's
    scripts/module.lds.S gives __patchable_function_entries and .data no
    address (every other output section has "0"), so `ld -r` leaves them at
    the location counter (0x10 and 0x88 in fgk_test.ko); upstream fixed it
    in 4afc71bba8b7 ("module.lds,codetag: force 0 sh_addr for sections").
    Such a .ko is loaded as a copy with those addresses 0 (objcopy
    --change-section-address), made once per gdb session; the note comes
    with the first load only."""
    st = os.stat(ko)
    key = (os.path.realpath(ko), st.st_mtime_ns, st.st_size)
    hit = _ZEROED.get(key)
    if hit and os.path.isfile(hit[0]):
        return hit[0], None
    placed = [s.name for s in elf(ko).sections() if s.addr]
    if not placed:
        hit = (ko, None)
    elif not shutil.which("objcopy"):
        hit = (ko, f"sections {', '.join(placed)} have an address in the .ko, and gdb then "
                   "leaves its DWARF unrelocated (wrong lines and breakpoints by name); "
                   "install objcopy (binutils) to load a copy with address 0")
    else:
        out = os.path.join(tempfile.mkdtemp(dir=_zero_dir()),
                           f"{name}.ko" if name else os.path.basename(ko))
        args = ["objcopy"]
        for name in placed:
            args += ["--change-section-address", f"{name}=0"]
        r = subprocess.run(args + [ko, out], capture_output=True, text=True)
        if r.returncode != 0:
            err = (r.stderr.strip().splitlines() or ["failed"])[-1]
            hit = (ko, f"objcopy could not give {', '.join(placed)} address 0 ({err}): "
                       "its DWARF stays unrelocated")
        else:
            hit = (out, f"sections {', '.join(placed)} had an address in the .ko: "
                        f"gdb reads a copy with address 0 ({out})")
    _ZEROED[key] = hit
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
    loadable, note = gdb_loadable_ko(ko, name)
    cmd = core.add_symbol_file_command(loadable, secs)
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
        if note:
            say(f"module {name}: {note}")
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
