"""libfgk: the Python binding of the fgk C library (ctypes).

Every format fgk knows (seeds, seed records, vmlinux sections and symbols,
the FG-KASLR layout, relinking, VMCOREINFO and crash dumps, the "Kernel
Offset:" console line) is parsed once, in C, by libfgk; this module only
converts arguments and results.  fgk-gdb, the QEMU runner, the benchmarks
and the tests all import it the same way::

    import libfgk
    rec = libfgk.read_seed_record("seeds/example.seed")
    with libfgk.Vmlinux("build/kernel/vmlinux") as vm:
        layout = vm.layout(rec.seed)

Where things are (docs/python.md):

  * this package: ``<repo>/python/libfgk``, found as ``libfgk`` on
    ``sys.path``.  Each kind of entry point puts ``<repo>/python`` there in
    one place: the gdb loader ``fgk-gdb/fgk.py`` (the directory next to its
    own), the QEMU runner's ``qemu-profiles/fgkbase.py`` (which ``fgkrun``
    and the runner's other modules, ``qemu-profiles/run``, ``fgkdump``, the
    benchmarks and ``scripts/demo`` import first), and the tests'
    ``tests/pytest.ini`` (``pythonpath``).  Nothing else inserts it.
  * the shared library: ``$FGK_LIBFGK`` if set, else
    ``<repo>/build/lib/libfgk.so.1`` (``make tools``), else the dynamic
    linker's search path.

Every failure is a :class:`FgkError` (a subclass per error code), carrying the C
error's code, errno and the file it is about.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
from ctypes import (POINTER, Structure, byref, c_bool, c_char, c_char_p, c_int,
                    c_size_t, c_uint, c_uint8, c_uint32, c_uint64, c_void_p)
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "FgkError", "FgkMemoryError", "FgkOSError", "ElfError", "NotFgkaslrError",
    "NoSymtabError", "NoFitError", "SeedError", "RecordError", "BuildIdError",
    "FgkLookupError", "KallsymsError", "CryptoError", "InvalidError", "VmcoreError",
    "NoVmcoreinfoError", "library_path", "parse_seed", "format_seed", "random_seed",
    "SeedRecord", "parse_seed_record", "read_seed_record",
    "Vmlinux", "Layout", "Domain", "Section", "Symbol", "SectionInfo", "Addr",
    "VmcoreInfo", "read_vmcore", "parse_vmcoreinfo", "unflatten",
    "kernel_offset_scan", "seed_scan", "module_name_eq", "find_module", "module_files",
    "build_id_from_notes", "BuildIdNote", "find_build_id_notes", "parse_build_id",
    "parse_offset", "BootInfo", "decode_boot_info",
]

REPO = Path(__file__).resolve().parent.parent.parent
SONAME = "libfgk.so.1"
NONCE_SIZE = 12  # FGK_NONCE_SIZE

# enum fgk_error_code
ERR_NOMEM, ERR_OS, ERR_ELF, ERR_NOT_FGKASLR, ERR_NO_SYMTAB, ERR_NO_FIT, \
    ERR_SEED, ERR_RECORD, ERR_BUILD_ID, ERR_LOOKUP, ERR_KALLSYMS, ERR_CRYPTO, \
    ERR_INVALID, ERR_VMCORE, ERR_NO_VMCOREINFO = range(1, 16)
# enum fgk_vmlinux_kind
KIND_NAMES = ("plain", "fgkaslr", "relinked")
# enum fgk_vmcore_format / fgk_vmcore_seed_state
VMCORE_FORMATS = ("text", "elf", "kdump", "kdump-flat")
SEED_ABSENT, SEED_DISABLED, SEED_PRESENT = range(3)


class FgkError(Exception):
    """A libfgk error: ``str(e)`` is ``"<path>: <message>"`` (or the message);
    ``code`` is the C ``enum fgk_error_code`` (``libfgk.ERR_*``).

    ``FgkError(message, code)`` makes an instance of the subclass for that
    code (``NoFitError`` for ``ERR_NO_FIT``, ...), so ``except
    libfgk.SeedError`` catches exactly the C ``FGK_ERR_SEED`` failures and
    ``except FgkError`` all of them."""

    def __new__(cls, message: str = "", code: int = ERR_INVALID, *args, **kwargs):
        if cls is FgkError:
            cls = _ERROR_CLASSES.get(code, FgkError)
        return super().__new__(cls)

    def __init__(self, message: str, code: int = ERR_INVALID, path: str | None = None,
                 errnum: int = 0):
        self.message = message
        self.code = code
        self.path = path
        self.errnum = errnum
        super().__init__(str(self))
        self.args = (str(self),)

    def __str__(self):
        return f"{self.path}: {self.message}" if self.path else self.message


class FgkMemoryError(FgkError):
    """FGK_ERR_NOMEM"""


class FgkOSError(FgkError, OSError):
    """FGK_ERR_OS: a system call failed (``errnum`` is its errno)."""

    def __init__(self, message: str, code: int = ERR_OS, path: str | None = None,
                 errnum: int = 0):
        FgkError.__init__(self, message, code, path, errnum)
        self.errno, self.filename = errnum or None, path


class ElfError(FgkError):
    """FGK_ERR_ELF: malformed or unexpected ELF."""


class NotFgkaslrError(FgkError):
    """FGK_ERR_NOT_FGKASLR: the vmlinux has no randomized sections."""


class NoSymtabError(FgkError):
    """FGK_ERR_NO_SYMTAB: the file is stripped."""


class NoFitError(FgkError):
    """FGK_ERR_NO_FIT: the layout does not fit before the end of the
    randomized region (``__fgkaslr_text_end``, or ``_etext`` in a vmlinux
    without it: spec section 3)."""


class SeedError(FgkError):
    """FGK_ERR_SEED: bad seed text."""


class RecordError(FgkError):
    """FGK_ERR_RECORD: bad seed record."""


class BuildIdError(FgkError):
    """FGK_ERR_BUILD_ID: build-ids differ or are missing."""


class FgkLookupError(FgkError, LookupError):
    """FGK_ERR_LOOKUP: no such symbol / address / module."""


class KallsymsError(FgkError):
    """FGK_ERR_KALLSYMS: bad or foreign kallsyms capture."""


class CryptoError(FgkError):
    """FGK_ERR_CRYPTO"""


class InvalidError(FgkError, ValueError):
    """FGK_ERR_INVALID: invalid argument or input."""


class VmcoreError(FgkError):
    """FGK_ERR_VMCORE: unreadable or malformed dump."""


class NoVmcoreinfoError(VmcoreError):
    """FGK_ERR_NO_VMCOREINFO: the dump has no VMCOREINFO."""


_ERROR_CLASSES = {
    ERR_NOMEM: FgkMemoryError, ERR_OS: FgkOSError, ERR_ELF: ElfError,
    ERR_NOT_FGKASLR: NotFgkaslrError, ERR_NO_SYMTAB: NoSymtabError,
    ERR_NO_FIT: NoFitError, ERR_SEED: SeedError, ERR_RECORD: RecordError,
    ERR_BUILD_ID: BuildIdError, ERR_LOOKUP: FgkLookupError,
    ERR_KALLSYMS: KallsymsError, ERR_CRYPTO: CryptoError, ERR_INVALID: InvalidError,
    ERR_VMCORE: VmcoreError, ERR_NO_VMCOREINFO: NoVmcoreinfoError,
}


# --------------------------------------------------------------------------
# loading the library

def library_path(environ=None) -> str:
    """Where libfgk.so.1 is: $FGK_LIBFGK, <repo>/build/lib, or the dynamic
    linker's path; FgkError if none has it."""
    environ = os.environ if environ is None else environ
    tried = []
    env = environ.get("FGK_LIBFGK")
    if env:
        if os.path.isfile(env):
            return env
        tried.append(f"$FGK_LIBFGK={env}")
    cand = REPO / "build" / "lib" / SONAME
    if cand.is_file():
        return str(cand)
    tried.append(str(cand))
    found = ctypes.util.find_library("fgk")
    if found:
        return found
    tried.append("the dynamic linker's path")
    raise FgkError(f"{SONAME} not found (tried {', '.join(tried)}): run 'make tools' "
                   "in the fgk repository, or set $FGK_LIBFGK")


