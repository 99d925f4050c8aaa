#!/usr/bin/env python3
"""Benchmark: `fgk relink` against `objcopy vmlinux copy`, same run.

Both read the whole vmlinux and write a full copy of it, so objcopy is the
natural floor for "rewrite a vmlinux".  Reports the median wall time of
several alternating runs of each, their ratio (target: fgk relink within 3x
of objcopy), and the peak resident memory of each (ru_maxrss of the child),
also as a ratio.  Also times a cached `fgk relink` (the second run a user
sees).  Needs an FG-KASLR build in build/kernel (else says so and exits 0
without numbers).
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
VMLINUX = Path(os.environ.get("FGK_BENCH_VMLINUX", REPO / "build" / "kernel" / "vmlinux"))
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


def main():
    if not FGK.is_file():
        print("bench/relink: build/bin/fgk missing (make tools); no numbers")
        return 0
    r = subprocess.run(["readelf", "-SW", str(VMLINUX)], capture_output=True, text=True)
    if r.returncode or " .text." not in r.stdout:
        print(f"bench/relink: {VMLINUX} is not an FG-KASLR build; no numbers")
        return 0
    with tempfile.TemporaryDirectory(prefix="fgk-bench-relink-") as d:
        d = Path(d)
        env = dict(os.environ, FGK_CACHE_DIR=str(d / "cache"))
        fg, oc = [], []
        for _ in range(RUNS):
            fg.append(run_measured([FGK, "relink", VMLINUX, "--seed", SEED,
                                    "--no-cache", "-o", d / "out.fgk"], env))
            oc.append(run_measured(["objcopy", VMLINUX, d / "copy"]))
        run_measured([FGK, "relink", VMLINUX, "--seed", SEED], env)   # fill cache
        cached = [run_measured([FGK, "relink", VMLINUX, "--seed", SEED], env)
                  for _ in range(RUNS)]
    t_fg = statistics.median(w for w, _ in fg)
    t_oc = statistics.median(w for w, _ in oc)
    t_ca = statistics.median(w for w, _ in cached)
    m_fg = max(m for _, m in fg)
    m_oc = max(m for _, m in oc)
    size = VMLINUX.stat().st_size / 2**20
    print(f"bench/relink: vmlinux {size:.0f} MiB, {RUNS} runs each, medians")
    print(f"  fgk relink        {t_fg:7.3f} s   peak RSS {m_fg / 1024:7.1f} MiB")
    print(f"  objcopy (copy)    {t_oc:7.3f} s   peak RSS {m_oc / 1024:7.1f} MiB")
    print(f"  fgk relink cached {t_ca:7.3f} s")
    print(f"  time ratio relink/objcopy {t_fg / t_oc:.2f}x (target <= 3x); "
          f"memory ratio {m_fg / m_oc:.2f}x; cached/cold {t_ca / t_fg:.3f}")
    return 0 if t_fg / t_oc <= 3.0 else 1


if __name__ == "__main__":
    sys.exit(main())
