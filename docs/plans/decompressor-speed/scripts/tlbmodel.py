#!/usr/bin/env python3
"""Scratch: one boot of a kernel dir under -icount shift=0 with fgk-tlbmodel.so
(a model of QEMU 7.2's softmmu data TLB, fgk-tlbmodel.c here), misses per
interval between executed rdtsc instructions of the pre-kernel code (the
FG-KASLR phase ends), and per MiB of address at 256 entries.

  cc -O2 -fPIC -shared -Ibuild/qemu-plugin/include -o build/fgk-tlbmodel.so \
     docs/plans/decompressor-speed/scripts/fgk-tlbmodel.c
  docs/plans/decompressor-speed/scripts/tlbmodel.py DIR [APPEND]   (e.g. nokaslr)
"""
import sys
import tempfile
from pathlib import Path
REPO = Path(__file__).resolve().parents[4]
from guest import boot  # noqa: E402
k = Path(sys.argv[1]) / "bzImage"
app = sys.argv[2] if len(sys.argv) > 2 else ""
with tempfile.TemporaryDirectory() as d:
    out = Path(d) / "tlb.txt"
    r = boot("cat /proc/fgkaslr_stats", k, kaslr=True, timeout=900,
             append=" ".join(x for x in ("kunit.enable=0", app) if x),
             extra_qemu_args=["-icount", "shift=0", "-smp", "1", "-plugin",
                              f"{REPO / 'build' / 'fgk-tlbmodel.so'},out={out}"])
    print(out.read_text())
print(r.output)
