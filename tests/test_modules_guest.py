"""A booted module against the tools (issue 18, items 1 and 2).

A guest booted with a random seed and base KASLR loads fgk_test.ko (its
.text.* sections shuffled by the kernel, docs/layout-spec.md section 8)
and prints, as root, /sys/module/fgk_test/sections/* (the capture command
the fgk-symbolize man page gives) and fgk_test's functions in
/proc/kallsyms.  On the host:
  * `fgk layout fgk_test.ko --seed S` gives the booted section offsets;
  * `fgk symbolize --modules build/kernel/modules --module-sections CAPTURE`
    decodes raw runtime addresses of the module's functions to the function
    kallsyms names and to the file:line that addr2line -j gives on the
    function's own section of the .ko.
"""
import json
import re
import secrets
import subprocess

import pytest

from conftest import boot
from test_modules import (FGK, MODULES, VMLINUX, addr2line_one, elf_sections,
                          fgk_chain, module_ko, same_chain)
from test_oracle import require_fgkaslr_vmlinux

SCRIPT = r"""
insmod /fgk_test.ko
echo "seed=$(cat /proc/fgkaslr_seed)"
grep -r . /sys/module/fgk_test/sections | sed 's/^/cap /'
grep '\[fgk_test\]' /proc/kallsyms | sed 's/^/ksym /'
"""


def test_booted_module_layout_and_raw_addresses(tmp_path):
    require_fgkaslr_vmlinux()
    ko = module_ko()
    seed = secrets.token_hex(32)
    res = boot(SCRIPT, seed=seed, files={"/fgk_test.ko": str(ko)}, timeout=180)
    assert res.rc == 0, (res.rc, res.output[-2000:])
    assert "fgk_test: ok" in res.log, res.log[-2000:]
    assert f"seed={seed}" in res.output
    cap_lines = re.findall(r"^cap (\S+:0x[0-9a-f]+)$", res.output, re.M)
    booted = {m.group(1): int(m.group(2), 16) for m in
              (re.fullmatch(r"/sys/module/fgk_test/sections/(\S+):0x([0-9a-f]+)", l)
               for l in cap_lines) if m}
    assert len(booted) == len(cap_lines) and any(n.startswith(".text.") for n in booted), \
        res.output[-2000:]
    assert all(booted.values()), "section addresses hidden: not read as root?"
    # kallsyms base KASLR: modules load at a random address (not the first one)
    print(f"fgk_test core text at {min(v for n, v in booted.items() if n.startswith('.text')):#x}")

    # 1. fgk layout equals the booted offsets
    r = subprocess.run([str(FGK), "layout", str(ko), "--seed", seed, "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    layout = [s for s in json.loads(r.stdout)["sections"] if int(s["size"], 16)]
    assert sum(s["randomized"] for s in layout) >= 4
    base = booted[layout[0]["name"]] - int(layout[0]["offset"], 16)
    for s in layout:
        assert s["name"] in booted, (s["name"], sorted(booted))
        assert booted[s["name"]] - base == int(s["offset"], 16), (s, hex(base))
    text = {n for n in booted if n.startswith(".text") or n == ".exit.text"}
    assert text == {s["name"] for s in layout}, (text, layout)

    # 2. raw addresses of the module's functions, through the capture
    cap = tmp_path / "sections"
    cap.write_text("\n".join(cap_lines) + "\n")
    ksyms = {}
    for m in re.finditer(r"^ksym ([0-9a-f]{16}) [tT] (\w+)\s+\[fgk_test\]$", res.output, re.M):
        ksyms[m.group(2)] = int(m.group(1), 16)
    _, funcs, _ = elf_sections(ko)
    probes, want = "", []
    for name, section, value, size in funcs:
        if not section.startswith(".text.") or name not in ksyms:
            continue
        # kallsyms and the capture agree (independently of fgk)
        assert ksyms[name] == booted[section] + value, name
        for off in sorted({0, size // 2, size - 1}):
            addr = ksyms[name] + off
            probes += f"value {addr:016x}\n"
            want.append((addr, name, off, size, addr2line_one(ko, section, value + off)))
    assert len({w[1] for w in want}) >= 8, sorted(ksyms)
    r = subprocess.run([str(FGK), "symbolize", str(VMLINUX), "--seed", seed,
                        "--modules", str(MODULES), "--module-sections", str(cap)],
                       input=probes, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for addr, name, off, size, chain in want:
        m = re.search(r"^    %016x = %s\+0x%x/0x%x \[fgk_test\] \((.*)\)$" %
                      (addr, re.escape(name), off, size), r.stdout, re.M)
        assert m, (hex(addr), name, r.stdout)
        assert same_chain(fgk_chain(m.group(1)), chain), (m.group(0), chain)
    print(f"seed {seed[:8]}..: {len(layout)} sections at the predicted offsets, "
          f"{len(want)} raw addresses of {len({w[1] for w in want})} functions decoded "
          f"as addr2line -j says")