class _Error(Structure):
    _fields_ = [("code", c_int), ("errnum", c_int), ("path", c_char_p),
                ("message", c_char_p)]


class _Seed(Structure):
    _fields_ = [("bytes", c_uint8 * 32)]


class _SeedRecord(Structure):
    _fields_ = [("seed", _Seed), ("build_id", c_char_p), ("release", c_char_p),
                ("has_offset", c_bool), ("offset", c_uint64), ("note", c_char_p)]


class _Section(Structure):
    _fields_ = [("index", c_size_t), ("name", c_char_p), ("addr", c_uint64),
                ("size", c_uint64), ("align", c_uint64), ("new_addr", c_uint64)]


class _Symbol(Structure):
    _fields_ = [("name", c_char_p), ("addr", c_uint64), ("size", c_uint64),
                ("type", c_char), ("absolute", c_bool)]


class _SectionInfo(Structure):
    _fields_ = [("index", c_size_t), ("name", c_char_p), ("type", c_uint32),
                ("flags", c_uint64), ("addr", c_uint64), ("size", c_uint64),
                ("align", c_uint64), ("entsize", c_uint64)]


class _Addr(Structure):
    _fields_ = [("item", c_char_p), ("runtime", c_uint64), ("link", c_uint64),
                ("has_symbol", c_bool), ("sym", _Symbol), ("section", POINTER(_Section)),
                ("line", c_char_p)]


class _RelinkStats(Structure):
    _fields_ = [("sections_moved", c_size_t), ("symbols", c_size_t),
                ("relocations", c_size_t), ("debug_relocations", c_size_t)]


class _RelinkResult(Structure):
    _fields_ = [("path", c_char_p), ("cache_error", c_char_p), ("cached", c_bool),
                ("in_cache", c_bool), ("written", c_bool), ("stats", _RelinkStats)]


class _Vmcoreinfo(Structure):
    _fields_ = [("format", c_int), ("raw", c_char_p), ("osrelease", c_char_p),
                ("build_id", c_char_p), ("has_offset", c_bool), ("offset", c_uint64),
                ("seed_state", c_int), ("seed", _Seed)]


class _Fetch(Structure):
    _fields_ = [("path", c_char_p), ("url", c_char_p)]


BUILD_ID_MIN, BUILD_ID_MAX = 8, 64          # FGK_BUILD_ID_MIN/MAX
KASLR_ALIGN = 0x200000                      # FGK_KASLR_ALIGN
BOOT_INFO_MAGIC = 0x4B474621                # FGK_BOOT_INFO_MAGIC
BOOT_INFO_SIZE_MIN, BOOT_INFO_SIZE_MAX = 88, 328
BOOT_PHASES = 6
BOOT_HAS_MCOUNT, BOOT_HAS_ENTROPY, BOOT_HAS_PHASES, BOOT_HAS_SCHED = 1, 2, 4, 8
BOOT_HAS_DOMAINS, BOOT_RANGE_DOMAINS = 0x10, 5


class _BuildIdNote(Structure):
    _fields_ = [("addr", c_uint64), ("size", c_size_t),
                ("build_id", c_char * (2 * BUILD_ID_MAX + 1)), ("embedded", c_bool)]


class _BootInfo(Structure):
    _fields_ = [("size", c_size_t), ("has", c_uint32), ("magic", c_uint32),
                ("flags", c_uint32), ("nr_sections", c_uint32), ("heap_used", c_uint32),
                ("heap_size", c_uint64), ("cycles", c_uint64), ("text_start", c_uint64),
                ("text_end", c_uint64), ("text_used", c_uint64), ("seed", _Seed),
                ("mcount_cycles", c_uint64), ("entropy_bits", c_uint32),
                ("entropy_src", c_uint32), ("phase_cycles", c_uint64 * BOOT_PHASES),
                ("nr_sched_sections", c_uint32), ("sched_start", c_uint64),
                ("sched_end", c_uint64), ("sched_used", c_uint64),
                ("dom_sections", c_uint32 * BOOT_RANGE_DOMAINS),
                ("dom_start", c_uint64 * BOOT_RANGE_DOMAINS),
                ("dom_end", c_uint64 * BOOT_RANGE_DOMAINS),
                ("dom_used", c_uint64 * BOOT_RANGE_DOMAINS)]


# Every ctypes mirror of a struct in <fgk/fgk.h>: tests/test_libfgk.py
# compiles the header and checks each field's offset and size, the struct's
# size, and that the header's struct has no field the mirror lacks.
class _KallsymsOrigin(Structure):
    _fields_ = [("offset", c_uint64), ("by_symbol", c_size_t), ("by_elimination", c_size_t),
                ("guessed", c_size_t), ("guessed_names", c_void_p)]


