"""FG-KASLR on Debian's own kernel configuration (build/kernel-debian;
KVERSION=6.12: build/kernel-6.12-debian, on Debian's 6.12 config).

`make check-debian` builds the variant (`make kernel KVARIANT=debian`) and
runs the whole suite against it (KVARIANT=debian: the runner, the oracle,
ftrace/kprobe/livepatch/BPF/jump-label, fgk-gdb, fgk crash, drgn, modules,
--efi).  This file holds what only that kernel can show, and runs in every
`make check` where build/kernel-debian exists, and in `make check-k612` where
build/kernel-6.12-debian does (else it skips and says why):

* the configuration is Debian's: every option Debian builds in is built in,
  except the ones docs/debian-kernel.md lists as cut with the modules, and
  every option turned on beyond Debian's is one that document explains;
* the scale the series must handle is there: tens of thousands of function
  sections, and more than SHN_LORESERVE (65280) ELF sections, so symbols
  carry their section index in .symtab_shndx (relocs once mishandled
  those: the kernel stopped before its console);
* a boot with a random seed and base KASLR shuffles every one of those
  sections, passes KUnit `fgkaslr`, and `fgk map` equals /proc/kallsyms,
  including the functions in sections numbered above 0xff00.
"""
import lzma
import re
import secrets
import subprocess

import pytest

import fgkrun
import fgkbase
from conftest import BIN_DIR, REPO
from test_oracle import link_text

pytestmark = pytest.mark.k612

# Debian's config of the kernel under test: 6.1's from linux-config-6.1,
# KVERSION=6.12's from linux-config-6.12 (the file named in
# kernel-6.12-debian.base if it exists, else kernel-debian.base)
KVER = fgkbase.KVERSION
SRCVER = KVER or "6.1"
DEBIAN_NAME = f"kernel-{KVER}-debian" if KVER else "kernel-debian"
DEBIAN_DIR = REPO / "build" / DEBIAN_NAME
VMLINUX = DEBIAN_DIR / "vmlinux"
FGK = BIN_DIR / "fgk"
DOC = REPO / "docs" / "debian-kernel.md"
SHN_LORESERVE = 0xff00


def base_config_file():
    prof = REPO / "qemu-profiles"
    base = prof / f"kernel-{KVER}-debian.base"
    if not (KVER and base.is_file()):
        base = prof / "kernel-debian.base"
    return f"/usr/src/linux-config-{SRCVER}/{base.read_text().split()[0]}"


def require_debian():
    for name in ("bzImage", "vmlinux", "config"):
        if not (DEBIAN_DIR / name).is_file():
            make = "make check-debian" + (f" KVERSION={KVER}" if KVER else "")
            reason = (f"build/{DEBIAN_NAME}/{name} missing: the Debian-config proofs need "
                      f"'{make}' (builds it, about 35 min on 2 cores)")
            print(reason)
            pytest.skip(reason)
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")


def config_values(text):
    vals = {}
    for line in text.splitlines():
        m = re.match(r"CONFIG_(\w+)=(.*)$", line)
        if m:
            vals[m.group(1)] = m.group(2)
            continue
        m = re.match(r"# CONFIG_(\w+) is not set$", line)
        if m:
            vals[m.group(1)] = "n"
    return vals


def documented_options():
    """(options in the tables of docs/debian-kernel.md, the cut-option list
    of the kernel under test: "Debian's file" for 6.1, "Debian's 6.12
    file" for KVERSION=6.12), or None when the 6.12 list is not written."""
    doc = DOC.read_text()
    tables = set()
    for row in re.findall(r"^\| (`[^|]+)\|", doc, re.M):
        tables.update(re.findall(r"`([A-Z0-9_]+)`", row))
    which = f"Debian's {KVER} file" if KVER else "Debian's file"
    m = re.search(which + r" are `y` there and unset here:\n\n((?:    \S+\n)+)", doc)
    if not m and KVER:
        return None
    assert m, "docs/debian-kernel.md lost its list of the options cut with the modules"
    cut = {l.strip() for l in m.group(1).splitlines()}
    return tables, cut


