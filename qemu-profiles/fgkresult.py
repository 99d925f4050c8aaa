"""fgkresult: what a run of the QEMU runner returns (see fgkrun).

The output markers /init prints, the runner's exit codes, and Result, made
by make_result() from what a finished guest left: the console log (ttyS0),
the script's channel (the fgk.out port or ttyS1) and QEMU's stderr.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

MARK_BEGIN = "=====FGK-OUTPUT-BEGIN====="
MARK_END_RE = re.compile(r"=====FGK-OUTPUT-END rc=(\d+)=====")

# Exit codes of the runner (besides the guest script's own rc).
RC_USAGE = 2
RC_TIMEOUT = 124
RC_GUEST_FAILED = 125

# Kernel log lines that mean the guest kernel panicked or oopsed (rc 125),
# and warnings, which are reported (Result.warnings) but do not fail a run.
FATAL_RE = re.compile(
    r"(Kernel panic - not syncing.*|Oops: .*|BUG: .*|kernel BUG at .*"
    r"|general protection fault.*)")
WARN_RE = re.compile(r"WARNING: .* at .*")


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


def make_result(log: str, raw_out: str, qemu_err: str, *, timed_out: bool,
                timeout: float, log_path: Path, cmdline: str, profile: str,
                duration: float, qemu_pid: int | None) -> Result:
    """The Result of a finished guest: `log` the console (ttyS0), `raw_out`
    the script's channel, `qemu_err` QEMU's stderr."""
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
    res = Result(rc=0, output=output, log=log, log_path=log_path,
                 cmdline=cmdline, profile=profile,
                 duration=duration, timed_out=timed_out, script_rc=script_rc,
                 warnings=warnings, qemu_pid=qemu_pid)
    if timed_out:
        res.rc = RC_TIMEOUT
        res.message = f"run: guest timed out after {timeout:g} s (log: {log_path})"
    elif fatal is not None:
        res.rc = RC_GUEST_FAILED
        res.panicked = True
        res.panic_line = fatal
        res.message = f"run: guest kernel failed: {fatal} (log: {log_path})"
    elif script_rc is None:
        res.rc = RC_GUEST_FAILED
        why = f"qemu: {qemu_err.splitlines()[-1]}" if qemu_err else "no end marker"
        res.message = (f"run: guest stopped before the script finished ({why}) "
                       f"(log: {log_path})")
    else:
        res.rc = script_rc
    return res
