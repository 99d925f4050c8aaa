#!/usr/bin/env python3
"""Run-time cost of the shuffle, simulated (docs/runtime-cost.md).

Boots the same kernel-heavy guest workloads (perf-model/fgk-work.c: getpid,
pipe ping-pong, fork+exec, open/read/close, create/unlink, mmap/munmap,
context switches, TCP over loopback where the kernel has networking, a
compression job, a stat/readdir walk) under QEMU TCG with the fgk-perf
plugin (perf-model/), which counts each workload apart by its markers:
FG-KASLR with several random seeds, the same image
with `nofgkaslr`, and the build without CONFIG_FG_KASLR when there is one;
interleaved, so machine load hits all alike.  Per run: kernel instructions,
L1i / L2 / iTLB misses per kilo-instruction and estimated kernel cycles of
the phase after init (the workload), plus the boot phase; then medians and
the spread over seeds, against nofgkaslr measured in the same run.  The
guest's wall clock per phase comes from the same runs (TCG time, not a
hardware estimate).

  bench/runtime-cost.py [SEEDS] [--kernel DIR] [--nofg DIR] [--text-page 2M|4K]
  bench/runtime-cost.py --wall ROUNDS [--kernel DIR]

--wall: where the wall-clock gap between FG-KASLR and nofgkaslr boots of the
same image goes, without the plugin: ROUNDS interleaved pairs (order
alternating) of boot + a trivial script, the host's time at which each phase's
console line arrives (earlyprintk=ttyS0 on both: the kernel's boot console
replays its log from setup_arch() on): firmware (QEMU start to SeaBIOS's
"Booting from ROM"), decompressor (to "Linux version": the setup code, the
decompressor and start_kernel() up to parse_early_param()), kernel boot (to
"Run /init"), init and script (to its last line);
the decompressor's own FG-KASLR phase_cycles (/proc/fgkaslr_stats), and
QEMU's translation statistics (`info jit` over QMP) at the script's end.

SEEDS defaults to 5.  Default kernel build/kernel (6.1), no-FG build
build/kernel-nofg when present; for 6.12: --kernel build/kernel-6.12
--nofg build/kernel-6.12-nofg.
"""
import argparse
import json
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

WORK = REPO / "build" / "perf-model" / "fgk-work"

# The workloads, numbered as perf-model/fgk-work.c's markers: each runs
# between two markers, so the plugin counts the kernel's work per workload
# ("work=K" lines; K 0 is everything outside them).  The counts keep each
# one at a few seconds of TCG time with the plugin.
WORKLOADS = ((1, "getpid", "syscall getpid"), (2, "pipe", "pipe ping-pong, 2 processes"),
             (3, "forkexec", "fork + exec + exit"), (4, "open", "open/read/close /proc/self/stat"),
             (5, "create", "file create/write/unlink (tmpfs)"),
             (6, "mmap", "mmap/touch 16 pages/munmap"),
             (7, "ctxsw", "sched_yield between 2 processes on 1 CPU"),
             (8, "tcp", "TCP ping-pong over loopback"),
             (9, "compress", "gzip + gunzip of 2 x busybox"),
             (10, "fswalk", "ls -lR /proc/self /sys/kernel"))
WORKLOAD = r"""
W=/fgk/fgk-work
ip link set lo up 2>/dev/null
$W getpid 20000
$W pipe 2000
$W forkexec 60
$W open 2000
$W create 1000
$W mmap 300
$W ctxsw 2000
$W tcp 1000
cat /bin/busybox /bin/busybox > /tmp/big
$W mark 9; gzip -c /tmp/big | gzip -dc > /dev/null; $W mark 0
rm -f /tmp/big
$W mark 10; ls -lR /proc/self /sys/kernel > /dev/null 2>&1; $W mark 0
echo workload-done
"""

FIELDS = ("all_insns", "insns", "l1i_miss", "l2_miss", "l2_data_miss", "itlb_miss",
          "stlb_miss", "cycles", "tb_exec", "tb_cross_page", "tb_trans_kernel", "tb_trans_span")


