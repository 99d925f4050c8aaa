"""fgkrun: boot the fgk kernel in QEMU (TCG) and run a script in the guest.

Used by the `qemu-profiles/run` command line tool and, as a module, by the
tests (tests/conftest.py) and other tools.

The guest is QEMU's pc machine with an initramfs built here from
busybox-static: /init mounts proc, sys, devtmpfs and tmpfs, runs the script
as root and powers the machine off (QEMU runs with -no-reboot, so any reboot,
including the one `panic=-1` causes, ends QEMU).

Channels:
  ttyS0    the kernel console: the log.  /init prints the markers
           ``=====FGK-OUTPUT-BEGIN=====`` and ``=====FGK-OUTPUT-END rc=N=====``
           there around the time the script runs.
  fgk.out  a virtio serial port (/dev/vportNpM in the guest) carrying the
           script's stdout and stderr between the same markers, written
           directly (no copy, no pipe): free of interleaved kernel messages,
           and what the script printed before a panic is not lost.  This is
           what `Result.output` holds.  Kernels without CONFIG_VIRTIO_CONSOLE
           get the same on ttyS1, at a few hundred kB/s at best.

Profiles are files ``qemu-profiles/NAME.profile`` of ``KEY=VALUE`` lines, see
boot.profile for the keys.
"""

from __future__ import annotations

import ctypes
import datetime
import gzip
import hashlib
import io
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BUILD = REPO / "build"
DEFAULT_KERNEL = BUILD / "kernel" / "bzImage"
RUNS_DIR = BUILD / "runs"
INITRAMFS_DIR = BUILD / "initramfs"

MARK_BEGIN = "=====FGK-OUTPUT-BEGIN====="
MARK_END_RE = re.compile(r"=====FGK-OUTPUT-END rc=(\d+)=====")

# Exit codes of the runner (besides the guest script's own rc).
RC_USAGE = 2
RC_TIMEOUT = 124
RC_GUEST_FAILED = 125

BASE_CMDLINE = "console=ttyS0 panic=-1"

QEMU = os.environ.get("FGK_QEMU", "qemu-system-x86_64")
QEMU_BASE = ["-accel", "tcg", "-m", "512M", "-smp", "2", "-nographic", "-no-reboot",
             "-nic", "none"]          # no network in the guest

# Kernel log lines that mean the guest kernel panicked or oopsed (rc 125),
# and warnings, which are reported (Result.warnings) but do not fail a run.
FATAL_RE = re.compile(
    r"(Kernel panic - not syncing.*|Oops: .*|BUG: .*|kernel BUG at .*"
    r"|general protection fault.*)")
WARN_RE = re.compile(r"WARNING: .* at .*")

SEED_RE = re.compile(r"^[0-9a-fA-F]{64}$")     # docs/layout-spec.md section 2


class UsageError(Exception):
    """Bad arguments, unknown profile, unreadable seed record, ..."""


# --------------------------------------------------------------------------
# seed records (docs/seed-records.md)

SEED_RECORD_KEYS = ("seed", "build-id", "release", "offset", "note")


def parse_seed_record(text: str, name: str = "<record>") -> dict:
    """Parse a seed record: ``key: value`` lines, ``#`` comment lines.

    Keys: seed (required, 64 hex digits), build-id (hex), release, offset
    (0x hex), note.  Returns a dict keyed by those names (only those
    present).  Raises UsageError naming the file and line on any problem.
    """
    rec: dict = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        where = f"{name}:{lineno}"
        if not sep or not key:
            raise UsageError(f"{where}: expected 'key: value', got {raw!r}")
        if key not in SEED_RECORD_KEYS:
            raise UsageError(f"{where}: unknown key {key!r} "
                             f"(known: {', '.join(SEED_RECORD_KEYS)})")
        if key in rec:
            raise UsageError(f"{where}: duplicate key {key!r}")
        if key == "seed" and not re.fullmatch(r"[0-9a-fA-F]{64}", value):
            raise UsageError(f"{where}: seed must be 64 hex digits, got {value!r}")
        if key == "build-id" and not re.fullmatch(r"[0-9a-fA-F]+", value):
            raise UsageError(f"{where}: build-id must be hex, got {value!r}")
        if key == "offset" and not re.fullmatch(r"0x[0-9a-fA-F]+", value):
            raise UsageError(f"{where}: offset must be 0x-prefixed hex, got {value!r}")
        rec[key] = value.lower() if key in ("seed", "build-id", "offset") else value
    if "seed" not in rec:
        raise UsageError(f"{name}: no 'seed:' line")
    return rec


