#!/usr/bin/env python3
"""Boot each kernel dir with fgkaslr_seed=5eed.. nokaslr; sha256 of the shuffled region read from /proc/kcore after boot."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "qemu-profiles"))
import fgkrun
SEED = "5eed" * 16
def sym(kdir, name):
    for l in open(kdir / "System.map"):
        a, t, n = l.split()
        if n == name:
            return int(a, 16)
for kd in sys.argv[1:]:
    kdir = Path(kd)
    s, e, t = sym(kdir, "__fgkaslr_text_start"), sym(kdir, "__fgkaslr_text_end"), sym(kdir, "_text")
    skip, count = (s - t) // 4096, (e - t + 4095) // 4096 - (s - t) // 4096
    cmd = f"""n=$(od -A n -t u2 -j 56 -N 2 /proc/kcore); i=0; off=
while [ $i -lt $n ]; do set -- $(od -A n -t x8 -j $((64+56*i)) -N 56 /proc/kcore); [ "$3" = "{t:016x}" ] && off=$((0x$2)); i=$((i+1)); done
echo kcoreoff $off; dd if=/proc/kcore bs=4096 skip=$((off/4096+{skip})) count={count} 2>/dev/null | sha256sum"""
    g = fgkrun.Guest("boot", cmd, kernel=kdir / "bzImage", append=f"fgkaslr_seed={SEED} kunit.enable=0 nokaslr", kaslr=False, timeout=900)
    g.start()
    open(f"/proc/{g.proc.pid}/autogroup", "w").write("19")
    try:
        r = g.wait()
    finally:
        g.kill()
    print(kdir.name, " ".join(r.output.split()), flush=True)