def parse(path):
    phases, work = {}, {}
    for line in Path(path).read_text().splitlines():
        if line.startswith(("phase=", "work=")):
            kv = dict(x.split("=", 1) for x in line.split())
            if "phase" in kv:
                name = kv.pop("phase")
                phases[name] = {k: int(v) for k, v in kv.items()}
            else:
                k = int(kv.pop("work"))
                work[k] = {f: int(v) for f, v in kv.items()}
    if set(phases) != {"pre", "boot", "run"}:
        raise SystemExit(f"runtime-cost: {path}: plugin report has no pre/boot/run phases")
    names = {k: name for k, name, _ in WORKLOADS}
    missing = [names[k] for k in names if k not in work]
    if missing:
        raise SystemExit(f"runtime-cost: {path}: no counts for workload(s) {', '.join(missing)}")
    phases["work"] = {names[k]: c for k, c in work.items() if k in names}
    return phases


def one(kernel, append, text_page, script=WORKLOAD):
    with tempfile.TemporaryDirectory(prefix="fgk-perf.") as d:
        out = Path(d) / "perf.txt"
        arg = f"{PLUGIN},out={out},text_page={text_page}"
        g = fgkrun.Guest("boot", script, kernel=Path(kernel) / "bzImage", kaslr=True, timeout=1200,
                         append=" ".join(x for x in ("kunit.enable=0", append) if x),
                         files={"/fgk/fgk-work": str(WORK)}, extra_qemu_args=["-plugin", arg])
        t0 = time.monotonic()
        g.start()
        try:
            ok = g.wait_for_console(re.escape(fgkrun.MARK_BEGIN), timeout=1200)
            t_init = time.monotonic() - t0
            res = g.wait()
            t_end = time.monotonic() - t0
        finally:
            g.kill()
        if not ok or "workload-done" not in res.output or "fgk-work: " in res.output.replace(
                "fgk-work: tcp: no IPv4", ""):
            err = re.findall(r"^fgk-work: .*$", res.output, re.M)
            raise SystemExit(f"runtime-cost: {kernel} {append}: guest failed ({res.message}) "
                             + " ".join(err))
        ph = parse(out)
        ph["net"] = "fgk-work: tcp: no IPv4" not in res.output
        ph["wall"] = {"init": t_init, "total": t_end}
        return ph


JIT_SCRIPT = ("cat /proc/fgkaslr_stats 2>/dev/null; echo fgk-end-of-script > /dev/console; "
              "sleep 4")
WALL_MARKS = (("firmware", r"Booting from ROM"), ("decompressor", r"Linux version"),
              ("kernel boot", r"Run /init as init process"), ("init+script", r"fgk-end-of-script"))
JIT_FIELDS = (("TB count", r"TB count\s+(\d+)"), ("cross-page TBs", r"cross page TB count\s+(\d+)"),
              ("direct-jump TBs", r"direct jump count\s+(\d+)"),
              ("2-jump TBs", r"\(2 jumps=(\d+)"), ("host code bytes", r"gen code size\s+(\d+)"),
              ("TB flushes", r"TB flush count\s+(\d+)"), ("TB invalidates", r"TB invalidate count\s+(\d+)"))


def one_wall(kernel, append):
    g = fgkrun.Guest("boot", JIT_SCRIPT, kernel=Path(kernel) / "bzImage", kaslr=True, timeout=600,
                     append=" ".join(x for x in ("kunit.enable=0 earlyprintk=ttyS0", append) if x))
    t0 = time.monotonic()
    g.start()
    t = {}
    try:
        for name, rx in WALL_MARKS:
            if not g.wait_for_console(rx, timeout=600):
                raise SystemExit(f"runtime-cost: {kernel} {append}: no '{rx}' on the console")
            t[name] = time.monotonic() - t0
        jit = fgkrun.qmp_command(g.diag_path, "human-monitor-command", timeout=30,
                                 **{"command-line": "info jit"})
        res = g.wait()
    finally:
        g.kill()
    phases, prev = {}, 0.0
    for name, _ in WALL_MARKS:
        phases[name] = t[name] - prev
        prev = t[name]
    phases["total"] = prev
    stats = {}
    for name, rx in JIT_FIELDS:
        mm = re.search(rx, jit)
        stats[name] = int(mm.group(1)) if mm else None
    ph = re.search(r"^phase_cycles: (.*)$", res.output, re.M)
    cyc = re.search(r"^cycles: (\d+)$", res.output, re.M)
    dec = {n: int(v) for n, v in re.findall(r"(\w+)=(\d+)", ph.group(1))} if ph else {}
    if cyc:
        dec["total"] = int(cyc.group(1))
    return {"wall": phases, "jit": stats, "decomp_cycles": dec}