def read_seed_record(path) -> dict:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise UsageError(f"cannot read seed record {path}: {e.strerror}") from None
    return parse_seed_record(text, str(path))


def format_seed_record(seed: str, build_id: str | None = None,
                       release: str | None = None, offset: int | str | None = None,
                       note: str | None = None) -> str:
    """The canonical text of a seed record (keys in the documented order)."""
    lines = [f"seed: {seed.lower()}"]
    if build_id:
        lines.append(f"build-id: {build_id.lower()}")
    if release:
        lines.append(f"release: {release}")
    if offset is not None:
        lines.append(f"offset: {offset:#x}" if isinstance(offset, int) else f"offset: {offset}")
    if note:
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# ELF helpers (enough to check vmlinux and read its build-id; no deps)

def elf_sections(path) -> dict:
    """{name: (type, offset, size)} of a 64-bit little-endian ELF file."""
    with open(path, "rb") as f:
        ehdr = f.read(64)
        if ehdr[:4] != b"\x7fELF" or ehdr[4] != 2 or ehdr[5] != 1:
            raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
        shoff, = struct.unpack_from("<Q", ehdr, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ehdr, 0x3A)
        f.seek(shoff)
        first = f.read(shentsize)
        if shnum == 0:                      # SHN_XINDEX convention
            shnum = struct.unpack_from("<Q", first, 0x20)[0]
        if shstrndx == 0xFFFF:
            shstrndx = struct.unpack_from("<I", first, 0x28)[0]
        f.seek(shoff)
        raw = f.read(shentsize * shnum)
        hdrs = [struct.unpack_from("<IIQQQQIIQQ", raw, i * shentsize) for i in range(shnum)]
        strtab = hdrs[shstrndx]
        f.seek(strtab[4])
        names = f.read(strtab[5])
        out = {}
        for h in hdrs:
            name = names[h[0]:names.index(b"\0", h[0])].decode()
            out[name] = (h[1], h[4], h[5])
        return out


def elf_machine(path) -> int:
    with open(path, "rb") as f:
        return struct.unpack_from("<H", f.read(20), 18)[0]


def elf_build_id(path) -> str | None:
    """The GNU build-id of an ELF file as lowercase hex, or None."""
    secs = elf_sections(path)
    for name, (typ, off, size) in secs.items():
        if typ != 7:                        # SHT_NOTE
            continue
        with open(path, "rb") as f:
            f.seek(off)
            data = f.read(size)
        for nname, ntype, desc in _parse_notes(data):
            if ntype == 3 and nname == "GNU":
                return desc.hex()
    return None


def _parse_notes(data: bytes):
    pos = 0
    while pos + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
        pos += 12
        name = data[pos:pos + namesz].rstrip(b"\0").decode("ascii", "replace")
        pos += (namesz + 3) & ~3
        desc = data[pos:pos + descsz]
        pos += (descsz + 3) & ~3
        yield name, ntype, desc


