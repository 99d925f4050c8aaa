"""The kernel series, proven on booted kernels (QEMU TCG, never the host).

* the KUnit suite `fgkaslr` passes on at least 20 random-seed boots (the
  count is printed), base KASLR on;
* same seed twice (nokaslr) -> identical /proc/kallsyms; different seeds ->
  a different order of the same symbols; nofgkaslr -> System.map order;
* /proc/fgkaslr_seed is 0400 and unreadable for users, /proc/cmdline masks
  the seed, users see kallsyms names in alphabetical order with zero
  addresses, a malformed fgkaslr_seed= is rejected as a whole;
* the test module fgk_test shuffles its .text.* sections in the order
  docs/layout_ref.py (spec section 8) predicts and passes its self-checks;
* the patches apply in order and scripts/checkpatch.pl finds no errors.
"""
import re
import secrets
import subprocess
import sys

import pytest
from pathlib import Path

from conftest import KERNEL_DIR, REPO, boot, fgkbase
from test_oracle import VMLINUX, require_fgkaslr_vmlinux
import oracle  # noqa: E402

sys.path.insert(0, str(REPO / "docs"))
import layout_ref  # noqa: E402

SEEDS_N = 20

KALLSYMS = r"""
echo "seed=$(cat /proc/fgkaslr_seed)"
echo kallsyms-begin
cat /proc/kallsyms
echo kallsyms-end
"""


def kallsyms(output):
    m = re.search(r"^kallsyms-begin\n(.*?)^kallsyms-end$", output, re.S | re.M)
    assert m, output[-2000:]
    return [l for l in m.group(1).splitlines() if "\t" not in l]


def kunit_totals(log):
    m = re.search(r"# fgkaslr: pass:(\d+) fail:(\d+) skip:(\d+) total:(\d+)", log)
    assert m, "no fgkaslr KUnit summary on the console"
    return tuple(map(int, m.groups()))


def kunit_skips(log):
    """{case: reason} of the fgkaslr suite's KUnit cases that skipped ("ok
    N case # SKIP reason" on the console, between "# Subtest: fgkaslr" and
    the suite's own "ok N fgkaslr")."""
    m = re.search(r"# Subtest: fgkaslr\r?$(.*?)\bok \d+ fgkaslr\b", log, re.S | re.M)
    assert m, "no fgkaslr KUnit suite on the console"
    return dict(re.findall(r"\bok \d+ (\w+) # SKIP ?(.*?)\r?$", m.group(1), re.M))


def expected_kunit_skips(config=None, system_map=None):
    """{case: reason prefix} of the cases that skip by design on this
    kernel's configuration (build/kernel*/config); any other skip fails.
    fgkaslr_test_asm_functions needs GNU as >= 2.26 (--sectname-subst,
    6.12 patch 42): with LLVM's integrated assembler (make kernel
    KVARIANT=clang) assembly moves object by object and the case says so."""
    if config is None:
        f = KERNEL_DIR / "config"
        config = f.read_text() if f.is_file() else ""
    if system_map is None:
        f = KERNEL_DIR / "System.map"
        system_map = f.read_text() if f.is_file() else ""
    want = {}
    m = re.search(r"^CONFIG_AS_VERSION=(\d+)$", config, re.M)
    if re.search(r" fgkaslr_test_asm_functions$", system_map, re.M) and (
            "CONFIG_AS_IS_GNU=y" not in config or not m or int(m.group(1)) < 22600):
        want["fgkaslr_test_asm_functions"] = "no --sectname-subst"
    return want


def check_kunit_skips(seed, log, p, s, t):
    """The suite's skips are exactly the expected ones, with their reason;
    -> {case: reason} of the skips."""
    got, want = kunit_skips(log), expected_kunit_skips()
    assert s == len(got) and p + s == t, (seed, p, s, t, got)
    assert set(got) == set(want), (seed, got, want)
    for case, reason in got.items():
        assert reason.startswith(want[case]), (seed, case, reason, want[case])
    return got


def test_kunit_suite_on_many_random_seeds():
    """Each random seed, base KASLR on: the KUnit suite passes, the booted
    /proc/kallsyms equals fgk map line for line, and the decompressor put
    every table sorted by address back in order by section runs (flag 0x80,
    the heapsort fallback, never set)."""
    kunit_on_random_seeds(SEEDS_N)


@pytest.mark.k612
def test_kunit_suite_on_a_few_random_seeds():
    """The same on 3 random seeds: what the second kernel's tier (k612)
    affords; the 20-seed run is test_kunit_suite_on_many_random_seeds."""
    kunit_on_random_seeds(3)


def kunit_on_random_seeds(n):
    require_fgkaslr_vmlinux()
    from test_oracle import compare, guest_kallsyms, link_text
    passed = []
    for k in range(n):
        seed = secrets.token_hex(32)
        res = boot("grep ^flags: /proc/fgkaslr_stats\n" + KALLSYMS, seed=seed, timeout=120)
        assert res.rc == 0, f"seed {seed}: rc {res.rc} {res.message}"
        assert f"seed={seed}" in res.output
        p, f, s, t = kunit_totals(res.log)
        assert f == 0 and t >= 10, (seed, p, f, s, t)
        skips = check_kunit_skips(seed, res.log, p, s, t)
        print(f"seed {seed}: KUnit fgkaslr pass:{p} fail:{f} skip:{s} total:{t}"
              + "".join(f"; {c} skipped: {r}" for c, r in skips.items()))
        for bad in ("WARNING:", "BUG:", "Oops", "Call Trace"):
            assert bad not in res.log, (seed, bad)
        flags = int(re.search(r"^flags: (0x[0-9a-f]+)$", res.output, re.M).group(1), 16)
        assert flags & 0x01 and not flags & 0x80, (seed, hex(flags))
        got = guest_kallsyms(res.output)
        text = [l for l in got if l.endswith(" _text")]
        compare(seed, int(text[0].split()[0], 16) - link_text(), got)
        passed.append(seed)
    print(f"{len(passed)}/{n} random seeds booted to init, passed the fgkaslr KUnit "
          f"suite and matched fgk map line for line")


def test_same_seed_same_layout_other_seed_other_order():
    require_fgkaslr_vmlinux()
    a = kallsyms(boot(KALLSYMS, profile="replay", seed="42" * 32, timeout=120).output)
    b = kallsyms(boot(KALLSYMS, profile="replay", seed="42" * 32, timeout=120).output)
    c = kallsyms(boot(KALLSYMS, profile="replay", seed="43" * 32, timeout=120).output)
    assert len(a) > 1000
    assert a == b
    assert a != c
    names = lambda ls: sorted(l.split()[2] for l in ls)
    assert names(a) == names(c)


