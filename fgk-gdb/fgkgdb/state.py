"""fgk-gdb: what `fgk attach` found (STATE), caches of opened files, and
the helpers every command uses."""

from __future__ import annotations

import argparse
import os

import gdb

from . import core
from .core import FgkError


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
        self.gdb_index = None        # how the relinked file's gdb index was used

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


def _run(fn, arg, name):
    try:
        return fn(gdb.string_to_argv(arg))
    except FgkError as e:
        raise gdb.GdbError(f"fgk {name}: {e}") from None
