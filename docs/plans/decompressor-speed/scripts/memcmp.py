#!/usr/bin/env python3
"""Boot each kernel dir with the same fgkaslr_seed and nokaslr, stop at
x86_64_start_kernel (after the decompressor) and dump the shuffled text and
the tables the boot code fixes; compare the dumps between the kernels."""
import sys, subprocess, hashlib, os
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "qemu-profiles"))
import fgkrun
SEED = "5eed" * 16
out = Path(Path(__file__).resolve().parents[4] / "build" / "wip-decompressor-mem"); out.mkdir(exist_ok=True)
def sym(kdir, name):
    for l in open(kdir / "System.map"):
        a, t, n = l.split()
        if n == name:
            return int(a, 16)
    raise KeyError(name)
res = {}
for kd in sys.argv[1:]:
    kdir = Path(kd)
    s = lambda n: sym(kdir, n)
    n_orc = (s("__stop_orc_unwind_ip") - s("__start_orc_unwind_ip")) // 4
    ranges = {
        "text": (s("__fgkaslr_text_start"), s("__fgkaslr_text_end")),
        "orc_ip": (s("__start_orc_unwind_ip"), s("__stop_orc_unwind_ip")),
        "orc": (s("__start_orc_unwind"), s("__start_orc_unwind") + 6 * n_orc),
        "ex_table": (s("__start___ex_table"), s("__stop___ex_table")),
        "retpoline_sites": (s("__retpoline_sites"), s("__retpoline_sites_end")),
        "return_sites": (s("__return_sites"), s("__return_sites_end")),
        "call_sites": (s("__call_sites"), s("__call_sites_end")),
        "mcount_loc": (s("__start_mcount_loc"), s("__stop_mcount_loc")),
        "kallsyms_offsets": (s("kallsyms_offsets"), s("kallsyms_offsets") + 4 * 1000),
    }
    g = fgkrun.Guest("debug", "true", kernel=kdir / "bzImage", append=f"fgkaslr_seed={SEED} kunit.enable=0 nokaslr",
                     kaslr=False, gdb=0, wait_gdb=True, timeout=900)
    g.start()
    open(f"/proc/{g.proc.pid}/autogroup", "w").write("19")
    import time; time.sleep(1)
    cmds = ["-ex", "set pagination off", "-ex", f"target remote 127.0.0.1:{g.gdb_port}",
            "-ex", f"hbreak *{s('x86_64_start_kernel'):#x}", "-ex", "continue"]
    for name, (a, b) in ranges.items():
        cmds += ["-ex", f"dump binary memory {out}/{kdir.name}.{name}.bin {a:#x} {b:#x}"]
    cmds += ["-ex", "kill"]
    try:
        r = subprocess.run(["gdb", "-batch", "-nx", *cmds], capture_output=True, text=True, timeout=900)
        print(kdir.name, r.stdout[-300:], r.stderr[-300:])
    finally:
        g.kill()
    res[kdir.name] = {n: hashlib.sha256((out / f"{kdir.name}.{n}.bin").read_bytes()).hexdigest()[:16]
                      if (out / f"{kdir.name}.{n}.bin").exists() else None for n in ranges}
    print(kdir.name, res[kdir.name], flush=True)
names = list(res)
for n in res[names[0]]:
    vals = [res[k][n] for k in names]
    print(f"{n:18} {'SAME' if len(set(vals)) == 1 and vals[0] else 'DIFF'} {vals}")
