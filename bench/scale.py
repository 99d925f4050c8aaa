#!/usr/bin/env python3
"""The host tools at a distribution kernel's scale, against the stock tool
that does the same job, in one run, on every built kernel (build/kernel and,
when built, build/kernel-debian: docs/debian-kernel.md):

  fgk map          vs  nm -n                   (time)
  fgk relink       vs  objcopy vmlinux copy    (time, peak RSS)
  fgk symbolize    vs  scripts/decode_stacktrace.sh, on a long oops
                       (N frames of shuffled functions, made from the
                       seed's layout: both tools decode the same lines)

Medians of REPEAT alternating runs.  Then how each fgk number grows from
the default kernel to Debian's, beside the growth of function sections,
relocations and vmlinux bytes: a tool growing faster than its input is a
bug (the "worst" column: time growth / largest input growth; above ~1.3
says so).  The guest-side numbers (fgk attach, fgk crash start-up, boot)
are in bench/gdb-attach.py, bench/crash-start.py, bench/boot-time.py, which
run on the same kernels.

  bench/scale.py [--repeat N] [--frames N]
"""
import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fgkbench  # noqa: E402

REPO = fgkbench.REPO
FGK = REPO / "build" / "bin" / "fgk"
SEED = "c4" * 32


def run_rss(cmd, stdin=None):
    """Run cmd; (seconds, peak RSS KiB) through wait4 on the raw child."""
    t = time.perf_counter()
    p = subprocess.Popen([str(c) for c in cmd], stdin=subprocess.PIPE if stdin is not None else None,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if stdin is not None:
        p.stdin.write(stdin)
        p.stdin.close()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)    # reaped here, not by Popen
    dt = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"bench scale: {' '.join(map(str, cmd))} failed")
    return dt, ru.ru_maxrss


def long_oops(vmlinux, frames):
    """A Call Trace of `frames` shuffled functions, as the booted kernel
    would print them (runtime address, name+off/size), for SEED at base
    offset 0."""
    out = subprocess.run([FGK, "layout", vmlinux, "--seed", SEED], capture_output=True,
                         text=True, check=True).stdout.splitlines()[1:]
    moved = {r.split("\t")[1][len(".text."):] for r in out}
    m = subprocess.run([FGK, "map", vmlinux, "--seed", SEED, "--format", "system-map"],
                       capture_output=True, text=True, check=True).stdout.splitlines()
    syms = []
    for i, line in enumerate(m[:-1]):
        a, t, name = line.split()[:3]
        if t in "tT" and name in moved:
            size = int(m[i + 1].split()[0], 16) - int(a, 16)
            if 8 < size < 0x10000:
                syms.append((int(a, 16), name, size))
    rnd = random.Random(1)
    pick = rnd.sample(syms, min(frames, len(syms)))
    lines = ["BUG: kernel NULL pointer dereference, address: 0000000000000000",
             "Call Trace:", " <TASK>"]
    for a, name, size in pick:
        off = rnd.randrange(1, size)
        lines.append(f" [<{a + off:016x}>] {name}+0x{off:x}/0x{size:x}")
    lines += [" </TASK>", "Kernel Offset: disabled"]
    return ("\n".join(lines) + "\n").encode(), len(pick)


def median_pair(a, b, repeat):
    ra, rb = [], []
    for _ in range(repeat):
        ra.append(a())
        rb.append(b())
    med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
    return (med(ra, 0), med(ra, 1)), (med(rb, 0), med(rb, 1))


def bench_kernel(label, kdir, repeat, frames, tmp):
    vm = kdir / "vmlinux"
    print(f"== {fgkbench.scale_line(label, kdir)}")
    res = {}
    (fm, _), (nm, _) = median_pair(lambda: run_rss([FGK, "map", vm, "--seed", SEED]),
                                   lambda: run_rss(["nm", "-n", vm]), repeat)
    res["map"] = fm
    print(f"  fgk map        {fm:7.2f} s   nm -n {nm:7.2f} s   ratio {fm / nm:5.2f}x")
    out = Path(tmp) / f"{label}.fgk"
    (rt, rr), (ot, orss) = median_pair(
        lambda: run_rss([FGK, "relink", vm, "--seed", SEED, "--no-cache", "-o", out]),
        lambda: run_rss(["objcopy", vm, Path(tmp) / f"{label}.copy"]), repeat)
    res["relink"], res["relink_rss"] = rt, rr
    print(f"  fgk relink     {rt:7.2f} s   objcopy {ot:7.2f} s   ratio {rt / ot:5.2f}x; "
          f"peak RSS {rr / 1024:.0f} MiB vs {orss / 1024:.0f} MiB ({rr / orss:.2f}x)")
    for f in (out, Path(tmp) / f"{label}.copy"):
        f.unlink(missing_ok=True)
    oops, n = long_oops(vm, frames)
    dec = kdir / "build" / "scripts" / "decode_stacktrace.sh"
    if dec.is_file():
        (st, _), (dt, _) = median_pair(
            lambda: run_rss([FGK, "symbolize", vm, "--seed", SEED], stdin=oops),
            lambda: run_rss(["bash", dec, vm, kdir / "build"], stdin=oops), max(1, repeat // 2))
        res["symbolize"] = st
        print(f"  fgk symbolize  {st:7.2f} s   decode_stacktrace.sh {dt:7.2f} s   "
              f"ratio {st / dt:5.2f}x   ({n} frames)")
    else:
        print(f"  fgk symbolize: {dec} missing: decode_stacktrace.sh comparison skipped")
    return res


def main():
    ap = argparse.ArgumentParser(prog="bench/scale.py")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--frames", type=int, default=200)
    args = ap.parse_args()
    if not FGK.is_file():
        print("bench scale: build/bin/fgk missing (make tools); skipped")
        return
    kernels = fgkbench.variants()
    if not kernels:
        print("bench scale: no kernel built (make kernel); skipped")
        return
    results = {}
    with tempfile.TemporaryDirectory(prefix="fgk-bench-") as tmp:
        for label, kdir in kernels:
            results[label] = bench_kernel(label, kdir, args.repeat, args.frames, tmp)
    dirs = dict(kernels)
    g = fgkbench.growth_line(dirs)
    if not g:
        return
    print(g)
    a, b = fgkbench.scale(dirs["default"]), fgkbench.scale(dirs["debian"])
    inputs = max(b[k] / a[k] for k in ("sections", "relocs", "vmlinux"))
    for k in results["default"]:
        if k in results["debian"]:
            gr = results["debian"][k] / results["default"][k]
            worst = gr / inputs
            print(f"  {k:14} x{gr:5.2f}   worst {worst:4.2f}"
                  f"{'   GROWS FASTER THAN ITS INPUT' if worst > 1.3 else ''}")


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
