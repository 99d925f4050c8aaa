#!/usr/bin/env python3
"""Boot a kernel dir once with KUnit on; print the fgkaslr suite's result lines."""
import sys, re
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "qemu-profiles"))
import fgkrun
k = Path(sys.argv[1]) / "bzImage"
app = sys.argv[2] if len(sys.argv) > 2 else ""
g = fgkrun.Guest("boot", "cat /proc/fgkaslr_stats; dmesg | grep -E 'ok [0-9]+ |# Totals|fgkaslr|FG-KASLR' | tail -60", kernel=k, append=app, kaslr=True, timeout=1200)
g.start()
open(f"/proc/{g.proc.pid}/autogroup", "w").write("19")
try:
    r = g.wait()
finally:
    g.kill()
print(r.output)
print("log lines with 'not ok':", [l for l in r.log.splitlines() if "not ok" in l])
