"""fgk symbolize on oopses produced in QEMU by the shuffled kernel.

A guest booted with a known seed and a random base offset prints the
/proc/kallsyms addresses of a few shuffled functions (raw %px-style
addresses), then crashes through sysrq.  On the host:
  * the symbolic frames of the oops decode to the same file:line chains as
    the kernel's own scripts/decode_stacktrace.sh gives for them;
  * the crash frame (sysrq_handle_crash) points at the line of the faulting
    store in drivers/tty/sysrq.c;
  * raw runtime addresses, which decode_stacktrace.sh cannot place on a
    shuffled kernel, are mapped through the seed and the "Kernel Offset:"
    line to the right function+offset;
  * bad input: garbage text and a seed for another layout give clear errors.
"""
import re
import subprocess

import pytest

from conftest import KERNEL_DIR, REPO, boot
from test_oracle import FGK, VMLINUX, require_fgkaslr_vmlinux

SEED = "c0ffee" + "11" * 29
TARGETS = ["sysrq_handle_crash", "version_proc_show", "vfs_read"]

SCRIPT = r"""
for f in %s; do
    grep " [tT] $f\$" /proc/kallsyms | head -n 1 | sed 's/^/probe /'
done
echo c > /proc/sysrq-trigger
""" % " ".join(TARGETS)


@pytest.fixture(scope="module")
def oops(tmp_path_factory):
    require_fgkaslr_vmlinux()
    res = boot(SCRIPT, profile="boot", seed=SEED, timeout=120)
    assert res.panicked, f"the guest did not crash: rc {res.rc}\n{res.log[-2000:]}"
    path = tmp_path_factory.mktemp("oops") / "oops.txt"
    path.write_text(res.log)
    probes = {m.group(3): int(m.group(1), 16)
              for m in re.finditer(r"probe ([0-9a-f]{16}) ([tT]) (\S+)", res.output)}
    assert set(probes) == set(TARGETS), probes
    return path, res.log, probes


def symbolize(*args, input=None):
    return subprocess.run([str(FGK), "symbolize", str(VMLINUX), *map(str, args)],
                          capture_output=True, text=True, input=input)


def test_frames_match_decode_stacktrace(oops):
    path, log, _ = oops
    r = symbolize("--seed", SEED, path)
    assert r.returncode == 0, r.stderr
    tree = (KERNEL_DIR / "build").resolve()
    d = subprocess.run(["bash", str(tree / "scripts" / "decode_stacktrace.sh"),
                        str(VMLINUX), str(tree)], input=log, capture_output=True,
                       text=True)
    assert d.returncode == 0, d.stderr
    # name -> "(file:line ...)" from both tools
    ours = dict(re.findall(r"(\w[\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+ (\([^)]*\))", r.stdout))
    # addr2line adds " (discriminator N)" to some lines; file:line is the same
    plain = re.sub(r" \(discriminator \d+\)", "", d.stdout)
    theirs = dict(re.findall(r"(\w[\w.]*) (\([^)]*\.[chS]:\d+[^)]*\))", plain))
    common = set(ours) & set(theirs)
    print(f"frames decoded: fgk {len(ours)}, decode_stacktrace.sh {len(theirs)}, "
          f"compared {len(common)}")
    # the panic's own frame ends its function (noreturn call): only fgk
    # decodes it, through the call instruction
    assert "sysrq_handle_crash" in ours
    assert len(common) >= 4
    for name in common:
        assert ours[name] == theirs[name], (name, ours[name], theirs[name])


def test_crash_frame_is_the_panic_call(oops):
    path, _, _ = oops
    r = symbolize("--seed", SEED, path)
    m = re.search(r"sysrq_handle_crash\+0x[0-9a-f]+/0x[0-9a-f]+ "
                  r"\(drivers/tty/sysrq\.c:(\d+)", r.stdout)
    assert m, r.stdout[-3000:]
    src = (KERNEL_DIR / "build" / "drivers" / "tty" /
           "sysrq.c").read_text().splitlines()
    line = src[int(m.group(1)) - 1]
    # sysrq_handle_crash() -> panic("sysrq triggered crash\n") in 6.1
    assert "panic(" in line or "*killer" in line, line


def test_raw_addresses_through_the_seed(oops):
    path, log, probes = oops
    assert re.search(r"Kernel Offset: (0x[0-9a-f]+|disabled)", log), \
        "no Kernel Offset: line in the panic"
    text = "".join(f"value {addr + 5:016x}\n" for addr in probes.values())
    # offset from the oops: feed the Kernel Offset line along
    text += re.search(r"^.*Kernel Offset:.*$", log, re.M).group(0) + "\n"
    r = symbolize("--seed", SEED, input=text)
    assert r.returncode == 0, r.stderr
    for name, addr in probes.items():
        assert re.search(r"%016x = %s\+0x5/0x[0-9a-f]+ \(\S+:\d+" % (addr + 5, re.escape(name)),
                         r.stdout), (name, r.stdout)


def test_wrong_seed_does_not_claim_the_functions(oops):
    path, log, probes = oops
    text = "".join(f"value {addr + 5:016x}\n" for addr in probes.values())
    text += re.search(r"^.*Kernel Offset:.*$", log, re.M).group(0) + "\n"
    r = symbolize("--seed", "22" * 32, input=text)
    named = [n for n in probes if re.search(r"= %s\+0x5/" % re.escape(n), r.stdout)]
    assert len(named) < len(probes), "a wrong seed decoded every address the same"


def test_garbage_input():
    require_fgkaslr_vmlinux()
    r = symbolize("--seed", SEED, input="hello world\nnothing to see\n")
    assert r.returncode == 1
    assert "no kernel frames or addresses" in r.stderr
    r = symbolize("--seed", "xyz", input="x\n")
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1
