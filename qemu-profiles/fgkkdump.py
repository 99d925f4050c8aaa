"""fgkkdump: real kdump in the guest (the kdump profile, tests/test_kdump.py).

The first kernel loads a capture kernel with Debian's kexec-tools
(`kexec -p`: the same bzImage, so it shuffles with a seed of its own) and an
initramfs built here: fgk's base initramfs, Debian's makedumpfile and the
libraries it needs, and a script that saves /proc/vmcore with
`makedumpfile -c -d 31` and `-l -d 31` and writes both, as a tar archive,
onto the virtio disk the runner attached.  The runner reads the archive back
(read_capture_disk).

From the command line: `qemu-profiles/run kdump --dump-dir DIR --init
SCRIPT` (kdump_guest, collect): the runner loads the capture kernel before
SCRIPT runs (KEXEC_LOAD; SCRIPT then crashes the guest, by default
`echo c > /proc/sysrq-trigger`) and leaves vmcore.kdump-c and
vmcore.kdump-l in DIR.

kexec is taken out of Debian's kexec-tools package (`make deps` downloads
and unpacks it under build/guest-tools) rather than installed: installing
kexec-tools enables its kexec-load service on this machine, which would
load a kernel into the host's own kernel at its next reboot.
"""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from pathlib import Path

from fgkbase import BUILD, DEFAULT_KERNEL, UsageError, private_dir
from fgkinitramfs import base_initramfs, overlay_archive

GUEST_TOOLS = BUILD / "guest-tools"
KEXEC = GUEST_TOOLS / "kexec-tools" / "sbin" / "kexec"
MAKEDUMPFILE = Path("/usr/bin/makedumpfile")
DISK_SIZE = 512 << 20

# The first kernel's script starts with this: the same bzImage as capture
# kernel, one CPU, devices reset, panic=-1 so that a failing capture ends.
KEXEC_LOAD = r"""
kexec -p /fgk/bzImage --initrd=/fgk/capture.initrd \
    --append="console=ttyS0 panic=-1 irqpoll nr_cpus=1 reset_devices" || exit 1
echo "crash kernel loaded: $(cat /sys/kernel/kexec_crash_loaded)"
"""
CRASH_SCRIPT = "echo c > /proc/sysrq-trigger\n"
DUMPS = ("vmcore.kdump-c", "vmcore.kdump-l")

CAPTURE_SCRIPT = r"""
echo "capture kernel $(uname -r): $(head -c 120 /proc/fgkaslr_stats 2>/dev/null | tr '\n' ' ')"
test -r /proc/vmcore || { echo "no /proc/vmcore"; exit 1; }
cd /tmp
echo "dump level @LEVEL@"
makedumpfile -c -d @LEVEL@ /proc/vmcore vmcore.kdump-c || exit 1
makedumpfile -l -d @LEVEL@ /proc/vmcore vmcore.kdump-l || exit 1
ls -l vmcore.kdump-c vmcore.kdump-l
tar cf /dev/vda vmcore.kdump-c vmcore.kdump-l || exit 1
sync
echo "capture saved"
"""


# The first makedumpfile release whose page filtering (-d 8, user data, part
# of -d 31) is right for a kernel from that version on, from makedumpfile's
# own changelog ("Required for kernel X"): 6.2 put struct slab's `slabs`
# where page.mapping is, and older releases take a slab with an odd count
# for an anonymous page and drop it (5f17bdd, 1.7.3); 6.10 turned PG_slab
# into a page type (bad2a7c, 1.7.6).  Dropped slab pages are task structs,
# pids, dentries, VMAs: crash's ps, files and vm fail on such a dump.  (6.12's
# one-type-per-page change, 72c3414 in 1.7.7, only stops 1.7.6 from leaving
# out free pages: a bigger dump, nothing missing.)
MAKEDUMPFILE_NEEDED = (((6, 10), (1, 7, 6)), ((6, 2), (1, 7, 3)))


