"""fgkdump: save crash dumps of a panicking guest (``qemu-profiles/run --dump-dir``).

With ``--dump-dir DIR`` the runner boots the guest with ``panic=0
oops=panic`` (a panic waits forever instead of rebooting, an oops panics),
QEMU's ``-device vmcoreinfo`` and a QMP socket.  When the console shows the
end of a kernel panic it asks QEMU, over QMP, for ``dump-guest-memory``
twice and then stops the guest.  DIR receives:

  vmcore          ELF core with paging (virtual and physical addresses) and
                  the guest's VMCOREINFO note: crash, drgn, gdb, fgk crash
  vmcore.kdump    kdump-compressed (zlib), reassembled from QEMU's flattened
                  stream into the regular diskdump layout (``makedumpfile
                  -R``) so libkdumpfile reads it too: crash, fgk crash
  vmcoreinfo      the VMCOREINFO text
  serial.log      the kernel console
  output          what the guest script printed (ttyS1)
  seed            seed record (docs/seed-records.md): the seed from
                  FGKASLR_SEED in VMCOREINFO or what the script printed of
                  /proc/fgkaslr_seed, the build-id and release from
                  VMCOREINFO, the offset from the "Kernel Offset:" line.
                  Not written when the kernel has no seed (no FG-KASLR).

Every file in DIR is mode 0600 and DIR, when the runner makes it, 0700
(fgkbase, "Private files"): the dumps hold the whole guest memory, the
seed among it, and the log, output and record hold the seed.  QEMU writes
the dumps under its umask 077 and the runner then sets and checks 0600.

Used as a module by tests (tests/test_crash.py) and bench/crash-start.
Dumps, VMCOREINFO, the flattened kdump format, the "Kernel Offset:" line and
seed records are read and written by libfgk, through the libfgk binding.
"""

from __future__ import annotations

import datetime
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import fgkrun
import libfgk      # on sys.path through fgkrun (docs/python.md)
from fgkbase import make_private, private_dir, write_private

APPEND = "panic=0 oops=panic"
PANIC_END_RE = re.compile(rb"---\[ end Kernel panic")


def seed_from_text(text: str) -> str | None:
    """The one seed (/proc/fgkaslr_seed output, fgkaslr_seed=...) in text
    (libfgk's fgk_seed_scan, what 'fgk seed capture --text' uses)."""
    try:
        return libfgk.seed_scan(text)[0]
    except libfgk.FgkError:             # several different seeds
        return None


# --------------------------------------------------------------------------

@dataclass
class DumpResult:
    result: fgkrun.Result
    dump_dir: Path
    files: dict = field(default_factory=dict)   # name -> Path
    vmcoreinfo: dict = field(default_factory=dict)
    record: dict | None = None                  # seed record fields
    message: str = ""

    @property
    def dumped(self) -> bool:
        return "vmcore" in self.files


def _qmp_dump(guest, path: Path, fmt: str | None):
    kw = {"paging": fmt is None, "protocol": f"file:{path.resolve()}"}
    if fmt:
        kw["format"] = fmt
    fgkrun.qmp_command(guest.qmp_path, "dump-guest-memory", timeout=300, **kw)
    make_private(path)          # QEMU made it (umask 077): 0600, checked


