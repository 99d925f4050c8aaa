"""The end-to-end oracle: fgk's prediction == the booted kernel's /proc/kallsyms.

For several seeds (fixed ones, a fresh random one chosen on the host, and
one chosen by the kernel itself and read back from /proc/fgkaslr_seed),
boot build/kernel/bzImage in QEMU, read /proc/kallsyms as root and require
`fgk map VMLINUX --seed S --offset O` to equal its vmlinux part line for
line.  O, the base KASLR offset, is measured from the guest: `_text` is
never shuffled, so O = runtime(_text) - link(_text) (0 with nokaslr).

Skips, saying why, until build/kernel/vmlinux is an FG-KASLR build (has
.text.* sections); never passes without comparing.
"""
import re
import subprocess
from pathlib import Path

import pytest

from conftest import KERNEL_DIR, KERNEL_NAME, REPO, boot, require_kernel

FGK = REPO / "build" / "bin" / "fgk"
VMLINUX = KERNEL_DIR / "vmlinux"

SCRIPT = r"""
echo "seed=$(cat /proc/fgkaslr_seed 2>&1)"
echo "cmdline=$(cat /proc/cmdline)"
echo kallsyms-begin
cat /proc/kallsyms
echo kallsyms-end
"""


def require_fgkaslr_vmlinux():
    require_kernel()
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")
    out = subprocess.run(["readelf", "-SW", str(VMLINUX)], capture_output=True,
                         text=True, check=True).stdout
    if not re.search(r"\] \.text\.\S+\s+PROGBITS .* AX ", out):
        reason = (f"{KERNEL_NAME}/vmlinux has no .text.* sections (not an FG-KASLR "
                  "build yet): nothing to compare the booted layout against")
        print(reason)
        pytest.skip(reason)


def link_text(vmlinux=VMLINUX):
    """_text's link address in vmlinux (nm)."""
    nm = subprocess.run(["nm", str(vmlinux)], capture_output=True, text=True,
                        check=True).stdout
    return int(re.search(r"^([0-9a-f]{16}) \S _text$", nm, re.M).group(1), 16)


def guest_kallsyms(output):
    m = re.search(r"^kallsyms-begin\n(.*?)^kallsyms-end$", output, re.S | re.M)
    assert m, "no kallsyms in the guest output"
    # vmlinux part only: module/bpf/kprobe lines carry "\t[owner]"
    return [l for l in m.group(1).splitlines() if "\t" not in l]


def compare(seed, offset, got):
    want = subprocess.run([str(FGK), "map", str(VMLINUX), "--seed", seed,
                           "--offset", hex(offset)], capture_output=True,
                          text=True)
    assert want.returncode == 0, want.stderr
    want = want.stdout.splitlines()
    from collections import Counter
    matched = sum((Counter(want) & Counter(got)).values())
    print(f"seed {seed} offset {offset:#x}: matched {matched}/{len(got)} "
          f"symbols ({100.0 * matched / max(len(got), 1):.2f}%), fgk predicted {len(want)}")
    if want != got:
        diffs = [(i, w, g) for i, (w, g) in enumerate(zip(want, got)) if w != g][:10]
        for i, w, g in diffs:
            print(f"  line {i}: fgk {w!r} kernel {g!r}")
    assert len(got) > 1000, "suspiciously few symbols in /proc/kallsyms"
    assert want == got, f"fgk map differs from /proc/kallsyms: {matched}/{len(got)} matched"


def check_addr(seed, offset, got):
    """fgk addr on the guest's own addresses finds the same function."""
    import random
    from collections import Counter
    names = Counter(l.split()[2] for l in got)
    text = [l for l in got if l.split()[1] in "tT" and names[l.split()[2]] == 1]
    sample = random.Random(seed).sample(text, min(300, len(text)))
    r = subprocess.run([str(FGK), "addr", str(VMLINUX), "--seed", seed, "--offset", hex(offset)],
                       input="".join(l.split()[0] + "\n" for l in sample),
                       capture_output=True, text=True)
    out = r.stdout.splitlines()
    at = {}
    for l in got:
        at.setdefault(l.split()[0], set()).add(l.split()[2])
    # aliases (several names at one address) may resolve to any of them
    bad = [(w, g) for w, g in zip(sample, out)
           if g.split("\t")[3].split("+0x0/")[0] not in at[w.split()[0]]
           or "+0x0/" not in g.split("\t")[3]]
    print(f"fgk addr: {len(sample) - len(bad)}/{len(sample)} sampled runtime addresses "
          f"resolved to the kernel's symbol")
    assert r.returncode == 0, r.stderr
    assert len(out) == len(sample) and not bad, bad[:5]


CASES = {
    "replay-000102": ("replay", bytes(range(32)).hex()),
    "kaslr-zero": ("boot", "00" * 32),
    "replay-ff": ("replay", "ff" * 32),
    "kaslr-host-random": ("boot", "random"),
    "kernel-chosen": ("boot", None),
}


# the k612 tier (Linux 6.12) runs two of them: a nokaslr replay and base
# KASLR with a seed from the host; test_kernel_series adds random seeds
K612 = ("replay-000102", "kaslr-host-random")


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.k612) if c in K612 else c
                                  for c in CASES])
def test_fgk_map_equals_proc_kallsyms(case, tmp_path):
    require_fgkaslr_vmlinux()
    profile, seed = CASES[case]
    if seed == "random":
        seed = subprocess.run([str(FGK), "seed", "random"], capture_output=True,
                              text=True, check=True).stdout.strip()
    res = boot(SCRIPT, profile=profile, seed=seed, timeout=180)
    assert res.rc == 0, f"guest rc {res.rc}: {res.message}\n{res.log[-3000:]}"
    m = re.search(r"^seed=(.*)$", res.output, re.M)
    assert m, "no seed= line in guest output"
    booted = m.group(1).strip()
    assert re.fullmatch(r"[0-9a-f]{64}", booted), \
        f"/proc/fgkaslr_seed says {booted!r}: the kernel did not shuffle"
    if seed is not None:
        assert booted == seed.lower(), "kernel reports a different seed than given"
    got = guest_kallsyms(res.output)
    text = [l for l in got if l.endswith(" _text")]
    assert len(text) == 1, "no _text in /proc/kallsyms"
    offset = int(text[0].split()[0], 16) - link_text()
    if profile == "replay":
        assert offset == 0, "nokaslr boot with a non-zero base offset"
    compare(booted, offset, got)
    check_addr(booted, offset, got)
    # the same through a seed record written by fgk
    rec = tmp_path / "boot.seed"
    subprocess.run([str(FGK), "seed", "record", "--seed", booted, "--vmlinux",
                    str(VMLINUX), "--offset", hex(offset), "-o", str(rec)],
                   check=True)
    via = subprocess.run([str(FGK), "map", str(VMLINUX), "--seed-file", str(rec)],
                         capture_output=True, text=True, check=True).stdout
    assert via.splitlines() == got
