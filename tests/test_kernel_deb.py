"""The kernel packages of `make kernel-deb` (bindeb-pkg) boot, and their -dbg
vmlinux is the booted kernel.

Opt-in: `make kernel-deb-check [KVARIANT=debian] [KVERSION=6.12]`
(FGK_KERNEL_DEB=1), not `make check`, since the packages come from a whole
kernel build.  KVARIANT/KVERSION select the packages as `make kernel-deb`
names them: build/kernel-deb[-6.12][-VARIANT]/.

The linux-image and its -dbg package are unpacked (dpkg-deb -x) into a
throwaway root, as dpkg would install them; the packaged
/boot/vmlinuz-RELEASE boots under QEMU with a random seed and base KASLR,
and loads the package's own fgk_test.ko.  The guest reports its release,
its build-id (/sys/kernel/notes), /proc/fgkaslr_seed, the number of
function sections it shuffled and /proc/kallsyms.  Then:

* the -dbg package's vmlinux, at the path gdb, crash and fgk look in
  (/usr/lib/debug/lib/modules/RELEASE/vmlinux, with
  /usr/lib/debug/boot/vmlinux-RELEASE beside it), has the booted build-id;
* the kernel shuffled every function section of that vmlinux (readelf);
* `fgk map` on that vmlinux with the guest's seed and base offset equals
  the guest's /proc/kallsyms, line for line;
* the module loads (signed with the build's key where the packaged config
  signs modules: no E taint), and the -dbg package's debug file of it has
  the packaged module's build-id.
"""
import os
import re
import secrets
import subprocess

import pytest

import fgkbase
import fgkrun
from conftest import BIN_DIR, REPO
from test_oracle import guest_kallsyms, link_text

SUFFIX = "".join(f"-{x}" for x in (fgkbase.KVERSION, fgkbase.KVARIANT) if x)
OUT = REPO / "build" / f"kernel-deb{SUFFIX}"
MAKE = "make kernel-deb" + "".join(f" {k}={v}" for k, v in (("KVERSION", fgkbase.KVERSION),
                                                             ("KVARIANT", fgkbase.KVARIANT)) if v)
FGK = BIN_DIR / "fgk"
MODULE = "kernel/lib/fgk_test.ko"
TAINT_UNSIGNED_MODULE = 1 << 13     # 'E' in the kernel's taint flags

pytestmark = pytest.mark.skipif(
    os.environ.get("FGK_KERNEL_DEB") != "1",
    reason="opt-in: make kernel-deb-check (the packages need a whole kernel build)")


def build_id_of_notes(data: bytes):
    """The GNU build-id in an ELF note blob (/sys/kernel/notes)."""
    i = 0
    while i + 12 <= len(data):
        namesz, descsz, ntype = (int.from_bytes(data[i + k:i + k + 4], "little")
                                 for k in (0, 4, 8))
        name = data[i + 12:i + 12 + namesz]
        doff = i + 12 + ((namesz + 3) & ~3)
        if name.rstrip(b"\0") == b"GNU" and ntype == 3:
            return data[doff:doff + descsz].hex()
        i = doff + ((descsz + 3) & ~3)
    return None


def build_id(path):
    r = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True, check=True)
    m = re.search(r"Build ID: ([0-9a-f]+)", r.stdout)
    assert m, f"{path}: no GNU build-id note"
    return m.group(1)


def function_sections(vmlinux):
    """The non-empty .text.* sections of vmlinux: what FG-KASLR shuffles."""
    secs = subprocess.run(["readelf", "-SW", str(vmlinux)], capture_output=True, text=True,
                          check=True).stdout
    return [m.group(1) for m in re.finditer(
        r"^\s*\[\s*\d+\] (\.text\.\S+)\s+PROGBITS\s+[0-9a-f]+ [0-9a-f]+ ([0-9a-f]+) \S+\s+AX",
        secs, re.M) if int(m.group(2), 16)]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    rel_file = OUT / "release"
    if not rel_file.is_file():
        pytest.skip(f"no {OUT.relative_to(REPO)}/release: run '{MAKE}'")
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")
    release = rel_file.read_text().strip()
    image = list(OUT.glob(f"linux-image-{release}_*.deb"))
    dbg = list(OUT.glob(f"linux-image-{release}-dbg_*.deb"))
    assert len(image) == 1 and len(dbg) == 1, sorted(p.name for p in OUT.glob("*.deb"))
    root = tmp_path_factory.mktemp("kroot")
    for deb, name in ((image[0], f"linux-image-{release}"),
                      (dbg[0], f"linux-image-{release}-dbg")):
        r = subprocess.run(["dpkg-deb", "-f", str(deb), "Package"], capture_output=True,
                           text=True, check=True)
        assert r.stdout.strip() == name, (deb.name, r.stdout)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return {"release": release, "root": root, "image": image[0], "dbg": dbg[0]}


