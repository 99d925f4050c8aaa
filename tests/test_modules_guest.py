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
import shutil
import subprocess

import pytest

from conftest import KERNEL_DIR, KERNEL_NAME, REPO, boot
from test_modules import (FGK, MODULES, VMLINUX, addr2line_one, elf_sections,
                          fgk_chain, module_ko, same_chain)
from test_oracle import require_fgkaslr_vmlinux

SCRIPT = r"""
insmod /fgk_test.ko
echo "seed=$(cat /proc/fgkaslr_seed)"
grep -r . /sys/module/fgk_test/sections | sed 's/^/cap /'
grep '\[fgk_test\]' /proc/kallsyms | sed 's/^/ksym /'
"""



def captured_sections(output, mod):
    """The guest's `cap` lines of /sys/module/MOD/sections, and {section: address}."""
    cap_lines = re.findall(r"^cap (\S+:0x[0-9a-f]+)$", output, re.M)
    booted = {m.group(1): int(m.group(2), 16) for m in
              (re.fullmatch(rf"/sys/module/{mod}/sections/(\S+):0x([0-9a-f]+)", l)
               for l in cap_lines) if m}
    return cap_lines, booted


def check_booted_layout(ko, seed, booted, min_randomized):
    """`fgk layout KO --seed SEED` gives every booted core text section's
    offset from one base; returns its sections with a size."""
    r = subprocess.run([str(FGK), "layout", str(ko), "--seed", seed, "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    layout = [s for s in json.loads(r.stdout)["sections"] if int(s["size"], 16)]
    assert sum(s["randomized"] for s in layout) >= min_randomized
    base = booted[layout[0]["name"]] - int(layout[0]["offset"], 16)
    for s in layout:
        assert s["name"] in booted, (s["name"], sorted(booted))
        assert booted[s["name"]] - base == int(s["offset"], 16), (s, hex(base))
    text = {n for n in booted if n.startswith(".text") or n == ".exit.text"}
    assert text == {s["name"] for s in layout}, (text, layout)
    return layout

@pytest.mark.k612
def test_booted_module_layout_and_raw_addresses(tmp_path):
    require_fgkaslr_vmlinux()
    ko = module_ko()
    seed = secrets.token_hex(32)
    res = boot(SCRIPT, seed=seed, files={"/fgk_test.ko": str(ko)}, timeout=180)
    assert res.rc == 0, (res.rc, res.output[-2000:])
    assert "fgk_test: ok" in res.log, res.log[-2000:]
    assert f"seed={seed}" in res.output
    cap_lines, booted = captured_sections(res.output, "fgk_test")
    assert len(booted) == len(cap_lines) and any(n.startswith(".text.") for n in booted), \
        res.output[-2000:]
    assert all(booted.values()), "section addresses hidden: not read as root?"
    # kallsyms base KASLR: modules load at a random address (not the first one)
    print(f"fgk_test core text at {min(v for n, v in booted.items() if n.startswith('.text')):#x}")

    # 1. fgk layout equals the booted offsets
    layout = check_booted_layout(ko, seed, booted, min_randomized=4)

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
    pfx = lambda n: n.startswith("__pfx_")  # noqa: E731
    assert len({w[1] for w in want if not pfx(w[1])}) >= 8, sorted(ksyms)
    r = subprocess.run([str(FGK), "symbolize", str(VMLINUX), "--seed", seed,
                        "--modules", str(MODULES), "--module-sections", str(cap)],
                       input=probes, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for addr, name, off, size, chain in want:
        if pfx(name):
            # CALL_PADDING (6.2+): the guest's kallsyms names the padding
            # before a function __pfx_FN; addr2line has no line there, and
            # fgk gives the kernel's name and no source
            assert all(l == "?" for _, l in chain), (name, chain)
            assert re.search(r"^    %016x = %s\+0x%x/0x%x \[fgk_test\]$" %
                             (addr, re.escape(name), off, size), r.stdout, re.M), \
                (hex(addr), name, r.stdout)
            continue
        m = re.search(r"^    %016x = %s\+0x%x/0x%x \[fgk_test\] \((.*)\)$" %
                      (addr, re.escape(name), off, size), r.stdout, re.M)
        assert m, (hex(addr), name, r.stdout)
        assert same_chain(fgk_chain(m.group(1)), chain), (m.group(0), chain)
    print(f"seed {seed[:8]}..: {len(layout)} sections at the predicted offsets, "
          f"{len(want)} raw addresses of {len({w[1] for w in want})} functions decoded "
          f"as addr2line -j says ({sum(pfx(w[1]) for w in want)} in __pfx_ padding)")


OOT_SCRIPT = r"""
insmod /fgk/fgk_oot.ko
grep -r . /sys/module/fgk_oot/sections | sed 's/^/cap /'
grep '\[fgk_oot\]' /proc/kallsyms | sed 's/^/ksym /'
echo 1 > /sys/module/fgk_oot/parameters/warn
echo warned
"""


def build_out_of_tree(tmp_path):
    """tests/guest/oot built against the kernel tree: make -C TREE M=DIR."""
    tree = KERNEL_DIR / "build"
    if not (tree / "Module.symvers").is_file():
        pytest.skip(f"{KERNEL_NAME}/build (the configured kernel tree) has no Module.symvers: "
                    "run 'make kernel'")
    d = tmp_path / "oot"
    shutil.copytree(REPO / "tests" / "guest" / "oot", d)
    r = subprocess.run(["make", "-s", "-C", str(tree), f"M={d}", "modules"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return d, d / "fgk_oot.ko"


@pytest.mark.k612
def test_out_of_tree_module(tmp_path):
    """A module built out of tree: its booted layout is `fgk layout`'s, its
    WARN's frames decode as addr2line -j says, and its raw addresses too."""
    require_fgkaslr_vmlinux()
    module_ko()
    d, ko = build_out_of_tree(tmp_path)
    seed = secrets.token_hex(32)
    res = boot(OOT_SCRIPT, seed=seed, files={"/fgk/fgk_oot.ko": str(ko)}, timeout=180)
    assert res.rc == 0, (res.rc, res.output[-2000:])
    assert "warned" in res.output
    cap_lines, booted = captured_sections(res.output, "fgk_oot")
    layout = check_booted_layout(ko, seed, booted, min_randomized=3)

    # the WARN, from the console
    i = res.log.find("WARNING: CPU:")
    j = res.log.find("---[ end trace", i)
    assert i >= 0 and j > i, res.log[-3000:]
    warn = res.log[res.log.rfind("\n", 0, i) + 1:res.log.find("\n", j) + 1]
    frames = [(m.group(1), int(m.group(2), 16), int(m.group(3), 16)) for m in re.finditer(
        r"(?:RIP: 0010:| )(fgk_oot_[\w.]+)\+0x([0-9a-f]+)/0x([0-9a-f]+) \[fgk_oot\]", warn)]
    # GCC's clones keep their suffixes (fgk_oot_warn.constprop.0.isra.0):
    # an out-of-tree module as they come
    names = [f[0].split(".")[0] for f in frames]
    pos = [names.index(n) for n in ("fgk_oot_warn", "fgk_oot_fire", "fgk_oot_set")]
    assert pos == sorted(pos), warn
    r = subprocess.run([str(FGK), "symbolize", str(VMLINUX), "--seed", seed,
                        "--modules", str(d)], input=warn, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _, funcs, _ = elf_sections(ko)
    info = {name: (section, value, size) for name, section, value, size in funcs}
    ksyms = {m.group(2): int(m.group(1), 16) for m in re.finditer(
        r"^ksym ([0-9a-f]{16}) [tT] ([\w.]+)\s+\[fgk_oot\]$", res.output, re.M)}
    probes, want = "", []
    for func, off, size in set(frames):
        section, value, fsize = info[func]
        chain = addr2line_one(ko, section, value + off)
        m = re.search(r"%s\+0x%x/0x%x \[fgk_oot\] \((.*?)\)$" % (re.escape(func), off, size),
                      r.stdout, re.M)
        assert m, (func, r.stdout)
        assert same_chain(fgk_chain(m.group(1)), chain), (func, m.group(1), chain)
        if func.startswith("fgk_oot_warn"):
            assert len(chain) >= 2, chain          # fgk_oot_check() inlined
        addr = ksyms[func] + off
        probes += f"value {addr:016x}\n"
        want.append((addr, func, off, fsize, chain))
    cap = tmp_path / "sections"
    cap.write_text("\n".join(cap_lines) + "\n")
    r = subprocess.run([str(FGK), "symbolize", str(VMLINUX), "--seed", seed, "--modules", str(d),
                        "--module-sections", str(cap)], input=probes, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    for addr, func, off, fsize, chain in want:
        m = re.search(r"^    %016x = %s\+0x%x/0x%x \[fgk_oot\] \((.*)\)$"
                      % (addr, re.escape(func), off, fsize), r.stdout, re.M)
        assert m, (hex(addr), func, r.stdout)
        assert same_chain(fgk_chain(m.group(1)), chain), (func, m.group(1), chain)
    print(f"seed {seed[:8]}..: out-of-tree fgk_oot.ko: {len(layout)} sections at the predicted "
          f"offsets, {len(frames)} WARN frames and their raw addresses equal addr2line -j")