def wall_main(kernel, rounds):
    runs = {"nofgkaslr": [], "fg": []}
    for r in range(rounds):
        seed = f"{random.getrandbits(64):016x}"
        order = (("nofgkaslr", "nofgkaslr"), ("fg", f"fgkaslr_seed={seed}"))
        for label, app in (order if r % 2 == 0 else order[::-1]):
            x = one_wall(kernel, app)
            runs[label].append(x)
            w = x["wall"]
            print(f"  {label:10} " + "  ".join(f"{k} {v:6.2f}s" for k, v in w.items())
                  + "  jit: " + ", ".join(f"{k} {v}" for k, v in x["jit"].items()), flush=True)
    print("wall-clock by phase (median over rounds; Δ = FG - nofgkaslr, and its share of the total Δ):")
    tot_b = statistics.median(x["wall"]["total"] for x in runs["nofgkaslr"])
    tot_f = statistics.median(x["wall"]["total"] for x in runs["fg"])
    dt = tot_f - tot_b
    for name in [n for n, _ in WALL_MARKS] + ["total"]:
        b = statistics.median(x["wall"][name] for x in runs["nofgkaslr"])
        f = statistics.median(x["wall"][name] for x in runs["fg"])
        share = f"{100 * (f - b) / dt:5.0f}% of Δ" if dt and name != "total" else ""
        print(f"  {name:13} FG {f:7.2f} s  nofgkaslr {b:7.2f} s  Δ {f - b:+6.2f} s "
              f"({100 * (f - b) / b:+5.1f}%) {share}")
    print("  (the per-phase medians need not add up to the median total)")
    for k, _ in JIT_FIELDS:
        vb = [x["jit"][k] for x in runs["nofgkaslr"] if x["jit"][k] is not None]
        vf = [x["jit"][k] for x in runs["fg"] if x["jit"][k] is not None]
        if vb and vf:
            print(f"  info jit {k:16} FG {statistics.median(vf):>10,.0f}  nofgkaslr {statistics.median(vb):>10,.0f}")
    dec = [x["decomp_cycles"] for x in runs["fg"] if x["decomp_cycles"]]
    if dec:
        print("  decompressor FG-KASLR phase_cycles (median): " + ", ".join(
            f"{k}={statistics.median(d.get(k, 0) for d in dec):,.0f}" for k in dec[0]))
    return runs


def per_ki(n, insns):
    return 1000.0 * n / insns if insns else float("nan")


def row(label, ph, phase="run"):
    p = ph[phase]
    k = p["insns"]
    return (f"  {label:14} {k:>13,} {per_ki(p['l1i_miss'], k):7.2f} {per_ki(p['l2_miss'] - p['l2_data_miss'], k):7.3f}"
            f" {per_ki(p['itlb_miss'], k):7.3f} {p['cycles']:>14,} {p['cycles'] / k:6.3f}"
            f" {per_ki(p['tb_cross_page'], k):7.1f} {ph['wall']['total']:7.1f}")


