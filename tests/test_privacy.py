"""Privacy of the FG-KASLR seed and layout on booted guests (issue 11).

The seed gives every function address. These tests boot the kernel with the
seed given in each way a user may write it (plain, after "--", after a
control byte, in upper case) and with a random one, then:

- sweep: as the unprivileged user and as root with every capability
  dropped, read every readable file under /proc and /sys (debugfs and
  tracefs mounted, as a distribution does), the kernel log (syslog(2) and
  /dev/kmsg) and /proc/1/cmdline, looking for the seed (hex in either case,
  split or separated, binary, halves) and for any number in the runtime
  range of the shuffled functions (tests/guest/privsweep.c);
- memory: dump the memory of a booted guest and find the seed only where
  the kernel keeps it on purpose (fgkaslr_boot_info and the VMCOREINFO
  note), no unmasked command line, and no part of the decompressor's
  section table (old and new address of a section) or of its order.
"""

import json
import os
import re
import secrets
import struct
import subprocess

import pytest

from conftest import KERNEL_DIR, KERNEL_NAME, REPO, boot, fgkrun, guest

FGKASLR_BOOT_MAGIC = 0x4b474621
BOOT_INFO_SEED_OFFSET = 56


def link_text():
    for line in (KERNEL_DIR / "System.map").read_text().splitlines():
        addr, _, name = line.split()
        if name == "_text":
            return int(addr, 16)
    raise AssertionError(f"no _text in {KERNEL_NAME}/System.map")


@pytest.fixture(scope="module")
def privsweep(kernel, tmp_path_factory):
    exe = tmp_path_factory.mktemp("privsweep") / "privsweep"
    subprocess.run(["gcc", "-static", "-O2", "-Wall", "-Werror", "-o", str(exe),
                    str(REPO / "tests" / "guest" / "privsweep.c")], check=True)
    return exe


SWEEP = """\
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
echo 1 > /sys/kernel/tracing/tracing_on 2>/dev/null
/fgk/privsweep /root/privsweep.conf user
/fgk/privsweep /root/privsweep.conf nocaps
"""


def sweep(privsweep, tmp_path, append, given):
    """Boot with `append`, sweep as both users; return the guest output."""
    conf = tmp_path / "privsweep.conf"
    conf.write_text("".join(f"secret {s}\n" for s in given) + f"link_text {link_text():x}\n")
    conf.chmod(0o400)
    res = boot(SWEEP, append=append, timeout=900,
               files={"/fgk/privsweep": str(privsweep), "/root/privsweep.conf": str(conf)})
    assert res.rc == 0 and not res.panicked, f"guest failed rc={res.rc}: {res.message}"
    out = res.output
    print(out[-4000:])
    assert "privsweep: error" not in out, out
    runs = re.findall(r"^swept files (\d+) bytes (\d+) numbers (\d+) secrets (\d+) "
                      r"unreadable (\d+) timeouts (\d+) hits (\d+)$", out, re.M)
    assert len(runs) == 2, f"expected two sweeps (user, nocaps):\n{out}"
    for files, nbytes, numbers, nsecrets, _, _, _ in runs:
        # the sweep read what there is to read, and checked every secret
        assert int(files) > 2000 and int(nbytes) > 1_000_000 and int(numbers) > 10_000
        assert int(nsecrets) == len(given) + 1      # and the seed in use
    # the matchers work: seed (hex, split, upper case), address (hex,
    # decimal), seed in binary, each found once in a synthetic buffer
    for kind in ("seed-hex selftest-text", "address-hex selftest-text",
                 "address-decimal selftest-text", "seed-binary selftest-binary"):
        assert len(re.findall(rf"^HIT {kind} ", out, re.M)) >= 2, f"self-test: no {kind}"
    selftest = re.findall(r"^selftest hits (\d+)$", out, re.M)
    assert len(selftest) == 2 and all(int(n) >= 4 for n in selftest), out
    out = "\n".join(l for l in out.splitlines() if "selftest" not in l)
    hits = re.findall(r"^HIT .*$", out, re.M)
    assert not hits, "seed or layout readable without privilege:\n" + "\n".join(hits)
    assert re.search(r"^mode user uid 1000$", out, re.M)
    assert re.search(r"^mode nocaps uid 0$", out, re.M)
    opens = re.findall(r"^open /proc/fgkaslr_(seed|stats): (.*)$", out, re.M)
    assert opens == [("seed", "Permission denied"), ("stats", "Permission denied"),
                     ("seed", "Operation not permitted"), ("stats", "Operation not permitted")], opens
    return res


