"""A layout rebuilt from kallsyms when no seed is known (issue 14).

Three guests boot with random FG-KASLR seeds and base KASLR on; each prints
root's /proc/kallsyms, then the same file read with kptr_restrict=2 (zero
addresses, names in alphabetical order: what a reader without the right to
see addresses gets).  On the host, for each boot:

  * `fgk relink VMLINUX --kallsyms CAPTURE -o A` against
    `fgk relink VMLINUX --seed SEED -o B`: byte-identical, or, where the
    tool said that sections without a kallsyms symbol are interchangeable
    (same size and alignment, no symbol: kallsyms cannot order them), the
    same symbols, the same section addresses except those sections (which
    then hold identical bytes), and the same `addr2line -f -i` on every
    function in a shuffled section;
  * `fgk map --kallsyms` equals the capture, `fgk addr --kallsyms` equals
    `fgk addr --seed`, `fgk layout --kallsyms` equals `fgk layout --seed`
    except those sections;
  * bad captures (zero addresses, truncated, another build's symbols, an
    inconsistent base offset) get one line naming the file, exit 1, and no
    output file.

The dump side (a dump whose VMCOREINFO lacks FGKASLR_SEED) is in
test_crash.py, on the dumps of its guest.
"""
import re
import secrets

import pytest

from conftest import BIN_DIR, KERNEL_DIR, KERNEL_NAME, boot, require_kernel
from oracle import run

FGK = BIN_DIR / "fgk"
VMLINUX = KERNEL_DIR / "vmlinux"
SEEDS = 3

SCRIPT = r"""
echo "fgkaslr-seed: $(cat /proc/fgkaslr_seed)"
echo kallsyms-begin
cat /proc/kallsyms
echo kallsyms-end
echo 2 > /proc/sys/kernel/kptr_restrict
echo zero-begin
cat /proc/kallsyms
echo zero-end
"""


def require_fg():
    require_kernel()
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")
    if not re.search(r"\] \.text\.\S+\s+PROGBITS", run("readelf", "-SW", VMLINUX).stdout):
        pytest.skip(f"{KERNEL_NAME}/vmlinux has no .text.* sections: not an FG-KASLR build")


def block(output, name):
    m = re.search(rf"^{name}-begin\n(.*?)^{name}-end$", output, re.S | re.M)
    assert m, f"no {name} block in the guest output"
    return m.group(1)


class Boots:
    """boots[k]: the k-th guest, booted when a test first asks for it (the
    k612 tier runs only the tests of boots[0]: one boot)."""

    def __init__(self, tmp_path_factory):
        self.tmp, self.done = tmp_path_factory, {}

    def __getitem__(self, k):
        if k not in self.done:
            seed = secrets.token_hex(32)
            res = boot(SCRIPT, seed=seed, kaslr=True, timeout=300)
            assert res.rc == 0, res.output[-2000:]
            assert f"fgkaslr-seed: {seed}" in res.output
            d = self.tmp.mktemp(f"boot{k}")
            cap = d / "kallsyms"
            cap.write_text(block(res.output, "kallsyms"))
            zero = d / "kallsyms.zero"
            zero.write_text(block(res.output, "zero"))
            self.done[k] = {"seed": seed, "dir": d, "capture": cap, "zero": zero}
        return self.done[k]


@pytest.fixture(scope="module")
def boots(tmp_path_factory):
    require_fg()
    return Boots(tmp_path_factory)


def guessed(stderr):
    """The sections the tool said kallsyms cannot order."""
    m = re.search(r"interchangeable \([^)]*\): (.*)$", stderr, re.M)
    return set(m.group(1).split(", ")) if m else set()


def layout_sections(*how):
    """{name: (new address, size)} from `fgk layout VMLINUX HOW...`."""
    out = run(FGK, "layout", VMLINUX, *how, check=True).stdout
    rows = [l.split("\t") for l in out.splitlines()[1:]]
    return {r[1]: (int(r[3], 16), int(r[4], 16)) for r in rows}


