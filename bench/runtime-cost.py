#!/usr/bin/env python3
"""Run-time cost of the shuffle, simulated (docs/runtime-cost.md).

Boots the same kernel-heavy guest workload under QEMU TCG with the fgk-perf
plugin (perf-model/): FG-KASLR with several random seeds, the same image
with `nofgkaslr`, and the build without CONFIG_FG_KASLR when there is one;
interleaved, so machine load hits all alike.  Per run: kernel instructions,
L1i / L2 / iTLB misses per kilo-instruction and estimated kernel cycles of
the phase after init (the workload), plus the boot phase; then medians and
the spread over seeds, against nofgkaslr measured in the same run.  The
guest's wall clock per phase comes from the same runs (TCG time, not a
hardware estimate).

  bench/runtime-cost.py [SEEDS] [--kernel DIR] [--nofg DIR] [--text-page 2M|4K]

SEEDS defaults to 5.  Default kernel build/kernel (6.1), no-FG build
build/kernel-nofg when present; for 6.12: --kernel build/kernel-6.12
--nofg build/kernel-6.12-nofg.
"""
import argparse
import os
import random
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

PLUGIN = REPO / "build" / "perf-model" / "fgk-perf.so"

# Kernel-heavy: fork+exec+exit, pipes, file create/write/read/unlink,
# stat/getpid-ish syscalls through the shell, and context switches.
WORKLOAD = r"""
i=0; while [ $i -lt 60 ]; do /bin/busybox true; i=$((i+1)); done
dd if=/dev/zero bs=512 count=4000 2>/dev/null | cat > /dev/null
i=0; while [ $i -lt 40 ]; do echo x > /tmp/f$i; cat /tmp/f$i > /dev/null; rm /tmp/f$i; i=$((i+1)); done
dd if=/dev/zero of=/tmp/big bs=4k count=512 2>/dev/null; gzip -c /tmp/big > /tmp/big.gz
cat /tmp/big > /dev/null; rm /tmp/big /tmp/big.gz
ls -lR /proc/self > /dev/null 2>&1; ls -lR /sys/kernel > /dev/null 2>&1
echo workload-done
"""

FIELDS = ("all_insns", "insns", "l1i_miss", "l2_miss", "l2_data_miss", "itlb_miss",
          "stlb_miss", "cycles", "tb_exec", "tb_cross_page", "tb_trans_kernel", "tb_trans_span")


def parse(path):
    phases = {}
    for line in Path(path).read_text().splitlines():
        if line.startswith("phase="):
            kv = dict(x.split("=", 1) for x in line.split())
            name = kv.pop("phase")
            phases[name] = {k: int(v) for k, v in kv.items()}
    if set(phases) != {"pre", "boot", "run"}:
        raise SystemExit(f"runtime-cost: {path}: plugin report has no pre/boot/run phases")
    return phases


def one(kernel, append, text_page, script=WORKLOAD):
    with tempfile.TemporaryDirectory(prefix="fgk-perf.") as d:
        out = Path(d) / "perf.txt"
        arg = f"{PLUGIN},out={out},text_page={text_page}"
        g = fgkrun.Guest("boot", script, kernel=Path(kernel) / "bzImage", kaslr=True, timeout=1200,
                         append=" ".join(x for x in ("kunit.enable=0", append) if x),
                         extra_qemu_args=["-plugin", arg])
        t0 = time.monotonic()
        g.start()
        try:
            ok = g.wait_for_console(re.escape(fgkrun.MARK_BEGIN), timeout=1200)
            t_init = time.monotonic() - t0
            res = g.wait()
            t_end = time.monotonic() - t0
        finally:
            g.kill()
        if not ok or "workload-done" not in res.output:
            raise SystemExit(f"runtime-cost: {kernel} {append}: guest failed ({res.message})")
        ph = parse(out)
        ph["wall"] = {"init": t_init, "total": t_end}
        return ph


def per_ki(n, insns):
    return 1000.0 * n / insns if insns else float("nan")


