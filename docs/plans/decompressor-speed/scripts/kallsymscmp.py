#!/usr/bin/env python3
"""Boot DIR with a fixed seed and nokaslr; compare /proc/kallsyms (vmlinux part)
with `fgk map VMLINUX --seed S` (exactly what root reads, sorted by (address, index))."""
import sys, subprocess
from pathlib import Path
from guest import SEED, boot_seeded
kdir, vmlinux = Path(sys.argv[1]), sys.argv[2]
r = boot_seeded(kdir, "echo 0 > /proc/sys/kernel/kptr_restrict; grep -v '\\[' /proc/kallsyms")
got = [l for l in r.output.splitlines() if len(l.split()) == 3 and len(l.split()[0]) == 16]
want = subprocess.run([str(Path(__file__).resolve().parents[4] / "build" / "bin" / "fgk"), "map", vmlinux, "--seed", SEED],
                      capture_output=True, text=True, check=True).stdout.splitlines()
print("guest lines", len(got), "fgk map lines", len(want))
diff = [(a, b) for a, b in zip(got, want) if a != b]
print("equal" if got == want else f"DIFFER: {len(diff)} lines differ, first {diff[:5]}")