def elf_core_notes(path) -> list:
    """[(name, type, desc bytes)] from the PT_NOTE segments of an ELF core
    (e.g. a QEMU dump-guest-memory file)."""
    notes = []
    with open(path, "rb") as f:
        ehdr = f.read(64)
        if ehdr[:4] != b"\x7fELF" or ehdr[4] != 2:
            raise ValueError(f"{path}: not a 64-bit ELF file")
        phoff, = struct.unpack_from("<Q", ehdr, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", ehdr, 0x36)
        f.seek(phoff)
        raw = f.read(phentsize * phnum)
        for i in range(phnum):
            p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", raw, i * phentsize)
            if p_type == 4:                 # PT_NOTE
                f.seek(p_offset)
                notes.extend(_parse_notes(f.read(p_filesz)))
    return notes


# --------------------------------------------------------------------------
# profiles

@dataclass
class Profile:
    name: str
    description: str = ""
    append: str = ""            # kernel command line additions
    qemu_args: list = field(default_factory=list)
    require_seed: bool = False
    gdb: bool = False           # start the gdbstub (port: --gdb or 1234)
    qmp: bool = False           # QMP unix socket (path: --qmp or default)
    timeout: float = 120.0
    hold: bool = False          # default script: keep the guest up afterwards


def profile_path(name: str) -> Path:
    return HERE / f"{name}.profile"


def list_profiles() -> list:
    return sorted(p.stem for p in HERE.glob("*.profile"))


def load_profile(name: str) -> Profile:
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name or ""):
        raise UsageError(f"bad profile name {name!r}")
    path = profile_path(name)
    if not path.is_file():
        raise UsageError(f"unknown profile {name!r} (profiles: {', '.join(list_profiles())})")
    prof = Profile(name)
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        where = f"{path.name}:{lineno}"
        if not sep:
            raise UsageError(f"{where}: expected KEY=VALUE")
        yes = value.lower() in ("1", "yes", "true", "y")
        if key == "DESCRIPTION":
            prof.description = value
        elif key == "APPEND":
            prof.append = value
        elif key == "QEMU_ARGS":
            prof.qemu_args = shlex.split(value)
        elif key == "REQUIRE_SEED":
            prof.require_seed = yes
        elif key == "GDB":
            prof.gdb = yes
        elif key == "QMP":
            prof.qmp = yes
        elif key == "HOLD":
            prof.hold = yes
        elif key == "TIMEOUT":
            prof.timeout = float(value)
        else:
            raise UsageError(f"{where}: unknown key {key}")
    return prof


# --------------------------------------------------------------------------
# initramfs

INIT_SCRIPT = r"""#!/bin/busybox sh
# fgk guest init: set up, run /fgk/script, report, power off.
/bin/busybox mkdir -p /bin /sbin /usr/bin /usr/sbin /proc /sys /dev /tmp /root
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
hostname fgk
# The script's channel: the virtio serial port named fgk.out when the
# kernel has virtio-console, else ttyS1 (raw).  Held open on fd 3.
out=/dev/ttyS1
for p in /sys/class/virtio-ports/*; do
    [ "$(cat $p/name 2>/dev/null)" = fgk.out ] && out=/dev/${p##*/}
done
[ $out = /dev/ttyS1 ] && stty -F /dev/ttyS1 raw -echo
exec 3> $out
echo "=====FGK-OUTPUT-BEGIN====="
echo "=====FGK-OUTPUT-BEGIN=====" >&3
cd /root
sh /fgk/script >&3 2>&1 3>&- < /dev/null
rc=$?
cd /
echo "=====FGK-OUTPUT-END rc=$rc=====" >&3
exec 3>&-
echo "=====FGK-OUTPUT-END rc=$rc====="
sync
reboot -f
"""

DEFAULT_SCRIPT = r"""# fgk default guest script
echo "release: $(uname -r)"
echo "cmdline: $(cat /proc/cmdline)"
if [ -r /proc/fgkaslr_seed ]; then echo "fgkaslr seed: $(cat /proc/fgkaslr_seed)"; fi
echo "first text symbols of /proc/kallsyms:"
grep -i ' t ' /proc/kallsyms | head -n 10
"""

HOLD_SCRIPT = r"""echo "guest up; holding (kill the runner or QEMU to stop)"
while :; do sleep 3600; done
"""

ETC_FILES = {
    "etc/passwd": "root:x:0:0:root:/root:/bin/sh\nfgk:x:1000:1000:fgk:/tmp:/bin/sh\n",
    "etc/group": "root:x:0:\nfgk:x:1000:\n",
}