def moved_functions(path, secs):
    """Addresses of the function symbols of `path` inside the sections secs
    ({name: (addr, size)}: vmlinux.fgk has them folded into one)."""
    secs = sorted(secs.values())
    nm = run("nm", "-n", "--defined-only", path, check=True).stdout
    import bisect
    starts = [a for a, _ in secs]
    addrs = []
    for m in re.finditer(r"^([0-9a-f]{16}) [tTwW] ", nm, re.M):
        a = int(m.group(1), 16)
        i = bisect.bisect_right(starts, a) - 1
        if i >= 0 and a < secs[i][0] + secs[i][1]:
            addrs.append(a)
    return addrs


@pytest.mark.parametrize("k", [pytest.param(0, marks=pytest.mark.k612), *range(1, SEEDS)])
def test_relink_from_kallsyms_equals_seed(boots, k, tmp_path):
    b = boots[k]
    a, s = tmp_path / "from-kallsyms.fgk", tmp_path / "from-seed.fgk"
    r = run(FGK, "relink", VMLINUX, "--kallsyms", b["capture"], "-o", a)
    assert r.returncode == 0, r.stderr
    assert "layout rebuilt from" in r.stderr and "(no seed)" in r.stderr, r.stderr
    print(r.stderr)
    r2 = run(FGK, "relink", VMLINUX, "--seed", b["seed"], "--no-cache", "-o", s)
    assert r2.returncode == 0, r2.stderr
    if a.read_bytes() == s.read_bytes():
        print(f"seed {b['seed'][:8]}..: byte-identical")
        return
    # not identical: only the sections the tool named may differ
    g = guessed(r.stderr)
    assert g, "files differ, but the tool claimed an exact layout"
    sa = layout_sections("--kallsyms", b["capture"])
    ss = layout_sections("--seed", b["seed"])
    assert sa.keys() == ss.keys()
    differ = {n for n in sa if sa[n] != ss[n]}
    assert differ and differ <= g, f"sections differ beyond those named: {differ - g}"
    assert run("nm", "-n", a).stdout == run("nm", "-n", s).stdout
    addrs = moved_functions(s, ss)
    assert len(addrs) > 10000
    arg = [f"{x:#x}" for x in addrs]
    la = run("addr2line", "-f", "-i", "-e", a, *arg).stdout
    ls = run("addr2line", "-f", "-i", "-e", s, *arg).stdout
    assert la == ls
    print(f"seed {b['seed'][:8]}..: {len(differ)} interchangeable sections swapped; "
          f"symbols and addr2line of {len(addrs)} moved functions identical")