def test_config_is_debians():
    require_debian()
    with lzma.open(base_config_file(), "rt") as f:
        base = config_values(f.read())
    ours = config_values((DEBIAN_DIR / "config").read_text())
    documented = documented_options()
    if documented is None:
        pytest.skip(f"docs/debian-kernel.md has no list \"options of Debian's {KVER} file are "
                    f"`y` there and unset here\": the {KVER} configuration is not documented")
    tables, cut = documented
    lost = {o for o, v in base.items() if v == "y" and ours.get(o) != "y"}
    added = {o for o, v in ours.items() if v in ("y", "m") and o in base
             and base[o] != v and not (base[o] == "y" and v == "m")}
    print(f"Debian builds in {sum(v == 'y' for v in base.values())} options; "
          f"{len(lost)} of them are not built in here, {len(added)} options are on beyond Debian's")
    assert lost == cut, ("built-ins lost vs docs/debian-kernel.md: undocumented "
                         f"{sorted(lost - cut)[:20]}, documented but kept {sorted(cut - lost)[:20]}")
    unexplained = sorted(added - tables)
    assert not unexplained, f"options changed from Debian's without a line in docs: {unexplained}"
    assert ours.get("FG_KASLR") == "y" and ours.get("FG_KASLR_KUNIT_TEST") == "y"


def elf_scale():
    hdr = subprocess.run(["readelf", "-hW", str(VMLINUX)], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"Number of section headers:\s+(\d+)(?: \((\d+)\))?", hdr)
    shnum = int(m.group(2) or m.group(1))
    secs = subprocess.run(["readelf", "-SW", str(VMLINUX)], capture_output=True, text=True,
                          check=True).stdout
    text = {}
    for m in re.finditer(r"^\s*\[\s*(\d+)\] (\.text\.\S+)\s+PROGBITS\s+([0-9a-f]+) [0-9a-f]+ "
                         r"([0-9a-f]+) \S+\s+AX", secs, re.M):
        if int(m.group(4), 16):
            text[int(m.group(1))] = (m.group(2), int(m.group(3), 16), int(m.group(4), 16))
    return shnum, text


def test_scale_boot_kunit_and_kallsyms():
    require_debian()
    shnum, text = elf_scale()
    high = {i: t for i, t in text.items() if i >= SHN_LORESERVE}
    print(f"vmlinux: {shnum} ELF sections, {len(text)} function sections, "
          f"{len(high)} of them numbered >= {SHN_LORESERVE:#x}")
    assert len(text) > 30000, "not the scale of a distribution kernel"
    assert shnum > SHN_LORESERVE and high, "no section indexes in .symtab_shndx to prove"

    seed = secrets.token_hex(32)
    script = r"""
dmesg | grep -E 'FG-KASLR: shuffled|^\[[ 0-9.]+\] +(not )?ok [0-9]+ fgkaslr|# fgkaslr:'
echo "seed=$(cat /proc/fgkaslr_seed)"
echo kallsyms-begin
cat /proc/kallsyms
echo kallsyms-end
"""
    res = fgkrun.run("boot", script, seed=seed, kaslr=True, timeout=400,
                     kernel=DEBIAN_DIR / "bzImage")
    assert res.rc == 0, f"guest rc {res.rc}: {res.message}\n{res.log[-4000:]}"
    m = re.search(r"FG-KASLR: shuffled (\d+) function sections", res.output)
    assert m and int(m.group(1)) == len(text), res.output[:2000]
    assert re.search(r"^\[[ 0-9.]+\] +ok \d+ fgkaslr$", res.output, re.M), \
        "KUnit suite fgkaslr did not pass:\n" + res.log[-4000:]
    assert not re.search(r"not ok \d+ fgkaslr", res.output)
    assert f"seed={seed}" in res.output

    got = [l for l in re.search(r"kallsyms-begin\n(.*?)kallsyms-end", res.output, re.S)
           .group(1).splitlines() if "\t" not in l]
    run_text = int(next(l for l in got if l.endswith(" _text")).split()[0], 16)
    offset = run_text - link_text(VMLINUX)
    want = subprocess.run([str(FGK), "map", str(VMLINUX), "--seed", seed, "--offset", hex(offset)],
                          capture_output=True, text=True)
    assert want.returncode == 0, want.stderr
    want = want.stdout.splitlines()
    bad = [(w, g) for w, g in zip(want, got) if w != g]
    print(f"base offset {offset:#x}: fgk map {len(want)} lines, /proc/kallsyms {len(got)}, "
          f"{len(bad)} differ")
    assert len(got) > 50000 and want == got, bad[:5]

    # the functions of the sections numbered above 0xff00 moved, and sit
    # where fgk says: their names are in kallsyms at the predicted address
    runtime = {}
    for l in got:
        a, _, name = l.split()[:3]
        runtime.setdefault(name, int(a, 16))
    moved = sum(1 for name, link, _ in high.values()
                if name[len(".text."):] in runtime
                and runtime[name[len(".text."):]] - offset != link)
    print(f"{moved}/{len(high)} functions of high-numbered sections moved")
    assert moved > len(high) // 2