class Cpio:
    """Writer of a newc (SVR4, no CRC) cpio archive, as the kernel reads it.

    Everything is owned by root and timestamps are 0, so archives are
    reproducible and no root privileges are needed (device nodes included).
    """

    def __init__(self):
        self.buf = io.BytesIO()
        self.ino = itertools.count(1000)

    def _entry(self, name: str, mode: int, data: bytes = b"", rdev=(0, 0), nlink=1):
        name_b = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            next(self.ino), mode, 0, 0, nlink, 0, len(data), 0, 0,
            rdev[0], rdev[1], len(name_b), 0))
        self.buf.write(hdr.encode() + name_b)
        self.buf.write(b"\0" * (-(110 + len(name_b)) % 4))
        self.buf.write(data)
        self.buf.write(b"\0" * (-len(data) % 4))

    def dir(self, name, mode=0o755):
        self._entry(name, stat.S_IFDIR | mode, nlink=2)

    def file(self, name, data: bytes, mode=0o644):
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name, target):
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def chardev(self, name, major, minor, mode=0o600):
        self._entry(name, stat.S_IFCHR | mode, rdev=(major, minor))

    def finish(self) -> bytes:
        self._entry("TRAILER!!!", 0)
        self.buf.write(b"\0" * (-self.buf.tell() % 512))
        return self.buf.getvalue()


def find_busybox() -> Path:
    for cand in (os.environ.get("FGK_BUSYBOX"), "/bin/busybox", shutil.which("busybox")):
        if cand and Path(cand).is_file():
            return Path(cand)
    raise UsageError("busybox not found (run 'make deps': package busybox-static)")


BASE_FORMAT = 2      # bump when base_initramfs() builds a different archive


def base_initramfs() -> Path:
    """The gzipped base archive (busybox + /init), cached under build/."""
    busybox = find_busybox()
    data = busybox.read_bytes()
    if b"GLIBC_" in data[:4096] or b"ld-linux" in data[:8192]:
        raise UsageError(f"{busybox} is dynamically linked; install busybox-static")
    recipe = f"{BASE_FORMAT}\n{INIT_SCRIPT}\n{ETC_FILES!r}".encode()
    key = hashlib.sha256(data + recipe).hexdigest()[:16]
    path = INITRAMFS_DIR / f"base-{key}.cpio.gz"
    if path.exists():
        return path
    c = Cpio()
    for d in ("bin", "sbin", "usr", "usr/bin", "usr/sbin", "dev", "proc", "sys",
              "tmp", "root", "etc", "fgk"):
        c.dir(d, 0o1777 if d == "tmp" else 0o755)
    c.chardev("dev/console", 5, 1)
    c.chardev("dev/null", 1, 3, 0o666)
    c.file("bin/busybox", data, 0o755)
    c.symlink("bin/sh", "busybox")
    c.file("init", INIT_SCRIPT.encode(), 0o755)
    for name, text in ETC_FILES.items():
        c.file(name, text.encode())
    INITRAMFS_DIR.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    gz = gzip.compress(c.finish(), compresslevel=6, mtime=0)
    # The kernel looks for the next (uncompressed) archive at a 4-byte
    # aligned offset after the compressed one; zero padding is skipped.
    tmp.write_bytes(gz + b"\0" * (-len(gz) % 512))
    tmp.replace(path)
    return path


def overlay_archive(script: str, files: dict | None = None) -> bytes:
    """Uncompressed cpio with /fgk/script and extra files {guest path: host path or bytes}."""
    c = Cpio()
    c.file("fgk/script", script.encode(), 0o755)
    made = set()
    for dest, src in (files or {}).items():
        dest = dest.lstrip("/")
        parts = dest.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in made:
                c.dir(d)
                made.add(d)
        if isinstance(src, (bytes, bytearray)):
            c.file(dest, bytes(src), 0o755)
        else:
            src = Path(src)
            c.file(dest, src.read_bytes(), stat.S_IMODE(src.stat().st_mode))
    return c.finish()


# --------------------------------------------------------------------------
# running

@dataclass
class Result:
    rc: int                     # guest script rc, or 124 / 125
    output: str                 # the script's stdout+stderr (fgk.out port, or ttyS1)
    log: str                    # the whole serial console (ttyS0)
    log_path: Path
    cmdline: str
    profile: str
    duration: float
    timed_out: bool = False
    panicked: bool = False
    panic_line: str | None = None
    script_rc: int | None = None   # rc printed by the guest, when it got that far
    message: str = ""              # why rc is 124/125, for humans
    qemu_pid: int | None = None
    warnings: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.rc == 0