def makedumpfile_version(binary: Path = MAKEDUMPFILE):
    """(major, minor, patch) of `makedumpfile -v`, or None."""
    try:
        out = subprocess.run([str(binary), "-v"], capture_output=True, text=True).stdout
    except OSError:
        return None
    m = re.search(r"version (\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(x) for x in m.groups()) if m else None


def makedumpfile_gap(release: str, binary: Path = MAKEDUMPFILE):
    """Why `makedumpfile -d 31` of this makedumpfile loses kernel data of a
    kernel with this release (e.g. "6.12.118"), or None when it does not."""
    kv = tuple(int(x) for x in re.findall(r"\d+", release)[:2])
    have = makedumpfile_version(binary)
    for since, need in MAKEDUMPFILE_NEEDED:
        if kv >= since and have is not None and have < need:
            return (f"makedumpfile {'.'.join(map(str, have))} ({binary}) filters Linux "
                    f"{release} wrongly: -d 31 drops slab pages of kernels >= "
                    f"{'.'.join(map(str, since))} (fixed in makedumpfile "
                    f"{'.'.join(map(str, need))}): crash on its files misses tasks or stops "
                    "at 'page excluded'")
    return None


def dump_level(release: str | None, binary: Path = MAKEDUMPFILE) -> int:
    """The capture's -d: 31 (zero, cache, user and free pages out), or 1
    (zero pages only, told by their content, not by page flags) where this
    makedumpfile filters the kernel wrongly (makedumpfile_gap): the nearest
    sound dump it can write of that kernel."""
    return 1 if release and makedumpfile_gap(release, binary) else 31


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


def capture_initrd(level: int = 31) -> bytes:
    """The capture kernel's initramfs: base + makedumpfile + CAPTURE_SCRIPT
    (makedumpfile -d level)."""
    files = {k: v for k, v in guest_tools().items() if "kexec" not in k}
    return base_initramfs().read_bytes() + overlay_archive(
        CAPTURE_SCRIPT.replace("@LEVEL@", str(int(level))), files)


def kernel_release(kernel: Path):
    """The release of a build's bzImage (its directory's `release`), or None."""
    release = Path(kernel).parent / "release"
    return release.read_text().strip() if release.is_file() else None


def first_kernel_files(kernel: Path) -> dict:
    """What the first kernel's initramfs needs for `kexec -p`."""
    files = guest_tools()
    files["/fgk/bzImage"] = str(kernel)
    files["/fgk/capture.initrd"] = capture_initrd(dump_level(kernel_release(kernel)))
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


def kdump_guest(profile: str = "kdump", script: str | None = None, *, dump_dir,
                files: dict | None = None, kernel=None, extra_qemu_args=None, **kw):
    """An fgkrun.Guest (not started) for a real kdump: KEXEC_LOAD, then
    script (default CRASH_SCRIPT); kexec, the bzImage and the capture
    initramfs in its initramfs; the capture disk in dump_dir (made 0700)."""
    import fgkrun
    first = first_kernel_files(Path(kernel) if kernel else DEFAULT_KERNEL)
    first.update(files or {})
    disk = private_dir(dump_dir) / "capture.img"
    g = fgkrun.Guest(profile, KEXEC_LOAD + (script if script is not None else CRASH_SCRIPT),
                     files=first, kernel=kernel,
                     extra_qemu_args=[*(extra_qemu_args or []), *make_capture_disk(disk)], **kw)
    g.capture_disk = disk
    return g


def collect(guest, dump_dir) -> dict:
    """After guest.wait(): the capture's files extracted into dump_dir
    ({name: path}), the disk image removed.  UsageError when the capture
    kernel left nothing (the first kernel did not crash, or the capture
    failed: its console is at the end of the run's log)."""
    try:
        got = read_capture_disk(guest.capture_disk, Path(dump_dir))
    except (UsageError, tarfile.TarError):
        got = {}        # nothing, or a half-written archive
    finally:
        Path(guest.capture_disk).unlink(missing_ok=True)
    missing = [n for n in DUMPS if n not in got]
    if missing:
        raise UsageError(f"{guest.log_path}: the capture kernel did not save "
                         f"{', '.join(missing)} (see the log's end)")
    return got
