"""fgk symbolize on oopses produced in QEMU by the shuffled kernel.

A guest booted with a known seed and a random base offset prints the
/proc/kallsyms addresses of a few shuffled functions (raw %px-style
addresses), then crashes through sysrq.  On the host:
  * the symbolic frames of the oops decode to the same file:line chains as
    the kernel's own scripts/decode_stacktrace.sh gives for them, but for
    frames at the very end of their function (func+SIZE, after a noreturn
    call), where fgk gives the call's line and decode_stacktrace.sh the
    next function's;
  * the crash frame (sysrq_handle_crash) points at the line of the faulting
    store in drivers/tty/sysrq.c;
  * raw runtime addresses, which decode_stacktrace.sh cannot place on a
    shuffled kernel, are mapped through the seed and the "Kernel Offset:"
    line to the right function+offset;
  * bad input: garbage text and a seed for another layout give clear errors.
"""
import json
import re
import subprocess
import sys

import pytest

from conftest import KERNEL_DIR, REPO, boot
from test_oracle import FGK, VMLINUX, require_fgkaslr_vmlinux
from test_symbolize_corpus import nm_symbols

sys.path.insert(0, str(REPO / "docs"))
import layout_ref  # noqa: E402

# every shuffle domain's section prefix (spec §3): .text. and the range domains
SHUFFLED_PREFIXES = tuple(d[0] for d in layout_ref.DOMAINS)

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
    frames = re.findall(r"(\w[\w.]*)\+0x([0-9a-f]+)/0x[0-9a-f]+ (\([^)]*\))", r.stdout)
    ours = {name: chain for name, _, chain in frames}
    # func+SIZE/..: a return address after a noreturn call that ends the
    # function.  fgk gives the call's line (address - 1), decode_stacktrace.sh
    # that of the address, the first byte of what followed the function at
    # link time: they differ there by design (docs/fgk-symbolize.1.md)
    syms = nm_symbols()
    at_end = {name for name, off, _ in frames
              if len(syms.get(name, [])) == 1 and syms[name][0][1]
              and int(off, 16) >= syms[name][0][1]}
    # addr2line adds " (discriminator N)" to some lines; file:line is the same
    plain = re.sub(r" \(discriminator \d+\)", "", d.stdout)
    theirs = dict(re.findall(r"(\w[\w.]*) (\([^)]*\.[chS]:\d+[^)]*\))", plain))
    common = set(ours) & set(theirs) - at_end
    print(f"frames decoded: fgk {len(ours)}, decode_stacktrace.sh {len(theirs)}, "
          f"compared {len(common)}, at the end of their function {sorted(at_end)}")
    # the panic's own frame ends its function (noreturn call): only fgk
    # decodes it, through the call instruction
    assert "sysrq_handle_crash" in ours
    assert len(common) >= 4
    for name in common:
        assert same_places(ours[name], theirs[name]), (name, ours[name], theirs[name])


def same_places(ours, theirs):
    """"(file:line ...)" of fgk and of decode_stacktrace.sh name the same
    places.  decode_stacktrace.sh strips only the tree it is given from the
    DWARF's paths; an object compiled in another directory (a build tree
    copied from elsewhere and rebuilt: 6.12's arch/x86/entry objects here)
    keeps that directory (its comp_dir), to which fgk gives paths relative."""
    a, b = ours.strip("()").split(), theirs.strip("()").split()
    return len(a) == len(b) and all(
        y == x or (y.startswith("/") and y.endswith("/" + x)) for x, y in zip(a, b))


def system_map_sizes():
    """name -> kallsyms-style size at link time: the distance to the next
    higher address in System.map (names that occur once only)."""
    rows = []
    for line in (KERNEL_DIR / "System.map").read_text().splitlines():
        f = line.split()
        if len(f) == 3:
            rows.append((int(f[0], 16), f[2]))
    addrs = sorted({a for a, _ in rows})
    nxt = {a: b for a, b in zip(addrs, addrs[1:])}
    count = {}
    for _, n in rows:
        count[n] = count.get(n, 0) + 1
    return {n: nxt[a] - a for a, n in rows if count[n] == 1 and a in nxt}


def places(text):
    """(file basename, line) pairs of addr2line-style output, in order."""
    return [(p.rsplit("/", 1)[-1], int(n)) for p, n in re.findall(r"(\S+\.[chS]):(\d+)", text)]