def _pdeathsig():
    """preexec: QEMU dies with its parent, whatever kills the parent (the
    kernel ties this to the forking thread: start guests from long-lived
    threads)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)       # PR_SET_PDEATHSIG
    except Exception:
        pass


_run_counter = itertools.count()


def _default_log_path(profile: str) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return RUNS_DIR / f"{stamp}-{os.getpid()}-{next(_run_counter)}-{profile}.log"


class Guest:
    """A QEMU guest running one script.  Use ``start()`` then ``wait()``,
    or as a context manager (the guest is always killed on exit)."""

    def __init__(self, profile: str = "boot", script: str | None = None, *,
                 seed: str | None = None, seed_file=None, append: str = "",
                 gdb: int | None = None, wait_gdb: bool = False, qmp=None,
                 timeout: float | None = None, kernel=None, log=None,
                 files: dict | None = None, kaslr: bool = False,
                 extra_qemu_args=None):
        self.profile = load_profile(profile)
        if script is None:
            script = DEFAULT_SCRIPT + (HOLD_SCRIPT if self.profile.hold else "")
        self.script = script
        self.kernel = Path(kernel) if kernel else DEFAULT_KERNEL
        if not self.kernel.is_file():
            raise UsageError(f"kernel {self.kernel} not found (run 'make kernel')")
        self.seed_record = None
        if seed_file is not None:
            self.seed_record = read_seed_record(seed_file)
            if seed is None:
                seed = self.seed_record["seed"]
        if seed is not None:
            seed = str(seed)
            if not SEED_RE.match(seed):
                raise UsageError(f"bad seed {seed!r}: expected exactly 64 hex digits "
                                 "(use --append fgkaslr_seed=... to pass anything else)")
        if self.profile.require_seed and seed is None:
            raise UsageError(f"profile {self.profile.name} needs --seed or --seed-file")
        self.seed = seed
        self.timeout = self.profile.timeout if timeout is None else float(timeout)
        self.log_path = Path(log) if log else _default_log_path(self.profile.name)
        self.files = files or {}

        append_parts = [BASE_CMDLINE]
        prof_append = self.profile.append.split()
        if kaslr:
            prof_append = [a for a in prof_append if a != "nokaslr"]
        append_parts += prof_append
        if seed is not None:
            append_parts.append(f"fgkaslr_seed={seed}")
        if append:
            append_parts.append(append)
        self.cmdline = " ".join(p for p in append_parts if p)

        self.gdb_port = gdb if gdb is not None else (1234 if self.profile.gdb else None)
        self.wait_gdb = wait_gdb
        if wait_gdb and self.gdb_port is None:
            raise UsageError("--wait needs a gdbstub (--gdb PORT or the debug profile)")
        self.qmp_path = None
        if qmp is not None:
            self.qmp_path = Path(qmp)
        elif self.profile.qmp:
            self.qmp_path = self.log_path.with_suffix(".qmp")
        self.extra_qemu_args = list(extra_qemu_args or [])
        self.proc = None
        self.result: Result | None = None

    # -- build the command ---------------------------------------------
    def _prepare(self):
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        base = base_initramfs()
        self.initrd_path = self.log_path.with_suffix(".initrd")
        self.out_path = self.log_path.with_suffix(".out")        # virtio port
        self.out2_path = self.log_path.with_suffix(".ttyS1")     # fallback
        with open(self.initrd_path, "wb") as f:
            f.write(base.read_bytes())
            f.write(overlay_archive(self.script, self.files))
        self.out_path.write_bytes(b"")
        self.out2_path.write_bytes(b"")
        cmd = [QEMU, *QEMU_BASE,
               "-kernel", str(self.kernel), "-initrd", str(self.initrd_path),
               "-append", self.cmdline,
               "-monitor", "none",
               "-serial", "stdio",
               "-serial", f"file:{self.out2_path}",
               "-device", "virtio-serial-pci,id=fgkser",
               "-chardev", f"file,id=fgkout,path={self.out_path}",
               "-device", "virtserialport,bus=fgkser.0,chardev=fgkout,name=fgk.out"]
        if self.gdb_port is not None:
            cmd += ["-gdb", f"tcp:127.0.0.1:{self.gdb_port}"]
        if self.wait_gdb:
            cmd += ["-S"]
        if self.qmp_path is not None:
            self.qmp_path.parent.mkdir(parents=True, exist_ok=True)
            if self.qmp_path.exists():
                self.qmp_path.unlink()
            cmd += ["-qmp", f"unix:{self.qmp_path},server=on,wait=off"]
        cmd += self.profile.qemu_args + self.extra_qemu_args
        self.qemu_cmd = cmd
        return cmd

    def start(self):
        cmd = self._prepare()
        self.t0 = time.monotonic()
        self.log_file = open(self.log_path, "wb")
        self.stderr_file = open(self.log_path.with_suffix(".qemu-stderr"), "w+b")
        self._buf = bytearray()
        self._buf_lock = threading.Lock()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=self.stderr_file,
                                     start_new_session=True, preexec_fn=_pdeathsig)
        # Drain the console all the time, so QEMU never blocks on a full
        # pipe while a test talks to the gdbstub or QMP.
        self._reader = threading.Thread(target=self._read_console, daemon=True,
                                        name=f"fgkrun-console-{self.proc.pid}")
        self._reader.start()
        return self

    def _read_console(self):
        fd = self.proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            with self._buf_lock:
                self._buf += chunk
            self.log_file.write(chunk)
            self.log_file.flush()

    def _poll(self, test, timeout: float) -> bool:
        """Wait until test() is true (True) or QEMU exited / timeout (False)."""
        deadline = time.monotonic() + timeout
        while True:
            if test():
                return True
            if not self._reader.is_alive() or time.monotonic() >= deadline:
                return bool(test())
            time.sleep(0.05)

    def wait_for_qmp(self, timeout: float = 10.0) -> Path:
        """Wait until the QMP socket exists; return its path."""
        if self._poll(lambda: self.qmp_path and self.qmp_path.exists(), timeout):
            return self.qmp_path
        raise RuntimeError(f"QMP socket {self.qmp_path} did not appear")

    def _console_bytes(self) -> bytes:
        with self._buf_lock:
            return bytes(self._buf)

    def console_so_far(self) -> str:
        """The serial console (ttyS0) up to now."""
        return self._console_bytes().decode("utf-8", "replace")

    def output_so_far(self) -> str:
        """What the guest script has printed up to now (after the BEGIN marker)."""
        for path in (self.out_path, self.out2_path):
            try:
                raw = path.read_bytes()
            except OSError:
                continue
            i = raw.find(MARK_BEGIN.encode())
            if i >= 0:
                return raw[i + len(MARK_BEGIN) + 1:].decode("utf-8", "replace")
        return ""

    def wait_for_console(self, pattern: str, timeout: float = 60.0) -> bool:
        """Wait until the console log (kernel messages, markers, whatever the
        script writes to /dev/console) matches the regex `pattern`."""
        rx = re.compile(pattern.encode())
        return self._poll(lambda: rx.search(self._console_bytes()), timeout)

    def wait_for_output(self, pattern: str, timeout: float = 60.0) -> bool:
        """Wait until the script's output so far matches the regex `pattern`."""
        rx = re.compile(pattern)
        return self._poll(lambda: rx.search(self.output_so_far()), timeout)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()

    def _stop(self):
        """Kill QEMU, finish reading its console, close files."""
        self.kill()
        self._reader.join(5)
        if not self.log_file.closed:
            self.log_file.close()

    def wait(self) -> Result:
        """Wait for the guest to finish; always leaves QEMU dead."""
        timed_out = False
        try:
            deadline = self.t0 + self.timeout if self.timeout > 0 else None
            end_seen_at = None
            while self._reader.is_alive():
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    timed_out = True
                    break
                if end_seen_at is None and MARK_END_RE.search(
                        self._console_bytes()[-4096:].decode("utf-8", "replace")):
                    end_seen_at = now
                if end_seen_at is not None and now - end_seen_at > 10:
                    break       # the guest printed its end but did not power off
                self._reader.join(0.1)
            if not timed_out:
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            self._stop()
        self.result = self._result(timed_out)
        return self.result

    def _result(self, timed_out: bool) -> Result:
        duration = time.monotonic() - self.t0
        log = self._buf.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "")
        self.log_path.write_text(log)
        raw = self.out_path.read_bytes()
        if MARK_BEGIN.encode() not in raw:
            raw = self.out2_path.read_bytes()
        raw_out = raw.decode("utf-8", "replace")
        self.stderr_file.seek(0)
        qemu_err = self.stderr_file.read().decode("utf-8", "replace").strip()
        self.stderr_file.close()

        output, script_rc = "", None
        b = raw_out.find(MARK_BEGIN)
        if b >= 0:
            body = raw_out[b + len(MARK_BEGIN):]
            body = body[1:] if body.startswith("\n") else body
            m = MARK_END_RE.search(body)
            if m:
                output = body[:m.start()]
                script_rc = int(m.group(1))
            else:
                output = body
        end_in_log = MARK_END_RE.search(log)
        upto = log[:end_in_log.start()] if end_in_log else log
        fatal, warnings = None, []
        for line in upto.splitlines():
            if FATAL_RE.search(line):
                fatal = fatal or line.strip()
            elif WARN_RE.search(line):
                warnings.append(line.strip())
        res = Result(rc=0, output=output, log=log, log_path=self.log_path,
                     cmdline=self.cmdline, profile=self.profile.name,
                     duration=duration, timed_out=timed_out, script_rc=script_rc,
                     warnings=warnings, qemu_pid=self.proc.pid)
        if timed_out:
            res.rc = RC_TIMEOUT
            res.message = f"run: guest timed out after {self.timeout:g} s (log: {self.log_path})"
        elif fatal is not None:
            res.rc = RC_GUEST_FAILED
            res.panicked = True
            res.panic_line = fatal
            res.message = f"run: guest kernel failed: {fatal} (log: {self.log_path})"
        elif script_rc is None:
            res.rc = RC_GUEST_FAILED
            why = f"qemu: {qemu_err.splitlines()[-1]}" if qemu_err else "no end marker"
            res.message = (f"run: guest stopped before the script finished ({why}) "
                           f"(log: {self.log_path})")
        else:
            res.rc = script_rc
        self._remove_scratch()
        return res

    def _remove_scratch(self):
        for p in (self.initrd_path, self.out_path, self.out2_path,
                  self.log_path.with_suffix(".qemu-stderr")):
            try:
                p.unlink()
            except OSError:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if self.proc is not None and self.result is None:
            self._stop()
            self.stderr_file.close()
            self._remove_scratch()
        return False


def run(profile: str = "boot", script: str | None = None, **kw) -> Result:
    """Boot, run `script` (shell text) as root in the guest, return a Result."""
    g = Guest(profile, script, **kw)
    g.start()
    try:
        return g.wait()
    finally:
        g.kill()


# --------------------------------------------------------------------------
# QMP (enough for dump-guest-memory and friends)

def qmp_command(path, command: str, timeout: float = 120.0, **arguments):
    """Connect to a QMP unix socket, run one command, return its 'return'."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(str(path))
    f = s.makefile("rwb")

    def recv():
        while True:
            line = f.readline()
            if not line:
                raise RuntimeError("QMP connection closed")
            msg = json.loads(line)
            if "event" in msg:
                continue
            return msg

    def send(cmd, args=None):
        msg = {"execute": cmd}
        if args:
            msg["arguments"] = args
        f.write(json.dumps(msg).encode() + b"\n")
        f.flush()
        return recv()

    try:
        recv()                                  # greeting
        send("qmp_capabilities")
        reply = send(command, arguments)
        if "error" in reply:
            raise RuntimeError(f"QMP {command}: {reply['error'].get('desc')}")
        return reply.get("return")
    finally:
        s.close()
