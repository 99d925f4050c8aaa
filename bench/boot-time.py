#!/usr/bin/env python3
"""Boot time with FG-KASLR, with `nofgkaslr` (same image) and without
CONFIG_FG_KASLR (build/kernel-nofg, `make kernel KVARIANT=nofg`), QEMU TCG;
then the same for Debian's configuration when build/kernel-debian exists
(without FG_KASLR: build/kernel-debian-nofg).  Also bzImage, init_size and
vmlinux against the build without FG_KASLR, and their growth.

Interleaved rounds (fg, fg+nofgkaslr, nofg) so that machine load hits all
three alike, KUnit off (kunit.enable=0: the FG build's boot-time suite would
be timed too); reports medians of
  wall:  host seconds from QEMU's start to init's first console line,
  init:  the kernel's own uptime at "Run /init",
  fg:    the decompressor's FG-KASLR time (boot message), mcount sort part,
and the ratios against nofgkaslr measured in the same run; then one boot
under -icount (below) for the decompressor's work in guest instructions.

  bench/boot-time.py [ROUNDS]      (default 7)
  bench/boot-time.py --icount [ROUNDS]   (default 3)

--icount boots the FG image ROUNDS times under QEMU's -icount shift=0,
where the guest's TSC counts guest instructions: the decompressor's
FG-KASLR work in millions of guest instructions, in total, per phase and
per function section.  The count does not move with host load (it moves a
little with the seed, so each boot draws a new one); use it to compare two
builds of the boot code on a busy machine, where wall time can't.
"""
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "qemu-profiles"))
import fgkrun  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
import fgkbench  # noqa: E402


def fg_stats(output):
    """/proc/fgkaslr_stats as the guest printed it: us, cycles and
    mcount_cycles (None where absent), phase_cycles as {phase: cycles}
    (None where absent: kernels before v7)."""
    st = {k: int(m.group(1)) if (m := re.search(rf"^{k}: (\d+)$", output, re.M)) else None
          for k in ("us", "cycles", "mcount_cycles")}
    ph = re.search(r"^phase_cycles: (.*)$", output, re.M)
    st["phases"] = {n: int(v) for n, v in re.findall(r"(\w+)=(\d+)", ph.group(1))} if ph else None
    return st


def boot(kernel, append, extra=()):
    """One boot to init: host seconds to init's first console line, the
    kernel's uptime at "Run /init", and fg_stats()."""
    # The decompressor's numbers are root-only (/proc/fgkaslr_stats), not in dmesg.
    # kunit.enable=0: the FG build runs the fgkaslr suite at boot, and most of
    # its cases skip under nofgkaslr; the no-FG build has none: boot, not tests.
    g = fgkrun.Guest("boot", "cat /proc/fgkaslr_stats 2>/dev/null; true", kernel=kernel,
                     append=" ".join(x for x in ("kunit.enable=0", append) if x),
                     kaslr=True, timeout=600, extra_qemu_args=list(extra))
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
    return wall, float(m.group(1)) if m else float("nan"), fg_stats(res.output)


def one(kernel, append):
    wall, init, st = boot(kernel, append)
    fg_ms = st["us"] / 1000 if st["us"] is not None else 0.0
    timed = st["us"] is not None and st["cycles"] is not None
    mcount_ms = (fg_ms * st["mcount_cycles"] / st["cycles"]
                 if timed and st["mcount_cycles"] is not None else 0.0)
    # v7 kernels: where the decompressor's time went, in ms
    phases = ({n: fg_ms * v / st["cycles"] for n, v in st["phases"].items()}
              if timed and st["phases"] is not None else {})
    return wall, init, fg_ms, mcount_ms, phases


def sizes(name, fg_dir, nofg):
    """bzImage, init_size and vmlinux of the FG build against the build
    of the same configuration without FG_KASLR."""
    a = fgkbench.scale(fg_dir)
    if nofg is None:
        print(f"{name}: bzImage {a['bzImage']:,} B, init_size {a['init_size']:,} B "
              f"(no build without FG_KASLR to compare: 'make kernel KVARIANT="
              f"{'' if name == 'default' else name + '-'}nofg')")
        return
    b = {"bzImage": (nofg / "bzImage").stat().st_size,
         "init_size": fgkbench.init_size(nofg / "bzImage"),
         "vmlinux": (nofg / "vmlinux").stat().st_size if (nofg / "vmlinux").is_file() else 0}
    for k in ("bzImage", "init_size", "vmlinux"):
        if b[k]:
            print(f"  {k:10} {a[k]:>13,} B with FG-KASLR, {b[k]:>13,} B without: "
                  f"{100.0 * (a[k] - b[k]) / b[k]:+6.1f}% ({(a[k] - b[k]) / 2**20:+.2f} MiB)")


# one vCPU: under -icount the 6.1 kernel hangs bringing up the second
# one ("Booting SMP configuration"), and the decompressor runs on one anyway
ICOUNT = ("-icount", "shift=0", "-smp", "1")