@pytest.mark.k612
def test_map_addr_layout_from_kallsyms(boots):
    b = boots[0]
    r = run(FGK, "map", VMLINUX, "--kallsyms", b["capture"])
    assert r.returncode == 0, r.stderr
    want = [l for l in b["capture"].read_text().splitlines() if "\t" not in l]
    assert r.stdout.splitlines() == want
    # offset: from the capture, equal to _text's
    text = next(int(l.split()[0], 16) for l in want if l.endswith(" _text"))
    link = int(re.search(r"^([0-9a-f]{16}) \S _text$", run("nm", VMLINUX).stdout,
                         re.M).group(1), 16)
    items = ["schedule", "do_sys_open", "sysrq_handle_crash", "panic+0x10",
             f"{text:#x}"]
    ra = run(FGK, "addr", VMLINUX, "--kallsyms", b["capture"], *items)
    rs = run(FGK, "addr", VMLINUX, "--seed", b["seed"], "--offset", f"{text - link:#x}",
             *items)
    assert ra.returncode == 0 and rs.returncode == 0, ra.stderr + rs.stderr
    assert ra.stdout == rs.stdout
    la = run(FGK, "layout", VMLINUX, "--kallsyms", b["capture"])
    ls = run(FGK, "layout", VMLINUX, "--seed", b["seed"])
    g = guessed(la.stderr)
    diff = [(x, y) for x, y in zip(la.stdout.splitlines(), ls.stdout.splitlines()) if x != y]
    assert all(x.split("\t")[1] in g for x, _ in diff), diff[:3]
    assert len(la.stdout.splitlines()) == len(ls.stdout.splitlines()) > 10000
    # spec §3 version 2 and 3: the range domains are rebuilt too, each in
    # its own region (skipped silently on a kernel without them)
    nm = None
    for prefix, limit in ((".sched.text.", "__sched_text_end"),
                          (".spinlock.text.", "__lock_text_end"),
                          (".static_call.text.", "__static_call_text_end"),
                          (".noinstr.text.", "__fgkaslr_noinstr_end"),
                          (".cpuidle.text.", "__cpuidle_text_end")):
        d0 = [x.split("\t") for x in la.stdout.splitlines()[1:]
              if x.split("\t")[1].startswith(prefix)]
        want_d0 = [x.split("\t") for x in ls.stdout.splitlines()[1:]
                   if x.split("\t")[1].startswith(prefix)]
        assert d0 == want_d0, prefix
        if d0:
            nm = nm or run("nm", VMLINUX).stdout
            end = int(re.search(r"^([0-9a-f]{16}) \S " + limit + "$", nm, re.M).group(1), 16)
            assert all(int(x[3], 16) + int(x[4], 16) <= end for x in d0)
            print(f"{len(d0)} {prefix}* sections rebuilt from kallsyms, "
                  f"{sum(x[2] != x[3] for x in d0)} moved")


def check_refused(cmd, out, *want):
    r = run(*cmd)
    assert r.returncode == 1, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for w in want:
        assert w in lines[0], lines[0]
    assert not out.exists()
    return lines[0]


@pytest.mark.k612
def test_zero_capture_refused(boots, tmp_path):
    """The real capture of a reader without the right to see addresses."""
    zero = boots[0]["zero"]
    lines = zero.read_text().splitlines()
    assert lines and all(l.startswith("0000000000000000 ") for l in lines)
    out = tmp_path / "out.fgk"
    check_refused([FGK, "relink", VMLINUX, "--kallsyms", zero, "-o", out], out,
                  str(zero), "every address is zero")


