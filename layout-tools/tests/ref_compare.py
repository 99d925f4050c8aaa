#!/usr/bin/env python3
"""Compare `fgk` against independent computations, at test time.

Run by `make -C layout-tools check` (and through tests/test_layout_tools.py).
For every ELF fixture built by fixtures/build.sh and several seeds (fixed
ones and fresh random ones), it computes the layout with docs/layout_ref.py
from section headers read with pyelftools (not libfgk), and the System.map with
binutils' `nm -n` + the scripts/mksysmap filter, and requires `fgk layout
--json`, `fgk map --format system-map` and `fgk map` (kallsyms) to agree.
Nothing here is a value that fgk produced earlier.

Usage: ref_compare.py [VMLINUX...]   (default: the fixtures in $FGK_FIXTURES)
"""
import json
import os
import re
import secrets
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "docs"))
import layout_ref  # noqa: E402
from elftools.elf.elffile import ELFFile  # noqa: E402

FGK = os.environ.get("FGK", os.path.join(TOP, "build", "bin", "fgk"))
SHT_PROGBITS, SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = "SHT_PROGBITS", 1, 2, 4


import functools


@functools.lru_cache(maxsize=None)
def sections(path):
    """Section headers (index, name, type, flags, addr, size, align), read
    with pyelftools (Debian's python3-pyelftools), not with libfgk: the
    reference stays independent of the code under test."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        return [(i, s.name, s["sh_type"], s["sh_flags"], s["sh_addr"], s["sh_size"],
                 s["sh_addralign"]) for i, s in enumerate(elf.iter_sections())]


@functools.lru_cache(maxsize=None)
def nm_symbols(path):
    """nm -n lines as (addr or None, type, name)."""
    out = subprocess.run(["nm", "-n", path], check=True, capture_output=True,
                         text=True, env=dict(os.environ, LC_ALL="C")).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0]:
            syms.append((int(parts[0], 16), parts[1], parts[2]))
        else:                            # undefined: "                 U name"
            t, n = line.split()[-2:]
            syms.append((None, t, n))
    return syms


def mksysmap_keep(line):
    """grep -v patterns of scripts/mksysmap (Linux 6.1)."""
    return not re.search(r" [aNUw] | \$| \.L| __crc_| __kstrtab_| __kstrtabns_| L0$",
                         line)


def nm_values(path):
    """{name: value} of the defined symbols, by nm (the limits and the
    layout version of spec §3)."""
    return {n: a for a, t, n in nm_symbols(path) if a is not None}


def ref_layout(path, seed):
    """Expected layout by docs/layout_ref.py (spec §3 domains: .sched.text.*
    then .text.*, each in index order); None if it does not fit."""
    secs = sections(path)
    syms = nm_values(path)
    try:
        new = layout_ref.layout([(s[1], 1 if s[2] == SHT_PROGBITS else 0, s[3], s[4],
                                  s[5], max(s[6], 1)) for s in secs], syms, seed)
    except ValueError as e:
        if "does not fit" in str(e):
            return None
        raise
    version = syms.get("__fgkaslr_layout_version", 1)
    dom = {i: layout_ref.domain_of(secs[i][1], 1, secs[i][3], secs[i][5], version)
           for i in new}
    return [(i, secs[i][1], secs[i][4], new[i], secs[i][5], max(secs[i][6], 1))
            for i in sorted(new, key=lambda i: (dom[i], i))]


def mapper(layout):
    """Link address -> new address (spec §7 "belongs to")."""
    import bisect
    rows = sorted((addr, size, new) for _, _, addr, new, size, _ in layout)
    starts = [r[0] for r in rows]

    def m(x):
        k = bisect.bisect_right(starts, x) - 1
        if k >= 0 and x < rows[k][0] + rows[k][1]:
            return x - rows[k][0] + rows[k][2]
        return x
    return m


def fgk(*args, check=True):
    r = subprocess.run([FGK, *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"fgk {' '.join(args)} failed: {r.stderr}")
    return r


class Failures(Exception):
    pass


def check_one(path, seed):
    hexseed = seed.hex()
    exp = ref_layout(path, seed)
    if exp is None:
        r = fgk("layout", path, "--seed", hexseed, check=False)
        assert r.returncode != 0 and "does not fit" in r.stderr, r.stderr
        return "nofit"
    got = json.loads(fgk("layout", path, "--seed", hexseed, "--json").stdout)
    got_rows = [(s["index"], s["name"], int(s["link"], 16), int(s["new"], 16),
                 int(s["size"], 16), s["align"]) for s in got["sections"]]
    assert got_rows == exp, f"{path} seed {hexseed}: layout differs from layout_ref.py"
    tsv = fgk("layout", path, "--seed", hexseed).stdout.splitlines()
    assert tsv[0] == "index\tname\tlink\tnew\tsize\talign"
    assert [tuple(l.split("\t")) for l in tsv[1:]] == [
        (str(i), n, "0x%016x" % a, "0x%016x" % w, "0x%x" % s, str(al))
        for i, n, a, w, s, al in exp]

    # System.map: nm -n | mksysmap, addresses mapped by the reference layout
    m = mapper(exp)
    percpu = {s[1] for s in sections(path) if s[3] & SHF_ALLOC and s[4] == 0}
    for offset in (0, 0x1a000000):
        expected = []
        for addr, t, name in nm_symbols(path):
            line = "%016x %s %s" % (addr or 0, t, name)
            if addr is None or not mksysmap_keep(line):
                continue
            absolute = t in "aA" or (name in percpu_names(path, percpu)
                                     and addr <= percpu_size(path))
            expected.append((addr if absolute else m(addr) + offset, t, name))
        expected.sort(key=lambda e: (e[0], e[2]))
        args = ["map", path, "--seed", hexseed, "--format", "system-map"]
        if offset:
            args += ["--offset", hex(offset)]
        got = fgk(*args).stdout.splitlines()
        want = ["%016x %s %s" % e for e in expected]
        if got != want:
            diff = [(g, w) for g, w in zip(got, want) if g != w][:5]
            raise AssertionError(f"{path} seed {hexseed} offset {offset:#x}: "
                                 f"system-map differs ({len(got)} vs {len(want)} lines), "
                                 f"first: {diff}")
    return "ok"


@functools.lru_cache(maxsize=None)
def percpu_size(path):
    """Size of the largest allocated section linked at address 0."""
    return max([s[5] for s in sections(path) if s[3] & SHF_ALLOC and s[4] == 0],
               default=-1)


_percpu_cache = {}


def percpu_names(path, percpu_secs):
    """Names of symbols defined in sections linked at 0 (readelf -sW)."""
    if path in _percpu_cache:
        return _percpu_cache[path]
    secidx = {str(s[0]) for s in sections(path) if s[1] in percpu_secs}
    out = subprocess.run(["readelf", "-sW", path], capture_output=True,
                         text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[6] in secidx:
            names.add(f[7])
    _percpu_cache[path] = names
    return names


def check_kallsyms(path, seed):
    """fgk map (kallsyms) vs nm: same address for every unique name."""
    hexseed = seed.hex()
    exp = ref_layout(path, seed)
    if exp is None:
        return
    m = mapper(exp)
    nm = {}
    for addr, t, name in nm_symbols(path):
        if addr is not None:
            nm.setdefault(name, []).append((addr, t))
    # scripts/kallsyms: per-CPU = address in [__per_cpu_start, __per_cpu_end]
    lo = nm.get("__per_cpu_start", [(None, None)])[0][0]
    hi = nm.get("__per_cpu_end", [(None, None)])[0][0]
    offset = 0x2c000000
    lines = fgk("map", path, "--seed", hexseed, "--offset", hex(offset)).stdout.splitlines()
    assert lines, f"{path}: empty kallsyms map"
    prev = -1
    checked = 0
    abs_percpu = has_absolute_percpu(lines)
    for line in lines:
        a, t, name = line.split(" ", 2)
        a = int(a, 16)
        assert a >= prev, f"{path}: kallsyms map not sorted at {line}"
        prev = a
        cands = nm.get(name, [])
        if len(cands) != 1:
            continue
        addr, nt = cands[0]
        if lo is not None and lo <= addr <= hi and abs_percpu:
            want, wt = addr, "A"          # --absolute-percpu makes them 'A'
        else:
            want, wt = m(addr) + offset, nt
        assert (a, t) == (want, wt), f"{path}: {line!r}, want {want:016x} {wt}"
        checked += 1
    # names that occur more than once (static functions) are not checked
    assert checked >= 0.9 * len(lines), f"{path}: only {checked}/{len(lines)} checked"


def has_absolute_percpu(lines):
    return any(l.split(" ", 2)[2] == "__per_cpu_start" and l.split()[1] == "A"
               for l in lines)


@functools.lru_cache(maxsize=None)
def has_kallsyms(path):
    return any(n == "kallsyms_names" for a, t, n in nm_symbols(path))


def main(argv):
    fixdir = os.environ.get("FGK_FIXTURES")
    paths = argv[1:] or [os.path.join(fixdir, f) for f in
                         ("fixture.elf", "fixture-rel.elf", "padded.elf", "nokallsyms.elf",
                          "nofit.elf", "xindex.elf", "entry.elf", "entry-nofit.elf",
                          "sched.elf", "sched-v1.elf", "sched-v3.elf", "domains.elf")
                         if os.path.exists(os.path.join(fixdir, f))]
    seeds = [bytes(range(32)), bytes(32), bytes.fromhex("ff" * 32)]
    seeds += [secrets.token_bytes(32) for _ in range(5)]
    results = {}
    for path in paths:
        big = os.path.getsize(path) > 4 << 20
        for seed in seeds[:2] if big else seeds:
            r = check_one(path, seed)
            results[r] = results.get(r, 0) + 1
            if r == "ok" and has_kallsyms(path):
                check_kallsyms(path, seed)
    print(f"ref_compare: {len(paths)} files, up to {len(seeds)} seeds each: {results}")
    if "nofit.elf" in " ".join(paths):
        assert results.get("nofit", 0) > 0, "nofit fixture always fit?"
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