@pytest.mark.k612
def test_nofgkaslr_is_link_order():
    require_fgkaslr_vmlinux()
    res = boot(KALLSYMS, profile="replay", seed="42" * 32,
               append="nofgkaslr", timeout=120)
    assert "seed=disabled" in res.output
    booted = {(l.split()[2], int(l.split()[0], 16)) for l in kallsyms(res.output)
              if l.split()[1] in "tT"}
    smap = set()
    for l in (KERNEL_DIR / "System.map").read_text().splitlines():
        a, t, n = l.split()
        if t in "tT":
            smap.add((n, int(a, 16)))
    names = {n for n, _ in booted} & {n for n, _ in smap}
    assert len(names) > 5000
    diff = sorted({x for x in booted ^ smap if x[0] in names})
    assert not diff, diff[:5]


PRIV = r"""
ls -l /proc/fgkaslr_seed
echo "cmdline=$(cat /proc/cmdline)"
su_as() { su -s /bin/sh -c "$1" fgk; }
su_as 'cat /proc/fgkaslr_seed' 2>&1 | sed 's/^/user-seed: /'
su_as 'cat /proc/cmdline' | sed 's/^/user-cmdline: /'
su_as 'cat /proc/kallsyms' > /tmp/user
cat /proc/kallsyms > /tmp/root
echo "user-lines=$(wc -l < /tmp/user)"
echo "user-nonzero=$(grep -vc '^0000000000000000 ' /tmp/user)"
cut -d' ' -f3- /tmp/user > /tmp/un
sort /tmp/un > /tmp/un.sorted
cmp -s /tmp/un /tmp/un.sorted && echo user-sorted=yes || echo user-sorted=no
cut -d' ' -f3- /tmp/root | sort > /tmp/rn
cmp -s /tmp/un.sorted /tmp/rn && echo same-names=yes || echo same-names=no
"""


@pytest.mark.k612
def test_privacy_of_seed_and_layout():
    require_fgkaslr_vmlinux()
    seed = "5e" * 32
    res = boot(PRIV, seed=seed, timeout=120)
    out = res.output
    assert re.search(r"^-r-------- .* root .*/proc/fgkaslr_seed", out, re.M), out
    assert re.search(r"user-seed: .*[Pp]ermission denied", out), out
    assert seed not in out.split("user-seed")[0].split("cmdline=")[1], \
        "/proc/cmdline shows the seed"
    assert "fgkaslr_seed=" + "*" * 64 in out
    assert int(re.search(r"user-lines=(\d+)", out).group(1)) > 1000
    assert "user-nonzero=0" in out
    assert "user-sorted=yes" in out, "users see the layout order"
    assert "same-names=yes" in out


def test_malformed_seed_rejected():
    require_fgkaslr_vmlinux()
    for bad in ("123", "zz" * 32, "42" * 32 + "0"):
        res = boot('echo "seed=$(cat /proc/fgkaslr_seed)"', append=f"fgkaslr_seed={bad}",
                   timeout=120)
        assert res.rc == 0
        assert re.search(r"malformed fgkaslr_seed=", res.log), res.log[-1500:]
        got = re.search(r"seed=([0-9a-f]{64})", res.output)
        assert got, "no random seed used after a malformed one"
        assert not got.group(1).startswith(bad[:8].lower()) or bad == "123"


MODULE = r"""
insmod /fgk_test.ko
for f in /sys/module/fgk_test/sections/.text*; do
    echo "sec $(basename $f) $(cat $f)"
done
echo "seed=$(cat /proc/fgkaslr_seed)"
"""


@pytest.mark.k612
def test_module_shuffled_as_specified():
    require_fgkaslr_vmlinux()
    ko = next((KERNEL_DIR / "modules").rglob("fgk_test.ko"), None)
    if ko is None:
        pytest.skip("fgk_test.ko not built (CONFIG_FG_KASLR_TEST_MODULE=m missing)")
    seed = "77" * 32
    res = boot(MODULE, seed=seed, files={"/fgk_test.ko": str(ko)}, timeout=120)
    assert "fgk_test: ok" in res.log, res.log[-2000:]
    got = {m.group(1): int(m.group(2), 16)
           for m in re.finditer(r"^sec (\.text\.\S+) 0x([0-9a-f]+)$", res.output, re.M)}
    # the module's randomized sections in section index order (spec section 3)
    hdr = subprocess.run(["readelf", "-SW", str(ko)], capture_output=True,
                         text=True, check=True).stdout
    secs = [m.group(1) for m in re.finditer(
        r"^\s*\[\s*\d+\]\s+(\.text\.\S+)\s+PROGBITS\s+\S+\s+\S+\s+(\S+)\s+\S+\s+AX",
        hdr, re.M) if int(m.group(2), 16) > 0]
    assert len(secs) >= 4 and set(secs) <= set(got), (secs, got)
    observed = sorted(range(len(secs)), key=lambda i: got[secs[i]])
    want = layout_ref.permutation(bytes.fromhex(seed), len(secs),
                                  layout_ref.module_nonce("fgk_test"))
    assert observed == want, (observed, want)


# The series of the kernel under test: kernel-series/ for 6.1,
# kernel-series/6.12/ for KVERSION=6.12 (scripts/build-kernel's layout).
SERIES_DIR = REPO / "kernel-series" / fgkbase.KVERSION if fgkbase.KVERSION else \
    REPO / "kernel-series"
SRCVER = fgkbase.KVERSION or "6.1"
TARBALL = Path(f"/usr/src/linux-source-{SRCVER}.tar.xz")


def series_patches():
    names = [l.split("#")[0].strip() for l in (SERIES_DIR / "series").read_text().splitlines()]
    names = [n for n in names if n]
    if not names:
        pytest.skip(f"{SERIES_DIR}/series is empty")
    return [SERIES_DIR / n for n in names]


def patched_tree():
    tree = (KERNEL_DIR / "build").resolve()
    if not (tree / "scripts" / "checkpatch.pl").is_file():
        pytest.skip(f"no kernel tree behind {KERNEL_DIR}/build (run make kernel"
                    f"{' KVERSION=' + fgkbase.KVERSION if fgkbase.KVERSION else ''})")
    return tree


