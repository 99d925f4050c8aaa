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
and the ratios against nofgkaslr measured in the same run; then one round
under -icount (below): the decompressor's work, and its share of the boot
to init, in guest instructions.

  bench/boot-time.py [ROUNDS]      (default 7)
  bench/boot-time.py --icount [ROUNDS]   (default 3)

--icount boots the FG image ROUNDS times under QEMU's -icount shift=0,
where the guest's TSC counts guest instructions: the decompressor's
FG-KASLR work in millions of guest instructions, in total, per phase and
per function section.  The count does not move with host load (it moves a
little with the seed, so each boot draws a new one); use it to compare two
builds of the boot code on a busy machine, where wall time can't.

Each --icount round also boots the same image with `nofgkaslr`, both under
the fgk-icount plugin (perf-model/fgk-icount.c, built by make -C
perf-model), which counts every guest instruction from QEMU's reset to the
first instruction of init in user mode (the first one at a user address
after the kernel's first kernel-half one): boot to init in guest
instructions, split at the kernel's first kernel-half instruction into
"pre-kernel" (firmware, setup code, decompressor, the identity-mapped
startup_64) and "kernel".  It reports the FG-KASLR work as a share of the
nofgkaslr boot to init, both in guest instructions, from the same run, and
FG - nofgkaslr to init, which should be the FG work.  That is a share of
work, not of wall time: waits (timers, devices, idle) cost wall time but
few instructions, and an instruction's cost differs (the decompressor's
random page accesses are dear under TCG).  Without the plugin (no
qemu-plugin.h, no compiler) only the FG work is measured.
"""
import re
import statistics
import subprocess
import sys
import tempfile
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


def boot(kernel, append, extra=(), plugin=None):
    """One boot to init: host seconds to init's first console line, the
    kernel's uptime at "Run /init", fg_stats(), and with plugin (the
    fgk-icount .so) its guest instruction counts (parse_icount(); None
    without)."""
    # The decompressor's numbers are root-only (/proc/fgkaslr_stats), not in dmesg.
    # kunit.enable=0: the FG build runs the fgkaslr suite at boot, and most of
    # its cases skip under nofgkaslr; the no-FG build has none: boot, not tests.
    with tempfile.TemporaryDirectory(prefix="fgk-boottime.") as tmp:
        out = Path(tmp) / "icount.txt"
        extra = list(extra) + (["-plugin", f"{plugin},out={out}"] if plugin else [])
        g = fgkrun.Guest("boot", "cat /proc/fgkaslr_stats 2>/dev/null; true", kernel=kernel,
                         append=" ".join(x for x in ("kunit.enable=0", append) if x),
                         kaslr=True, timeout=600, extra_qemu_args=extra)
        t0 = time.monotonic()
        g.start()
        fgkbench.share_autogroup_nice(g.proc.pid)
        try:
            ok = g.wait_for_console(re.escape(fgkrun.MARK_BEGIN), timeout=600)
            wall = time.monotonic() - t0
            res = g.wait()
        finally:
            g.kill()
        ic = parse_icount(out.read_text()) if plugin and out.is_file() else None
    if not ok:
        raise SystemExit(f"boot-time: {kernel} did not reach init ({res.message})")
    if plugin and not (ic and ic["reached"]):
        raise SystemExit(f"boot-time: {kernel} {append}: fgk-icount saw no start of init ({ic})")
    m = re.search(r"\[\s*(\d+\.\d+)\] Run /init as init process", res.log)
    return wall, float(m.group(1)) if m else float("nan"), fg_stats(res.output), ic


PLUGIN = REPO / "build" / "perf-model" / "fgk-icount.so"


def build_plugin():
    """perf-model's fgk-icount plugin (make -C perf-model; it fetches QEMU
    7.2's qemu-plugin.h once); None, with a message, if it can't be built."""
    r = subprocess.run(["make", "-s", "-C", str(REPO / "perf-model"), str(PLUGIN)],
                       capture_output=True, text=True)
    if r.returncode or not PLUGIN.is_file():
        why = (r.stderr.strip().splitlines() or ["?"])[-1]
        print(f"boot-time: no fgk-icount plugin ({why}): boot to init in guest "
              "instructions not measured")
        return None
    return PLUGIN


def parse_icount(text):
    """fgk-icount's out= line (pre=N boot=N total=N first_kernel=0x..
    first_user=0x.. reached=1): {name: int}; reached 0 when QEMU ended
    before init started (then boot and first_user are absent)."""
    line = next((ln for ln in text.splitlines() if ln.startswith("pre=")), None)
    if line is None:
        return None
    kv = dict(f.split("=", 1) for f in line.split() if "=" in f)
    return {k: int(v, 0) for k, v in kv.items()}


def icount_summary(work, fg, nofg):
    """The report lines on boot to init in guest instructions.  work: the
    FG boots' FG-KASLR cycles (= instructions under -icount shift=0); fg,
    nofg: their parse_icount() dicts, one per boot (FG image, the same image
    with nofgkaslr)."""
    med = statistics.median

    def mi(x):
        return f"{x / 1e6:,.1f} M"

    def spread(xs):
        return f"{mi(min(xs))}-{mi(max(xs))}" if len(xs) > 1 else "one boot"

    w = med(work)
    ft = [x["total"] for x in fg]
    nt = [x["total"] for x in nofg]
    lines = [
        "boot to init (reset to init's first user-mode instruction), guest instructions, "
        f"medians of {len(ft)}:",
        f"  FG-KASLR   {mi(med(ft))} ({spread(ft)}): pre-kernel {mi(med(x['pre'] for x in fg))}, "
        f"kernel {mi(med(x['boot'] for x in fg))}",
        f"  nofgkaslr  {mi(med(nt))} ({spread(nt)}): pre-kernel "
        f"{mi(med(x['pre'] for x in nofg))}, kernel {mi(med(x['boot'] for x in nofg))}",
        f"FG work share of boot-to-init, guest instructions: {mi(w)} / {mi(med(nt))} = "
        f"{100 * w / med(nt):.2f}% (a share of work, not of wall time; same run, same image "
        "with nofgkaslr)",
    ]
    # FG - nofgkaslr: per round, and its pre-kernel part, which holds the FG work
    d = [f["total"] - n["total"] for f, n in zip(fg, nofg)]
    dp = [f["pre"] - n["pre"] for f, n in zip(fg, nofg)]
    lines.append(f"FG - nofgkaslr to init: {mi(med(d))} ({spread(d)}); before the kernel "
                 f"{mi(med(dp))} ({spread(dp)}), in the kernel {mi(med(d) - med(dp))}")
    return lines
def one(kernel, append):
    wall, init, st, _ = boot(kernel, append)
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
    """The decompressor's FG-KASLR work in guest instructions (-icount),
    and with the fgk-icount plugin the boot to init, against nofgkaslr of
    the same image in the same rounds."""
    plugin = build_plugin()
    runs, fg_ic, nofg_ic, nofg_cycles = [], [], [], []
    for r in range(rounds):
        _, _, cycles, ic = boot(kdir / "bzImage", "", ICOUNT, plugin)
        if not cycles["cycles"]:
            raise SystemExit(f"boot-time: {kdir / 'bzImage'}: no FG-KASLR cycles in "
                             "/proc/fgkaslr_stats (not an FG-KASLR kernel, or it booted nofgkaslr)")
        phases = dict(cycles["phases"] or {})
        phases["other"] = cycles["cycles"] - sum(phases.values())
        runs.append((cycles["cycles"], phases))
        msg = f"round {r + 1}/{rounds}: {cycles['cycles'] / 1e6:.1f} M instructions"
        if plugin:
            _, _, ncycles, nic = boot(kdir / "bzImage", "nofgkaslr", ICOUNT, plugin)
            fg_ic.append(ic)
            nofg_ic.append(nic)
            nofg_cycles.append(ncycles["cycles"] or 0)
            msg += (f"; to init {ic['total'] / 1e6:,.1f} M, with nofgkaslr "
                    f"{nic['total'] / 1e6:,.1f} M")
        print(msg, flush=True)
    total = statistics.median(t for t, _ in runs)
    secs = fgkbench.scale(kdir)["sections"]
    print(f"decompressor FG-KASLR work: {total / 1e6:.1f} M guest instructions "
          f"(min {min(t for t, _ in runs) / 1e6:.1f}, max {max(t for t, _ in runs) / 1e6:.1f}), "
          f"{total / secs:,.0f} per function section ({secs:,} sections)")
    print("phases (median M instructions): " + ", ".join(
        f"{n} {statistics.median(p.get(n, 0) for _, p in runs) / 1e6:.1f}" for n in runs[0][1]))
    if plugin:
        for ln in icount_summary([t for t, _ in runs], fg_ic, nofg_ic):
            print(ln)
        print(f"(the decompressor's count under nofgkaslr, its base relocation between the "
              f"FG-KASLR entry points: "
              f"{statistics.median(nofg_cycles) / 1e6:.1f} M, in both totals)")
    print(f"(QEMU -icount shift=0, {rounds} boot{'s' if rounds > 1 else ''}, each with its own "
          "random seed"
          + (", each followed by one of the same image with nofgkaslr" if plugin else "") + ")")


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