_MIRRORS = {
    "fgk_error": _Error, "fgk_seed": _Seed, "fgk_seed_record": _SeedRecord,
    "fgk_section": _Section, "fgk_symbol": _Symbol, "fgk_section_info": _SectionInfo,
    "fgk_addr": _Addr, "fgk_relink_stats": _RelinkStats,
    "fgk_relink_result": _RelinkResult, "fgk_vmcoreinfo": _Vmcoreinfo,
    "fgk_fetch": _Fetch, "fgk_build_id_note": _BuildIdNote, "fgk_boot_info": _BootInfo,
    "fgk_kallsyms_origin": _KallsymsOrigin,
}

_ERR = POINTER(_Error)
# typedef struct fgk_error *(*fgk_module_each_fn)(path, name, arg): a
# c_void_p result (a Python callback cannot return a POINTER instance)
_MODULE_EACH_FN = ctypes.CFUNCTYPE(c_void_p, c_char_p, c_char_p, c_void_p)
_VM = c_void_p
_LAYOUT = c_void_p  # struct fgk_layout is opaque: its getters below

# name: (restype, argtypes); restype _ERR means "raise on error"
_PROTOTYPES = {
    "fgk_error_free": (None, [_ERR]),
    "fgk_seed_parse": (_ERR, [c_char_p, POINTER(_Seed)]),
    "fgk_seed_format": (None, [POINTER(_Seed), c_char_p]),
    "fgk_seed_random": (_ERR, [POINTER(_Seed)]),
    "fgk_seed_record_parse": (_ERR, [c_char_p, c_char_p, POINTER(_SeedRecord)]),
    "fgk_seed_record_read": (_ERR, [c_char_p, POINTER(_SeedRecord)]),
    "fgk_seed_record_format": (_ERR, [POINTER(_SeedRecord), POINTER(c_void_p)]),
    "fgk_seed_record_write": (_ERR, [POINTER(_SeedRecord), c_char_p]),
    "fgk_seed_record_clear": (None, [POINTER(_SeedRecord)]),
    "fgk_seed_record_check": (_ERR, [POINTER(_SeedRecord), c_char_p, _VM]),
    "fgk_vmlinux_open": (_ERR, [c_char_p, POINTER(_VM)]),
    "fgk_vmlinux_close": (None, [_VM]),
    "fgk_vmlinux_build_id": (c_char_p, [_VM]),
    "fgk_vmlinux_release": (c_char_p, [_VM]),
    "fgk_vmlinux_contains": (c_bool, [_VM, c_uint64]),
    "fgk_vmlinux_section": (_ERR, [_VM, c_char_p, POINTER(_SectionInfo)]),
    "fgk_vmlinux_shnum": (c_size_t, [_VM]),
    "fgk_vmlinux_machine": (c_uint, [_VM]),
    "fgk_vmlinux_section_at": (_ERR, [_VM, c_size_t, POINTER(_SectionInfo)]),
    "fgk_vmlinux_read": (_ERR, [_VM, c_uint64, c_void_p, c_size_t]),
    "fgk_vmlinux_kind": (_ERR, [_VM, POINTER(c_int)]),
    "fgk_symbol_lookup": (_ERR, [_VM, c_char_p, POINTER(_Symbol)]),
    "fgk_symbol_at": (_ERR, [_VM, c_uint64, POINTER(_Symbol)]),
    "fgk_layout_compute": (_ERR, [_VM, POINTER(_Seed), POINTER(_LAYOUT)]),
    "fgk_layout_free": (None, [_LAYOUT]),
    "fgk_layout_map": (c_uint64, [_LAYOUT, c_uint64]),
    "fgk_layout_unmap": (c_bool, [_LAYOUT, c_uint64, POINTER(c_uint64)]),
    "fgk_layout_from_kallsyms": (_ERR, [_VM, c_char_p, c_size_t, c_char_p, POINTER(_LAYOUT),
                                        POINTER(_KallsymsOrigin)]),
    "fgk_kallsyms_origin_clear": (None, [POINTER(_KallsymsOrigin)]),
    "fgk_layout_section_at": (POINTER(_Section), [_LAYOUT, c_uint64]),
    "fgk_layout_seed": (POINTER(_Seed), [_LAYOUT]),
    "fgk_layout_start": (c_uint64, [_LAYOUT]),
    "fgk_layout_limit": (c_uint64, [_LAYOUT]),
    "fgk_layout_end": (c_uint64, [_LAYOUT]),
    "fgk_layout_sections": (POINTER(_Section), [_LAYOUT, POINTER(c_size_t)]),
    "fgk_layout_order": (POINTER(c_uint32), [_LAYOUT]),
    "fgk_layout_ndomains": (c_size_t, [_LAYOUT]),
    "fgk_layout_domain": (c_char_p, [_LAYOUT, c_size_t, POINTER(c_uint64), POINTER(c_uint64),
                                     POINTER(c_uint64), POINTER(c_size_t), POINTER(c_size_t)]),
    "fgk_layout_domain_nonce": (POINTER(c_uint8), [_LAYOUT, c_size_t]),
    "fgk_layout_domain_limit_symbol": (c_char_p, [_LAYOUT, c_size_t]),
    "fgk_addr_translate": (_ERR, [_VM, _LAYOUT, c_uint64, c_char_p, POINTER(_Addr)]),
    "fgk_addr_clear": (None, [POINTER(_Addr)]),
    "fgk_relink": (_ERR, [_VM, _LAYOUT, c_char_p, POINTER(_RelinkStats)]),
    "fgk_relink_cache_path": (_ERR, [_VM, POINTER(_Seed), POINTER(c_void_p)]),
    "fgk_relink_cached": (_ERR, [_VM, _LAYOUT, POINTER(c_void_p), POINTER(c_bool)]),
    "fgk_relink_through_cache": (_ERR, [_VM, _LAYOUT, c_char_p, c_uint,
                                        POINTER(_RelinkResult)]),
    "fgk_relink_result_clear": (None, [POINTER(_RelinkResult)]),
    "fgk_vmcoreinfo_parse": (_ERR, [c_char_p, c_size_t, c_char_p, POINTER(_Vmcoreinfo)]),
    "fgk_vmcore_read": (_ERR, [c_char_p, POINTER(_Vmcoreinfo)]),
    "fgk_vmcoreinfo_clear": (None, [POINTER(_Vmcoreinfo)]),
    "fgk_vmcore_unflatten": (_ERR, [c_char_p, c_char_p]),
    "fgk_kernel_offset_scan": (c_bool, [c_char_p, c_size_t, POINTER(c_uint64)]),
    "fgk_seed_scan": (c_int, [c_char_p, c_size_t, POINTER(_Seed), POINTER(c_bool)]),
    "fgk_debuginfod_enabled": (c_bool, []),
    "fgk_vmlinux_fetch": (_ERR, [c_char_p, POINTER(_Fetch), POINTER(_VM)]),
    "fgk_fetch_clear": (None, [POINTER(_Fetch)]),
    "fgk_module_fetch": (_ERR, [c_char_p, c_char_p, POINTER(_Fetch), POINTER(c_void_p)]),
    "fgk_module_close": (None, [c_void_p]),
    "fgk_module_name_eq": (c_bool, [c_char_p, c_size_t, c_char_p, c_size_t]),
    "fgk_notes_build_id": (_ERR, [c_char_p, c_size_t, POINTER(c_void_p)]),
    "fgk_notes_find_build_ids": (_ERR, [c_char_p, c_size_t, c_uint64,
                                        POINTER(POINTER(_BuildIdNote)), POINTER(c_size_t)]),
    "fgk_build_id_parse": (_ERR, [c_char_p, POINTER(c_void_p)]),
    "fgk_offset_parse": (_ERR, [c_char_p, c_uint64, POINTER(c_uint64)]),
    "fgk_boot_info_decode": (_ERR, [c_char_p, c_size_t, c_char_p, POINTER(_BootInfo)]),
    "fgk_boot_info_flag_name": (c_char_p, [c_uint32]),
    "fgk_boot_info_phase_name": (c_char_p, [c_uint]),
    "fgk_module_find": (_ERR, [POINTER(c_char_p), c_char_p, POINTER(c_void_p)]),
    "fgk_module_each": (_ERR, [POINTER(c_char_p), _MODULE_EACH_FN, c_void_p]),
}

