"""fgkinitramfs: the guest's initramfs (see fgkrun).

Two cpio archives, concatenated into the initrd of each run:

  base     busybox-static and /init, gzipped, built once and cached under
           build/initramfs/ (base_initramfs()).  /init mounts proc, sys,
           devtmpfs and tmpfs, runs /fgk/script as root between the output
           markers (fgkresult.MARK_BEGIN, MARK_END_RE) and powers off.
  overlay  uncompressed: /fgk/script and the run's extra files
           (overlay_archive()).

The archives are written by the small newc writer here (Cpio) rather than
the kernel's usr/gen_init_cpio: that tool would have to be extracted from
the linux-source tarball and compiled before the first boot, reads every
file from disk (the overlay is built in memory) and stamps regular files
with their host mtime, so the archives would no longer be reproducible.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import itertools
import os
import shutil
import stat
from pathlib import Path

from fgkbase import INITRAMFS_DIR, UsageError


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
