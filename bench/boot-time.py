#!/usr/bin/env python3
"""Boot time with FG-KASLR, with `nofgkaslr` (same image) and without
CONFIG_FG_KASLR (build/kernel-nofg, `make kernel KVARIANT=nofg`), QEMU TCG.

Interleaved rounds (fg, fg+nofgkaslr, nofg) so that machine load hits all
three alike; reports medians of
  wall:  host seconds from QEMU's start to init's first console line,
  init:  the kernel's own uptime at "Run /init",
  fg:    the decompressor's FG-KASLR time (boot message), mcount sort part,
and the ratios against nofgkaslr measured in the same run.

  bench/boot-time.py [ROUNDS]      (default 7)
"""
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "qemu-profiles"))
import fgkrun  # noqa: E402

FG = REPO / "build" / "kernel" / "bzImage"
NOFG = REPO / "build" / "kernel-nofg" / "bzImage"


def one(kernel, append):
    # The decompressor's numbers are root-only (/proc/fgkaslr_stats), not in dmesg.
    g = fgkrun.Guest("boot", "cat /proc/fgkaslr_stats 2>/dev/null; true", kernel=kernel,
                     append=append, kaslr=True, timeout=600)
    t0 = time.monotonic()
    g.start()
    try:
        ok = g.wait_for_console(re.escape(fgkrun.MARK_BEGIN), timeout=600)
        wall = time.monotonic() - t0
        res = g.wait()
    finally:
        g.kill()
    if not ok:
        raise SystemExit(f"boot-time: {kernel} did not reach init ({res.message})")
    m = re.search(r"\[\s*(\d+\.\d+)\] Run /init as init process", res.log)
    us = re.search(r"^us: (\d+)$", res.output, re.M)
    cyc = re.search(r"^cycles: (\d+)$", res.output, re.M)
    mc = re.search(r"^mcount_cycles: (\d+)$", res.output, re.M)
    fg_ms = int(us.group(1)) / 1000 if us else 0.0
    mcount_ms = (fg_ms * int(mc.group(1)) / int(cyc.group(1))) if (mc and cyc and us) else 0.0
    return wall, float(m.group(1)) if m else float("nan"), fg_ms, mcount_ms


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    if not FG.is_file():
        raise SystemExit("boot-time: build/kernel/bzImage missing: run 'make kernel'")
    cases = [("FG-KASLR", FG, ""), ("nofgkaslr", FG, "nofgkaslr")]
    if NOFG.is_file():
        cases.append(("without FG_KASLR", NOFG, ""))
    else:
        print("boot-time: build/kernel-nofg missing ('make kernel KVARIANT=nofg'): "
              "measuring the FG image with and without nofgkaslr only")
    data = {name: [] for name, _, _ in cases}
    for r in range(rounds):
        for name, kernel, append in cases:
            data[name].append(one(kernel, append))
        print(f"round {r + 1}/{rounds} done", flush=True)
    base = statistics.median(w for w, _, _, _ in data["nofgkaslr"])
    print(f"{'':18} {'wall to init':>13} {'kernel at init':>15} {'FG in decompressor':>19} "
          f"{'mcount sort':>12} {'wall ratio':>10}")
    for name, _, _ in cases:
        w = statistics.median(x[0] for x in data[name])
        k = statistics.median(x[1] for x in data[name])
        f = statistics.median(x[2] for x in data[name])
        mc = statistics.median(x[3] for x in data[name])
        print(f"{name:18} {w:12.2f}s {k:14.2f}s {f:17.1f}ms {mc:10.1f}ms {w / base:9.2f}x")
    print(f"(medians of {rounds} interleaved rounds, QEMU TCG)")


if __name__ == "__main__":
    main()