def random_seed():
    return secrets.token_hex(32)


@pytest.mark.parametrize("how", [pytest.param("plain", marks=pytest.mark.k612),
                                 "after-dashdash", "after-control-byte",
                                 "upper-case", "random"])
def test_privacy_sweep(privsweep, tmp_path, how):
    seed = random_seed()
    append, given, used = {
        "plain": (f"fgkaslr_seed={seed}", [seed], "given"),
        # after "--" it is init's argument: not used, yet never shown
        "after-dashdash": (f"-- fgkaslr_seed={seed}", [seed], "random"),
        # the decompressor splits on control bytes, so it is used
        "after-control-byte": (f"quiet\x01fgkaslr_seed={seed}", [seed], "given"),
        "upper-case": (f"fgkaslr_seed={seed.upper()}", [seed], "given"),
        "random": ("", [], "random"),
    }[how]
    res = sweep(privsweep, tmp_path, append, given)
    seeds = re.findall(r"^stats-seed: (\w+)$", res.output, re.M)
    assert seeds == [used, used], f"/proc/fgkaslr_stats seed: {seeds}, expected {used}"
    # the kernel says where the seed came from, and nothing about the layout
    assert re.search(r"FG-KASLR: shuffled \d+ function sections, seed "
                     + ("from fgkaslr_seed=" if used == "given" else
                        r"random, \d+ bits of entropy \([a-z_,-]+\)"), res.log), res.log[-3000:]
    assert "packed end" not in res.log and "TSC cycles" not in res.log
    for s in given:
        assert s not in res.log.lower(), "seed on the console"


def test_weak_seed_warns(kernel):
    """Without RDRAND/RDSEED (qemu64), no EFI and no boot loader seed, the
    kernel says the seed is weak instead of claiming log2(n!) bits."""
    res = boot("cat /proc/fgkaslr_stats", cpu="qemu64", timeout=300)
    assert res.rc == 0, res.message
    print(res.output)
    bits = int(re.search(r"^entropy_bits: (\d+)$", res.output, re.M).group(1))
    src = re.search(r"^entropy_sources: (\S+)$", res.output, re.M).group(1)
    if "setup_data" in src:
        pytest.skip(f"QEMU passed a SETUP_RNG_SEED ({bits} bits): not a weak boot")
    assert bits == 0 and src == "kaslr-mix", (bits, src)
    assert "FG-KASLR: weak seed" in res.log
    assert re.search(r"seed random, 0 bits of entropy \(kaslr-mix\)", res.log)


@pytest.mark.k612
def test_strong_seed_sources(kernel):
    """With -cpu max (RDRAND, RDSEED) the seed is credited 256 bits."""
    res = boot("cat /proc/fgkaslr_stats", timeout=300)
    assert res.rc == 0, res.message
    bits = int(re.search(r"^entropy_bits: (\d+)$", res.output, re.M).group(1))
    src = re.search(r"^entropy_sources: (\S+)$", res.output, re.M).group(1)
    print(f"entropy: {bits} bits from {src}")
    assert "rdrand" in src.split(",") and bits == 256
    assert "weak seed" not in res.log


# ------------------------------------------------------------------ memory

