"""fgk-gdb: loading vmlinux symbols, source directories and the kernel's
own gdb scripts (vmlinux-gdb.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time

import gdb

from . import core
from .state import elf


KERNEL_SCRIPT = "vmlinux-gdb.py"


# --------------------------------------------------------------------------
# loading

# gdb's index of a relinked file, beside its cache entry (docs/fgk-gdb.md,
# "The gdb index"): written once in the background, then read instead of
# indexing the DWARF again at every attach.
INDEX_SUFFIX = ".gdb-index"
INDEX_LOCK_STALE_S = 600


def index_enabled():
    return os.environ.get("FGK_GDB_INDEX", "1") != "0"


def _index_of(path):
    """The index beside `path`, if it is newer than `path` (an index of an
    entry that was since rewritten is not used)."""
    idx = path + INDEX_SUFFIX
    try:
        return idx if os.stat(idx).st_mtime_ns >= os.stat(path).st_mtime_ns else None
    except OSError:
        return None


def write_index_in_background(path, build_id):
    """Start a niced gdb, apart from this session, that indexes `path` into
    PATH.gdb-index (gdb's own index-cache format; through a temporary
    directory and a rename, so a reader sees a whole index or none).  One
    writer per file (PATH.gdb-index.lock); nothing happens when it exists or
    the index is there.  Returns whether a writer was started."""
    if not build_id or _index_of(path) or not shutil.which("gdb"):
        return False
    lock = path + INDEX_SUFFIX + ".lock"
    try:
        if time.time() - os.stat(lock).st_mtime > INDEX_LOCK_STALE_S:
            os.unlink(lock)             # a writer that died
    except OSError:
        pass
    try:
        os.close(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        return False
    # the cache's cleaner removes this directory once writer.pid's process
    # is gone or it is INDEX_LOCK_STALE_S old (a writer that was killed)
    tmp = tempfile.mkdtemp(prefix=".gdb-index.", dir=os.path.dirname(path))
    script = ('echo $$ >"$1/writer.pid" && nice -n 10 gdb -batch -nx -iex "set auto-load no" '
              '-iex "set debuginfod enabled off" -iex "set index-cache directory $1" '
              '-iex "set index-cache enabled on" -ex "file $2" >/dev/null 2>&1 && '
              'mv -f "$1/$3.gdb-index" "$2.gdb-index"; rm -rf "$1" "$2.gdb-index.lock"')
    subprocess.Popen(["sh", "-c", script, "fgk-gdb-index", tmp, path, build_id],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    return True


def _index_cache_settings():
    try:
        return gdb.parameter("index-cache enabled"), gdb.parameter("index-cache directory")
    except (gdb.error, RuntimeError):
        return None


def load_symbols(path, offset, index=False, build_id=None):
    """`symbol-file -o OFFSET PATH`; but the per-CPU section (linked at 0 on
    x86_64 SMP) is not moved by KASLR (docs/layout-spec.md section 9), so
    with a non-zero offset load it with `add-symbol-file -o OFFSET -s
    .data..percpu 0` instead: per_cpu()/$lx_current() stay right.

    index (a relinked file): gdb's index-cache is pointed at PATH's own
    index for this load only, and is off otherwise: a relinked file has
    its vmlinux's build-id, which is all gdb keys its index cache by, so a
    user's index cache could hand it the index of another layout.  Returns
    "used", "none" or "not applicable"."""
    confirm = gdb.parameter("confirm")
    gdb.execute("set confirm off")
    saved = _index_cache_settings() if index else None
    tmp, how = None, "not applicable"
    try:
        if saved is not None:
            idx = _index_of(path) if (build_id and index_enabled()) else None
            how = "none"
            if idx:
                tmp = tempfile.mkdtemp(prefix="fgk-gdb-index.")
                os.symlink(idx, os.path.join(tmp, f"{build_id}.gdb-index"))
                gdb.execute(f"set index-cache directory {tmp}", to_string=True)
                gdb.execute("set index-cache enabled on", to_string=True)
                how = "used"
            else:
                gdb.execute("set index-cache enabled off", to_string=True)
        percpu = elf(path).section(".data..percpu")
        if offset and percpu is not None and percpu.addr == 0:
            gdb.execute("symbol-file", to_string=True)      # drop the old symbols
            gdb.execute(f"add-symbol-file {core.quote(path)} -o {offset:#x} "
                        "-s .data..percpu 0", to_string=True)
        else:
            gdb.execute(f"symbol-file -o {offset:#x} {core.quote(path)}", to_string=True)
    finally:
        if saved is not None:
            enabled, directory = saved
            if directory:
                gdb.execute(f"set index-cache directory {directory}", to_string=True)
            gdb.execute(f"set index-cache enabled {'on' if enabled else 'off'}", to_string=True)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        if confirm:
            gdb.execute("set confirm on")
    return how


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