@pytest.mark.k612
def test_faddr2line_takes_the_oops_frames(oops):
    """The kernel's scripts/faddr2line, given func+off/size as the oops
    printed it, finds each shuffled function (one section of its own in
    vmlinux) and names addr2line's lines for its link address + off.
    Before the series' faddr2line patch it measured such a function as
    "section size - address" and answered "no match" for every one.
    Frames whose printed size differs from the link-time one (a neighbour
    with a larger alignment after the shuffle) are refused by faddr2line
    by design and left out; frames at the very end of their function are
    left out too (faddr2line looks that address itself up)."""
    _, log, _ = oops
    tree = (KERNEL_DIR / "build").resolve()
    script = tree / "scripts" / "faddr2line"
    if not script.exists():
        pytest.skip(f"{script}: the kernel tree has no scripts/faddr2line")
    secs = subprocess.run(["readelf", "-SW", str(VMLINUX)], capture_output=True, text=True,
                          check=True).stdout
    own_section = set(re.findall(r"\]\s+\.text\.(\S+)\s+PROGBITS", secs))
    sizes, syms = system_map_sizes(), nm_symbols()
    frames, other = {}, []
    for name, off, size in re.findall(r"\b(\w[\w.]*)\+0x([0-9a-f]+)/0x([0-9a-f]+)", log):
        off, size = int(off, 16), int(size, 16)
        if name not in own_section or len(syms.get(name, [])) != 1 \
                or off >= syms[name][0][1]:
            continue
        if sizes.get(name) != size:
            other.append(f"{name}+{off:#x}/{size:#x} (link-time size {sizes.get(name, 0):#x})")
            continue
        frames[f"{name}+{off:#x}/{size:#x}"] = syms[name][0][0] + off
    print(f"frames checked: {sorted(frames)}; left out, size changed by the shuffle: {other}")
    assert len(frames) >= 3, f"too few shuffled frames in the oops to check: {sorted(frames)}"
    r = subprocess.run(["bash", str(script), str(VMLINUX), *frames], capture_output=True,
                       text=True, timeout=600)
    out = r.stdout + r.stderr
    assert "no match" not in out and "skipping" not in out, out
    # one block per frame: "name+off/size:" then its lines
    blocks = dict(re.findall(r"^(\S+\+0x[0-9a-f]+/0x[0-9a-f]+):\n((?:(?!\S+\+0x[0-9a-f]+/0x[0-9a-f]+:\n).*\n?)*)",
                             r.stdout, re.M))
    assert set(blocks) == set(frames), r.stdout
    for frame, addr in frames.items():
        want = subprocess.run(["addr2line", "-i", "-e", str(VMLINUX), hex(addr)],
                              capture_output=True, text=True, check=True).stdout
        assert places(want), f"{frame}: addr2line has no line at {addr:#x}"
        assert places(blocks[frame]) == places(want), (frame, blocks[frame], want)


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


def unshuffled_text(vmlinux):
    """(start, end) of vmlinux's executable sections outside every shuffle
    domain (.text.* and the range domains: .sched.text.*, .noinstr.text.*,
    ...)."""
    out = subprocess.run(["readelf", "-SW", str(vmlinux)], capture_output=True,
                         text=True, check=True).stdout
    spans = []
    for m in re.finditer(r"\]\s+(\S+)\s+PROGBITS\s+([0-9a-f]{16})\s+[0-9a-f]+\s+([0-9a-f]+)"
                         r"\s+\S+\s+(\S*X\S*)", out):
        if not m.group(1).startswith(SHUFFLED_PREFIXES):
            a = int(m.group(2), 16)
            spans.append((a, a + int(m.group(3), 16)))
    return spans


@pytest.mark.k612
def test_padding_is_no_function():
    """6.2+ (CONFIG_CALL_PADDING): the 16 bytes before each function are a
    __pfx_FUNC symbol of their own, which kallsyms names.  fgk never gives
    __pfx_ as a frame's function: a raw address in the padding is said to
    be before FUNC (nm's distance), one in FUNC decodes to FUNC+off and
    addr2line's line, a printed "__pfx_FUNC+0x5/0x10" gets no line, and no
    --json frame has a __pfx_ function."""
    require_fgkaslr_vmlinux()
    nm = subprocess.run(["nm", str(VMLINUX)], capture_output=True, text=True,
                        check=True).stdout
    addrs = {}
    for m in re.finditer(r"^([0-9a-f]{16}) [tT] (\S+)$", nm, re.M):
        addrs.setdefault(m.group(2), []).append(int(m.group(1), 16))
    spans = unshuffled_text(VMLINUX)
    funcs = [n[6:] for n, a in addrs.items() if n.startswith("__pfx_") and len(a) == 1
             and len(addrs.get(n[6:], [])) == 1 and addrs[n[6:]][0] == a[0] + 16
             and any(s <= a[0] < e for s, e in spans)]
    if not funcs:
        pytest.skip(f"{VMLINUX}: no __pfx_ symbols in unshuffled text (no CONFIG_CALL_PADDING "
                    "before Linux 6.2)")
    funcs = funcs[::max(1, len(funcs) // 12)][:12]
    text = "".join(f"RAX: {addrs[f][0] - 11:016x}\nRBX: {addrs[f][0] + 1:016x}\n"
                   f" __pfx_{f}+0x5/0x10\n" for f in funcs) + "Kernel Offset: disabled\n"
    r = symbolize(input=text)
    assert r.returncode == 0, r.stderr
    assert not re.search(r"= __pfx_", r.stdout), r.stdout
    for f in funcs:
        a = addrs[f][0]
        assert f"    {a - 11:016x} = 0xb bytes before {f} (its padding)\n" in r.stdout, f
        m = re.search(r"^    %016x = (\S+)\+0x1/0x[0-9a-f]+ \((\S+):(\d+)" % (a + 1),
                      r.stdout, re.M)
        assert m and m.group(1) == f, (f, r.stdout)
        a2l = subprocess.run(["addr2line", "-e", str(VMLINUX), hex(a + 1)],
                             capture_output=True, text=True, check=True).stdout
        a2l = re.sub(r" \(discriminator \d+\)", "", a2l.strip())
        assert a2l.endswith(f"{m.group(2)}:{m.group(3)}"), (f, a2l, m.group(0))
        assert f"\n __pfx_{f}+0x5/0x10\n" in r.stdout, f
    j = symbolize("--json", input=text)
    assert j.returncode == 0, j.stderr
    frames = json.loads(j.stdout)["frames"]
    assert len(frames) == 2 * len(funcs)
    assert not [x for x in frames if (x["function"] or "").startswith("__pfx_")]
    assert [x["function"] for x in frames if x["text"].startswith("__pfx_")] == [None] * len(funcs)
