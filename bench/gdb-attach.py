#!/usr/bin/env python3
"""Benchmark `fgk attach` (fgk-gdb) against loading vmlinux by hand.

One guest (QEMU TCG, base KASLR on, random FG-KASLR seed) with its gdbstub;
then, each in a fresh gdb connected to it, timed inside gdb (gdb's own
start-up excluded), up to the point where symbols are ready (`info line
version_proc_show` answered):

  baseline  file vmlinux; symbol-file -o OFFSET vmlinux   (offset known)
  symfile   symbol-file -o OFFSET vmlinux alone (the least gdb can do)
  cold      fgk attach --vmlinux vmlinux, empty $FGK_CACHE_DIR
            (finds offset and seed, relinks, verifies, loads)
  cached    fgk attach again with the cache of the cold run
  fgk-file  symbol-file -o OFFSET vmlinux.fgk alone (the relinked file the
            cached attach loads: gdb's share of the cached attach)
  nofg      symbol-file -o OFFSET of the same configuration's build without
            FG-KASLR (build/kernel[-VERSION][-VARIANT]-nofg), if built: how
            fast gdb loads an unshuffled vmlinux

Each variant runs REPEAT times; the median is reported with the ratios
cold/baseline and cached/baseline, and where the cached attach's time goes
(its own timings, 'fgk info': relink = layout + cache lookup and check,
symbol-file, total; the rest of total is the offset/seed discovery, the
code check, the kernel's gdb scripts and the modules).  On a kernel that is not an FG-KASLR
build, fgk attach loads vmlinux at the offset (no relink): said in the
output.

Usage: bench/gdb-attach.py [--repeat N] [--port PORT]
"""
import argparse
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "qemu-profiles"))
import fgkrun  # noqa: E402

import fgkbase  # noqa: E402

# build/kernel, or build/kernel-$KVARIANT (KVARIANT=debian: Debian's config)
VMLINUX = fgkbase.KERNEL_DIR / "vmlinux"
LOADER = REPO / "fgk-gdb" / "fgk.py"

