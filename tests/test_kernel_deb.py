"""The kernel packages of `make kernel-deb` (bindeb-pkg) boot, and their -dbg
vmlinux is the booted kernel.

Opt-in: `make kernel-deb-check` (FGK_KERNEL_DEB=1), not `make check`, since
the packages come from a whole kernel build.  The packages are unpacked
(dpkg-deb -x) into a temporary directory; the packaged /boot/vmlinuz-RELEASE
boots under QEMU with a fixed seed and no base KASLR (the replay profile);
the guest reads its own build-id from /sys/kernel/notes, its release, and
/proc/kallsyms.  The -dbg package's vmlinux, at the path gdb, crash and fgk
look in (/usr/lib/debug/lib/modules/RELEASE/vmlinux, with
/usr/lib/debug/boot/vmlinux-RELEASE beside it), must have that build-id, and
`fgk addr` on it with the seed gives the addresses the kernel booted with.
"""
import os
import random
import re
import subprocess

import pytest

from conftest import REPO, boot

OUT = REPO / "build" / "kernel-deb"
FGK = REPO / "build" / "bin" / "fgk"
FUNCS = ("vprintk_emit", "schedule", "do_sys_openat2")

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


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    rel_file = OUT / "release"
    if not rel_file.is_file():
        pytest.skip("no build/kernel-deb/release: run 'make kernel-deb'")
    release = rel_file.read_text().strip()
    image = list(OUT.glob(f"linux-image-{release}_*.deb"))
    dbg = list(OUT.glob(f"linux-image-{release}-dbg_*.deb"))
    assert len(image) == 1 and len(dbg) == 1, sorted(p.name for p in OUT.glob("*.deb"))
    root = tmp_path_factory.mktemp("kroot")
    for deb in (image[0], dbg[0]):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return {"release": release, "root": root, "image": image[0], "dbg": dbg[0]}


def test_packaged_kernel_boots_and_dbg_matches(packages):
    rel, root = packages["release"], packages["root"]
    vmlinuz = root / "boot" / f"vmlinuz-{rel}"
    vmlinux = root / "usr" / "lib" / "debug" / "lib" / "modules" / rel / "vmlinux"
    assert vmlinuz.is_file() and vmlinux.is_file(), sorted(map(str, root.rglob("*")))[:40]
    alias = root / "usr" / "lib" / "debug" / "boot" / f"vmlinux-{rel}"
    assert alias.exists() and alias.resolve() == vmlinux.resolve(), alias
    assert (root / "lib" / "modules" / rel / "modules.dep").is_file() or \
        list((root / "lib" / "modules" / rel).rglob("*.ko")), "no modules in the image package"
    r = subprocess.run(["readelf", "-n", str(vmlinux)], capture_output=True, text=True, check=True)
    want = re.search(r"Build ID: ([0-9a-f]+)", r.stdout).group(1)

    seed = "%064x" % random.getrandbits(256)
    script = ("uname -r\n"
              "od -An -v -tx1 /sys/kernel/notes | tr -d ' \\n'; echo\n"
              "cat /proc/fgkaslr_seed\n"
              + "".join(f'grep " {f}$" /proc/kallsyms\n' for f in FUNCS))
    res = boot(script, profile="replay", seed=seed, kernel=str(vmlinuz), timeout=600)
    assert res.rc == 0, res.message
    lines = res.output.strip().splitlines()
    assert lines[0] == rel, lines
    got = build_id_of_notes(bytes.fromhex(lines[1]))
    assert got == want, f"booted kernel build-id {got}, -dbg vmlinux {want}"
    print(f"{packages['image'].name}: booted {rel} in {res.duration:.1f} s, build-id {got} = -dbg vmlinux's")
    assert seed in lines[2], lines[2]
    kallsyms = {ln.split()[2]: int(ln.split()[0], 16) for ln in lines[3:] if len(ln.split()) == 3}
    assert set(kallsyms) == set(FUNCS), lines
    r = subprocess.run([str(FGK), "addr", str(vmlinux), "--seed", seed, "--offset", "0",
                        *FUNCS], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for ln in r.stdout.splitlines():
        name, runtime = ln.split("\t")[:2]
        assert int(runtime, 16) == kallsyms[name], ln
