#!/usr/bin/env python3
"""Boot each kernel dir with fgkaslr_seed=5eed.. nokaslr; sha256 of the shuffled region read from /proc/kcore after boot."""
import sys
from pathlib import Path
from guest import boot_seeded, kcore_offset
def sym(kdir, name):
    for l in open(kdir / "System.map"):
        a, t, n = l.split()
        if n == name:
            return int(a, 16)
for kd in sys.argv[1:]:
    kdir = Path(kd)
    s, e, t = sym(kdir, "__fgkaslr_text_start"), sym(kdir, "__fgkaslr_text_end"), sym(kdir, "_text")
    skip, count = (s - t) // 4096, (e - t + 4095) // 4096 - (s - t) // 4096
    cmd = kcore_offset(t) + f"dd if=/proc/kcore bs=4096 skip=$((off/4096+{skip})) count={count} 2>/dev/null | sha256sum"
    r = boot_seeded(kdir, cmd)
    print(kdir.name, " ".join(r.output.split()), flush=True)
