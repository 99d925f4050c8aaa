#!/usr/bin/env python3
"""usage: tablesum.py DIR...
Boot each kernel dir with fgkaslr_seed=5eed.. nokaslr; sha256 of the pages of the
shuffled region and of the tables the decompressor rewrites (ORC, kallsyms index and
offsets, exception table), read from /proc/kcore after boot."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "qemu-profiles"))
import fgkrun
SEED = "5eed" * 16
RANGES = [("region", "__fgkaslr_text_start", "__fgkaslr_text_end"),
          ("orc_ip", "__start_orc_unwind_ip", "__stop_orc_unwind_ip"),
          ("orc", "__start_orc_unwind", "__stop_orc_unwind"),
          ("ks_idx", "kallsyms_fgk_idx", None),
          ("ks_offsets", "kallsyms_offsets", None),
          ("extable", "__start___ex_table", "__stop___ex_table")]
def syms(kdir):
    m = {}
    for l in open(kdir / "System.map"):
        a, t, n = l.split()
        m[n] = int(a, 16)
    return m
for kd in sys.argv[1:]:
    kdir = Path(kd)
    m = syms(kdir)
    t = m["_text"]
    after = sorted(set(m.values()))
    cmd = f"""n=$(od -A n -t u2 -j 56 -N 2 /proc/kcore); i=0; off=
while [ $i -lt $n ]; do set -- $(od -A n -t x8 -j $((64+56*i)) -N 56 /proc/kcore); [ "$3" = "{t:016x}" ] && off=$((0x$2)); i=$((i+1)); done
echo kcoreoff $off
"""
    for name, s, e in RANGES:
        a = m[s]
        if e:
            b = m[e]
        else:   # to the next symbol
            b = min(x for x in after if x > a)
        skip, count = (a - t) // 4096, (b - t + 4095) // 4096 - (a - t) // 4096
        cmd += f"echo {name} $(dd if=/proc/kcore bs=4096 skip=$((off/4096+{skip})) count={count} 2>/dev/null | sha256sum)\n"
    cmd += "grep -E '^(flags|sections):' /proc/fgkaslr_stats\n"
    g = fgkrun.Guest("boot", cmd, kernel=kdir / "bzImage", append=f"fgkaslr_seed={SEED} kunit.enable=0 nokaslr", kaslr=False, timeout=900)
    g.start()
    open(f"/proc/{g.proc.pid}/autogroup", "w").write("19")
    try:
        r = g.wait()
    finally:
        g.kill()
    print("==", kdir.name)
    print(r.output, flush=True)