@pytest.mark.k612
@pytest.mark.parametrize("cut", ["line", "mid-line"])
def test_truncated_capture_refused(boots, tmp_path, cut):
    text = boots[0]["capture"].read_text()
    half = text[:len(text) // 2]
    half = half[:half.rindex("\n") + 1] if cut == "line" else half.rstrip("\n")[:-3]
    bad = tmp_path / "kallsyms.cut"
    bad.write_text(half)
    out = tmp_path / "out.fgk"
    line = check_refused([FGK, "relink", VMLINUX, "--kallsyms", bad, "-o", out], out,
                         str(bad))
    assert "truncated" in line


@pytest.mark.k612
def test_other_build_capture_refused(boots, tmp_path):
    text = boots[0]["capture"].read_text()
    out = tmp_path / "out.fgk"
    # a symbol this vmlinux does not have
    renamed = tmp_path / "kallsyms.renamed"
    renamed.write_text(re.sub(r" ([tT]) sysrq_handle_crash$", r" \1 sysrq_handle_crash_v2",
                              text, count=1, flags=re.M))
    assert renamed.read_text() != text
    check_refused([FGK, "relink", VMLINUX, "--kallsyms", renamed, "-o", out], out,
                  str(renamed), "sysrq_handle_crash", "another build")
    # an unshuffled symbol elsewhere than the base offset puts it
    lines = text.splitlines()
    i = next(i for i, l in enumerate(lines) if l.endswith(" T _stext"))
    a = int(lines[i].split()[0], 16) + 0x40
    lines[i] = f"{a:016x} T _stext"
    moved = tmp_path / "kallsyms.moved"
    moved.write_text("\n".join(lines) + "\n")
    check_refused([FGK, "relink", VMLINUX, "--kallsyms", moved, "-o", out], out,
                  str(moved), "not a capture of")
    # a shuffled function moved by 16 bytes: its section no longer packs
    lines = text.splitlines()
    i = next(i for i, l in enumerate(lines) if l.endswith(" T schedule"))
    a = int(lines[i].split()[0], 16) + 0x10
    lines[i] = f"{a:016x} T schedule"
    shifted = tmp_path / "kallsyms.shifted"
    shifted.write_text("\n".join(lines) + "\n")
    check_refused([FGK, "relink", VMLINUX, "--kallsyms", shifted, "-o", out], out,
                  str(shifted))


@pytest.mark.k612
def test_kallsyms_needs_output_and_excludes_seed(boots, tmp_path):
    cap = boots[0]["capture"]
    r = run(FGK, "relink", VMLINUX, "--kallsyms", cap)
    assert r.returncode == 2 and "--kallsyms needs -o OUT" in r.stderr
    r = run(FGK, "map", VMLINUX, "--kallsyms", cap, "--seed", boots[0]["seed"])
    assert r.returncode == 2 and "not both" in r.stderr


@pytest.mark.k612
def test_unequal_copies_of_one_name_placed_by_packing(tmp_path):
    """Same-named copies of one function that differ in size or alignment
    (a static inline emitted out of line by several objects, one copy cold:
    .text.pfn_valid and .text.unlikely.pfn_valid) can each sit at either
    address the capture gives for the name; only packing the whole region
    tells them apart.  Over many seeds (no guest: the capture is `fgk map`,
    which the guest tests prove equal to /proc/kallsyms), the layout from
    the capture equals the seed's for every section, except those it names
    as guessed."""
    require_fg()
    secs = re.findall(r"\] (\.text\.(?:unlikely\.)?(\S+))\s+PROGBITS\s+\S+\s+\S+\s+(\S+)"
                      r"\s+\S+\s+AX\s+\S+\s+\S+\s+(\d+)", run("readelf", "-SW", VMLINUX).stdout)
    by_name = {}
    for sec, name, size, align in secs:
        by_name.setdefault(name, set()).add((size, align))
    count = {}
    for line in run("nm", VMLINUX).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tT":
            count[f[2]] = count.get(f[2], 0) + 1
    # the symbol itself in both (not F in .text.F and F.cold in .text.unlikely.F)
    unequal = sorted(n for n, v in by_name.items() if len(v) > 1 and count.get(n, 0) > 1)
    if not unequal:
        pytest.skip(f"{KERNEL_NAME}/vmlinux has no function symbol named alike in sections of "
                    "unequal size or alignment: nothing to tell apart by packing")
    print(f"{len(unequal)} names with unequal copies, e.g. {unequal[:4]}")
    cap = tmp_path / "kallsyms"
    for _ in range(40):
        seed = secrets.token_hex(32)
        m = run(FGK, "map", VMLINUX, "--seed", seed, "--offset", "0x1e00000")
        assert m.returncode == 0, m.stderr
        cap.write_text(m.stdout)
        got = run(FGK, "layout", VMLINUX, "--kallsyms", cap, check=False)
        assert got.returncode == 0, f"seed {seed}: {got.stderr}"
        want = run(FGK, "layout", VMLINUX, "--seed", seed).stdout.splitlines()
        guessed = got.stderr
        have = [l for l in got.stdout.splitlines() if "seed" not in l.lower()]
        want = [l for l in want if "seed" not in l.lower()]
        assert len(have) == len(want)
        for a, b in zip(have, want):
            if a != b:
                sec = a.split("\t")[1]
                assert sec in guessed, f"seed {seed}: {sec} placed otherwise, not named as guessed:\n{a}\n{b}"