def work_table(runs):
    """Per workload: the kernel's instructions, L1i and iTLB misses per ki and
    estimated cycles, per FG seed and as the median, against nofgkaslr's
    median (and the no-FG build's), with the CPI difference."""
    base, fg, nofg = runs["nofgkaslr"], runs["fg"], runs["no-FG build"]
    cpi = lambda c: c["cycles"] / c["insns"] if c["insns"] else float("nan")  # noqa: E731
    print("per workload (kernel only; Δ = estimated cycles per kernel instruction vs nofgkaslr's median):")
    print(f"  {'workload':9} {'run':14} {'kernel insns':>13} {'L1i/ki':>7} {'iTLB/ki':>8}"
          f" {'est. cycles':>13} {'CPI':>6} {'Δ':>7}")
    for _, name, what in WORKLOADS:
        if name == "tcp" and not all(p["net"] for p in base + fg):
            print(f"  {name:9} skipped: the guest kernel has no IPv4 networking ({what})")
            continue
        bc = statistics.median(cpi(p["work"][name]) for p in base)

        def line(label, c, d=None):
            print(f"  {name:9} {label:14} {c['insns']:>13,} {per_ki(c['l1i_miss'], c['insns']):7.2f}"
                  f" {per_ki(c['itlb_miss'], c['insns']):8.3f} {c['cycles']:>13,} {cpi(c):6.3f}"
                  + (f" {d:+6.2f}%" if d is not None else ""))

        def medc(lst):
            return {f: statistics.median(p["work"][name][f] for p in lst)
                    for f in ("insns", "l1i_miss", "itlb_miss", "cycles")}

        line("nofgkaslr med", {k: int(v) for k, v in medc(base).items()})
        if nofg:
            nb = statistics.median(cpi(p["work"][name]) for p in nofg)
            line("no-FG build", {k: int(v) for k, v in medc(nofg).items()}, 100 * (nb - bc) / bc)
        ds = []
        for p in fg:
            d = 100 * (cpi(p["work"][name]) - bc) / bc
            ds.append(d)
            line(f"fg {p['seed'][:6]}", p["work"][name], d)
        print(f"  {name:9} {'FG median':14} {'':>13} {'':>7} {'':>8} {'':>13} {'':>6}"
              f" {statistics.median(ds):+6.2f}%  ({what}; {min(ds):+.2f}..{max(ds):+.2f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seeds", nargs="?", type=int, default=5)
    ap.add_argument("--kernel", default=str(REPO / "build" / "kernel"))
    ap.add_argument("--nofg", default=None)
    ap.add_argument("--text-page", default="2M", choices=("2M", "4K"))
    ap.add_argument("--json", help="also write every run's counters here")
    ap.add_argument("--wall", type=int, metavar="ROUNDS",
                    help="wall-clock phases of FG vs nofgkaslr, no plugin (see above)")
    a = ap.parse_args()
    if a.wall:
        runs = wall_main(Path(a.kernel), a.wall)
        if a.json:
            Path(a.json).write_text(json.dumps(runs, indent=1))
        return 0
    if not (REPO / "build" / "qemu-plugin" / "include" / "qemu-plugin.h").is_file() or \
            not PLUGIN.is_file() or not WORK.is_file():
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
            ph["seed"] = s if label == "fg" else None
            runs[label].append(ph)
            if a.json:
                Path(a.json).write_text(json.dumps(runs, indent=1))
            print(row(f"{label} {s[:6]}" if label == "fg" else label, ph), flush=True)

    def med(lst, phase, f):
        return statistics.median(p[phase][f] for p in lst)

    base = runs["nofgkaslr"]
    print("summary (medians; spread = min..max over FG seeds).  The guest's instruction")
    print("count varies from run to run (TCG's clock is the host's: timer interrupts, idle),")
    print("so cost = estimated cycles per kernel instruction (CPI) against nofgkaslr's,")
    print("i.e. FG's cycles for nofgkaslr's instruction count:")
    last = None
    for label in ("nofgkaslr", "fg", "no-FG build"):
        if runs[label]:
            pre = statistics.median(p["pre"]["all_insns"] for p in runs[label])
            print(f"  pre-kernel (firmware + decompressor) guest instructions, {label}: {pre:,.0f}")
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
    work_table(runs)
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
