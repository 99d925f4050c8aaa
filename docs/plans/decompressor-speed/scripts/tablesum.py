#!/usr/bin/env python3
"""usage: tablesum.py DIR...
Boot each kernel dir with fgkaslr_seed=5eed.. nokaslr; sha256 of the pages of the
shuffled region and of the tables the decompressor rewrites (ORC, kallsyms index and
offsets, exception table), read from /proc/kcore after boot.  A kernel whose
kallsyms_fgk_idx covers only [kallsyms_fgk_pre, kallsyms_fgk_post), in .data
(series 6.1 patch 48, 6.12 patch 61), gets ks_idx as the sha256 of exactly
those entries (its page neighbours in .data change at run time) and the two
bounds printed (ks_bounds)."""
import sys
from pathlib import Path
from guest import boot_seeded, kcore_offset
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
    cmd = kcore_offset(t)
    def u32(a):     # shell: the u32 at link address a, from /proc/kcore
        return (f"$(dd if=/proc/kcore bs=4096 skip=$((off/4096+{(a - t) // 4096})) count=1 2>/dev/null"
                f" | od -A n -t u4 -j {(a - t) % 4096} -N 4)")
    for name, s, e in RANGES:
        a = m[s]
        if name == "ks_idx" and "kallsyms_fgk_pre" in m:
            skip = (a - t) // 4096
            cmd += (f"pre={u32(m['kallsyms_fgk_pre'])}; post={u32(m['kallsyms_fgk_post'])}\n"
                    f"echo ks_bounds $pre $post\n"
                    f"echo {name} $(dd if=/proc/kcore bs=4096 skip=$((off/4096+{skip})) "
                    f"count=$((({(a - t) % 4096} + 4 * (post - pre) + 4095) / 4096)) 2>/dev/null"
                    f" | tail -c +{(a - t) % 4096 + 1} | head -c $((4 * (post - pre))) | sha256sum)\n")
            continue
        if e:
            b = m[e]
        else:   # to the next symbol
            b = min(x for x in after if x > a)
        skip, count = (a - t) // 4096, (b - t + 4095) // 4096 - (a - t) // 4096
        cmd += f"echo {name} $(dd if=/proc/kcore bs=4096 skip=$((off/4096+{skip})) count={count} 2>/dev/null | sha256sum)\n"
    cmd += "grep -E '^(flags|sections):' /proc/fgkaslr_stats\n"
    r = boot_seeded(kdir, cmd)
    print("==", kdir.name)
    print(r.output, flush=True)