_lib = None
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [c_void_p]
_libc.free.restype = None


def _L():
    """The loaded library (loaded on first use, so that importing this
    module never fails: fgk-gdb can say 'run make tools' instead)."""
    global _lib
    if _lib is None:
        path = library_path()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise FgkError(f"cannot load {path}: {e} (run 'make tools')") from None
        for name, (res, args) in _PROTOTYPES.items():
            f = getattr(lib, name)
            f.restype = res
            f.argtypes = args
        _lib = lib
    return _lib


def _s(b) -> str | None:
    return None if b is None else b.decode("utf-8", "surrogateescape")


def _b(s) -> bytes:
    if isinstance(s, bytes):
        return s
    return os.fsencode(s) if isinstance(s, os.PathLike) else \
        str(s).encode("utf-8", "surrogateescape")


def _text(s, what: str, code: int = ERR_INVALID, path=None) -> bytes:
    """Text for a C string: refuses NUL bytes (C would stop there).  The
    error is about the file `path` when given (its path field)."""
    b = _b(s)
    if b"\0" in b:
        raise FgkError(f"{what}: contains a NUL byte", code,
                       str(path) if path is not None else None)
    return b


def _check(err):
    """Raise FgkError for a non-NULL struct fgk_error * (and free it)."""
    if not err:
        return
    e = err.contents
    exc = FgkError(_s(e.message) or "unknown error", e.code, _s(e.path), e.errnum)
    _L().fgk_error_free(err)
    raise exc


def _take_string(p: c_void_p) -> str | None:
    if not p.value:
        return None
    s = ctypes.string_at(p.value).decode("utf-8", "surrogateescape")
    _libc.free(p.value)
    return s


# --------------------------------------------------------------------------
# seeds (docs/layout-spec.md section 2)

def _seed_struct(seed) -> _Seed:
    s = _Seed()
    _check(_L().fgk_seed_parse(_text(seed, "seed"), byref(s)))
    return s


def parse_seed(text) -> str:
    """Seed text (64 hex digits, optionally ``fgkaslr_seed=``, surrounding
    white space ignored) -> 64 lowercase hex digits; FgkError otherwise."""
    return format_seed(_seed_struct(text))


def format_seed(seed) -> str:
    if not isinstance(seed, _Seed):
        seed = _seed_struct(seed)
    buf = ctypes.create_string_buffer(65)
    _L().fgk_seed_format(byref(seed), buf)
    return buf.value.decode()


def random_seed() -> str:
    s = _Seed()
    _check(_L().fgk_seed_random(byref(s)))
    return format_seed(s)


# --------------------------------------------------------------------------
# seed records (docs/seed-records.md)

@dataclass
class SeedRecord:
    seed: str                       # 64 lowercase hex digits
    build_id: str | None = None     # lowercase hex
    release: str | None = None
    offset: int | None = None
    note: str | None = None

    def _struct(self) -> _SeedRecord:
        r = _SeedRecord()
        r.seed = _seed_struct(self.seed)
        r.build_id = _text(self.build_id, "build-id") if self.build_id is not None else None
        r.release = _text(self.release, "release") if self.release is not None else None
        r.has_offset = self.offset is not None
        r.offset = (self.offset or 0) & 0xFFFFFFFFFFFFFFFF
        r.note = _text(self.note, "note") if self.note is not None else None
        return r

    def format(self) -> str:
        """The canonical text (libfgk's writer: keys in order, lowercase)."""
        out = c_void_p()
        _check(_L().fgk_seed_record_format(byref(self._struct()), byref(out)))
        return _take_string(out)

    def write(self, path):
        """Write atomically (temporary file + rename)."""
        _check(_L().fgk_seed_record_write(byref(self._struct()), _b(path)))

    def check(self, vm: "Vmlinux", record_path=None):
        """FgkError if the record's build-id differs from vm's."""
        _check(_L().fgk_seed_record_check(byref(self._struct()),
                                          _b(record_path) if record_path else None,
                                          vm._handle()))

    def as_dict(self) -> dict:
        """The keys present, as in the file (offset as an int)."""
        d = {"seed": self.seed}
        for k, v in (("build-id", self.build_id), ("release", self.release),
                     ("offset", self.offset), ("note", self.note)):
            if v is not None:
                d[k] = v
        return d


def _record_from(r: _SeedRecord) -> SeedRecord:
    try:
        return SeedRecord(format_seed(r.seed), _s(r.build_id), _s(r.release),
                          r.offset if r.has_offset else None, _s(r.note))
    finally:
        _L().fgk_seed_record_clear(byref(r))


def parse_seed_record(text, path=None) -> SeedRecord:
    """Parse seed record text; errors carry `path` (the file the text came
    from, or None) in their path field and name the line."""
    r = _SeedRecord()
    _check(_L().fgk_seed_record_parse(_text(text, "seed record", ERR_RECORD, path),
                                      _b(path) if path is not None else None, byref(r)))
    return _record_from(r)


