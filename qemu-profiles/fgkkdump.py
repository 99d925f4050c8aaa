"""fgkkdump: real kdump in the guest (the kdump profile, tests/test_kdump.py).

The first kernel loads a capture kernel with Debian's kexec-tools
(`kexec -p`: the same bzImage, so it shuffles with a seed of its own) and an
initramfs built here: fgk's base initramfs, Debian's makedumpfile and the
libraries it needs, and a script that saves /proc/vmcore with
`makedumpfile -c -d 31` and `-l -d 31` and writes both, as a tar archive,
onto the virtio disk the runner attached.  The runner reads the archive back
(read_capture_disk).

kexec is taken out of Debian's kexec-tools package (`make deps` downloads
and unpacks it under build/guest-tools) rather than installed: installing
kexec-tools enables its kexec-load service on this machine, which would
load a kernel into the host's own kernel at its next reboot.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

from fgkbase import BUILD, UsageError
from fgkinitramfs import base_initramfs, overlay_archive

GUEST_TOOLS = BUILD / "guest-tools"
KEXEC = GUEST_TOOLS / "kexec-tools" / "sbin" / "kexec"
MAKEDUMPFILE = Path("/usr/bin/makedumpfile")
DISK_SIZE = 512 << 20

CAPTURE_SCRIPT = r"""
echo "capture kernel $(uname -r): $(head -c 120 /proc/fgkaslr_stats 2>/dev/null | tr '\n' ' ')"
test -r /proc/vmcore || { echo "no /proc/vmcore"; exit 1; }
cd /tmp
makedumpfile -c -d 31 /proc/vmcore vmcore.kdump-c || exit 1
makedumpfile -l -d 31 /proc/vmcore vmcore.kdump-l || exit 1
ls -l vmcore.kdump-c vmcore.kdump-l
tar cf /dev/vda vmcore.kdump-c vmcore.kdump-l || exit 1
sync
echo "capture saved"
"""


def _libraries(binary: Path, env=None) -> dict:
    """{guest path: host path} of the shared libraries ldd lists for binary."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise UsageError(f"ldd {binary}: {out.stderr.strip() or out.stdout.strip()}")
    libs = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        path = next((p for p in parts if p.startswith("/")), None)
        if path:
            # the guest gets the file at the path the loader asks for
            want = parts[0] if parts[0].startswith("/") else path
            libs[want] = str(Path(path).resolve())
            if not parts[0].startswith("/"):
                libs[path] = str(Path(path).resolve())
    return libs


def guest_tools() -> dict:
    """{guest path: host path}: kexec, makedumpfile and their libraries."""
    for tool, how in ((KEXEC, "run 'make deps' (it unpacks Debian's kexec-tools there)"),
                      (MAKEDUMPFILE, "run 'make deps' (Debian package makedumpfile)")):
        if not tool.is_file():
            raise UsageError(f"{tool} missing: {how}")
    files = {"/usr/sbin/kexec": str(KEXEC), "/usr/bin/makedumpfile": str(MAKEDUMPFILE)}
    files.update(_libraries(KEXEC))
    files.update(_libraries(MAKEDUMPFILE))
    return files


def capture_initrd() -> bytes:
    """The capture kernel's initramfs: base + makedumpfile + CAPTURE_SCRIPT."""
    files = {k: v for k, v in guest_tools().items() if "kexec" not in k}
    return base_initramfs().read_bytes() + overlay_archive(CAPTURE_SCRIPT, files)


def first_kernel_files(kernel: Path) -> dict:
    """What the first kernel's initramfs needs for `kexec -p`."""
    files = guest_tools()
    files["/fgk/bzImage"] = str(kernel)
    files["/fgk/capture.initrd"] = capture_initrd()
    return files


def make_capture_disk(path: Path) -> list:
    """A sparse raw disk for the capture kernel; the QEMU arguments."""
    with open(path, "wb") as f:
        f.truncate(DISK_SIZE)
    return ["-drive", f"file={path},format=raw,if=virtio"]


def read_capture_disk(path: Path, dest: Path) -> dict:
    """Extract the capture's tar archive from the disk into dest:
    {name: path}."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.strip(b"\0"):
        raise UsageError(f"{path}: the capture kernel wrote nothing")
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as t:
        for m in t.getmembers():
            if not m.isfile() or "/" in m.name:
                continue
            target = dest / m.name
            with t.extractfile(m) as src, open(target, "wb") as dst:
                dst.write(src.read())
            target.chmod(0o600)
            out[m.name] = target
    return out
