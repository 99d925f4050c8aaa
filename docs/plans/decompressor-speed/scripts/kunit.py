#!/usr/bin/env python3
"""Boot a kernel dir once with KUnit on; print the fgkaslr suite's result lines."""
import sys, re
from pathlib import Path
from guest import boot
k = Path(sys.argv[1]) / "bzImage"
app = sys.argv[2] if len(sys.argv) > 2 else ""
r = boot("cat /proc/fgkaslr_stats; dmesg | grep -E 'ok [0-9]+ |# Totals|fgkaslr|FG-KASLR' | tail -60",
         k, append=app, kaslr=True, timeout=1200)
print(r.output)
print("log lines with 'not ok':", [l for l in r.log.splitlines() if "not ok" in l])
