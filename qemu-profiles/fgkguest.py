"""fgkguest: one QEMU guest running one script (see fgkrun).

Guest builds the QEMU command line (pc machine, TCG, the kernel with the
initrd from fgkinitramfs, the output channels, optionally UEFI firmware, a
gdbstub and QMP), runs QEMU in its own session, drains the console in a
thread, and at the end hands what the guest left to fgkresult.make_result.

QEMU runs with -no-reboot, so any reboot, including the one ``panic=-1``
causes, ends QEMU.

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
"""

from __future__ import annotations

import ctypes
import datetime
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from fgkbase import (DEFAULT_KERNEL, PRIVATE_UMASK, RUNS_DIR, UsageError, open_private,
                     private_dir, write_private)
from fgkinitramfs import DEFAULT_SCRIPT, HOLD_SCRIPT, base_initramfs, overlay_archive
from fgkprofiles import load_profile
from fgkqmp import qmp_command
from fgkresult import MARK_BEGIN, MARK_END_RE, Result, make_result
from fgkseed import read_seed_record
import libfgk  # noqa: E402  (on sys.path through fgkbase)

BASE_CMDLINE = "console=ttyS0 panic=-1"

QEMU = os.environ.get("FGK_QEMU", "qemu-system-x86_64")
# Single-threaded TCG: both vCPUs on one host thread.  With QEMU 7.2's
# default multi-threaded TCG, a guest that patches code another vCPU runs
# hangs now and then: toggling a trace event (which patches the
# sched_switch static key in __schedule) 300 times hung 3 of 5 boots, with
# FG-KASLR and with nofgkaslr alike: one vCPU spins at the patched site with
# interrupts off, the other waits for its IPI.  Single-threaded: 0 of 8,
# and the same boots took 16-18 s instead of 30 s on 2 host cores
# (docs/building.md).
QEMU_BASE = ["-accel", "tcg,thread=single", "-m", "512M", "-smp", "2", "-nographic",
             "-no-reboot", "-nic", "none"]          # no network in the guest
# The guest CPU.  TCG's "max" exposes RDRAND/RDSEED, so the decompressor's
# seed does not come from rdtsc alone; "qemu64" is a CPU without them.
DEFAULT_CPU = "max"

# UEFI firmware (Debian's ovmf): a read-only code image and a template for
# the per-boot variable store.
OVMF_CODE = Path(os.environ.get("FGK_OVMF_CODE", "/usr/share/OVMF/OVMF_CODE_4M.fd"))
OVMF_VARS = Path(os.environ.get("FGK_OVMF_VARS", "/usr/share/OVMF/OVMF_VARS_4M.fd"))