TIMER = r"""
python
import gdb, time
def _fgk_bench(cmds):
    t = time.monotonic()
    for c in cmds:
        gdb.execute(c, to_string=True)
    gdb.execute("info line version_proc_show", to_string=True)
    print("FGK-BENCH-SECONDS %.4f" % (time.monotonic() - t))
end
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed_gdb(port, cmds, env=None, tmp=None, after=()):
    script = Path(tmp) / "timer.gdb"
    script.write_text(TIMER)
    py = "python _fgk_bench(%r)" % (cmds,)
    r = subprocess.run(["gdb", "-batch", "-nx", "-ex", "set confirm off",
                        "-ex", f"target remote 127.0.0.1:{port}",
                        "-ex", f"source {LOADER}", "-x", str(script), "-ex", py,
                        *[x for c in after for x in ("-ex", c)],
                        "-ex", "detach"],
                       capture_output=True, text=True, env=env, timeout=900)
    m = re.search(r"FGK-BENCH-SECONDS (\S+)", r.stdout)
    if not m:
        sys.exit(f"gdb-attach: gdb failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return float(m.group(1)), r.stdout


def wait_for_gdb_index(cache, timeout=300):
    """The cold attach started fgk-gdb's background gdb index writer
    (docs/fgk-gdb.md, "The gdb index"); the cached attach is measured once
    it is done, as a later attach would find it."""
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        if not list(Path(cache).rglob("*.gdb-index.lock")):
            return
        time.sleep(0.5)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--port", type=int)
    a = ap.parse_args()
    if not VMLINUX.is_file():
        print(f"gdb-attach: {fgkbase.KERNEL_NAME}/vmlinux missing: run 'make kernel'")
        return 1
    if not shutil.which("gdb"):
        print("gdb-attach: gdb not installed (make deps)")
        return 1
    port = a.port or free_port()
    seed = "%064x" % random.getrandbits(256)
    script = "echo READY > /dev/console\nwhile :; do sleep 1; done\n"
    g = fgkrun.Guest("debug", script, seed=seed, gdb=port, kaslr=True, timeout=1800)
    g.start()
    try:
        if not g.wait_for_console("READY", timeout=180):
            print("gdb-attach: guest did not come up")
            return 1
        with tempfile.TemporaryDirectory(prefix="fgk-bench-") as tmp:
            env = dict(os.environ)
            # the offset, once, for the baseline
            out = subprocess.run(
                ["gdb", "-batch", "-nx", "-ex", f"target remote 127.0.0.1:{port}",
                 "-ex", f"source {LOADER}",
                 "-ex", f"fgk attach --vmlinux {VMLINUX} --no-modules", "-ex", "detach"],
                capture_output=True, text=True, timeout=900,
                env=dict(env, FGK_CACHE_DIR=str(Path(tmp) / "probe"))).stdout
            offset = int(re.search(r"kernel offset (0x[0-9a-f]+)", out).group(1), 16)
            fg = "not an FG-KASLR build" not in out
            nofg = fgkbase.KERNEL_DIR.with_name(fgkbase.KERNEL_DIR.name + "-nofg") / "vmlinux"
            res = {"baseline": [], "symfile": [], "cold": [], "cached": [], "fgk-file": []}
            if nofg.is_file():
                res["nofg"] = []
            parts = {}
            for i in range(a.repeat):
                t, _ = timed_gdb(port, [f"file {VMLINUX}",
                                        f"symbol-file -o {offset:#x} {VMLINUX}"],
                                 env=env, tmp=tmp)
                res["baseline"].append(t)
                res["symfile"].append(timed_gdb(
                    port, [f"symbol-file -o {offset:#x} {VMLINUX}"], env=env, tmp=tmp)[0])
                cache = Path(tmp) / f"cache{i}"
                cenv = dict(env, FGK_CACHE_DIR=str(cache))
                attach = [f"fgk attach --vmlinux {VMLINUX}"]
                res["cold"].append(timed_gdb(port, attach, env=cenv, tmp=tmp)[0])
                wait_for_gdb_index(cache)
                t, out = timed_gdb(port, attach, env=cenv, tmp=tmp, after=["fgk info"])
                res["cached"].append(t)
                m = re.search(r"attach took: +(.*)", out)
                for k, v in re.findall(r"([\w -]+?) ([\d.]+) s", m.group(1) if m else ""):
                    parts.setdefault(k.strip(), []).append(float(v))
                m = re.search(r"^loaded: +(\S+)", out, re.M)
                if fg and m:
                    res["fgk-file"].append(timed_gdb(
                        port, [f"symbol-file -o {offset:#x} {m.group(1)}"], env=env, tmp=tmp)[0])
                if "nofg" in res:
                    res["nofg"].append(timed_gdb(
                        port, [f"symbol-file -o {offset:#x} {nofg}"], env=env, tmp=tmp)[0])
                shutil.rmtree(cache, ignore_errors=True)
    finally:
        g.kill()
    med = {k: statistics.median(v) for k, v in res.items() if v}
    kind = "FG-KASLR build" if fg else "NOT an FG-KASLR build: attach loads vmlinux as is"
    print(f"gdb-attach: {VMLINUX.relative_to(REPO)} ({kind}), offset {offset:#x}, "
          f"{a.repeat} runs each, median seconds until symbols are ready")
    for k in res:
        if k not in med:
            continue
        runs = " ".join(f"{x:.2f}" for x in res[k])
        print(f"  {k:9} {med[k]:7.2f} s   ({runs})")
    if parts:
        print("  cached attach, its own timings (medians): " +
              ", ".join(f"{k} {statistics.median(v):.2f} s" for k, v in sorted(parts.items())))
    print(f"  ratio cold/baseline   {med['cold'] / med['baseline']:.2f}x")
    print(f"  ratio cached/baseline {med['cached'] / med['baseline']:.2f}x")
    print(f"  ratio cached/symfile  {med['cached'] / med['symfile']:.2f}x (target <= 1.1x)")
    if "fgk-file" in med:
        print(f"  ratio fgk-file/symfile {med['fgk-file'] / med['symfile']:.2f}x "
              "(gdb alone on vmlinux.fgk against vmlinux)")
    if "nofg" in med:
        print(f"  ratio cached/nofg     {med['cached'] / med['nofg']:.2f}x; "
              f"fgk-file/nofg {med.get('fgk-file', float('nan')) / med['nofg']:.2f}x "
              f"({nofg.relative_to(REPO)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