def read_seed_record(path) -> SeedRecord:
    r = _SeedRecord()
    _check(_L().fgk_seed_record_read(_b(path), byref(r)))
    return _record_from(r)


# --------------------------------------------------------------------------
# vmlinux, symbols, layout

@dataclass(frozen=True)
class SectionInfo:
    index: int
    name: str
    type: int
    flags: int
    addr: int
    size: int
    align: int
    entsize: int = 0


def _section_info(info) -> SectionInfo:
    return SectionInfo(info.index, _s(info.name), info.type, info.flags,
                       info.addr, info.size, info.align, info.entsize)


@dataclass(frozen=True)
class Symbol:
    name: str
    addr: int           # link address
    size: int
    type: str           # nm(1) letter
    absolute: bool


@dataclass(frozen=True)
class Addr:
    """One item of ``fgk addr`` translated (Layout.addr)."""
    item: str           # as shown: "[<...>]" stripped, SYMBOL[+0xOFF]
    runtime: int
    link: int
    symbol: "Symbol | None"
    section: str | None  # the randomized section holding it
    line: str           # fgk addr's output line, without the newline


@dataclass(frozen=True)
class Section:
    """A randomized section (docs/layout-spec.md section 3) and where the
    layout puts it."""
    index: int
    name: str
    addr: int           # link address
    size: int
    align: int
    new_addr: int


@dataclass(frozen=True)
class Domain:
    """A shuffle domain of a layout (docs/layout-spec.md section 3, version
    3: the range domains ``.sched.text.``, ``.spinlock.text.``,
    ``.static_call.text.``, ``.noinstr.text.``, ``.cpuidle.text.``, then
    ``.text.``; fgk_layout_domain()).  Its
    sections are ``Layout.sections[first:first + n]``, shuffled with
    `nonce` and placed in [start, limit) up to `end`; start, limit, end
    and limit_symbol are None for an empty domain (a vmlinux of layout
    version 1 has no .sched.text.* one, one of version 2 none of the
    other range domains)."""
    index: int
    prefix: str         # ".sched.text.", ".spinlock.text.", ..., ".text."
    first: int
    n: int              # its number of sections
    start: int | None   # lowest link address of its sections
    limit: int | None   # the value of limit_symbol
    end: int | None     # where its placement stopped (<= limit)
    limit_symbol: str | None    # "__sched_text_end", ...; "__fgkaslr_text_end" or "_etext"
    nonce: bytes        # the section 4 nonce, 12 bytes: b"fgkaslr-schd", ..., b"fgkaslr-text"

    @property
    def name(self) -> str:
        """The prefix as a section name pattern: ".sched.text.*"."""
        return self.prefix + "*"

    @property
    def log2_orderings(self) -> float:
        """log2(n!): the bits of orderings of its shuffle."""
        return math.lgamma(self.n + 1) / math.log(2) if self.n else 0.0


class Vmlinux:
    """An opened vmlinux (or vmlinux.fgk, or any ELF file libfgk reads)."""

    def __init__(self, path):
        self.path = str(path)
        h = c_void_p()
        _check(_L().fgk_vmlinux_open(_b(path), byref(h)))
        self._h = h

    def _handle(self):
        if self._h is None:
            raise FgkError("vmlinux already closed", ERR_INVALID, self.path)
        return self._h

    def close(self):
        if self._h is not None:
            _L().fgk_vmlinux_close(self._h)
            self._h = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def build_id(self) -> str | None:
        return _s(_L().fgk_vmlinux_build_id(self._handle()))

    @property
    def release(self) -> str | None:
        return _s(_L().fgk_vmlinux_release(self._handle()))

    @property
    def kind(self) -> str:
        """'plain' (no randomized sections), 'fgkaslr' or 'relinked'."""
        k = c_int()
        _check(_L().fgk_vmlinux_kind(self._handle(), byref(k)))
        return KIND_NAMES[k.value]

    def _lookup(self, fn, name, out) -> bool:
        """fn(vm, name, &out): False for FGK_ERR_LOOKUP (no such thing)."""
        try:
            _check(fn(self._handle(), _b(name), byref(out)))
        except FgkError as e:
            if e.code == ERR_LOOKUP:
                return False
            raise
        return True

    @property
    def machine(self) -> int:
        """The ELF header's e_machine (62: EM_X86_64)."""
        return _L().fgk_vmlinux_machine(self._handle())

    def section(self, name: str) -> SectionInfo | None:
        info = _SectionInfo()
        if not self._lookup(_L().fgk_vmlinux_section, name, info):
            return None
        return _section_info(info)

    @property
    def shnum(self) -> int:
        """Section header count (extended numbering resolved), index 0 too."""
        return _L().fgk_vmlinux_shnum(self._handle())

    def sections(self) -> list:
        """Every section header but index 0, in index order (SectionInfo)."""
        out, info, h = [], _SectionInfo(), self._handle()
        for i in range(1, self.shnum):
            _check(_L().fgk_vmlinux_section_at(h, i, byref(info)))
            out.append(_section_info(info))
        return out

    def read(self, addr: int, size: int) -> bytes:
        """`size` bytes of the image at link address `addr` (one section)."""
        buf = ctypes.create_string_buffer(size)
        _check(_L().fgk_vmlinux_read(self._handle(), addr & 0xFFFFFFFFFFFFFFFF,
                                     buf, size))
        return buf.raw

    def contains(self, addr: int) -> bool:
        return bool(_L().fgk_vmlinux_contains(self._handle(), addr & 0xFFFFFFFFFFFFFFFF))

    @staticmethod
    def _symbol(s: _Symbol) -> Symbol:
        return Symbol(_s(s.name), s.addr, s.size, s.type.decode(), bool(s.absolute))

    def symbol(self, name: str) -> Symbol | None:
        """The first defined symbol called `name`, or None."""
        s = _Symbol()
        return self._symbol(s) if self._lookup(_L().fgk_symbol_lookup, name, s) else None

    def symbols(self, names) -> dict:
        """{name: Symbol} for the names that exist."""
        out = {}
        for n in names:
            s = self.symbol(n)
            if s is not None:
                out[n] = s
        return out

    def symbol_at(self, addr: int) -> Symbol:
        s = _Symbol()
        _check(_L().fgk_symbol_at(self._handle(), addr & 0xFFFFFFFFFFFFFFFF, byref(s)))
        return self._symbol(s)

    def layout(self, seed) -> "Layout":
        """The FG-KASLR layout of this vmlinux for `seed` (sections 3-7)."""
        return Layout(self, seed)

    def layout_from_kallsyms(self, text, path: str | None = None) -> "Layout":
        """The layout root's /proc/kallsyms capture `text` shows (no seed);
        its `origin` has the base offset (fgk_layout_from_kallsyms)."""
        return Layout.from_kallsyms(self, text, path)

    def relink_cache_path(self, seed) -> str | None:
        out = c_void_p()
        _check(_L().fgk_relink_cache_path(self._handle(), byref(_seed_struct(seed)),
                                          byref(out)))
        return _take_string(out)


