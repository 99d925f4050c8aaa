#!/usr/bin/env python3
"""usage: share.py KDIR [ROUNDS]
bench/boot-time.py --icount for one kernel dir (bzImage, vmlinux, build/)
instead of build/kernel-6.12-debian: the FG work in guest instructions and
its share of the nofgkaslr boot to init of the same image (fgk-icount
plugin), ROUNDS rounds (default 1). QEMU's autogroup as the caller's."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
spec = importlib.util.spec_from_file_location("boot_time", REPO / "bench" / "boot-time.py")
bt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bt)
kdir = Path(sys.argv[1]).resolve()


def scale(d):
    """The number of function sections only (readelf; libfgk may not be built)."""
    out = subprocess.run(["readelf", "-SW", str(d / "vmlinux")], capture_output=True,
                         text=True, check=True).stdout
    n = sum(1 for ln in out.splitlines()
            if re.search(r"\] \.text\.\S+\s+PROGBITS\s+\S+\s+\S+\s+0*[1-9a-f]\S*\s+\S+\s+\S*X", ln))
    return {"sections": n}


bt.fgkbench.scale = scale
print(f"== {kdir}: {scale(kdir)['sections']:,} function sections")
bt.instructions(kdir, int(sys.argv[2]) if len(sys.argv) > 2 else 1)
