"""fgkbase: what every part of the QEMU runner shares (see fgkrun).

The repository's paths (build/, the kernel, the run logs, the initramfs
cache), UsageError, private files, and the libfgk binding: <repo>/python is
put on sys.path here, once, for the runner and whatever imports it
(docs/python.md), so the other fgk* modules just ``import libfgk``.

Private files: the runner's serial logs, script output, initrds, dumps and
seed records hold the seed (or, dumps, the whole guest memory), and the
seed gives every function address of the booted kernel.  They are created
mode 0600 (``open_private``, ``write_private``) and their directories 0700
(``private_dir``), set explicitly, whatever the caller's umask; QEMU runs
with umask 077 (``PRIVATE_UMASK``), so what it creates (the QMP socket,
``dump-guest-memory`` files) is private too.  docs/building.md, "Private
files".
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BUILD = REPO / "build"


def kernel_variant() -> str:
    """The kernel variant the runner, the tests and the benchmarks use:
    $KVARIANT as `make kernel KVARIANT=name` takes it ('' = the default
    test kernel in build/kernel, 'debian' = build/kernel-debian)."""
    v = os.environ.get("KVARIANT", "").strip()
    if v and not all(c.isalnum() or c in "-_" for c in v):
        raise SystemExit(f"fgk: bad KVARIANT '{v}' (letters, digits, - and _ only)")
    return v


KVARIANT = kernel_variant()
# $KVERSION=6.12: build/kernel-6.12[-VARIANT] (unset or 6.1: the default)
KVERSION = os.environ.get("KVERSION", "").strip()
if KVERSION and not all(c.isdigit() or c == "." for c in KVERSION):
    raise SystemExit(f"fgk: bad KVERSION '{KVERSION}' (a kernel version such as 6.12)")
KVERSION = "" if KVERSION == "6.1" else KVERSION
_KSUFFIX = "-".join(x for x in (KVERSION, KVARIANT) if x)
KERNEL_NAME = f"build/kernel-{_KSUFFIX}" if _KSUFFIX else "build/kernel"
KERNEL_DIR = REPO / KERNEL_NAME
DEFAULT_KERNEL = KERNEL_DIR / "bzImage"


def kernel_fragments(variant: str = KVARIANT, version: str = KVERSION) -> list:
    """The config fragments scripts/build-kernel merges for `variant` of
    kernel `version`, in order (a later one wins): kernel.config (6.12:
    kernel-6.12.config), then kernel-VARIANT.config (6.12:
    kernel-6.12-VARIANT.config when it exists); a variant with a
    distribution base (kernel-VARIANT.base) has only its own fragment
    (NAME-nofg: NAME's, then kernel-nofg.config)."""
    version = "" if version == "6.1" else version

    def vfile(name):
        if version and (HERE / f"kernel-{version}-{name}").is_file():
            return HERE / f"kernel-{version}-{name}"
        return HERE / f"kernel-{name}"
    main = HERE / (f"kernel-{version}.config" if version else "kernel.config")
    if not variant:
        return [main]
    distro = variant[:-len("-nofg")] if variant.endswith("-nofg") else variant
    if vfile(f"{distro}.base").is_file():
        own = [vfile(f"{distro}.config")]
        return own if distro == variant else own + [vfile("nofg.config")]
    return [main, vfile(f"{variant}.config")]


RUNS_DIR = BUILD / "runs"
INITRAMFS_DIR = BUILD / "initramfs"


class UsageError(Exception):
    """Bad arguments, unknown profile, unreadable seed record, ..."""


PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
PRIVATE_UMASK = 0o077        # for child processes that create files (QEMU)


def private_dir(path, tighten: bool = False) -> Path:
    """mkdir -p path; the directories made here are 0700 (chmod'ed: the
    umask can take bits away).  With tighten, path itself, when it exists
    already, is made 0700 too (if it is ours): for directories the runner
    owns (build/runs, build/demo), never for one a user named, which may be
    shared (``--log /tmp/x.log`` must not chmod /tmp).  Returns path."""
    path = Path(path)
    missing = []
    p = path
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, PRIVATE_DIR_MODE)
        except FileExistsError:
            continue            # made meanwhile: not ours to chmod
        os.chmod(d, PRIVATE_DIR_MODE)
    if tighten:
        st = os.stat(path)      # build/runs may be a symlink to a bigger disk
        if not stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{path}: not a directory")
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != PRIVATE_DIR_MODE:
            os.chmod(path, PRIVATE_DIR_MODE)
    return path


def open_private(path, mode: str = "wb"):
    """open(path, mode) for writing ("wb", "w+b", "w"), the file mode 0600
    before the first byte.  A regular file already at path is replaced by a
    new one (unlinked first): whoever opened the old one while it was
    readable does not see the new contents.  A symlink is followed and its
    target truncated, like a shell redirection; a target that is not a
    regular file (/dev/stdout, a FIFO) is opened as it is, its mode left."""
    if mode not in ("wb", "w+b", "w", "w+"):
        raise ValueError(f"open_private: mode {mode!r}")
    path = Path(path)
    flags = (os.O_RDWR if "+" in mode else os.O_WRONLY) | os.O_CREAT | os.O_CLOEXEC
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    if st is None or stat.S_ISREG(st.st_mode):
        flags |= os.O_EXCL | os.O_NOFOLLOW
    else:
        flags |= os.O_TRUNC
    try:
        fd = os.open(path, flags, PRIVATE_FILE_MODE)
    except FileExistsError:
        raise OSError(errno.EEXIST, f"{path} appeared while it was being replaced") from None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, PRIVATE_FILE_MODE)      # the umask may have taken bits away
        return os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise


def write_private(path, data) -> Path:
    """Write data (str or bytes) to path, mode 0600 (open_private)."""
    with open_private(path, "w" if isinstance(data, str) else "wb") as f:
        f.write(data)
    return Path(path)


def make_private(path) -> Path:
    """An existing file another process wrote (QEMU's dump-guest-memory):
    chmod 0600 and check it took.  Raises OSError if it is not ours."""
    path = Path(path)
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, f"{path}: not a regular file")
    if stat.S_IMODE(st.st_mode) != PRIVATE_FILE_MODE:
        os.chmod(path, PRIVATE_FILE_MODE)
    if stat.S_IMODE(os.lstat(path).st_mode) != PRIVATE_FILE_MODE:
        raise OSError(errno.EPERM, f"{path}: cannot make it mode 0600")
    return path


# seeds (docs/layout-spec.md section 2), seed records (docs/seed-records.md)
# and vmlinux are read by libfgk, through its Python binding in <repo>/python
if str(REPO / "python") not in sys.path:
    sys.path.insert(0, str(REPO / "python"))