@dataclass(frozen=True)
class KallsymsOrigin:
    """How a layout was rebuilt from a kallsyms capture (struct
    fgk_kallsyms_origin): the base KASLR offset the capture shows, the
    sections placed from their symbols and by elimination, and the names of
    the interchangeable ones kallsyms cannot order."""
    offset: int
    by_symbol: int
    by_elimination: int
    guessed: list


class Layout:
    """fgk_layout_compute(vm, seed): where every randomized section goes.
    Layout.from_kallsyms(vm, text): the same without the seed, from root's
    /proc/kallsyms of the booted kernel (fgk_layout_from_kallsyms); its
    seed is None and its `origin` a KallsymsOrigin."""

    origin = None

    def __init__(self, vm: Vmlinux, seed):
        self.vm = vm
        self.seed = parse_seed(seed)
        p = _LAYOUT()
        _check(_L().fgk_layout_compute(vm._handle(), byref(_seed_struct(self.seed)),
                                       byref(p)))
        self._adopt(p)

    @classmethod
    def from_kallsyms(cls, vm: Vmlinux, text, path: str | None = None) -> "Layout":
        data = text.encode() if isinstance(text, str) else bytes(text)
        p, o = _LAYOUT(), _KallsymsOrigin()
        try:
            _check(_L().fgk_layout_from_kallsyms(vm._handle(), data, len(data),
                                                 _b(path) if path else None, byref(p), byref(o)))
            names = _s(ctypes.cast(o.guessed_names, c_char_p).value) if o.guessed_names else None
            origin = KallsymsOrigin(o.offset, o.by_symbol, o.by_elimination,
                                    names.split(", ") if names else [])
        finally:
            _L().fgk_kallsyms_origin_clear(byref(o))
        self = cls.__new__(cls)
        self.vm, self.seed, self.origin = vm, None, origin
        self._adopt(p)
        return self

    def _adopt(self, p):
        self._p = p
        lib = _L()
        self.start, self.limit, self.end = \
            lib.fgk_layout_start(p), lib.fgk_layout_limit(p), lib.fgk_layout_end(p)
        n = c_size_t()
        self._secs = lib.fgk_layout_sections(p, byref(n))
        self.n = n.value
        self._sections = None
        self._domains = None

    def close(self):
        if self._p:
            _L().fgk_layout_free(self._p)
            self._p = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _handle(self):
        if not self._p:
            raise FgkError("layout already freed", ERR_INVALID, self.vm.path)
        return self._p

    @property
    def sections(self) -> list:
        """The input list (section index order), with new addresses."""
        if self._sections is None:
            self._handle()
            secs = self._secs
            self._sections = [Section(s.index, _s(s.name), s.addr, s.size, s.align,
                                      s.new_addr)
                              for s in (secs[i] for i in range(self.n))]
        return self._sections

    @property
    def domains(self) -> list:
        """The shuffle domains (Domain), the five range domains then .text. (section 3);
        start, limit and end are the .text. one's."""
        if self._domains is None:
            p, lib = self._handle(), _L()
            out = []
            for i in range(lib.fgk_layout_ndomains(p)):
                st, lim, end = c_uint64(), c_uint64(), c_uint64()
                first, n = c_size_t(), c_size_t()
                prefix = lib.fgk_layout_domain(p, i, byref(st), byref(lim), byref(end),
                                               byref(first), byref(n))
                nonce = ctypes.string_at(lib.fgk_layout_domain_nonce(p, i), NONCE_SIZE)
                have = n.value > 0
                out.append(Domain(i, _s(prefix), first.value, n.value,
                                  st.value if have else None, lim.value if have else None,
                                  end.value if have else None,
                                  _s(lib.fgk_layout_domain_limit_symbol(p, i)) if have else None,
                                  nonce))
            self._domains = out
        return self._domains

    def map(self, link: int) -> int:
        """Link address -> new address (identity outside randomized sections)."""
        return _L().fgk_layout_map(self._handle(), link & 0xFFFFFFFFFFFFFFFF)

    def unmap(self, new: int) -> int | None:
        """New address -> link address; None in the padding between sections."""
        out = c_uint64()
        if not _L().fgk_layout_unmap(self._handle(), new & 0xFFFFFFFFFFFFFFFF, byref(out)):
            return None
        return out.value

    def runtime(self, link: int, offset: int) -> int:
        """Runtime address of link address `link` with base offset `offset`."""
        return (self.map(link) + offset) & 0xFFFFFFFFFFFFFFFF

    def link(self, runtime: int, offset: int) -> int:
        """Link address of a runtime address; FgkError in the padding."""
        x = (runtime - offset) & 0xFFFFFFFFFFFFFFFF
        link = self.unmap(x)
        if link is None:
            raise FgkError(f"{runtime:#x} is in the shuffled region but in no function "
                           "(padding between shuffled sections)", ERR_LOOKUP)
        return link

    def section_at(self, link: int) -> Section | None:
        p = _L().fgk_layout_section_at(self._handle(), link & 0xFFFFFFFFFFFFFFFF)
        if not p:
            return None
        s = p.contents
        return Section(s.index, _s(s.name), s.addr, s.size, s.align, s.new_addr)

    def addr(self, item, offset: int) -> Addr | None:
        """fgk addr's translation of one item (a runtime address, or
        SYMBOL[+OFF[/SIZE]]) with base offset `offset`: libfgk's
        fgk_addr_translate.  None for a blank item; FgkError (the message
        starts with the item) for one that cannot be translated."""
        a = _Addr()
        _check(_L().fgk_addr_translate(self.vm._handle(), self._handle(),
                                       offset & 0xFFFFFFFFFFFFFFFF,
                                       _text(item, "fgk addr item"), byref(a)))
        try:
            if a.item is None:
                return None
            sec = a.section.contents if a.section else None
            return Addr(_s(a.item), a.runtime, a.link,
                        Vmlinux._symbol(a.sym) if a.has_symbol else None,
                        _s(sec.name) if sec is not None else None, _s(a.line))
        finally:
            _L().fgk_addr_clear(byref(a))

    def relink(self, out_path) -> dict:
        """Write the relinked vmlinux (vmlinux.fgk) to out_path; the stats."""
        st = _RelinkStats()
        _check(_L().fgk_relink(self.vm._handle(), self._handle(), _b(out_path), byref(st)))
        return {k: getattr(st, k) for k, _ in _RelinkStats._fields_}

    def relink_cached(self) -> tuple:
        """(path of the cached vmlinux.fgk, True if it was there already)."""
        out, cached = c_void_p(), c_bool()
        _check(_L().fgk_relink_cached(self.vm._handle(), self._handle(), byref(out),
                                      byref(cached)))
        return _take_string(out), bool(cached.value)

    def relink_through_cache(self, fallback_dir=None, dry_run=False) -> dict:
        """The one relink through the cache (fgk_relink_through_cache):
        {path, cache_error, cached, in_cache, written, stats}.  Without a
        usable cache (or for a layout from kallsyms) it is written in
        fallback_dir (made private); fallback_dir None makes that an error.
        dry_run: only where it would be."""
        r = _RelinkResult()
        _check(_L().fgk_relink_through_cache(
            self.vm._handle(), self._handle(),
            _b(fallback_dir) if fallback_dir is not None else None,
            1 if dry_run else 0, byref(r)))
        try:
            return {"path": _s(r.path), "cache_error": _s(r.cache_error),
                    "cached": bool(r.cached), "in_cache": bool(r.in_cache),
                    "written": bool(r.written),
                    "stats": {k: getattr(r.stats, k) for k, _ in _RelinkStats._fields_}}
        finally:
            _L().fgk_relink_result_clear(byref(r))