def instructions(kdir, rounds):
    """The decompressor's FG-KASLR work in guest instructions (-icount)."""
    runs = []
    for r in range(rounds):
        cycles = boot(kdir / "bzImage", "", ICOUNT)[2]
        if not cycles["cycles"]:
            raise SystemExit(f"boot-time: {kdir / 'bzImage'}: no FG-KASLR cycles in "
                             "/proc/fgkaslr_stats (not an FG-KASLR kernel, or it booted nofgkaslr)")
        phases = dict(cycles["phases"] or {})
        phases["other"] = cycles["cycles"] - sum(phases.values())
        runs.append((cycles["cycles"], phases))
        print(f"round {r + 1}/{rounds}: {cycles['cycles'] / 1e6:.1f} M instructions", flush=True)
    total = statistics.median(t for t, _ in runs)
    secs = fgkbench.scale(kdir)["sections"]
    print(f"decompressor FG-KASLR work: {total / 1e6:.1f} M guest instructions "
          f"(min {min(t for t, _ in runs) / 1e6:.1f}, max {max(t for t, _ in runs) / 1e6:.1f}), "
          f"{total / secs:,.0f} per function section ({secs:,} sections)")
    print("phases (median M instructions): " + ", ".join(
        f"{n} {statistics.median(p.get(n, 0) for _, p in runs) / 1e6:.1f}" for n in runs[0][1]))
    print(f"(QEMU -icount shift=0, {rounds} boots, each with its own random seed)")


def main():
    args = sys.argv[1:]
    icount = "--icount" in args
    args = [a for a in args if a != "--icount"]
    if len(args) > 1 or (args and not args[0].isdigit()):
        raise SystemExit("usage: bench/boot-time.py [--icount] [ROUNDS]")
    rounds = int(args[0]) if args else (3 if icount else 7)
    kernels = fgkbench.variants()
    if not kernels:
        raise SystemExit("boot-time: build/kernel/bzImage missing: run 'make kernel'")
    if icount:
        for name, kdir in kernels:
            print(f"== {fgkbench.scale_line(name, kdir)}")
            instructions(kdir, rounds)
        return
    dirs = dict(kernels)
    for name, kdir in kernels:
        fg = kdir / "bzImage"
        nofg = fgkbench.nofg_dir(kdir)
        print(f"== {fgkbench.scale_line(name, kdir)}")
        sizes(name, kdir, nofg)
        cases = [("FG-KASLR", fg, ""), ("nofgkaslr", fg, "nofgkaslr")]
        if nofg:
            cases.append(("without FG_KASLR", nofg / "bzImage", ""))
        else:
            print(f"boot-time: {kdir.name}-nofg missing: measuring the FG image with and "
                  "without nofgkaslr only")
        data = {c: [] for c, _, _ in cases}
        for r in range(rounds):
            for c, kernel, append in cases:
                data[c].append(one(kernel, append))
            print(f"round {r + 1}/{rounds} done", flush=True)
        base = statistics.median(x[0] for x in data["nofgkaslr"])
        print(f"{'':18} {'wall to init':>13} {'kernel at init':>15} {'FG in decompressor':>19} "
              f"{'mcount sort':>12} {'wall ratio':>10}")
        for c, _, _ in cases:
            w = statistics.median(x[0] for x in data[c])
            k = statistics.median(x[1] for x in data[c])
            f = statistics.median(x[2] for x in data[c])
            mc = statistics.median(x[3] for x in data[c])
            print(f"{c:18} {w:12.2f}s {k:14.2f}s {f:17.1f}ms {mc:10.1f}ms {w / base:9.2f}x")
        fg_ms = statistics.median(x[2] for x in data["FG-KASLR"])
        phases = [x[4] for x in data["FG-KASLR"] if x[4]]
        if phases:
            print("decompressor FG-KASLR phases (median ms): " + ", ".join(
                f"{n} {statistics.median(p.get(n, 0.0) for p in phases):.1f}" for n in phases[0]))
        fg_wall = statistics.median(x[0] for x in data["FG-KASLR"])
        print(f"boot cost of FG-KASLR: wall to init {fg_wall:.2f}s vs {base:.2f}s with nofgkaslr "
              f"({100 * (fg_wall - base) / base:+.1f}%, same image, interleaved)")
        print(f"decompressor FG-KASLR time: {fg_ms:.1f} ms = {100 * fg_ms / 1000 / base:.1f}% of "
              f"the nofgkaslr boot to init; {1000 * fg_ms / fgkbench.scale(kdir)['sections']:.2f} us "
              "per function section")
        print(f"(medians of {rounds} interleaved rounds, QEMU TCG)")
        # the same work in guest instructions: a number host load can't move
        instructions(kdir, 1)
    g = fgkbench.growth_line(dirs)
    if g:
        print(g)


if __name__ == "__main__":
    main()
