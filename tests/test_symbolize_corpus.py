"""fgk symbolize on real traces of the booted shuffled kernel (issue 27).

One guest per session (random seed, base KASLR) loads fgk_test.ko and the
out-of-tree fgk_oot.ko (tests/guest/oot), prints their section capture and
some kallsyms addresses, then makes the kernel print each kind of report a
support engineer meets: a hung task and a soft lockup (the detectors'
thresholds lowered for the run), a BUG() in a kthread, two WARNs and an
oops inside a module, and a panic through sysrq; with them `Code:` lines
and entry-code frames (entry_SYSCALL_64_after_hwframe).  Every decoded
frame is checked against addr2line: `addr2line -i` on vmlinux at the link
address nm gives the function, `addr2line -j` on the function's own
section of the .ko; a frame at the very end of its function (func+SIZE,
SIZE its ELF size: a return address after a noreturn call) at that
address - 1 only.  The expected values come from the guest, nm and
addr2line, never from fgk.
"""
import json
import re
import secrets
import shutil
import subprocess

import pytest

from conftest import REPO, boot
from test_modules import (FGK, MODULES, VMLINUX, addr2line_one, elf_sections,
                          fgk_chain, module_ko, same_chain)
from test_modules_guest import build_out_of_tree
from test_oracle import require_fgkaslr_vmlinux
from debuginfod_server import client_env, debuginfod_factory, kernel_debuginfod  # noqa: F401
from oracle import readelf_build_id

# Each report waits for the one before to end, so that no two interleave:
# the hung-task check (every second, 2 s timeout) names the sleeper at
# about 3 s of its 5; the soft lockup (2 * watchdog_thresh = 2 s) is
# reported during the 4 s spin.  The thresholds go back to the kernel's
# defaults before the rest, so that nothing later (a console flush under a
# loaded TCG host) can look like a lockup.
SCRIPT = r"""
insmod /fgk_test.ko
insmod /fgk/fgk_oot.ko
grep -r . /sys/module/fgk_test/sections /sys/module/fgk_oot/sections | sed 's/^/cap /'
for f in vfs_read version_proc_show; do
    grep " [tT] $f\$" /proc/kallsyms | head -n 1 | sed 's/^/probe /'
done
grep '\[fgk_test\]' /proc/kallsyms | sed 's/^/ksym /'
echo 1 > /proc/sys/kernel/hung_task_check_interval_secs
echo 2 > /proc/sys/kernel/hung_task_timeout_secs
echo 5 > /sys/module/fgk_oot/parameters/hang
sleep 6
echo 1 > /proc/sys/kernel/watchdog_thresh
echo 4 > /sys/module/fgk_oot/parameters/lockup
sleep 5
echo 10 > /proc/sys/kernel/watchdog_thresh
echo 120 > /proc/sys/kernel/hung_task_timeout_secs
echo 1 > /sys/module/fgk_oot/parameters/bug
sleep 1
echo 1 > /sys/module/fgk_test/parameters/warn
echo 1 > /sys/module/fgk_test/parameters/warn
sh -c 'echo 1 > /sys/module/fgk_test/parameters/oops'
echo c > /proc/sysrq-trigger
"""
FRAME = re.compile(r"(?<![\w.])([A-Za-z_][\w.]*)\+0x([0-9a-f]+)/0x([0-9a-f]+)"
                   r"( \[(\w+)\])?( \(([^()]*)\))?")


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    require_fgkaslr_vmlinux()
    ko = module_ko()
    d = tmp_path_factory.mktemp("corpus")
    oot_dir, oot = build_out_of_tree(d)
    seed = secrets.token_hex(32)
    res = boot(SCRIPT, seed=seed, files={"/fgk_test.ko": str(ko), "/fgk/fgk_oot.ko": str(oot)},
               timeout=300)
    assert res.panicked, f"the guest did not crash: rc {res.rc}\n{res.log[-2000:]}"
    log = d / "console.log"
    log.write_text(res.log)
    cap = d / "sections"
    cap.write_text("".join(l + "\n" for l in
                           re.findall(r"^cap (\S+:0x[0-9a-f]+)$", res.output, re.M)))
    probes = {m.group(2): int(m.group(1), 16) for m in
              re.finditer(r"^probe ([0-9a-f]{16}) [tT] (\S+)$", res.output, re.M)}
    ksyms = {m.group(2): int(m.group(1), 16) for m in
             re.finditer(r"^ksym ([0-9a-f]{16}) [tT] (\w+)\s+\[fgk_test\]$",
                         res.output, re.M)}
    assert set(probes) == {"vfs_read", "version_proc_show"}, res.output[-2000:]
    assert ksyms, res.output[-2000:]
    return dict(seed=seed, log=log, text=res.log, cap=cap, probes=probes,
                ksyms=ksyms, ko=ko, kos={"fgk_test": ko, "fgk_oot": oot}, oot_dir=oot_dir,
                dir=d)