# --------------------------------------------------------------------------
# crash dumps and console text

@dataclass
class VmcoreInfo:
    format: str                     # text, elf, kdump, kdump-flat
    raw: str                        # the VMCOREINFO text
    osrelease: str | None
    build_id: str | None
    offset: int | None              # KERNELOFFSET=
    seed_state: str                 # absent, disabled, present
    seed: str | None                # FGKASLR_SEED= when present

    def fields(self) -> dict:
        """KEY=VALUE lines of the raw text (values stripped)."""
        out = {}
        for line in self.raw.splitlines():
            k, sep, v = line.partition("=")
            if sep:
                out[k] = v.strip()
        return out


def _vmcoreinfo_from(v: _Vmcoreinfo) -> VmcoreInfo:
    try:
        state = ("absent", "disabled", "present")[v.seed_state]
        return VmcoreInfo(VMCORE_FORMATS[v.format], _s(v.raw) or "", _s(v.osrelease),
                          _s(v.build_id), v.offset if v.has_offset else None, state,
                          format_seed(v.seed) if v.seed_state == SEED_PRESENT else None)
    finally:
        _L().fgk_vmcoreinfo_clear(byref(v))


def read_vmcore(path) -> VmcoreInfo:
    """The VMCOREINFO of a crash dump (ELF core or kdump, flattened or not)."""
    v = _Vmcoreinfo()
    err = _L().fgk_vmcore_read(_b(path), byref(v))
    if err:
        _L().fgk_vmcoreinfo_clear(byref(v))
    _check(err)
    return _vmcoreinfo_from(v)


def parse_vmcoreinfo(text, path=None) -> VmcoreInfo:
    b = _b(text)
    v = _Vmcoreinfo()
    _check(_L().fgk_vmcoreinfo_parse(b, len(b), _b(path) if path else None, byref(v)))
    return _vmcoreinfo_from(v)


def unflatten(src, dst):
    """makedumpfile -R: a flattened kdump stream rewritten as a regular file."""
    _check(_L().fgk_vmcore_unflatten(_b(src), _b(dst)))


def kernel_offset_scan(text) -> int | None:
    """The base offset from the last "Kernel Offset:" line of console text
    (0 for "disabled"), or None."""
    b = _b(text)
    out = c_uint64()
    if not _L().fgk_kernel_offset_scan(b, len(b), byref(out)):
        return None
    return out.value


def seed_scan(text) -> tuple:
    """(seed or None, disabled) from free text (a console log, a script's
    output): the white-space separated words that are 64 hex digits,
    optionally ``fgkaslr_seed=``; disabled when it says
    ``FGKASLR_SEED=disabled``.  FgkError (ERR_SEED) if it names several
    different seeds."""
    b = _b(text)
    seed, disabled = _Seed(), c_bool()
    n = _L().fgk_seed_scan(b, len(b), byref(seed), byref(disabled))
    if n < 0:
        raise FgkError("the text names several different seeds", ERR_SEED)
    return (format_seed(seed) if n else None), bool(disabled.value)


# --------------------------------------------------------------------------
# debuginfod (lib/debuginfod.c)

def debuginfod_enabled() -> bool:
    """Is $DEBUGINFOD_URLS set (read by libdebuginfod in this process)?"""
    return bool(_L().fgk_debuginfod_enabled())


def fetch_vmlinux(build_id: str) -> tuple[str, str | None]:
    """The vmlinux of build_id from the debuginfod servers of
    $DEBUGINFOD_URLS (or libdebuginfod's cache), checked to be a vmlinux
    with that build-id: (path in the cache, URL it came from or None when
    the cache had it).  FgkError naming the build-id otherwise."""
    f = _Fetch()
    vm = _VM()
    _check(_L().fgk_vmlinux_fetch(_text(build_id, "build-id"), byref(f), byref(vm)))
    path, url = _s(f.path), _s(f.url)
    _L().fgk_vmlinux_close(vm)
    _L().fgk_fetch_clear(byref(f))
    return path, url


def fetch_module(build_id: str, name: str) -> tuple[str, str | None]:
    """The .ko of module `name` (used in messages) with build_id from the
    debuginfod servers of $DEBUGINFOD_URLS (or libdebuginfod's cache),
    checked to be a module with that build-id: (path in the cache, URL it
    came from or None when the cache had it).  FgkError naming the module
    and the build-id otherwise."""
    f = _Fetch()
    mod = c_void_p()
    _check(_L().fgk_module_fetch(_text(build_id, "build-id"), _text(name, "module name"),
                                 byref(f), byref(mod)))
    try:
        return _s(f.path), _s(f.url)
    finally:
        _L().fgk_module_close(mod)
        _L().fgk_fetch_clear(byref(f))


# --------------------------------------------------------------------------
# module files (lib/module.c)