def wait_and_dump(guest, dump_dir, formats=("elf", "kdump-zlib"), note=None) -> DumpResult:
    """Wait for the started guest to panic, dump it into dump_dir, stop it.

    If the guest finishes (or times out) without a panic, nothing is dumped
    and the Result is the usual one.
    """
    dump_dir = private_dir(dump_dir)
    left = guest.t0 + guest.timeout - time.monotonic() if guest.timeout > 0 else 1e9
    guest.wait_for_console(PANIC_END_RE.pattern.decode() + "|" + fgkrun.MARK_END_RE.pattern,
                           timeout=max(left, 0))
    panicked = bool(PANIC_END_RE.search(guest.console_so_far().encode()))
    files = {}
    msg = ""
    if panicked:
        time.sleep(0.5)                 # let the console drain
        try:
            if "elf" in formats:
                path = dump_dir / "vmcore"
                path.unlink(missing_ok=True)
                _qmp_dump(guest, path, None)
                files["vmcore"] = path
            if "kdump-zlib" in formats:
                flat = dump_dir / "vmcore.kdump.flat"
                path = dump_dir / "vmcore.kdump"
                flat.unlink(missing_ok=True)
                _qmp_dump(guest, flat, "kdump-zlib")
                libfgk.unflatten(flat, path)
                flat.unlink()
                files["vmcore.kdump"] = path
        except Exception as e:          # QMP or file trouble: say so, keep going
            msg = f"run: dump failed: {e}"
    guest.kill()
    res = guest.wait()
    out = DumpResult(res, dump_dir, files, message=msg)
    write_private(dump_dir / "serial.log", res.log)
    write_private(dump_dir / "output", res.output)
    files["serial.log"] = dump_dir / "serial.log"
    files["output"] = dump_dir / "output"
    if not panicked:
        out.message = out.message or "run: the guest did not panic: no dump taken"
        return out
    vmci = None
    if "vmcore" in files:
        try:
            vmci = libfgk.read_vmcore(files["vmcore"])
        except libfgk.FgkError as e:
            out.message = f"run: cannot read VMCOREINFO: {e}"
    if vmci:
        write_private(dump_dir / "vmcoreinfo", vmci.raw)
        files["vmcoreinfo"] = dump_dir / "vmcoreinfo"
        out.vmcoreinfo = vmci.fields()
    vi = out.vmcoreinfo
    seed = vi.get("FGKASLR_SEED")
    seed_src = "VMCOREINFO"
    if not seed or seed == "disabled":
        seed = seed_from_text(res.output)
        seed_src = "/proc/fgkaslr_seed in the script output"
    if not seed and vi.get("FGKASLR_SEED") != "disabled":
        # a seed printed on the console, e.g. fgkaslr_seed= text
        seed = seed_from_text(res.log)
        seed_src = "serial log"
    offset = libfgk.kernel_offset_scan(res.log)
    if offset is None and vmci is not None:
        offset = vmci.offset
    try:
        seed = libfgk.parse_seed(seed) if seed else None
    except libfgk.FgkError:
        seed = None
    if seed:
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        panic = res.panic_line or "panic"
        rec = libfgk.SeedRecord(seed, vmci.build_id if vmci else None,
                                vmci.osrelease if vmci else None, offset, note or panic)
        try:
            text = (f"# captured by qemu-profiles/run --dump-dir on {stamp}; seed from "
                    f"{seed_src}\n" + rec.format())
        except libfgk.FgkError as e:
            out.message = f"run: {dump_dir / 'seed'}: no seed record written: {e}"
            return out
        write_private(dump_dir / "seed", text)
        files["seed"] = dump_dir / "seed"
        out.record = rec
    return out


FW_CFG_IOPORT = "qemu_fw_cfg.ioport=0xc@0x510"


def kernel_has_acpi(bzimage) -> bool:
    """CONFIG_ACPI=y in the build's config (build/kernel/config beside
    bzImage, or .config of the O= tree of arch/x86/boot/bzImage)?  True
    when no config is found: then nothing is changed."""
    bzimage = Path(bzimage).resolve()
    for cfg in (bzimage.parent / "config", bzimage.parents[3] / ".config"
                if len(bzimage.parents) > 3 else None):
        if cfg is not None and cfg.is_file():
            return "\nCONFIG_ACPI=y\n" in "\n" + cfg.read_text()
    return True


def dumpable_guest(profile: str = "dump", script: str | None = None, **kw):
    """An fgkrun.Guest (not started) set up for wait_and_dump(): panic=0
    oops=panic on the command line, -device vmcoreinfo, a QMP socket, and
    qemu_fw_cfg.ioport= for kernels built without ACPI."""
    append = " ".join(a for a in (kw.pop("append", ""), APPEND) if a)
    extra = list(kw.pop("extra_qemu_args", []) or [])
    prof = fgkrun.load_profile(profile)
    if "vmcoreinfo" not in " ".join(prof.qemu_args + extra):
        extra += ["-device", "vmcoreinfo"]
    g = fgkrun.Guest(profile, script, append=append, extra_qemu_args=extra, **kw)
    if "qemu_fw_cfg.ioport" not in g.cmdline and not kernel_has_acpi(g.kernel):
        # without ACPI the fw_cfg driver does not find QEMU's device by
        # itself (and without fw_cfg, QEMU gets no VMCOREINFO)
        g.cmdline += " " + FW_CFG_IOPORT
    if g.qmp_path is None:
        g.qmp_path = g.log_path.with_suffix(".qmp")
    return g


def dump_run(profile: str = "dump", script: str | None = None, dump_dir=None, **kw) -> DumpResult:
    """Boot, run `script`, dump on panic into dump_dir (module helper for tests)."""
    g = dumpable_guest(profile, script, **kw)
    g.start()
    try:
        return wait_and_dump(g, dump_dir)
    finally:
        g.kill()
