#!/usr/bin/env python3
"""Benchmark: `fgk relink` against `objcopy vmlinux copy`, same run.

Both read the whole vmlinux and write a full copy of it, so objcopy is the
natural floor for "rewrite a vmlinux".  Reports the median wall time of
several alternating runs of each, their ratio (target: fgk relink within 3x
of objcopy), and the peak resident memory of each (ru_maxrss of the child),
also as a ratio (target: at most objcopy's, 1.0x).  Also times a cached
`fgk relink` (the second run a user sees).  Runs on every FG-KASLR build
there is: build/kernel, build/kernel-debian (Debian's configuration),
build/kernel-6.12, build/kernel-6.12-debian; $FGK_BENCH_VMLINUX names one
vmlinux instead.  Exits 1 when a target is missed; without any build, says
so and exits 0.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FGK = REPO / "build" / "bin" / "fgk"
sys.path.insert(0, str(REPO / "python"))
import libfgk  # noqa: E402  (libfgk reads the ELF files)
KERNELS = [REPO / "build" / k / "vmlinux" for k in ("kernel", "kernel-debian", "kernel-6.12",
                                                     "kernel-6.12-debian")]
TARGET_TIME, TARGET_RSS = 3.0, 1.0
SEED = "b3" * 32
RUNS = int(os.environ.get("FGK_BENCH_RUNS", "5"))


def run_measured(cmd, env=None):
    # wait4 gives the child's own rusage (ru_maxrss of that child only)
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         env=env)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench/relink: {' '.join(map(str, cmd))} failed: {err.decode()}")
    return wall, ru.ru_maxrss


def bench(vmlinux):
    """Prints one kernel's numbers; True when both targets are met."""
    with tempfile.TemporaryDirectory(prefix="fgk-bench-relink-") as d:
        d = Path(d)
        env = dict(os.environ, FGK_CACHE_DIR=str(d / "cache"))
        fg, oc = [], []
        for _ in range(RUNS):
            fg.append(run_measured([FGK, "relink", vmlinux, "--seed", SEED,
                                    "--no-cache", "-o", d / "out.fgk"], env))
            oc.append(run_measured(["objcopy", vmlinux, d / "copy"]))
        run_measured([FGK, "relink", vmlinux, "--seed", SEED], env)   # fill cache
        cached = [run_measured([FGK, "relink", vmlinux, "--seed", SEED], env)
                  for _ in range(RUNS)]
    t_fg = statistics.median(w for w, _ in fg)
    t_oc = statistics.median(w for w, _ in oc)
    t_ca = statistics.median(w for w, _ in cached)
    m_fg = max(m for _, m in fg)
    m_oc = max(m for _, m in oc)
    size = vmlinux.stat().st_size / 2**20
    name = os.path.relpath(vmlinux, REPO) if vmlinux.is_relative_to(REPO) else vmlinux
    print(f"bench/relink: {name}, {size:.0f} MiB, {RUNS} runs each, medians")
    print(f"  fgk relink        {t_fg:7.3f} s   peak RSS {m_fg / 1024:7.1f} MiB")
    print(f"  objcopy (copy)    {t_oc:7.3f} s   peak RSS {m_oc / 1024:7.1f} MiB")
    print(f"  fgk relink cached {t_ca:7.3f} s")
    print(f"  time ratio relink/objcopy {t_fg / t_oc:.2f}x (target <= {TARGET_TIME:g}x); "
          f"peak RSS ratio {m_fg / m_oc:.2f}x (target <= {TARGET_RSS:g}x); "
          f"cached/cold {t_ca / t_fg:.3f}")
    return t_fg / t_oc <= TARGET_TIME and m_fg / m_oc <= TARGET_RSS


def main():
    if not FGK.is_file():
        print("bench/relink: build/bin/fgk missing (make tools); no numbers")
        return 0
    given = os.environ.get("FGK_BENCH_VMLINUX")
    ok, ran = True, 0
    for vmlinux in [Path(given)] if given else KERNELS:
        if not vmlinux.is_file():
            print(f"bench/relink: {os.path.relpath(vmlinux, REPO)} missing; skipped")
            continue
        try:
            with libfgk.Vmlinux(vmlinux) as vm:
                plain = vm.kind != "fgkaslr"
        except libfgk.FgkError as e:
            print(f"bench/relink: {e}; skipped")
            continue
        if plain:
            print(f"bench/relink: {vmlinux} is not an FG-KASLR build; skipped")
            continue
        ok &= bench(vmlinux)
        ran += 1
    if not ran:
        print("bench/relink: no FG-KASLR vmlinux; no numbers")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