def module_name_eq(a: str, b: str) -> bool:
    """Module names are equal with '-' and '_' the same character."""
    a, b = _b(a), _b(b)
    return _L().fgk_module_name_eq(a, len(a), b, len(b))


def _dirs(dirs):
    arr = (c_char_p * (len(dirs) + 1))()
    for i, d in enumerate(dirs):
        arr[i] = _text(d, "module directory")
    return arr


def find_module(dirs, name: str) -> str:
    """NAME.ko under `dirs` (searched recursively in order, '-' and '_'
    equal): its path; FgkLookupError if none has it."""
    out = c_void_p()
    _check(_L().fgk_module_find(_dirs([str(d) for d in dirs]),
                                _text(name, "module name"), byref(out)))
    return _take_string(out)


def module_files(dirs) -> dict:
    """{name ('_' for '-'): path} of every NAME.ko under `dirs`, the first
    file of a name winning (fgk_module_each)."""
    found = {}

    def each(path, name, arg):
        found[_s(name)] = _s(path)
        return None

    cb = _MODULE_EACH_FN(each)
    _check(_L().fgk_module_each(_dirs([str(d) for d in dirs]), cb, None))
    return found


def build_id_from_notes(data) -> str | None:
    """The NT_GNU_BUILD_ID descriptor (lowercase hex) of the first GNU
    build-id note in `data`, a run of ELF notes (a module's
    /sys/module/M/notes/.note.gnu.build-id, a .notes section); None if
    there is none or the notes are malformed before it."""
    if not data:
        return None
    out = c_void_p()
    data = bytes(data)
    _check(_L().fgk_notes_build_id(data, len(data), byref(out)))
    return _take_string(out)


# --------------------------------------------------------------------------
# build-id notes in memory, build-id and offset text (lib/notes.c)

@dataclass(frozen=True)
class BuildIdNote:
    addr: int               # address of the note header (namesz)
    build_id: str           # lowercase hex
    embedded: bool          # inside an ELF image in memory (the vDSO), not the kernel's


def find_build_id_notes(data, base: int = 0) -> list:
    """Every complete GNU build-id note in `data` (a copy of memory at
    address `base`) whose header is 4-byte aligned in memory, in address
    order; `embedded` marks the notes of ELF images carried as data
    (fgk_notes_find_build_ids)."""
    data = bytes(data or b"")
    arr, n = POINTER(_BuildIdNote)(), c_size_t()
    _check(_L().fgk_notes_find_build_ids(data, len(data), base, byref(arr), byref(n)))
    try:
        return [BuildIdNote(arr[i].addr, _s(arr[i].build_id), bool(arr[i].embedded))
                for i in range(n.value)]
    finally:
        _libc.free(ctypes.cast(arr, c_void_p))


def parse_build_id(text) -> str:
    """A build-id as typed (blanks and 0x allowed) -> lowercase hex, 16 to
    128 digits; InvalidError otherwise (fgk_build_id_parse)."""
    out = c_void_p()
    _check(_L().fgk_build_id_parse(_text(text, "build-id"), byref(out)))
    return _take_string(out)


def parse_offset(text, align: int = KASLR_ALIGN) -> int:
    """A KASLR base offset as typed (hex, 0x optional) -> int, a multiple of
    `align` (0: any); InvalidError otherwise (fgk_offset_parse)."""
    v = c_uint64()
    _check(_L().fgk_offset_parse(_text(text, "offset"), align, byref(v)))
    return v.value


# --------------------------------------------------------------------------
# the kernel's struct fgkaslr_boot_info (lib/bootinfo.c)

@dataclass(frozen=True)
class BootInfo:
    size: int               # bytes decoded: 88, 96, 104, 152, 184 or 328
    magic: int
    flags: int
    nr_sections: int
    heap_used: int
    heap_size: int
    cycles: int
    text_start: int
    text_end: int
    text_used: int
    seed: str               # 64 lowercase hex digits
    mcount_cycles: int | None = None
    entropy_bits: int | None = None
    entropy_src: int | None = None
    phase_cycles: dict | None = None    # {phase name: cycles}
    # the .sched.text.* domain (184 bytes and later)
    nr_sched_sections: int | None = None
    sched_start: int | None = None
    sched_end: int | None = None
    sched_used: int | None = None
    # the range domains in address order (sched, lock, static call,
    # noinstr, cpuidle; 328 bytes and later): one list entry per domain
    dom_sections: list | None = None
    dom_start: list | None = None
    dom_end: list | None = None
    dom_used: list | None = None

    @property
    def valid(self) -> bool:
        return self.magic == BOOT_INFO_MAGIC

    @property
    def shuffled(self) -> bool:
        return bool(self.flags & 0x01)

    def flag_names(self) -> str:
        """The set FGKASLR_F_* flags by name ("none" without any)."""
        names = []
        for bit in range(32):
            if self.flags & (1 << bit):
                n = _L().fgk_boot_info_flag_name(1 << bit)
                names.append(_s(n) if n else f"{1 << bit:#x}")
        return ", ".join(names) or "none"


def decode_boot_info(data, origin=None) -> BootInfo:
    """Decode a copy of the kernel's fgkaslr_boot_info (pass the object's
    size to get the fields later versions append); InvalidError naming
    `origin` when it is too short (fgk_boot_info_decode)."""
    data = bytes(data or b"")
    bi = _BootInfo()
    _check(_L().fgk_boot_info_decode(data, len(data),
                                     None if origin is None else _text(origin, "origin"),
                                     byref(bi)))
    phases = None
    if bi.has & BOOT_HAS_PHASES:
        phases = {_s(_L().fgk_boot_info_phase_name(i)): bi.phase_cycles[i]
                  for i in range(BOOT_PHASES)}
    return BootInfo(bi.size, bi.magic, bi.flags, bi.nr_sections, bi.heap_used, bi.heap_size,
                    bi.cycles, bi.text_start, bi.text_end, bi.text_used, format_seed(bi.seed),
                    bi.mcount_cycles if bi.has & BOOT_HAS_MCOUNT else None,
                    bi.entropy_bits if bi.has & BOOT_HAS_ENTROPY else None,
                    bi.entropy_src if bi.has & BOOT_HAS_ENTROPY else None, phases,
                    *((bi.nr_sched_sections, bi.sched_start, bi.sched_end, bi.sched_used)
                      if bi.has & BOOT_HAS_SCHED else (None,) * 4),
                    *((list(bi.dom_sections), list(bi.dom_start), list(bi.dom_end),
                       list(bi.dom_used)) if bi.has & BOOT_HAS_DOMAINS else (None,) * 4))