@pytest.mark.k612
def test_series_applies_to_pristine_source_exactly(tmp_path):
    """Every patch applies, in order, to the files of Debian's pristine
    linux-source tarball with neither fuzz nor offset (what git am needs)."""
    patches = series_patches()
    if not TARBALL.is_file():
        pytest.skip(f"{TARBALL} missing (make deps: linux-source-{SRCVER})")
    files = set()
    for p in patches:
        for m in re.finditer(r"^(?:---|\+\+\+) [ab]/(\S+)", p.read_text(), re.M):
            files.add(m.group(1))
    top = f"linux-source-{SRCVER}"
    # files the series creates are not in the tarball: tar names them, rc 2
    subprocess.run(["tar", "-C", str(tmp_path), "-xf", str(TARBALL), "--strip-components=1",
                    *[f"{top}/{f}" for f in sorted(files)]], capture_output=True)
    assert (tmp_path / "Makefile").is_file() or any(tmp_path.iterdir()), "nothing extracted"
    for p in patches:
        r = subprocess.run(["patch", "-d", str(tmp_path), "-p1", "--forward", "--batch",
                            "--no-backup-if-mismatch", "-F0", "-i", str(p)],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{p.name} does not apply:\n{r.stdout[-1500:]}"
        assert not re.search(r"offset|fuzz", r.stdout, re.I), f"{p.name}: {r.stdout}"
    # the result is the tree make kernel built (where the two have the
    # file; Documentation/ and MAINTAINERS do not go into the kernel)
    tree = (KERNEL_DIR / "build").resolve()
    if tree.is_dir():
        built_from = [f for f in sorted(files)
                      if not f.startswith("Documentation/") and f != "MAINTAINERS"]
        differ = [f for f in built_from if (tmp_path / f).is_file() and
                  (tree / f).is_file() and (tmp_path / f).read_bytes() != (tree / f).read_bytes()]
        assert not differ, f"{tree} is not pristine + series in: {differ}"
    print(f"{len(patches)} patches, {len(files)} files, no fuzz, no offset")


@pytest.mark.k612
def test_series_checkpatch_has_no_errors(tmp_path):
    """scripts/checkpatch.pl --strict of the kernel the series is for finds
    no errors; the warnings and checks are printed (each one is explained
    in the cover letter)."""
    patches = series_patches()
    tree = patched_tree()
    errors = {}
    notes = []
    for p in patches:
        r = subprocess.run(["perl", str(tree / "scripts" / "checkpatch.pl"), "--no-tree",
                            "--quiet", "--strict", "--terse", str(p)],
                           capture_output=True, text=True, cwd=tmp_path)
        if re.search(r"^\S+: ERROR:", r.stdout, re.M) or r.returncode and "ERROR" in r.stdout:
            errors[p.name] = r.stdout[:1500]
        notes += re.findall(r"^\S+:\d+: (?:WARNING|CHECK): .*$", r.stdout, re.M)
    print(f"checkpatch --strict: {len(patches)} patches, errors in {len(errors)}, "
          f"{len(notes)} warnings/checks:")
    print("\n".join(notes))
    assert not errors, errors


@pytest.mark.k612
def test_series_signed_off_and_numbered():
    """Each patch: one author, a Signed-off-by from that author, subject
    [PATCH vN k/total] numbered in series order, a commit message."""
    patches = series_patches()
    for k, p in enumerate(patches, 1):
        text = p.read_text()
        head = text.split("\n---\n", 1)[0]
        author = re.search(r"^From: (.+)$", head, re.M)
        assert author, f"{p.name}: no From:"
        assert f"Signed-off-by: {author.group(1)}" in head, f"{p.name}: no sign-off by the author"
        m = re.search(r"^Subject: \[PATCH (?:v\d+ )?(\d+)/(\d+)\]", head, re.M)
        assert m and int(m.group(1)) == k and int(m.group(2)) == len(patches), \
            f"{p.name}: subject numbering {m and m.groups()} (position {k}/{len(patches)})"
        body = head.split("\n\n", 1)[1] if "\n\n" in head else ""
        assert len(body.split("Signed-off-by")[0].strip()) > 40, f"{p.name}: no commit message"


@pytest.mark.k612
def test_series_documents_its_boot_parameters_and_has_kunit():
    """Every boot parameter the series adds (__setup/early_param) is in the
    patched tree's Documentation/admin-guide/kernel-parameters.txt; the
    series adds Documentation/security/fgkaslr.rst and a KUnit suite, and
    the built configuration has both the suite and fgk_test.ko."""
    patches = series_patches()
    tree = patched_tree()
    text = "".join(p.read_text() for p in patches)
    params = set(re.findall(r'^\+\s*(?:__setup|early_param)\("([^"=]+)=?"', text, re.M))
    assert {"fgkaslr_seed", "nofgkaslr"} <= params, params
    doc = (tree / "Documentation" / "admin-guide" / "kernel-parameters.txt").read_text()
    for name in sorted(params):
        assert re.search(rf"^\t{re.escape(name)}\b", doc, re.M), \
            f"{name}= is not in Documentation/admin-guide/kernel-parameters.txt"
    assert (tree / "Documentation" / "security" / "fgkaslr.rst").is_file()
    assert "fgkaslr" in (tree / "Documentation" / "security" / "index.rst").read_text()
    assert "+++ b/kernel/fgkaslr_kunit.c" in text
    assert re.search(r'^\+\s*\.name = "fgkaslr",', text, re.M), "no KUnit suite named fgkaslr"
    config = (KERNEL_DIR / "config").read_text()
    for opt in ("CONFIG_FG_KASLR=y", "CONFIG_FG_KASLR_KUNIT_TEST=y",
                "CONFIG_FG_KASLR_TEST_MODULE=m"):
        assert opt in config.splitlines(), f"{KERNEL_DIR}/config lacks {opt}"
    assert next((KERNEL_DIR / "modules").rglob("fgk_test.ko"), None), "fgk_test.ko not installed"
    print(f"boot parameters documented: {sorted(params)}")


def _text_sections(path):
    """{name: size} of the executable PROGBITS sections of an ELF file."""
    out = subprocess.run(["readelf", "-SW", str(path)], capture_output=True, text=True,
                         check=True).stdout
    secs = {}
    for line in out.splitlines():
        f = re.sub(r"^\s*\[\s*\d+\]\s*", "", line).split()
        if len(f) >= 10 and f[1] == "PROGBITS" and "X" in f[6]:
            secs[f[0]] = secs.get(f[0], 0) + int(f[4], 16)
    return secs


@pytest.mark.k612
def test_cold_sections_are_shuffled():
    """Series patch 21 (6.12: 22): every cold section of vmlinux.o
    (.text.unlikely.<name>: __cold functions and the .cold parts gcc
    splits off) is an output section of its own in vmlinux and in the
    layout fgk computes for a seed; the plain .text.unlikely stays in the
    main .text. Counted from readelf of vmlinux.o, not from the tools."""
    from test_oracle import FGK
    require_fgkaslr_vmlinux()
    vmlinux_o = (KERNEL_DIR / "build").resolve() / "vmlinux.o"
    if not vmlinux_o.is_file():
        pytest.skip(f"{vmlinux_o} missing (the tree make kernel built)")
    cold = {n for n, size in _text_sections(vmlinux_o).items()
            if n.startswith(".text.unlikely.") and size}
    assert cold, "vmlinux.o has no .text.unlikely.<name> section"
    out = _text_sections(VMLINUX)
    assert not cold - set(out), f"cold sections folded away: {sorted(cold - set(out))[:5]}"
    seed = "42" * 32
    tsv = subprocess.run([str(FGK), "layout", str(VMLINUX), "--seed", seed],
                         capture_output=True, text=True, check=True).stdout
    rows = [l.split("\t") for l in tsv.splitlines()[1:]]
    shuffled = {r[1] for r in rows}
    assert not cold - shuffled, f"not shuffled: {sorted(cold - shuffled)[:5]}"
    assert ".text.unlikely" not in shuffled
    moved = sum(1 for r in rows if r[1] in cold and r[2] != r[3])
    print(f"{len(cold)} cold sections in vmlinux.o, all shuffled; {moved} moved for seed {seed[:8]}...")
    assert moved > len(cold) // 2


@pytest.mark.k612
def test_nothing_fixed_where_a_shuffled_section_starts():
    """docs/layout-spec.md section 3: bytes that belong to no section lie
    between the end of the main .text and the first randomized section,
    so no symbol outside the randomized sections (the labels that end
    .text: __indirect_thunk_end on 6.1, __fgkaslr_text_start) has the
    address where one starts. An address there would be both fixed (for
    the relocs tool, which keeps a reference by its symbol's section) and
    moved (for kallsyms and fgk, which map it by the section it lies in).
    From readelf of vmlinux only."""
    require_fgkaslr_vmlinux()
    out = subprocess.run(["readelf", "-SW", str(VMLINUX)], capture_output=True, text=True,
                         check=True).stdout
    text_end, shuffled = None, {}
    for line in out.splitlines():
        m = re.match(r"^\s*\[\s*(\d+)\]\s*(.*)", line)
        f = m.group(2).split() if m else []
        if len(f) < 10 or f[1] != "PROGBITS" or "X" not in f[6]:
            continue
        addr, size = int(f[2], 16), int(f[4], 16)
        if f[0] == ".text":
            text_end = addr + size
        elif f[0].startswith(".text.") and "A" in f[6] and size:
            shuffled[m.group(1)] = addr
    assert text_end and shuffled, "vmlinux has no .text or no .text.<name> sections"
    start = min(shuffled.values())
    assert text_end < start, (f"the first randomized section starts at {start:#x}, "
                              f"the main .text ends at {text_end:#x}: no gap")
    starts = set(shuffled.values())
    syms = subprocess.run(["readelf", "-sW", str(VMLINUX)], capture_output=True, text=True,
                          check=True).stdout
    checked, bad = 0, []
    for line in syms.splitlines():
        f = line.split()
        if len(f) != 8 or not f[0][:-1].isdigit() or f[6] in shuffled:
            continue
        checked += 1
        if int(f[1], 16) in starts:
            bad.append(f"{f[7]} {f[1]} (section {f[6]})")
    print(f"main .text ends at {text_end:#x}, randomized sections from {start:#x} "
          f"({start - text_end} bytes of gap); {checked} symbols outside them checked")
    assert checked > 1000
    assert not bad, f"{len(bad)} fixed symbols at a randomized section's start: {bad[:5]}"


def _fg_reserve_awk():
    """The awk program of the patched scripts/link-vmlinux.sh that writes
    the FG-KASLR linker script fragment (and its reserve)."""
    tree = (KERNEL_DIR / "build").resolve()
    script = tree / "scripts" / "link-vmlinux.sh"
    if not script.is_file():
        pytest.skip("no kernel tree in build/ (run make kernel)")
    m = re.search(r"^gen_fgkaslr_lds\(\)\n\{.*?\$\{AWK\} '(.*?)' > \$\{2\}", script.read_text(),
                  re.S | re.M)
    assert m, f"{script}: no gen_fgkaslr_lds() with an awk program"
    return m.group(1)


def _worst_placement(secs, amax):
    """Brute force: the most bytes any order of (size, align) sections can
    take from a start at any offset, aligned up to the first section's
    alignment as the linker places it (docs/layout_ref.py's placement)."""
    import itertools
    worst = 0
    for t in range(amax):
        start = -(-t // secs[0][1]) * secs[0][1]
        for order in itertools.permutations(range(len(secs))):
            end = layout_ref.place(secs, order, start, 1 << 62)
            last = order[-1]
            worst = max(worst, end[last] + secs[last][0] - t)
    return worst


def test_reserve_covers_every_order():
    """The reserve the linker script fragment leaves for the shuffle
    (series patch 19: a bound on the padding of any order, not
    sum(align - 1)) is never less than what the worst order of the
    sections needs after the fragment's gap (series patch 21/22: the
    first section cannot start where the main .text ends): the fragment's
    own awk program, run on random small sets of sections with mixed
    alignments, against every order."""
    import random
    prog = _fg_reserve_awk()
    rng = random.Random(20261204)
    checked = tight = 0
    for case in range(60):
        n = rng.randint(1, 5)
        secs = [(rng.randint(1, 200), rng.choice((1, 2, 4, 8, 16, 16, 16, 32, 64)))
                for _ in range(n)]
        lines = [f"  [{i + 1:2}] .text.f{i} PROGBITS 0000000000000000 000040 {s:06x} 00  AX  0   0 {a}"
                 for i, (s, a) in enumerate(secs)]
        r = subprocess.run(["awk", prog], input="\n".join(lines) + "\n",
                           capture_output=True, text=True, check=True)
        m = re.search(r"\. = MAX\(\., __fgkaslr_text_start \+ (\d+)\);", r.stdout)
        assert m, r.stdout
        reserve = int(m.group(1))
        # the gap comes first, before any section statement
        gap = re.match(r"(?:\s*/\*.*?\*/)?\s*\. = \. \+ (\d+);", r.stdout)
        assert gap and int(gap.group(1)) > 0, f"no gap before the first section: {r.stdout}"
        # from __fgkaslr_text_start at any offset: the gap, then (at any
        # offset again) the worst order
        need = int(gap.group(1)) + _worst_placement(secs, max(a for _, a in secs))
        assert need <= reserve, f"sections {secs}: an order needs {need} bytes, reserve {reserve}"
        checked += 1
        tight += reserve - need <= 2 * max(a for _, a in secs)
    print(f"{checked} section sets, every order fits; reserve within 2*max align of the worst "
          f"in {tight}")


def test_vmlinux_reserve_fits_the_bound():
    """In the built vmlinux, the region's end (__fgkaslr_text_end, where the
    entry text after the region starts; _etext before series patch 22
    (6.12: 23)) leaves the room the bound promises (what
    arch/x86/tools/relocs checks at build time, computed here again from
    the linked sections), so no seed can get 'layout does not fit'."""
    require_fgkaslr_vmlinux()
    out = subprocess.run(["readelf", "-SW", str(VMLINUX)], capture_output=True, text=True,
                         check=True).stdout
    secs = []
    for line in out.splitlines():
        f = re.sub(r"^\s*\[\s*\d+\]\s*", "", line).split()
        if (len(f) >= 10 and f[0].startswith(".text.") and f[1] == "PROGBITS" and "A" in f[6]
                and "X" in f[6] and int(f[4], 16)):
            secs.append((int(f[2], 16), int(f[4], 16), max(int(f[9]), 1)))
    nm = subprocess.run(["nm", str(VMLINUX)], capture_output=True, text=True, check=True).stdout
    limit, etext = oracle.region_end({m.group(2): int(m.group(1), 16) for m in
                                      re.finditer(r"^([0-9a-f]+) \S (\S+)$", nm, re.M)})
    count = {}
    need = 0
    for _, size, align in secs:
        count[align] = count.get(align, 0) + 1
        need += size + (-size) % align
    amax = max(count)
    need += amax - 1
    below = 0
    for a in sorted(count):
        need += (a - 1) * min(count[a], below)
        below += count[a]
    start = min(a for a, _, _ in secs)
    print(f"{len(secs)} sections from {start:#x}: bound {need} bytes, {limit} leaves "
          f"{etext - start} ({etext - start - need} spare)")
    assert start + need <= etext


@pytest.mark.k612
def test_sched_reserve_covers_every_order():
    """The range domains' fragment (gen_fgkaslr_domains_lds() of the
    patched scripts/link-vmlinux.sh, 6.12 series patch 31; before it
    gen_fgkaslr_sched_lds(), patch 28, the sched domain alone): per domain
    one byte of gap after its start symbol, then a reserve no order of its
    <name>.<object> sections exceeds (checked against every order of
    random small sets), its limit symbol; an empty domain has both symbols
    at one place; __fgkaslr_layout_version (3, or 2 for the sched domain
    alone) follows; a plain .sched.text (or .spinlock.text, ...) left in
    vmlinux.o fails it."""
    import os
    import random
    tree = (KERNEL_DIR / "build").resolve()
    script = tree / "scripts" / "link-vmlinux.sh"
    if not script.is_file():
        pytest.skip("no kernel tree in build/ (run make kernel)")
    text = script.read_text()
    m = re.search(r"^gen_fgkaslr_domains_lds\(\)\n\{.*?\$\{AWK\} '(.*?)' > \$\{2\}",
                  text, re.S | re.M)
    if m:
        doms = re.search(r'^fgkaslr_domains="(.*?)"', text, re.S | re.M).group(1)
        domains = [l.split() for l in doms.splitlines() if l.strip()]
        version = 3
    else:
        m = re.search(r"^gen_fgkaslr_sched_lds\(\)\n\{.*?\$\{AWK\} '(.*?)' > \$\{2\}",
                      text, re.S | re.M)
        if not m:
            msg = f"{script}: no gen_fgkaslr_sched_lds() (a series without the sched domain)"
            print(msg)
            pytest.skip(msg)
        doms = ""
        domains = [[".sched.text", "__sched_text_start", "__sched_text_end", "-"]]
        version = 2
    prog = m.group(1)
    env = dict(os.environ, DOMAINS=doms)
    rng = random.Random(20261206)
    for case in range(40):
        lines, want = [], {}
        idx = 1
        for name, start, limit, _ in domains:
            n = rng.randint(0, 5) if version == 3 else rng.randint(1, 5)
            secs = [(rng.randint(1, 300), rng.choice((1, 4, 16, 16, 16, 32, 64)))
                    for _ in range(n)]
            want[name] = secs
            for i, (sz, a) in enumerate(secs):
                lines.append(f"  [{idx:2}] {name}.o{i}.o PROGBITS 0000000000000000 000040 "
                             f"{sz:06x} 00  AX  0   0 {a}")
                idx += 1
        r = subprocess.run(["awk", prog], input="\n".join(lines) + "\n",
                           capture_output=True, text=True, check=True, env=env)
        assert f"__fgkaslr_layout_version = ABSOLUTE({version});" in r.stdout
        pos = 0
        for name, start, limit, _ in domains:
            secs = want[name]
            at = r.stdout.index(f"\t{start} = .;", pos)
            end = r.stdout.index(f"\t{limit} = .;", at)
            body = r.stdout[at:end]
            pos = end
            got = re.findall(r"^\t" + re.escape(name) + r"\.o\d+\.o : ", body, re.M)
            assert len(got) == len(secs), (name, body)
            if not secs:
                assert "+ 1;" not in body and "MAX" not in body, (name, body)
                continue
            reserve = int(re.search(r"\. = MAX\(\., " + re.escape(start) + r" \+ (\d+)\);",
                                    body).group(1))
            gap = re.search(re.escape(start) + r" = \.;\s*(?:/\*.*?\*/)?\s*\. = \. \+ (\d+);",
                            body)
            assert gap and int(gap.group(1)) > 0, body
            need = int(gap.group(1)) + _worst_placement(secs, max(a for _, a in secs))
            assert need <= reserve, f"{name} {secs}: an order needs {need} bytes, reserve {reserve}"
    for name, *_ in domains:
        plain = f"  [ 1] {name} PROGBITS 0000000000000000 000040 000010 00  AX  0   0 16\n"
        r = subprocess.run(["awk", prog], input=plain, capture_output=True, text=True, env=env)
        assert r.returncode != 0 and f"plain {name}" in r.stderr, (r.returncode, r.stderr)


# --- the .sched.text domain (series patches 26-27; 6.12: 27-28) -------------

SCHED = r"""
echo "seed=$(cat /proc/fgkaslr_seed)"
cat /proc/fgkaslr_stats
sleep 100 &
pid=$!
sleep 1
echo "wchan=$(cat /proc/$pid/wchan)"
echo kallsyms-begin
cat /proc/kallsyms
echo kallsyms-end
"""


def _sched_domain_or_skip():
    """System.map's view of the sched domain: (link address of _text,
    {name: link address} of the symbols in [__sched_text_start,
    __sched_text_end) whose name occurs once in System.map, the bounds
    themselves left out), or skip on a kernel without the domain
    (no __fgkaslr_layout_version >= 2 in vmlinux)."""
    require_fgkaslr_vmlinux()
    nm = subprocess.run(["nm", str(VMLINUX)], capture_output=True, text=True,
                        check=True).stdout
    ver = re.search(r"^([0-9a-f]+) A __fgkaslr_layout_version$", nm, re.M)
    if not ver or int(ver.group(1), 16) < 2:
        msg = f"{VMLINUX} has no .sched.text shuffle domain (__fgkaslr_layout_version < 2)"
        print(msg)
        pytest.skip(msg)
    rows = [l.split() for l in (KERNEL_DIR / "System.map").read_text().splitlines()]
    addr = {}
    count = {}
    for a, t, n in rows:
        count[n] = count.get(n, 0) + 1
        addr.setdefault(n, int(a, 16))
    lo, hi = addr["__sched_text_start"], addr["__sched_text_end"]
    inside = {n: int(a, 16) for a, t, n in rows
              if lo <= int(a, 16) < hi and t in "tT" and count[n] == 1
              and n not in ("__sched_text_start", "__sched_text_end")}
    assert len(inside) > 50, f"only {len(inside)} symbols in the sched domain"
    anywhere = {n for a, t, n in rows if lo <= int(a, 16) < hi}
    return addr["_text"], inside, anywhere


def _domain_sections(prefix):
    """[(address, name)] of vmlinux's sections whose name starts with prefix
    (a shuffle domain's, e.g. .sched.text.<object>), in section index order,
    and {symbol name: section position} for the symbols defined in them
    (names that occur once)."""
    hdr = subprocess.run(["readelf", "-SW", str(VMLINUX)], capture_output=True, text=True,
                         check=True).stdout
    secs, pos = [], {}
    for m in re.finditer(r"^\s*\[\s*(\d+)\]\s+(" + re.escape(prefix) + r"\S+)\s+PROGBITS\s+"
                         r"([0-9a-f]+)\s+\S+\s+([0-9a-f]+)", hdr, re.M):
        if int(m.group(4), 16):
            pos[m.group(1)] = len(secs)
            secs.append((int(m.group(3), 16), m.group(2)))
    syms = subprocess.run(["readelf", "-sW", str(VMLINUX)], capture_output=True, text=True,
                          check=True).stdout
    where, seen = {}, {}
    for line in syms.splitlines():
        f = line.split()
        if len(f) == 8 and f[0][:-1].isdigit():
            seen[f[7]] = seen.get(f[7], 0) + 1
            if f[6] in pos:
                where[f[7]] = pos[f[6]]
    return secs, {n: k for n, k in where.items() if seen[n] == 1}


def _boot_sched(seed):
    res = boot(SCHED, seed=seed, timeout=180)
    assert res.rc == 0, f"seed {seed}: rc {res.rc} {res.message}"
    assert f"seed={seed}" in res.output
    stats = dict(re.findall(r"^(\w+): (.*)$", res.output, re.M))
    syms = {}
    for l in kallsyms(res.output):
        a, t, n = l.split()[:3]
        syms.setdefault(n, []).append((int(a, 16), t))
    return res, stats, syms


@pytest.mark.k612
def test_sched_domain_shuffled_within_its_bounds():
    """Series patches 26-27 (6.12: 27-28): each object's __sched code is a section
    .sched.text.<object>, shuffled within [__sched_text_start,
    __sched_text_end). On two random seeds: every symbol System.map places
    in that range has its /proc/kallsyms address inside the booted bounds,
    no other text symbol does, the sched code moved (displacements other
    than the base offset, and two seeds give two orders), the decompressor
    kept the tables' section-run fast path (flag 0x80 clear), and the
    wchan of a sleeping `sleep` is not a sched function (__get_wchan()
    skips in_sched_functions() frames: they must all be in the bounds)."""
    link_text, inside, anywhere = _sched_domain_or_skip()
    secs, sec_of = _domain_sections(".sched.text.")
    orders = []
    for seed in (secrets.token_hex(32), secrets.token_hex(32)):
        res, stats, syms = _boot_sched(seed)
        flags = int(stats["flags"], 16)
        assert flags & 0x01 and not flags & 0x80, (seed, hex(flags))
        assert int(stats["sched_sections"]) >= 2, stats
        off = syms["_text"][0][0] - link_text
        lo = syms["__sched_text_start"][0][0]
        hi = syms["__sched_text_end"][0][0]
        out = [n for n in inside if not all(lo <= a < hi for a, _ in syms.get(n, []))]
        missing = [n for n in inside if n not in syms]
        assert not missing, f"seed {seed}: not in /proc/kallsyms: {missing[:5]}"
        assert not out, f"seed {seed}: outside [{lo:#x}, {hi:#x}): {out[:5]}"
        intruders = sorted(n for n, v in syms.items() for a, t in v
                           if lo <= a < hi and t in "tT" and n not in anywhere)
        assert not intruders, f"seed {seed}: other symbols in the sched bounds: {intruders[:5]}"
        moved = sum(1 for n, a in inside.items() if syms[n][0][0] - off != a)
        assert moved > 0, f"seed {seed}: no sched symbol moved"
        orders.append(tuple(sorted(inside, key=lambda n: syms[n][0][0])))
        # the order of the sections: docs/layout_ref.py with the domain's nonce
        new = {}
        for n, k in sec_of.items():
            if n in inside and n in syms:
                new[k] = syms[n][0][0] - off - (inside[n] - secs[k][0])
        assert len(new) == len(secs), f"seed {seed}: a sched section without a symbol"
        observed = sorted(range(len(secs)), key=lambda k: new[k])
        want = layout_ref.permutation(bytes.fromhex(seed), len(secs), b"fgkaslr-schd")
        assert observed == want, (seed, observed, want)
        wchan = re.search(r"^wchan=(\S*)$", res.output, re.M)
        assert wchan and wchan.group(1) not in ("", "0"), res.output[-1500:]
        assert wchan.group(1) not in inside, f"seed {seed}: wchan {wchan.group(1)} is __sched code"
        print(f"seed {seed[:8]}...: {stats['sched_sections']} sched sections, "
              f"{len(inside)} symbols in [{lo:#x}, {hi:#x}), {moved} moved by other than "
              f"the base offset, wchan of sleep: {wchan.group(1)}, flags {hex(flags)}")
    assert orders[0] != orders[1], "two random seeds gave the same sched order"


# --- the range domains (6.12 series patches 30-31) ---------------------------

# section prefix, start symbol, limit symbol, nonce, a function there
RANGE_DOMAINS = [
    (".sched.text.", "__sched_text_start", "__sched_text_end", b"fgkaslr-schd", "schedule"),
    (".spinlock.text.", "__lock_text_start", "__lock_text_end", b"fgkaslr-lock",
     "_raw_spin_lock"),
    (".static_call.text.", "__static_call_text_start", "__static_call_text_end",
     b"fgkaslr-scal", None),
    (".noinstr.text.", "__noinstr_text_start", "__fgkaslr_noinstr_end", b"fgkaslr-noin",
     "irqentry_enter"),
    (".cpuidle.text.", "__cpuidle_text_start", "__cpuidle_text_end", b"fgkaslr-idle",
     "default_idle"),
]


# Assembly functions of one object each (6.12 series patch 42): every one
# has a section .text.<name> of its own in vmlinux
ASM_FUNCTION_OBJECTS = {
    "getuser.o": ["__get_user_1", "__get_user_2", "__get_user_4", "__get_user_8",
                  "__get_user_nocheck_1", "__get_user_nocheck_8"],
    "putuser.o": ["__put_user_1", "__put_user_2", "__put_user_4", "__put_user_8"],
    "clear_page_64.o": ["clear_page_rep", "clear_page_orig", "clear_page_erms",
                        "rep_stos_alternative"],
    "ftrace_64.o": ["__fentry__", "ftrace_caller", "ftrace_regs_caller", "ftrace_stub"],
    "hweight.o": ["__sw_hweight32", "__sw_hweight64"],
}
# what stays in the sections its object puts it in (scripts/Makefile.lib
# fgkaslr-asm-keep): the fixed main .text, .noinstr.text.<object>, the thunks
# (memset_64.o is kept on 6.12, where it is noinstr, and split on 6.1)
ASM_FUNCTIONS_KEPT = {
    "restore_registers": ".text",
    "memcpy": ".noinstr.text.arch/x86/lib/memcpy_64.o",
    "srso_untrain_ret": ".text",
}


def _symbol_sections(path):
    """{name: [section name, ...]} of the FUNC symbols of an ELF file."""
    out = subprocess.run(["readelf", "-sSW", str(path)], capture_output=True, text=True,
                         check=True).stdout
    secnames = {}
    for m in re.finditer(r"^\s*\[\s*(\d+)\]\s+(\S+)", out, re.M):
        secnames[m.group(1)] = m.group(2)
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 8 and f[3] == "FUNC" and f[6].isdigit():
            syms.setdefault(f[7], []).append(secnames.get(f[6], f[6]))
    return syms


@pytest.mark.k612
def test_asm_functions_have_sections_of_their_own():
    """6.12 series patch 42: each assembly function in .text has an output
    section .text.<name> of its own in vmlinux (shuffled one by one, not
    with its object's .text.<object>); the functions of the objects kept
    as they are stay in the sections they were in."""
    require_fgkaslr_vmlinux()
    syms = _symbol_sections(VMLINUX)
    if syms.get("__get_user_1") != [".text.__get_user_1"]:
        msg = f"{VMLINUX}: __get_user_1 in {syms.get('__get_user_1')} (no asm sections)"
        print(msg)
        pytest.skip(msg)
    n = 0
    for obj, names in ASM_FUNCTION_OBJECTS.items():
        for name in names:
            if name not in syms:
                continue
            assert syms[name] == [f".text.{name}"], (obj, name, syms[name])
            n += 1
    for name, sec in ASM_FUNCTIONS_KEPT.items():
        if name in syms:
            assert syms[name] == [sec], (name, syms[name])
    asm = sorted(n for n, v in syms.items() if v == [f".text.{n}"])
    print(f"{n} listed assembly functions in sections of their own; "
          f"{len(asm)} functions in a .text.<own name> section in all")
    assert n >= 16


@pytest.mark.k612
def test_range_domains_shuffled_within_their_bounds():
    """6.12 series patch 31: the lock, static call, noinstr and cpuidle code
    (and the sched code, as before) are shuffle domains of their own, one
    section per object, each within its bounds. On two random seeds, per
    domain: every function System.map places in the bounds has its
    /proc/kallsyms address inside the booted bounds, no other text symbol
    lies there, the sections' order is docs/layout_ref.py's permutation
    with the domain's nonce, and /proc/fgkaslr_stats counts the sections;
    the cpuidle bounds lie within the noinstr ones."""
    require_fgkaslr_vmlinux()
    nm = subprocess.run(["nm", str(VMLINUX)], capture_output=True, text=True,
                        check=True).stdout
    ver = re.search(r"^([0-9a-f]+) A __fgkaslr_layout_version$", nm, re.M)
    if not ver or int(ver.group(1), 16) < 3:
        msg = f"{VMLINUX} has no range domains (__fgkaslr_layout_version < 3)"
        print(msg)
        pytest.skip(msg)
    rows = [l.split() for l in (KERNEL_DIR / "System.map").read_text().splitlines()]
    addr, count = {}, {}
    for a, t, n in rows:
        count[n] = count.get(n, 0) + 1
        addr.setdefault(n, int(a, 16))
    link_text = addr["_text"]
    doms = []
    for prefix, start, limit, nonce, fn in RANGE_DOMAINS:
        lo, hi = addr[start], addr[limit]
        bounds = {start, limit, "__noinstr_text_end", "__fgkaslr_noinstr_end",
                  "__cpuidle_text_start"}
        inside = {n: int(a, 16) for a, t, n in rows
                  if lo < int(a, 16) < hi and t in "tT" and count[n] == 1 and n not in bounds}
        anywhere = {n for a, t, n in rows if lo <= int(a, 16) < hi}
        secs, sec_of = _domain_sections(prefix)
        # an empty domain has both bounds at one place (CONFIG_SMP=n: UP
        # spinlocks are inline, no .spinlock.text: make kernel
        # KVARIANT=up-fred); the boots below still check where they land
        assert secs or lo == hi, f"no {prefix}* sections in {VMLINUX}"
        assert all(lo < a < hi for a, _ in secs), prefix
        if fn and secs:
            assert fn in inside, f"{fn} not in [{start}, {limit})"
        doms.append((prefix, start, limit, nonce, inside, anywhere, secs, sec_of))
    if addr["__cpuidle_text_start"] >= addr["__noinstr_text_start"] and \
            addr["__cpuidle_text_start"] < addr["__noinstr_text_end"]:
        # 6.12: the idle code lies within the noinstr bounds, after the
        # noinstr domain
        assert addr["__fgkaslr_noinstr_end"] == addr["__cpuidle_text_start"]
        assert addr["__cpuidle_text_end"] == addr["__noinstr_text_end"]
    else:
        # 6.1: a region of its own
        assert addr["__fgkaslr_noinstr_end"] == addr["__noinstr_text_end"]
    for seed in (secrets.token_hex(32), secrets.token_hex(32)):
        res, stats, syms = _boot_sched(seed)
        flags = int(stats["flags"], 16)
        assert flags & 0x01 and not flags & 0x80, (seed, hex(flags))
        off = syms["_text"][0][0] - link_text
        for prefix, start, limit, nonce, inside, anywhere, secs, sec_of in doms:
            lo = syms[start][0][0]
            hi = syms[limit][0][0]
            assert lo - off == addr[start] and hi - off == addr[limit], prefix
            out = [n for n in inside if not all(lo <= a < hi for a, _ in syms.get(n, []))]
            assert not out, f"seed {seed}: {prefix}: outside [{lo:#x}, {hi:#x}): {out[:5]}"
            intruders = sorted(n for n, v in syms.items() for a, t in v
                               if lo <= a < hi and t in "tT" and n not in anywhere)
            assert not intruders, f"seed {seed}: {prefix}: others in the bounds: {intruders[:5]}"
            new = {}
            for n, k in sec_of.items():
                if n in inside and n in syms:
                    new[k] = syms[n][0][0] - off - (inside[n] - secs[k][0])
            assert len(new) == len(secs), f"seed {seed}: a {prefix} section without a symbol"
            observed = sorted(range(len(secs)), key=lambda k: new[k])
            want = layout_ref.permutation(bytes.fromhex(seed), len(secs), nonce) \
                if secs else []
            assert observed == want, (seed, prefix, observed, want)
            name = {".sched.text.": "sched", ".spinlock.text.": "lock",
                    ".static_call.text.": "static_call", ".noinstr.text.": "noinstr",
                    ".cpuidle.text.": "cpuidle"}[prefix]
            assert int(stats[f"{name}_sections"]) == len(secs), (prefix, stats)
            moved = sum(1 for n, a in inside.items() if syms[n][0][0] - off != a)
            print(f"seed {seed[:8]}...: {prefix}* {len(secs)} sections, {len(inside)} "
                  f"functions in [{lo:#x}, {hi:#x}), {moved} moved by other than the base, "
                  f"order {observed[:8]}")


def fgkaslr_table(relocs):
    """The FG-KASLR table of a vmlinux.relocs, as the boot code finds it
    (fgk_table()): below the third zero word from the end, its length,
    and below that the table (magic, sections, flags, ...)."""
    data = relocs.read_bytes()
    words = [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data) - 3, 4)]
    k, zeros = len(words), 0
    while zeros < 3:
        k -= 1
        assert k > 0, f"{relocs}: fewer than 3 zero words"
        zeros += words[k] == 0
    n = words[k - 1]
    table = data[4 * (k - 1) - n:4 * (k - 1)]
    magic, nsec, flags = (int.from_bytes(table[i:i + 4], "little") for i in (0, 4, 8))
    assert magic == 0x324b4746, f"{relocs}: magic {magic:#x}"  # "FGK2"
    return nsec, flags