def symbolize(c, *args, input=None):
    return subprocess.run([str(FGK), "symbolize", str(VMLINUX), "--seed", c["seed"],
                           "--modules", str(MODULES), "--modules", str(c["oot_dir"]),
                           "--module-sections", str(c["cap"]),
                           *map(str, args)], capture_output=True, text=True, input=input)


_nm = {}


def nm_symbols():
    """name -> [(link address, ELF size)] of vmlinux's text symbols (nm -S)."""
    if not _nm:
        out = subprocess.run(["nm", "-S", str(VMLINUX)], capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 4 and f[2] in "tT":
                _nm.setdefault(f[3], []).append((int(f[0], 16), int(f[1], 16)))
            elif len(f) == 3 and f[1] in "tT":
                _nm.setdefault(f[2], []).append((int(f[0], 16), 0))
    return _nm


def addr2line_vmlinux(link, tool="addr2line"):
    r = subprocess.run([tool, "-i", "-e", str(VMLINUX), "0x%x" % link],
                       capture_output=True, text=True, check=True)
    return [tuple(re.sub(r" \(discriminator \d+\)", "", l).rsplit(":", 1))
            for l in r.stdout.splitlines()]


# LLVM's addr2line, the second oracle (package llvm-14, make deps)
LLVM_ADDR2LINE = shutil.which("llvm-addr2line-14") or shutil.which("llvm-addr2line")


def truth_addresses(link, off, size):
    """The addresses whose line a frame off bytes into a function of ELF
    size size (0: unknown) may have, link its link address.  At the end
    (off == size: a return address right after a noreturn call, as %pB
    prints it) only the call's, link - 1: link is whatever followed the
    function at link time.  Past the end none.  Inside, link's, or link -
    1's where link has no line."""
    if size and off >= size:
        return [link - 1] if off == size else []
    return [link, link - 1] if link else [link]


def vmlinux_truth(name, off):
    """addr2line -i at nm's address of name + off (see truth_addresses),
    by binutils and by LLVM (both independent of fgk's libdw); None when
    ambiguous.  binutils 2.40 names the wrong file for some rows of headers
    included into a CU (DWARF 5): on 6.1, trace_raw_output_guest_halt_poll_ns's
    first byte is kernel/trace/power-traces.c:526 by addr2line, a file of 21
    lines, and include/trace/events/power.h:526 by llvm-addr2line and
    llvm-dwarfdump, where its TRACE_EVENT is.  A frame matches if it
    matches either."""
    syms = nm_symbols().get(name, [])
    if len(syms) != 1:
        return None
    (addr, size), = syms
    truth = []
    for a in truth_addresses(addr + off, off, size):
        truth.append(addr2line_vmlinux(a))
        if LLVM_ADDR2LINE:
            truth.append(addr2line_vmlinux(a, LLVM_ADDR2LINE))
    return truth


def module_truth(ko, name, off):
    _, funcs, _ = elf_sections(ko)
    f = [x for x in funcs if x[0] == name]
    if len(f) != 1:
        return None
    _, sec, value, size = f[0]
    return [addr2line_one(ko, sec, a) for a in truth_addresses(value + off, off, size)]


def check_frames(c, out):
    """Every annotated frame of out against addr2line; returns how many."""
    n = 0
    for m in FRAME.finditer(out):
        name, off, mod, chain = m.group(1), int(m.group(2), 16), m.group(5), m.group(7)
        if chain is None:
            continue
        truth = (module_truth(c["kos"][mod], name, off) if mod
                 else vmlinux_truth(name, off))
        if truth is None:
            continue
        assert any(same_chain(fgk_chain(chain), t) for t in truth), \
            (m.group(0), truth)
        n += 1
    return n


@pytest.mark.k612
def test_corpus_frames_against_addr2line(corpus):
    """The hung task, the soft lockup, the BUG, the WARNs, the module oops
    and the panic: each decoded frame is addr2line's; the log holds each
    kind of report the issue lists."""
    text = corpus["text"]
    kinds = {k for k, _, _ in reports(text)}
    assert kinds == {"hung", "lockup", "bug", "warn", "oops", "panic"}, kinds
    assert re.search(r"^.*Code: .*<[0-9a-f]{2}>", text, re.M), "no Code: line"
    r = symbolize(corpus, corpus["log"])
    assert r.returncode == 0, r.stderr
    n = check_frames(corpus, r.stdout)
    mods = {m: len(re.findall(r"\[%s\] \(" % m, r.stdout)) for m in corpus["kos"]}
    print(f"frames checked against addr2line: {n}, module frames decoded: {mods}")
    assert n >= 20 and mods["fgk_test"] >= 2 and mods["fgk_oot"] >= 4


@pytest.mark.k612
def test_entry_frame(corpus):
    """Issue 27 (2): entry_SYSCALL_64_after_hwframe (an asm label without an
    ELF size) decodes, alone too, and `fgk addr` gives it the size kallsyms
    printed in the trace."""
    m = re.search(r"entry_SYSCALL_64_after_hwframe\+0x([0-9a-f]+)/0x([0-9a-f]+)",
                  corpus["text"])
    assert m, "no entry frame in the corpus"
    off, size = int(m.group(1), 16), int(m.group(2), 16)
    r = symbolize(corpus, input=f" {m.group(0)}\n")
    assert r.returncode == 0, r.stderr
    got = re.search(re.escape(m.group(0)) + r" \(([^()]*)\)", r.stdout)
    assert got, r.stdout
    assert any(same_chain(fgk_chain(got.group(1)), t)
               for t in vmlinux_truth("entry_SYSCALL_64_after_hwframe", off))
    a = subprocess.run([str(FGK), "addr", str(VMLINUX), "--seed", corpus["seed"],
                        "entry_SYSCALL_64_after_hwframe"], capture_output=True, text=True)
    assert a.returncode == 0, a.stderr
    assert f"entry_SYSCALL_64_after_hwframe+0x0/0x{size:x}\t" in a.stdout, a.stdout


def offset_line(c):
    return re.search(r"^.*Kernel Offset:.*$", c["text"], re.M).group(0) + "\n"


@pytest.mark.k612
def test_0x_forms(corpus):
    """Issue 27 (1): "0xADDR" (what %pS prints when kallsyms cannot name an
    address) decodes as the bare form does: vmlinux through the seed, a
    module through the sections capture."""
    lines, want = [], []
    for name, addr in corpus["probes"].items():
        lines += [f" ? 0x{addr + 5:016x}\n", f"RIP: 0010:0x{addr + 5:016x}\n"]
        want.append((addr + 5, name, 5, vmlinux_truth(name, 5), None))
    # the function that WARNs and oopses (an alias such as cleanup_module
    # shares its address with another name)
    name, addr = "fgk_test_fire", corpus["ksyms"]["fgk_test_fire"]
    lines.append(f" 0x{addr + 1:016x}\n")
    want.append((addr + 1, name, 1, module_truth(corpus["ko"], name, 1), "fgk_test"))
    r = symbolize(corpus, input="".join(lines) + offset_line(corpus))
    assert r.returncode == 0, r.stderr
    for a, name, off, truth, mod in want:
        m = re.search(r"^    0x%016x = %s\+0x%x/0x[0-9a-f]+%s \(([^()]*)\)$"
                      % (a, re.escape(name), off, r" \[%s\]" % mod if mod else ""),
                      r.stdout, re.M)
        assert m, (hex(a), name, r.stdout)
        assert any(same_chain(fgk_chain(m.group(1)), t) for t in truth), (m.group(0), truth)


@pytest.mark.k612
def test_frame_contradicting_its_address(corpus):
    """Issue 27 (3): "[<ADDR>] func+0xOFF/0xSIZE" names ADDR twice.  The
    right seed agrees (and adds no line of its own); a wrong seed (a record
    without a build-id) is said in one line, exit 1, nothing on stdout."""
    addr = corpus["probes"]["vfs_read"]
    (_, size), = nm_symbols()["vfs_read"]
    frame = f" [<{addr + 5:016x}>] vfs_read+0x5/0x{size:x}\n" + offset_line(corpus)
    r = symbolize(corpus, input=frame)
    assert r.returncode == 0, r.stderr
    assert re.search(r"vfs_read\+0x5/0x%x \(" % size, r.stdout), r.stdout
    assert " = " not in r.stdout, r.stdout
    r = subprocess.run([str(FGK), "symbolize", str(VMLINUX), "--seed-file",
                        str(REPO / "seeds" / "example.seed")],
                       capture_output=True, text=True, input=frame)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert len(r.stderr.splitlines()) == 1 and "not the ones the kernel ran with" in r.stderr, r.stderr
    assert r.stdout == ""


@pytest.mark.k612
def test_idempotent(corpus):
    """Issue 27 (7): symbolize's own output comes back unchanged."""
    r1 = symbolize(corpus, corpus["log"])
    assert r1.returncode == 0, r1.stderr
    r2 = symbolize(corpus, input=r1.stdout)
    assert r2.returncode == 0, r2.stderr
    assert not re.search(r"\([^()]*:\d+\) \([^()]*:\d+\)", r2.stdout)
    assert r2.stdout == r1.stdout


def objdump_first(args, start):
    """The mnemonic of the first instruction objdump -d gives at start."""
    r = subprocess.run(["objdump", "-d", "--start-address=0x%x" % start,
                        "--stop-address=0x%x" % (start + 16), *args],
                       capture_output=True, text=True, check=True)
    for line in r.stdout.splitlines():
        m = re.match(r"\s*[0-9a-f]+:\t[0-9a-f ]+\t(\S+)", line)
        if m:
            return m.group(1)
    raise AssertionError(f"objdump gave no instruction: {r.stdout}")


@pytest.mark.k612
def test_code_lines(corpus):
    """"Code:" lines are disassembled as scripts/decodecode does, the
    faulting byte's instruction marked; it is the instruction objdump finds
    at the RIP the oops names, in vmlinux or in the module's section."""
    r = symbolize(corpus, corpus["log"])
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    rip, checked = None, 0
    for i, line in enumerate(out):
        if "RIP: " in line:     # a user-mode RIP (0033) has a Code: line too
            rip = re.search(r"RIP: 0010:([\w.]+)\+0x([0-9a-f]+)/0x[0-9a-f]+"
                            r"( \[(\w+)\])?", line)
        if "Code: " not in line or "<" not in line or rip is None:
            continue
        assert out[i + 1] == "All code", out[i:i + 3]
        end = out.index("Code starting with the faulting instruction", i)
        assert sum("<-- trapping instruction" in l for l in out[i:end]) == 1, out[i:end]
        ours = re.match(r"\s*[0-9a-f]+:\t[0-9a-f ]+\t(\S+)", out[end + 2]).group(1)
        name, off = rip.group(1), int(rip.group(2), 16)
        if rip.group(3):
            ko = corpus["kos"][rip.group(4)]
            _, funcs, _ = elf_sections(ko)
            (_, sec, value, _), = [f for f in funcs if f[0] == name]
            theirs = objdump_first(["-j", sec, str(ko)], value + off)
        else:
            (link, _), = nm_symbols()[name]
            theirs = objdump_first([str(VMLINUX)], link + off)
        assert ours == theirs, (line, ours, theirs)
        checked += 1
        rip = None
    print(f"Code: lines checked: {checked}")
    assert checked >= 4


@pytest.mark.k612
def test_frame_smaller_than_the_function(corpus):
    """Issue 27 (3), a wrong vmlinux without a seed: a WARN frame of the
    corpus whose /0xSIZE is below the function's ELF size in this vmlinux
    (as a trace of a build where it is smaller prints it) is refused in one
    line; the frame as the kernel printed it decodes."""
    for m in FRAME.finditer(corpus["text"]):
        syms = nm_symbols().get(m.group(1), [])
        if not m.group(4) and len(syms) == 1 and syms[0][1] > int(m.group(2), 16) + 1:
            break
    else:
        pytest.fail("no vmlinux frame in the corpus")
    name, off, size = m.group(1), m.group(2), syms[0][1]
    ok = subprocess.run([str(FGK), "symbolize", str(VMLINUX)], capture_output=True,
                        text=True, input=f" {m.group(0)}\n")
    assert ok.returncode == 0, ok.stderr
    r = subprocess.run([str(FGK), "symbolize", str(VMLINUX)], capture_output=True,
                       text=True, input=f" {name}+0x{off}/0x{size - 1:x}\n")
    assert r.returncode == 1 and r.stdout == "", (r.stdout, r.stderr)
    assert len(r.stderr.splitlines()) == 1 and "another kernel build" in r.stderr, r.stderr


def test_json_frames_against_addr2line(corpus):
    """--json on the booted trace: every decoded frame's inline chain is
    addr2line's (-i on vmlinux at nm's address, -j on the module's section),
    its text is at its line and column of the log, and the frames the text
    output annotates are the JSON's (same count, same chains)."""
    r = symbolize(corpus, "--json", corpus["log"])
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["seeded"] and j["base_offset"] is not None
    lines = corpus["text"].split("\n")
    n = 0
    for f in j["frames"]:
        assert lines[f["line"] - 1][f["column"]:].startswith(f["text"]), f
        assert not (f["function"] or "").startswith("__pfx_")
        if not f["locations"]:
            continue
        ours = [(loc["file"], str(loc["line"])) for loc in f["locations"]]
        off = int(f["offset"], 16)
        truth = (module_truth(corpus["kos"][f["module"]], f["function"], off) if f["module"]
                 else vmlinux_truth(f["function"], off))
        if truth is None:
            continue
        assert any(same_chain(ours, t) for t in truth), (f, truth)
        n += 1
    text = symbolize(corpus, corpus["log"]).stdout
    explained = re.compile(r"^    (0x)?ffffffff[0-9a-f]{8} = ")
    annotated = sum(1 if explained.match(l) else
                    len(re.findall(r"\+0x[0-9a-f]+/0x[0-9a-f]+( \[\w+\])? \(", l))
                    for l in text.splitlines())
    # an explained raw address is a frame even where it has no line
    decoded = [f for f in j["frames"] if f["locations"] or f["source"] != "symbol"]
    print(f"JSON frames: {len(j['frames'])}, decoded {len(decoded)}, "
          f"checked against addr2line {n}")
    assert len(decoded) == annotated and n >= 10


REPORTS = (("hung", r"INFO: task \S+ blocked for more than \d+ seconds"),
           ("lockup", r"BUG: soft lockup - CPU#\d+ stuck for"),
           ("bug", r"kernel BUG at "),
           ("warn", r"WARNING: CPU: \d+ PID: \d+ at "),
           ("oops", r"BUG: kernel NULL pointer dereference"),
           ("panic", r"Kernel panic - not syncing"))


def reports(text):
    """The reports of a console log: (kind, first line, end line), 0-based."""
    lines = text.split("\n")
    starts = [(i, k) for i, l in enumerate(lines)
              for k, pat in REPORTS if re.search(pat, l)]
    return [(k, i, starts[n + 1][0] if n + 1 < len(starts) else len(lines))
            for n, (i, k) in enumerate(starts)]


# kind: (the module, the function of the report's RIP or None when the
# report shows no registers, functions of that module the trace must hold)
EXPECTED = {"hung": ("fgk_oot", None, ("fgk_oot_sleep", "fgk_oot_hang_fn")),
            "lockup": ("fgk_oot", "fgk_oot_spin", ("fgk_oot_lockup_fn",)),
            "bug": ("fgk_oot", "fgk_oot_bug_now", ("fgk_oot_bug_fn",)),
            "warn": ("fgk_test", "fgk_test_warn", ("fgk_test_fire",)),
            "oops": ("fgk_test", "fgk_test_oops", ("fgk_test_fire",))}


@pytest.mark.k612
def test_reports_in_a_row(corpus):
    """A log of several reports in a row (a hung task, a soft lockup, a
    BUG, two WARNs, the module oops, the panic): each report's frames are
    its own.  Each report's RIP decodes in the module function the kernel
    stopped in (fgk_oot_spin for the lockup, the ud2 of fgk_oot_bug_now for
    the BUG, fgk_test_warn, and fgk_test_oops at the NULL write inlined
    from fgk_test_poke); the hung task's stack (no registers) holds the
    sleeper's frames; each of those frames is at the lines addr2line -j
    gives.  The panic (which after an oops prints no trace) gets no module
    frame of theirs.  (The hung-task check names the sleeper at each
    interval until it wakes, the watchdog the spinner at each period.  One
    hung report at least must hold the sleeper's frames; another may race
    with the wake-up and show the kthread exiting, with no module frame.)"""
    rs = reports(corpus["text"])
    kinds = [k for k, _, _ in rs]
    assert (kinds.count("hung") >= 1 and kinds.count("lockup") >= 1 and kinds.count("bug") == 1
            and kinds.count("warn") == 2 and kinds.count("oops") == 1 and "panic" in kinds), kinds
    j = json.loads(symbolize(corpus, "--json", corpus["log"]).stdout)
    lines = corpus["text"].split("\n")
    hung_seen = hung_late = 0
    for kind, first, end in rs:
        mine = [f for f in j["frames"] if first < f["line"] <= end]
        names = [f["function"] for f in mine if f["locations"]]
        rip = [f for f in mine if "RIP: 0010:" in lines[f["line"] - 1] and f["locations"]]
        if kind == "panic":
            # after an oops (TAINT_DIE) panic() prints no trace of its own:
            # nothing of the oops before it may spill into it
            assert not [f for f in mine if f["module"]], mine
            assert not names or "sysrq_handle_crash" in names, names
            continue
        mod, want, callers = EXPECTED[kind]
        # GCC's clone suffixes (.isra.0, .constprop.0) stay on the names
        checked = [f for f in mine if f["module"] == mod and f["locations"]
                   and f["function"].split(".")[0] in callers]
        if kind == "hung" and not checked and "kthread_exit" in names:
            # the check saw the sleeper in D state, and by the time it
            # printed the stack the sleep had ended: a later report may
            # show the kthread on its way out (kthread_exit, do_task_dead),
            # decoded in the kernel, with no frame of the module left
            assert not [f for f in mine if f["module"]], (kind, first, mine)
            hung_late += 1
            continue
        hung_seen += kind == "hung"
        assert {f["function"].split(".")[0] for f in checked} == set(callers), \
            (kind, first, names)
        if want:
            assert (rip and rip[0]["function"].split(".")[0] == want
                    and rip[0]["module"] == mod), \
                (kind, first, rip)
            checked.append(rip[0])
        else:
            assert not rip, (kind, first, rip)
        for f in checked:
            truth = module_truth(corpus["kos"][mod], f["function"], int(f["offset"], 16))
            assert any(same_chain([(x["file"], str(x["line"])) for x in f["locations"]], t)
                       for t in truth), (f, truth)
        if kind == "oops":
            assert [x["function"] for x in rip[0]["locations"]][0] == "fgk_test_poke"
    assert hung_seen >= 1, ("no hung report holds the sleeper's frames", kinds)
    print("reports:", kinds, f"(hung reports after the wake-up: {hung_late})")


@pytest.mark.k612
def test_build_id_frames_through_debuginfod(corpus, kernel_debuginfod, tmp_path):
    """Issue 27, CONFIG_STACKTRACE_BUILD_ID: the booted log's module frames
    as such a kernel prints them, " [fgk_test BUILDID]" (readelf's build-id
    of the .ko), with no --modules: the .ko comes from a local debuginfod
    server by its build-id and every module frame gets the chain the run
    with --modules gives; a build-id no server has is a one-line error;
    without DEBUGINFOD_URLS the frames are left as they are."""
    bid = readelf_build_id(corpus["ko"])
    text = corpus["text"].replace(" [fgk_test]", f" [fgk_test {bid}]")
    assert text.count(bid) >= 4
    plain = symbolize(corpus, corpus["log"]).stdout
    want = re.findall(r"(fgk_test_\w+\+0x[0-9a-f]+/0x[0-9a-f]+) \[fgk_test\] (\([^()]*\))",
                      plain)
    cmd = [str(FGK), "symbolize", str(VMLINUX), "--seed", corpus["seed"]]
    r = subprocess.run(cmd, capture_output=True, text=True, input=text,
                       env=kernel_debuginfod.env(tmp_path / "cache"))
    assert r.returncode == 0, r.stderr
    got = re.findall(r"(fgk_test_\w+\+0x[0-9a-f]+/0x[0-9a-f]+) \[fgk_test %s\] (\([^()]*\))"
                     % bid, r.stdout)
    assert got and got == [w for w in want if w[0] in dict(got)], (got, want)
    assert len(got) == len(re.findall(r"\+0x[0-9a-f]+/0x[0-9a-f]+ \[fgk_test ", text))
    j = json.loads(subprocess.run(cmd + ["--json"], capture_output=True, text=True,
                                  input=text, env=kernel_debuginfod.env(tmp_path / "cache"),
                                  check=True).stdout)
    assert {f["build_id"] for f in j["frames"] if f["module"] == "fgk_test"} == {bid}
    other = bid[:-1] + ("0" if bid[-1] != "0" else "1")
    r = subprocess.run(cmd, capture_output=True, text=True, input=text.replace(bid, other),
                       env=kernel_debuginfod.env(tmp_path / "cache2"))
    assert r.returncode == 1 and r.stdout == "", r.stdout[-500:]
    assert len(r.stderr.splitlines()) == 1 and other in r.stderr, r.stderr
    r = subprocess.run(cmd, capture_output=True, text=True, input=text,
                       env=client_env(None, tmp_path / "cache3"))
    assert r.returncode == 0, r.stderr
    assert not re.search(r"\[fgk_test %s\] \(" % bid, r.stdout)


def end_of_function_candidates(n=6):
    """(name, link address, ELF size) of up to n vmlinux functions that end
    where the next function at link time starts (no padding between), that
    next function's first byte at another line than the function's last
    byte (binutils addr2line, line numbers), spread over the symbol table:
    the frames whose line the link address itself gets wrong."""
    syms = nm_symbols()
    starts = {}
    for name, places in syms.items():
        for addr, _ in places:
            starts.setdefault(addr, []).append(name)
    funcs = sorted((places[0][0], places[0][1], name) for name, places in syms.items()
                   if len(places) == 1 and places[0][1] and not name.startswith("__pfx_")
                   and any(not m.startswith("__pfx_")
                           for m in starts.get(places[0][0] + places[0][1], [])))
    sample = funcs[::max(1, len(funcs) // 200)]
    r = subprocess.run(["addr2line", "-e", str(VMLINUX)] +
                       ["0x%x" % (a + s - d) for a, s, _ in sample for d in (1, 0)],
                       capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(r) == 2 * len(sample), r[:10]
    good = []
    for (addr, size, name), last, after in zip(sample, r[0::2], r[1::2]):
        lines = [re.sub(r" \(discriminator \d+\)", "", x).rsplit(":", 1)[1]
                 for x in (last, after)]
        if "?" not in last + after and "0" not in lines and lines[0] != lines[1]:
            good.append((name, addr, size))
    return good[::max(1, len(good) // n)][:n]


@pytest.mark.k612
def test_frame_at_the_end_of_its_function():
    """func+SIZE/SIZE, SIZE the function's ELF size (a return address right
    after a noreturn call that ends the function, as %pB prints it), for
    functions found in this vmlinux's symbol table whose link-time
    successor starts at func+SIZE with a line of its own: fgk's line, in
    the text and in --json, is addr2line's at func+SIZE-1 (the call), by
    binutils or LLVM, and not addr2line's at func+SIZE (the successor,
    which a shuffled kernel put elsewhere; what decode_stacktrace.sh and
    faddr2line give)."""
    require_fgkaslr_vmlinux()
    cands = end_of_function_candidates()
    assert len(cands) >= 3, cands
    seed = secrets.token_hex(32)
    trace = "".join(f" ? {name}+0x{size:x}/0x{size:x}\n" for name, _, size in cands)
    cmd = [str(FGK), "symbolize", str(VMLINUX), "--seed", seed]
    r = subprocess.run(cmd, capture_output=True, text=True, input=trace)
    assert r.returncode == 0, r.stderr
    j = subprocess.run(cmd + ["--json"], capture_output=True, text=True, input=trace)
    assert j.returncode == 0, j.stderr
    frames = json.loads(j.stdout)["frames"]
    assert len(frames) == len(cands), frames
    for (name, addr, size), line, f in zip(cands, r.stdout.splitlines(), frames):
        m = re.fullmatch(r" \? %s\+0x%x/0x%x \(([^()]*)\)" % (re.escape(name), size, size), line)
        assert m, (line, cands)
        ours = fgk_chain(m.group(1))
        assert [(x["file"], str(x["line"])) for x in f["locations"]] == ours, (f, ours)
        call, after = addr + size - 1, addr + size
        tools = ["addr2line"] + ([LLVM_ADDR2LINE] if LLVM_ADDR2LINE else [])
        assert any(same_chain(ours, addr2line_vmlinux(call, t)) for t in tools), \
            (line, [addr2line_vmlinux(call, t) for t in tools])
        assert not any(same_chain(ours, addr2line_vmlinux(after, t)) for t in tools), \
            (line, [addr2line_vmlinux(after, t) for t in tools])
    print("frames at the end of their function:", [c[0] for c in cands])
