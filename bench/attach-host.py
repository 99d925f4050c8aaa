#!/usr/bin/env python3
"""Benchmark the host side of `fgk attach`: one process through libfgk
against the old subprocess + JSON round trip, same vmlinux, same run.

What fgk-gdb's attach does on the host once it has the seed (no guest, no
gdb: bench/gdb-attach.py times the whole attach against a guest):

  binding   (what attach does now, in gdb's process): open vmlinux once
            (libfgk.Vmlinux), its kind and three symbols, the layout, the
            relinked vmlinux.fgk from the relink cache (or relink now),
            32 verification reads from vmlinux.fgk
  cli       (what attach did before): `fgk relink VMLINUX --seed S`,
            `fgk layout VMLINUX --seed S --json`, json.loads, and the same
            32 reads from vmlinux.fgk through libfgk (the old Python ELF
            reader is gone; its cost is not counted, so `cli` is a lower
            bound of the old attach)

each cold (empty $FGK_CACHE_DIR: relinks) and cached.  REPEAT runs of
each, alternating; medians and the ratios binding/cli are printed.

Usage: bench/attach-host.py [--repeat N] [--vmlinux PATH]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "qemu-profiles"))
import fgkrun  # noqa: E402,F401  (puts the libfgk binding on sys.path)
import libfgk  # noqa: E402

FGK = REPO / "build" / "bin" / "fgk"
SEED = "b3" * 32
SYMS = ["asm_exc_divide_error", "linux_banner", "fgkaslr_boot_info"]


def picks(sections, count=32):
    moved = [s for s in sections if s.size >= 8 and s.new_addr != s.addr]
    step = max(len(moved) / count, 1)
    return [moved[int(i * step)] for i in range(min(count, len(moved)))]


def verify_reads(relinked, secs):
    with libfgk.Vmlinux(relinked) as r:
        return sum(len(r.read(s.new_addr, min(s.size, 32))) for s in picks(secs))


def binding(vmlinux):
    with libfgk.Vmlinux(vmlinux) as vm:
        assert vm.kind != "plain"
        vm.symbols(SYMS)
        layout = vm.layout(SEED)
        relinked, _ = layout.relink_cached()
        n = verify_reads(relinked, layout.sections)
        layout.close()
    return n


def cli(vmlinux):
    out = subprocess.run([FGK, "relink", vmlinux, "--seed", SEED], check=True,
                         capture_output=True, text=True).stdout
    relinked = out.strip().splitlines()[-1]
    lay = json.loads(subprocess.run([FGK, "layout", vmlinux, "--seed", SEED, "--json"],
                                    check=True, capture_output=True, text=True).stdout)
    secs = [libfgk.Section(s["index"], s["name"], int(s["link"], 16), int(s["size"], 16),
                           s["align"], int(s["new"], 16)) for s in lay["sections"]]
    return verify_reads(relinked, secs)


def timed(fn, vmlinux, cache):
    os.environ["FGK_CACHE_DIR"] = str(cache)
    t = time.perf_counter()
    n = fn(vmlinux)
    return time.perf_counter() - t, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--vmlinux", default=str(REPO / "build" / "kernel" / "vmlinux"))
    a = ap.parse_args()
    vmlinux = a.vmlinux
    if not os.path.isfile(vmlinux):
        print(f"attach-host: {vmlinux} missing: run 'make kernel' (or pass --vmlinux)")
        return 1
    if not FGK.is_file():
        print("attach-host: build/bin/fgk missing: run 'make tools'")
        return 1
    with libfgk.Vmlinux(vmlinux) as vm:
        if vm.kind == "plain":
            print(f"attach-host: {vmlinux} is not an FG-KASLR build: attach does not relink")
            return 0
    res = {k: [] for k in ("binding cold", "cli cold", "binding cached", "cli cached")}
    with tempfile.TemporaryDirectory(prefix="fgk-bench-") as tmp:
        for i in range(a.repeat):
            for name, fn in (("binding", binding), ("cli", cli)):
                cache = Path(tmp) / f"{name}{i}"
                t, n = timed(fn, vmlinux, cache)
                assert n > 0
                res[f"{name} cold"].append(t)
                res[f"{name} cached"].append(timed(fn, vmlinux, cache)[0])
                shutil.rmtree(cache, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"attach-host: {vmlinux}, {a.repeat} runs each, median seconds")
    for k, v in res.items():
        print(f"  {k:15} {med[k]:7.3f} s   ({' '.join(f'{x:.3f}' for x in v)})")
    print(f"  ratio binding/cli cold    {med['binding cold'] / med['cli cold']:.2f}x")
    print(f"  ratio binding/cli cached  {med['binding cached'] / med['cli cached']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