def layout(seed):
    out = subprocess.run([str(REPO / "build" / "bin" / "fgk"), "layout",
                          str(KERNEL_DIR / "vmlinux"), "--seed", seed, "--json"],
                         capture_output=True, text=True, check=True).stdout
    return [(int(s["link"], 16), int(s["new"], 16), int(s["size"], 16), int(s["align"]))
            for s in json.loads(out)["sections"]]


def occurrences(data, needle):
    pos, found = 0, []
    while (pos := data.find(needle, pos)) >= 0:
        found.append(pos)
        pos += 1
    return found


def test_memory_holds_no_stray_seed_or_table(kernel, tmp_path):
    """A dump of a booted guest's memory: the seed only in fgkaslr_boot_info
    (binary) and VMCOREINFO (hex); no unmasked fgkaslr_seed=; nothing of the
    decompressor's section table or order."""
    seed = random_seed()
    core = tmp_path / "vmcore"
    g = guest("echo up; sleep 600", profile="dump", append=f"fgkaslr_seed={seed}",
              qmp=tmp_path / "qmp.sock", timeout=900)
    with g:
        assert g.wait_for_output("up", timeout=600), "guest did not start"
        fgkrun.qmp_command(g.wait_for_qmp(), "dump-guest-memory", paging=False,
                           protocol=f"file:{core}")
        g.kill()
    data = core.read_bytes()
    print(f"dump: {len(data)} bytes")
    assert len(data) > 64 << 20

    binary = bytes.fromhex(seed)
    where = occurrences(data, binary)
    in_boot_info = [p for p in where if p >= BOOT_INFO_SEED_OFFSET and struct.unpack_from(
        "<I", data, p - BOOT_INFO_SEED_OFFSET)[0] == FGKASLR_BOOT_MAGIC]
    stray = sorted(set(where) - set(in_boot_info))
    print(f"seed in binary: {len(where)} ({len(in_boot_info)} in fgkaslr_boot_info)")
    assert len(in_boot_info) == 1, where
    assert not stray, f"seed bytes at dump offsets {stray[:10]}"
    for half in (binary[:16], binary[16:]):
        assert len(occurrences(data, half)) == 1, "half of the seed outside fgkaslr_boot_info"

    hexes = []
    for form in (seed, seed.upper()):
        hexes += occurrences(data, form.encode())
    vmcoreinfo = [p for p in hexes if data[p - 13:p] == b"FGKASLR_SEED="]
    stray = sorted(set(hexes) - set(vmcoreinfo))
    print(f"seed in hex: {len(hexes)} ({len(vmcoreinfo)} in VMCOREINFO)")
    assert vmcoreinfo, "VMCOREINFO note not in the dump?"
    assert not stray, "seed as hex outside VMCOREINFO: " + ", ".join(
        repr(data[max(0, p - 40):p + 64]) for p in stray[:5])

    # every copy of this boot's command line is masked (other fgkaslr_seed=
    # text, such as the KUnit vectors in .rodata, is not this seed)
    params = occurrences(data, b"fgkaslr_seed=")
    masked = 0
    for p in params:
        value = data[p + 13:p + 13 + 64]
        assert value.lower() != seed.encode(), \
            f"unmasked command line at dump offset {p}: {data[p - 40:p + 80]!r}"
        masked += value == b"*" * 64
    print(f"fgkaslr_seed= in memory: {len(params)}, {masked} masked copies of this boot's")
    assert masked >= 2      # at least the boot loader's buffer and saved_command_line

    secs = layout(seed)
    sample = secs[::max(1, len(secs) // 200)]
    for link, new, size, align in sample:
        if link == new:
            continue
        assert data.find(struct.pack("<QQ", link, new)) < 0, \
            f"section table entry ({link:#x} -> {new:#x}) in memory"
    by_new = sorted(range(len(secs)), key=lambda i: secs[i][1])
    order = struct.pack("<16I", *by_new[:16])
    assert data.find(order) < 0, "the shuffle order is in memory"
    print(f"section table: {len(sample)} entries of {len(secs)} and the order looked for, none found")
