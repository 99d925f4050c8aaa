#!/usr/bin/env python3
"""Interleaved boots of kernel dirs (bzImage), reading /proc/fgkaslr_stats.
usage: bench.py ROUNDS NAME=DIR[:APPEND] ...  ; QEMU's autogroup set to nice 19."""
import re, sys, time, statistics, json
from pathlib import Path
REPO = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(REPO / "qemu-profiles"))
import fgkrun
import os
ICOUNT = os.environ.get("ICOUNT") == "1"
# one vCPU, as bench/boot-time.py: under -icount Debian 6.1 hangs bringing up
# the second one, and the decompressor runs on one anyway
ICOUNT_ARGS = ["-icount", "shift=0", "-smp", "1"]

def one(kernel, append):
    g = fgkrun.Guest("boot", "cat /proc/fgkaslr_stats 2>/dev/null; dmesg | grep -i 'fgkaslr' | grep -E ' (ok|not ok) ' | head -40; true", kernel=kernel,
                     append=" ".join(x for x in ("kunit.enable=0" if 'kunit' not in append else "", append) if x), kaslr=True, timeout=900,
                     extra_qemu_args=(ICOUNT_ARGS if ICOUNT else []))
    t0 = time.monotonic()
    g.start()
    try:
        with open(f"/proc/{g.proc.pid}/autogroup", "w") as f:
            f.write("19")
    except OSError as e:
        print("autogroup:", e)
    try:
        ok = g.wait_for_console(re.escape(fgkrun.MARK_BEGIN), timeout=900)
        wall = time.monotonic() - t0
        res = g.wait()
    finally:
        g.kill()
    out = res.output
    d = {}
    for k in ("cycles", "us", "sections", "flags", "heap", "mcount_cycles"):
        m = re.search(rf"^{k}: (\S+)$", out, re.M)
        d[k] = m.group(1) if m else None
    ph = re.search(r"^phase_cycles: (.*)$", out, re.M)
    d["phases"] = {n: int(v) for n, v in re.findall(r"(\w+)=(\d+)", ph.group(1))} if ph else {}
    d["kunit"] = [l for l in out.splitlines() if " ok " in l]
    m = re.search(r"\[\s*(\d+\.\d+)\] Run /init as init process", res.log)
    d["init"] = float(m.group(1)) if m else None
    d["wall"] = wall if ok else None
    return d

def ms(d):
    us, cyc = int(d["us"]), int(d["cycles"])
    if ICOUNT:   # cycles = guest instructions: report millions
        us = cyc / 1000
    r = {n: us / 1000 * v / cyc for n, v in d["phases"].items()}
    r["other"] = us / 1000 - sum(r.values())
    r["total"] = us / 1000
    return r

rounds = int(sys.argv[1])
cases = []
for a in sys.argv[2:]:
    name, rest = a.split("=", 1)
    kdir, _, app = rest.partition(":")
    cases.append((name, Path(kdir) / "bzImage", app))
data = {c[0]: [] for c in cases}
for r in range(rounds):
    for name, k, app in cases:
        d = one(k, app)
        data[name].append(d)
        m = ms(d) if d["us"] and d["cycles"] and int(d["cycles"]) else {}
        print(f"r{r+1} {name:8} wall={d['wall']:.2f} mc={d['mcount_cycles']} flags={d['flags']} secs={d['sections']} init={d['init']} " +
              " ".join(f"{n}={v:.1f}" for n, v in m.items()), flush=True)
        for l in d["kunit"][:40]:
            pass
print("== medians (ms)")
for name, _, _ in cases:
    ms_l = [ms(d) for d in data[name] if d["us"] and int(d["cycles"] or 0)]
    inits = [d["init"] for d in data[name] if d["init"]]
    walls = [d["wall"] for d in data[name] if d["wall"]]
    if ms_l:
        print(f"{name:8} " + " ".join(f"{n}={statistics.median(m[n] for m in ms_l):.1f}" for n in ms_l[0]) +
              f" init={statistics.median(inits):.3f}s wall={statistics.median(walls):.2f}s n={len(ms_l)}")
    elif inits:
        print(f"{name:8} init={statistics.median(inits):.3f}s wall={statistics.median(walls):.2f}s n={len(inits)}")
json.dump(data, open(str(REPO / "build" / f"wip-decompressor-bench-{int(time.time())}.json"), "w"))