@pytest.mark.k612
def test_orc_run_lengths_only_for_cheap_decompressors():
    """relocs --fg-orc-runs (6.12 patch 41, 6.1 patch 40): ORC's run
    lengths go into the FG-KASLR table only where the kernel's compression
    decodes a byte cheaply (ZSTD, LZ4, LZO; every boot decompresses them),
    with the flag FGKASLR_ORC_RUNS (6.12 0x100, 6.1 0x80). CI builds both
    ways: the 6.12 default is ZSTD (the table path), 6.1 XZ (the boot code
    searches the runs); the KUnit and kallsyms tests boot each."""
    tree = patched_tree()
    relocs = tree / "arch" / "x86" / "boot" / "compressed" / "vmlinux.relocs"
    if not relocs.is_file():
        pytest.skip(f"no {relocs}")
    config = set((KERNEL_DIR / "config").read_text().splitlines())
    if "CONFIG_UNWINDER_ORC=y" not in config:
        pytest.skip("no ORC unwinder in this configuration")
    nsec, flags = fgkaslr_table(relocs)
    orc_runs = 0x100 if fgkbase.KVERSION == "6.12" else 0x80
    cheap = any(f"CONFIG_KERNEL_{c}=y" in config for c in ("ZSTD", "LZ4", "LZO"))
    print(f"{nsec} sections, flags {flags:#x}, compression cheap per byte: {cheap}")
    assert bool(flags & orc_runs) == cheap, (hex(flags), cheap)
    if fgkbase.KVARIANT:
        return
    # the default configurations: one path each
    if fgkbase.KVERSION == "6.12":
        assert cheap, "the 6.12 default configuration is ZSTD (qemu-profiles/kernel-6.12.config)"
    else:
        assert not cheap, "the 6.1 default configuration is XZ: the search path"