def test_packaged_kernel_boots_and_dbg_matches(packages):
    rel, root = packages["release"], packages["root"]
    vmlinuz = root / "boot" / f"vmlinuz-{rel}"
    vmlinux = root / "usr" / "lib" / "debug" / "lib" / "modules" / rel / "vmlinux"
    assert vmlinuz.is_file() and vmlinux.is_file(), sorted(map(str, root.rglob("*")))[:40]
    alias = root / "usr" / "lib" / "debug" / "boot" / f"vmlinux-{rel}"
    assert alias.exists() and alias.resolve() == vmlinux.resolve(), alias
    ko = root / "lib" / "modules" / rel / MODULE
    ko_dbg = root / "usr" / "lib" / "debug" / "lib" / "modules" / rel / MODULE
    assert ko.is_file() and ko_dbg.is_file(), (ko, ko_dbg)
    assert build_id(ko_dbg) == build_id(ko), "the -dbg package's fgk_test.ko is another build"
    config = (root / "boot" / f"config-{rel}").read_text()
    signs = "CONFIG_MODULE_SIG=y" in config.splitlines()
    want = build_id(vmlinux)
    sections = function_sections(vmlinux)

    seed = secrets.token_hex(32)
    script = r"""
uname -r
od -An -v -tx1 /sys/kernel/notes | tr -d ' \n'; echo
echo "seed=$(cat /proc/fgkaslr_seed)"
dmesg | grep -o 'FG-KASLR: shuffled [0-9]* function sections'
insmod /fgk/fgk_test.ko && echo "insmod ok"
echo "tainted=$(cat /proc/sys/kernel/tainted)"
echo kallsyms-begin
cat /proc/kallsyms
echo kallsyms-end
"""
    res = fgkrun.run("boot", script, seed=seed, kaslr=True, kernel=vmlinuz, timeout=600,
                     files={"/fgk/fgk_test.ko": str(ko)})
    assert res.rc == 0, f"guest rc {res.rc}: {res.message}\n{res.log[-4000:]}"
    lines = res.output.splitlines()
    assert lines[0] == rel, lines[:3]
    got_id = build_id_of_notes(bytes.fromhex(lines[1]))
    assert got_id == want, f"booted kernel build-id {got_id}, -dbg vmlinux {want}"
    assert f"seed={seed}" in res.output, lines[:4]
    m = re.search(r"FG-KASLR: shuffled (\d+) function sections", res.output)
    assert m and int(m.group(1)) == len(sections), \
        f"{m and m.group(0)}; the -dbg vmlinux has {len(sections)} function sections"
    assert "insmod ok" in res.output, res.log[-3000:]
    tainted = int(re.search(r"^tainted=(\d+)$", res.output, re.M).group(1))
    if signs:
        assert not tainted & TAINT_UNSIGNED_MODULE, \
            f"the packaged fgk_test.ko did not verify against the packaged kernel (tainted={tainted})"

    got = guest_kallsyms(res.output)            # vmlinux's lines, not the modules'
    assert re.search(r"^[0-9a-f]+ [tT] fgk_test_\w+\t\[fgk_test\]$", res.output, re.M), \
        "the module's functions are not in /proc/kallsyms"
    run_text = int(next(ln for ln in got if ln.endswith(" _text")).split()[0], 16)
    offset = run_text - link_text(vmlinux)
    r = subprocess.run([str(FGK), "map", str(vmlinux), "--seed", seed, "--offset", hex(offset)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    wanted = r.stdout.splitlines()
    bad = [(w, g) for w, g in zip(wanted, got) if w != g]
    assert wanted == got, (f"fgk map {len(wanted)} lines, /proc/kallsyms {len(got)}, "
                           f"{len(bad)} differ: {bad[:5]}")
    print(f"{packages['image'].name} ({packages['image'].stat().st_size >> 20} MiB), "
          f"{packages['dbg'].name} ({packages['dbg'].stat().st_size >> 20} MiB): booted {rel} "
          f"in {res.duration:.1f} s, build-id {got_id} = -dbg vmlinux's; shuffled "
          f"{len(sections)} function sections; fgk map = /proc/kallsyms ({len(got)} lines, "
          f"base offset {offset:#x}); packaged fgk_test.ko loaded (tainted={tainted}, "
          f"{'signed' if signs else 'unsigned'} modules)")