def row(label, ph, phase="run"):
    p = ph[phase]
    k = p["insns"]
    return (f"  {label:14} {k:>13,} {per_ki(p['l1i_miss'], k):7.2f} {per_ki(p['l2_miss'] - p['l2_data_miss'], k):7.3f}"
            f" {per_ki(p['itlb_miss'], k):7.3f} {p['cycles']:>14,} {p['cycles'] / k:6.3f}"
            f" {per_ki(p['tb_cross_page'], k):7.1f} {ph['wall']['total']:7.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seeds", nargs="?", type=int, default=5)
    ap.add_argument("--kernel", default=str(REPO / "build" / "kernel"))
    ap.add_argument("--nofg", default=None)
    ap.add_argument("--text-page", default="2M", choices=("2M", "4K"))
    a = ap.parse_args()
    if not (REPO / "build" / "qemu-plugin" / "include" / "qemu-plugin.h").is_file() or not PLUGIN.is_file():
        r = subprocess.run(["make", "-s", "-C", str(REPO / "perf-model")])
        if r.returncode:
            print("runtime-cost: skipped: the fgk-perf plugin does not build (make -C perf-model)")
            return 0
    kernel = Path(a.kernel)
    if not (kernel / "bzImage").is_file():
        print(f"runtime-cost: skipped: no kernel at {kernel} (make kernel)")
        return 0
    nofg = Path(a.nofg) if a.nofg else (REPO / "build" / f"{kernel.name}-nofg")
    nofg = nofg if (nofg / "bzImage").is_file() else None
    seeds = [f"{random.getrandbits(64):016x}" for _ in range(a.seeds)]
    runs = {"nofgkaslr": [], "fg": [], "no-FG build": []}
    hdr = (f"  {'run':14} {'kernel insns':>13} {'L1i/ki':>7} {'L2i/ki':>7} {'iTLB/ki':>7}"
           f" {'est. cycles':>14} {'CPI':>6} {'xpg/ki':>7} {'wall s':>7}")
    print(f"runtime-cost: {kernel}, text pages {a.text_page}, {len(seeds)} seeds"
          f"{', no-FG build ' + str(nofg) if nofg else ' (no build without FG_KASLR)'}")
    print("phase 'run' (init's workload; after the first user instruction):")
    print(hdr)
    for s in seeds:   # interleaved: nofgkaslr, fg seed, nofg build
        for label, k, app in (("nofgkaslr", kernel, "nofgkaslr"),
                              ("fg", kernel, f"fgkaslr_seed={s}"),
                              ("no-FG build", nofg, "")):
            if k is None:
                continue
            ph = one(k, app, a.text_page)
            runs[label].append(ph)
            print(row(f"{label} {s[:6]}" if label == "fg" else label, ph), flush=True)

    def med(lst, phase, f):
        return statistics.median(p[phase][f] for p in lst)

    base = runs["nofgkaslr"]
    print("summary (medians; spread = min..max over FG seeds).  The guest's instruction")
    print("count varies from run to run (TCG's clock is the host's: timer interrupts, idle),")
    print("so cost = estimated cycles per kernel instruction (CPI) against nofgkaslr's,")
    print("i.e. FG's cycles for nofgkaslr's instruction count:")
    last = None
    for phase in ("boot", "run"):
        def m(lst, f):
            return statistics.median(f(p[phase]) for p in lst)
        cpi = lambda p: p["cycles"] / p["insns"]  # noqa: E731
        bc = m(base, cpi)
        d = [100.0 * (cpi(p[phase]) - bc) / bc for p in runs["fg"]]
        l1 = lambda p: per_ki(p["l1i_miss"], p["insns"])  # noqa: E731
        l2 = lambda p: per_ki(p["l2_miss"] - p["l2_data_miss"], p["insns"])  # noqa: E731
        it = lambda p: per_ki(p["itlb_miss"], p["insns"])  # noqa: E731
        xp = lambda p: per_ki(p["tb_cross_page"], p["insns"])  # noqa: E731
        tbk = lambda p: p["insns"] / p["tb_exec"]  # noqa: E731
        print(f"  {phase:5} est. kernel cycles FG {statistics.median(d):+.2f}% "
              f"({min(d):+.2f}..{max(d):+.2f}) vs nofgkaslr; CPI {m(runs['fg'], cpi):.4f} vs {bc:.4f}")
        print(f"        L1i misses/ki {m(runs['fg'], l1):.2f} vs {m(base, l1):.2f}; L2 (i-side) "
              f"misses/ki {m(runs['fg'], l2):.3f} vs {m(base, l2):.3f}; iTLB misses/ki "
              f"{m(runs['fg'], it):.4f} vs {m(base, it):.4f}")
        print(f"        TCG: kernel TB entries from another guest page/ki {m(runs['fg'], xp):.1f} vs "
              f"{m(base, xp):.1f}; kernel insns per TB executed {m(runs['fg'], tbk):.2f} vs "
              f"{m(base, tbk):.2f}")
        if runs["no-FG build"]:
            nc = m(runs["no-FG build"], cpi)
            print(f"        the no-FG build's CPI {nc:.4f}: FG {100.0 * (m(runs['fg'], cpi) - nc) / nc:+.2f}%, "
                  f"nofgkaslr {100.0 * (bc - nc) / nc:+.2f}%")
        last = d
    for w in ("init", "total"):
        wb = statistics.median(p["wall"][w] for p in base)
        wf = statistics.median(p["wall"][w] for p in runs["fg"])
        print(f"  wall to {w} (with the plugin, TCG): FG {wf:.1f} s vs nofgkaslr {wb:.1f} s "
              f"({100 * (wf - wb) / wb:+.1f}%)")
    print(f"run-time cost: FG {statistics.median(last):+.2f}% estimated kernel cycles vs nofgkaslr "
          f"({len(last)} seeds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
