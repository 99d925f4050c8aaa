#!/usr/bin/env python3
"""usage: prof.py KDIR OUT [APPEND]: one boot under -icount shift=0 with the
fgk-prof plugin (build it first: cc -O2 -fPIC -shared -I build/qemu-plugin/include
-o build/fgk-prof.so docs/plans/decompressor-speed/scripts/fgk-prof.c); OUT gets
"pc count" for every guest instruction below 4 GiB run before the kernel.
One vCPU (-smp 1): under -icount Debian 6.1 hangs at SMP bring-up."""
import re, sys, os
from pathlib import Path
REPO = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(REPO / "qemu-profiles"))
import fgkrun
kdir, out = sys.argv[1], sys.argv[2]
app = sys.argv[3] if len(sys.argv) > 3 else ""
g = fgkrun.Guest("boot", "cat /proc/fgkaslr_stats 2>/dev/null; true", kernel=kdir + "/bzImage",
                 append=" ".join(x for x in ("kunit.enable=0", app) if x), kaslr=True, timeout=900,
                 extra_qemu_args=["-icount", "shift=0", "-smp", "1", "-plugin", f"{REPO}/build/fgk-prof.so,out={out}"])
g.start()
open(f"/proc/{g.proc.pid}/autogroup", "w").write("19")
try:
    g.wait_for_console(re.escape(fgkrun.MARK_BEGIN), timeout=900)
    res = g.wait()
finally:
    g.kill()
print(res.output)