def _pdeathsig():
    """preexec: QEMU dies with its parent, whatever kills the parent (the
    kernel ties this to the forking thread: start guests from long-lived
    threads); and QEMU's umask is 077, so what it creates (the QMP socket,
    dump-guest-memory files, any file: chardev not made here) is private
    (fgkbase, "Private files")."""
    os.umask(PRIVATE_UMASK)
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
                 extra_qemu_args=None, efi: bool = False, cpu: str | None = None):
        self.profile = load_profile(profile)
        self.efi = efi
        self.cpu = cpu or DEFAULT_CPU
        if not re.fullmatch(r"[A-Za-z0-9_.,=+-]+", self.cpu):
            raise UsageError(f"bad --cpu {self.cpu!r}")
        if efi:
            for fw in (OVMF_CODE, OVMF_VARS):
                if not fw.is_file():
                    raise UsageError(f"--efi: UEFI firmware {fw} not found (package ovmf; "
                                     "make deps)")
        if script is None:
            script = DEFAULT_SCRIPT + (HOLD_SCRIPT if self.profile.hold else "")
        self.script = script
        self.kernel = Path(kernel) if kernel else DEFAULT_KERNEL
        if not self.kernel.is_file():
            raise UsageError(f"kernel {self.kernel} not found (run 'make kernel')")
        # a libfgk.SeedRecord: its seed is canonical already (libfgk parsed it)
        self.seed_record = read_seed_record(seed_file) if seed_file is not None else None
        if seed is not None:
            try:                            # libfgk's parser (layout-spec section 2)
                seed = libfgk.parse_seed(str(seed))
            except libfgk.FgkError as e:
                raise UsageError(f"bad seed {seed!r}: {e} (use --append fgkaslr_seed=... "
                                 "to pass anything else)") from None
        elif self.seed_record is not None:
            seed = self.seed_record.seed
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

        # gdb=0: any free port.  The runner binds the listening socket itself
        # and hands it to QEMU, so the port cannot be taken by someone else
        # between choosing it and QEMU listening on it.
        self.gdb_port = gdb if gdb is not None else (1234 if self.profile.gdb else None)
        self._gdb_sock = None
        if self.gdb_port is not None:
            if not 0 <= self.gdb_port <= 65535:
                raise UsageError(f"bad gdbstub port {self.gdb_port}")
            self._gdb_sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                self._gdb_sock.bind(("127.0.0.1", self.gdb_port))
                self._gdb_sock.listen(1)
            except OSError as e:
                self._gdb_sock.close()
                raise UsageError(f"gdbstub port 127.0.0.1:{self.gdb_port}: {e.strerror}")
            self.gdb_port = self._gdb_sock.getsockname()[1]
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
        self.diagnosis, self._diag_note = "", ""

    # -- build the command ---------------------------------------------
    def _prepare(self):
        # Everything the run leaves beside the log is private (0600 files,
        # build/runs 0700): the log, the script's output and the initrd
        # (the script, --files such as seed records) hold the seed.  QEMU
        # opens the pre-created output files without changing their mode.
        private_dir(self.log_path.parent,
                    tighten=self.log_path.parent.resolve() == RUNS_DIR.resolve())
        base = base_initramfs()
        self.initrd_path = self.log_path.with_suffix(".initrd")
        self.out_path = self.log_path.with_suffix(".out")        # virtio port
        self.out2_path = self.log_path.with_suffix(".ttyS1")     # fallback
        with open_private(self.initrd_path) as f:
            f.write(base.read_bytes())
            f.write(overlay_archive(self.script, self.files))
        write_private(self.out_path, b"")
        write_private(self.out2_path, b"")
        cmd = [QEMU, *QEMU_BASE, "-cpu", self.cpu]
        if self.efi:
            # OVMF loads -kernel through the kernel's EFI stub (LoadImage),
            # the path a UEFI machine takes.
            self.vars_path = self.log_path.with_suffix(".efivars")
            with open(OVMF_VARS, "rb") as src, open_private(self.vars_path) as dst:
                shutil.copyfileobj(src, dst)
            cmd += ["-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={OVMF_CODE}",
                    "-drive", f"if=pflash,format=raw,unit=1,file={self.vars_path}"]
        cmd += ["-kernel", str(self.kernel), "-initrd", str(self.initrd_path),
                *self._append_args(),
               "-monitor", "none",
               "-serial", "stdio",
               "-serial", f"file:{self.out2_path}",
               "-device", "virtio-serial-pci,id=fgkser",
               "-chardev", f"file,id=fgkout,path={self.out_path}",
               "-device", "virtserialport,bus=fgkser.0,chardev=fgkout,name=fgk.out"]
        self._pass_fds = ()
        if self._gdb_sock is not None:
            fd = self._gdb_sock.fileno()
            self._pass_fds = (fd,)
            cmd += ["-chardev", f"socket,id=fgkgdb,fd={fd},server=on,wait=off",
                    "-gdb", "chardev:fgkgdb"]
        if self.wait_gdb:
            cmd += ["-S"]
        if self.qmp_path is not None:
            # the socket itself is made by QEMU, under its umask 077
            private_dir(self.qmp_path.parent)
            if self.qmp_path.exists():
                self.qmp_path.unlink()
            cmd += ["-qmp", f"unix:{self.qmp_path},server=on,wait=off"]
        # A second, private monitor for the runner alone: when a guest
        # times out, its vCPUs' registers go into the log (see _diagnose).
        self.diag_path = self.log_path.with_suffix(".diag")
        if self.diag_path.exists():
            self.diag_path.unlink()
        cmd += ["-qmp", f"unix:{self.diag_path},server=on,wait=off"]
        cmd += self.profile.qemu_args + self.extra_qemu_args
        self.qemu_cmd = cmd
        return cmd

    # QEMU's config parser: name = "value", no '"' inside, at most 1023 bytes.
    READCONFIG_MAX = 1023

    def _append_args(self):
        """The kernel command line, through a 0600 -readconfig file when it
        can be written there: on QEMU's command line a seed would be
        readable by every local user in /proc/PID/cmdline while the guest
        runs (the machine property 'append' is what -append sets)."""
        self.cfg_path = self.log_path.with_suffix(".qemu-cfg")
        line = self.cmdline
        if '"' in line or "\n" in line or len(line.encode()) > self.READCONFIG_MAX:
            return ["-append", line]
        write_private(self.cfg_path, f'[machine]\n  append = "{line}"\n')
        return ["-readconfig", str(self.cfg_path)]

    def start(self):
        cmd = self._prepare()
        self.t0 = time.monotonic()
        self.log_file = open_private(self.log_path)
        self.stderr_file = open_private(self.log_path.with_suffix(".qemu-stderr"), "w+b")
        self._buf = bytearray()
        self._buf_lock = threading.Lock()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=self.stderr_file,
                                     start_new_session=True, preexec_fn=_pdeathsig,
                                     pass_fds=self._pass_fds)
        if self._gdb_sock is not None:
            self._gdb_sock.close()          # QEMU holds the listening socket now
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

    def _diagnose(self):
        """A hung guest: append every vCPU's registers (QEMU's `info
        registers -a`) to the console log, so that a timeout in CI says
        where the guest was stuck."""
        try:
            regs = qmp_command(self.diag_path, "human-monitor-command", timeout=15,
                               **{"command-line": "info registers -a"})
        except (OSError, RuntimeError, ValueError) as e:
            regs = f"(no registers: {e})\n"
        # the general registers only: the FPU/SSE/AVX state is noise here
        regs = "".join(l for l in regs.splitlines(keepends=True)
                       if not re.match(r"(FPR|[XYZ]MM|FCW|Opmask)", l))
        rips = re.findall(r"^RIP=([0-9a-f]+) .*?$", regs, re.M)
        # the code each vCPU is at, as memory holds it now
        for rip in dict.fromkeys(rips):
            try:
                dump = qmp_command(self.diag_path, "human-monitor-command", timeout=15,
                                   **{"command-line": f"x/16xb 0x{rip}"})
                regs += f"code at {rip}: " + " ".join(
                    re.findall(r"\b0x([0-9a-f]{2})\b", dump)) + "\n"
            except (OSError, RuntimeError, ValueError) as e:
                regs += f"code at {rip}: unreadable ({e})\n"
        self.diagnosis = "vCPU RIPs " + (" ".join(rips) if rips else "unknown")
        self._diag_note = (f"\n=== fgkrun: guest timed out; vCPU registers ===\n{regs}"
                           f"=== end vCPU registers ===\n")

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
                    self._diagnose()
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
        log += self._diag_note
        write_private(self.log_path, log)
        raw = self.out_path.read_bytes()
        if MARK_BEGIN.encode() not in raw:
            raw = self.out2_path.read_bytes()
        raw_out = raw.decode("utf-8", "replace")
        self.stderr_file.seek(0)
        qemu_err = self.stderr_file.read().decode("utf-8", "replace").strip()
        self.stderr_file.close()
        res = make_result(log, raw_out, qemu_err, timed_out=timed_out, timeout=self.timeout,
                          log_path=self.log_path, cmdline=self.cmdline,
                          profile=self.profile.name, duration=duration,
                          qemu_pid=self.proc.pid)
        if timed_out and self.diagnosis:
            res.message += f"; {self.diagnosis}"
        self._remove_scratch()
        return res

    def _remove_scratch(self):
        for p in (self.initrd_path, self.out_path, self.out2_path,
                  self.log_path.with_suffix(".qemu-stderr"),
                  self.log_path.with_suffix(".efivars"),
                  self.log_path.with_suffix(".qemu-cfg"),
                  self.log_path.with_suffix(".diag")):
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
