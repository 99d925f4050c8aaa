"""A module oops, dumped, through fgk symbolize, fgk crash and drgn (issue
18, items 3 and 4).

One guest boots with a random FG-KASLR seed and base KASLR on, loads
fgk_test.ko (its .text.* sections shuffled at load), prints the module's
/proc/kallsyms lines and /sys/module/fgk_test/sections, WARNs on request
(`echo 1 > /sys/module/fgk_test/parameters/warn`), then oopses on request
(`.../oops`): a NULL write in fgk_test_poke(), inlined into
fgk_test_oops(), called from fgk_test_fire().  The runner boots with
oops=panic and saves the dumps (`qemu-profiles/run dump --dump-dir`).
Then, on the host:

  * `fgk symbolize --modules build/kernel/modules` on the console's WARN
    and oops: every module frame's file:line chain equals
    `addr2line -f -i -j .text.<func> -e fgk_test.ko OFF`, the faulting
    frame's chain holds the inlined fgk_test_poke(), and the raw runtime
    addresses of those frames decode the same through the captured
    sections;
  * `fgk crash` (module symbols from build/kernel/modules beside vmlinux):
    `bt -l` names fgk_test_oops (the exception RIP), fgk_test_fire and
    fgk_test_param_set at kallsyms + the oops's offsets, with the lines
    addr2line gives; `sym` and `dis -l` on the module's functions give the
    kallsyms addresses and their first lines;
  * drgn on the same dump with vmlinux.fgk and fgk_test.ko resolves the
    module's functions to their kallsyms addresses and unwinds through
    them;
  * a .ko of another build in --modules is refused, naming the file.
"""
import os
import re
import secrets
import shutil
import subprocess

import pytest

from conftest import KERNEL_DIR, REPO
from debuginfod_server import debuginfod_factory, kernel_debuginfod  # noqa: F401
from oracle import readelf_sections
from test_crash import (CRASH, DRGN, FGK, VMLINUX, eframe_gap_frames, oops_rsp,
                        require_drgn_reads, require_fg, require_tools, run, stack_words)
from test_modules import MODULES, addr2line_one, elf_sections, fgk_chain, module_ko, same_chain

GUEST_SCRIPT = r"""
insmod /fgk/fgk_test.ko
echo "fgkaslr-seed: $(cat /proc/fgkaslr_seed)"
grep '\[fgk_test\]' /proc/kallsyms | sed 's/^/ksym /'
grep -r . /sys/module/fgk_test/sections | sed 's/^/cap /'
echo 1 > /sys/module/fgk_test/parameters/warn
echo warned
echo 1 > /sys/module/fgk_test/parameters/oops
echo "survived the oops"
"""
MOD_CHAIN = ["fgk_test_oops", "fgk_test_fire", "fgk_test_param_set"]


@pytest.fixture(scope="module")
def modcrash(tmp_path_factory):
    require_tools()
    require_fg()
    ko = module_ko()
    seed = secrets.token_hex(32)
    top = tmp_path_factory.mktemp("modcrash")
    d = top / "D"
    (top / "guest.sh").write_text(GUEST_SCRIPT)
    r = run(REPO / "qemu-profiles" / "run", "dump", "--dump-dir", d, "--init",
            top / "guest.sh", "--file", f"{ko}:/fgk/fgk_test.ko", "--timeout", "240",
            "--seed", seed, "--kernel", KERNEL_DIR / "bzImage")
    print(r.stderr)
    assert r.returncode == 0, f"no dump taken: {r.stderr}"
    log = (d / "serial.log").read_text()
    out = (d / "output").read_text()
    assert f"fgkaslr-seed: {seed}" in out and "warned" in out
    assert "survived the oops" not in out, "the oops did not stop the script"
    ksyms = {m.group(2): int(m.group(1), 16) for m in re.finditer(
        r"^ksym ([0-9a-f]{16}) [tT] (\w+)\s+\[fgk_test\]$", out, re.M)}
    all_addrs = sorted({int(a, 16) for a in re.findall(
        r"^ksym ([0-9a-f]{16}) \w \S+\s+\[fgk_test\]$", out, re.M)})
    caps = re.findall(r"^cap (/sys/module/fgk_test/sections/\S+:0x[0-9a-f]+)$", out, re.M)
    assert set(MOD_CHAIN) <= set(ksyms) and caps, out[-2000:]
    c = {"seed": seed, "dir": d, "log": log, "out": out, "ko": ko, "ksyms": ksyms,
         "all_addrs": all_addrs,
         "caps": caps, "cache": top / "cache"}
    yield c
    if not os.environ.get("FGK_KEEP_DUMPS"):
        for name in ("vmcore", "vmcore.kdump"):
            (d / name).unlink(missing_ok=True)
        shutil.rmtree(c["cache"], ignore_errors=True)


def env(c):
    return dict(os.environ, FGK_CACHE_DIR=str(c["cache"]))


def report(log, start, what):
    """The console's report that begins with `start`, up to its end marker."""
    i = log.find(start)
    assert i >= 0, f"no {what} on the console"
    j = log.find("---[ end trace", i)
    assert j >= 0, f"{what}: no end marker"
    return log[log.rfind("\n", 0, i) + 1:log.find("\n", j) + 1]


def frames_of(text):
    """[(func, off, size)] of the module's frames in an oops text, in order."""
    return [(m.group(1), int(m.group(2), 16), int(m.group(3), 16)) for m in re.finditer(
        r"(?:RIP: 0010:| )(fgk_test_\w+)\+0x([0-9a-f]+)/0x([0-9a-f]+) \[fgk_test\]", text)]


def func_info(ko):
    return {name: (section, value, size) for name, section, value, size in elf_sections(ko)[1]}


@pytest.mark.k612
def test_module_warn_and_oops_symbolized(modcrash, tmp_path):
    """fgk symbolize on the module WARN and the module oops, frame by frame
    against addr2line -j, then the same frames as raw addresses."""
    c = modcrash
    warn = report(c["log"], "WARNING: CPU:", "module WARN")
    oops = report(c["log"], "BUG: kernel NULL pointer dereference", "module oops")
    assert re.search(r"WARNING: CPU: \d+ PID: \d+ at lib/test_fgkaslr_module\.c:\d+ "
                     r"fgk_test_warn\+0x[0-9a-f]+/0x[0-9a-f]+ \[fgk_test\]", warn), warn
    assert "RIP: 0010:fgk_test_oops+" in oops, oops
    info = func_info(c["ko"])
    cap = tmp_path / "sections"
    cap.write_text("\n".join(c["caps"]) + "\n")
    checked, chains = 0, {}
    for name, text in (("warn", warn), ("oops", oops)):
        frames = frames_of(text)
        names = [f[0] for f in frames]
        want_order = (["fgk_test_warn", "fgk_test_fire", "fgk_test_param_set"] if name == "warn"
                      else MOD_CHAIN)
        # the call chain, in order (RIP line first, then the Call Trace)
        pos = [names.index(f) for f in want_order]
        assert pos == sorted(pos), (name, names)
        r = subprocess.run([str(FGK), "symbolize", str(VMLINUX), "--seed", c["seed"],
                            "--modules", str(MODULES)], input=text, capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        for func, off, size in set(frames):
            section, value, fsize = info[func]
            # the kernel prints the distance to the module's next symbol, or
            # to the end of its (page-aligned) core text
            start, end = c["ksyms"][func], c["ksyms"][func] + size
            assert size >= fsize, (func, size, fsize)
            assert end in c["all_addrs"] or end % 4096 == 0, (func, hex(end))
            assert not [a for a in c["all_addrs"] if start < a < end], (func, size)
            want = addr2line_one(c["ko"], section, value + off)
            m = re.search(r"%s\+0x%x/0x%x \[fgk_test\] \((.*?)\)$" % (func, off, size),
                          r.stdout, re.M)
            assert m, (func, r.stdout)
            assert same_chain(fgk_chain(m.group(1)), want), (func, m.group(1), want)
            chains[func] = want
            checked += 1
        # the kernel's own frames in the same trace are decoded too
        assert re.search(r"param_attr_store\+0x[0-9a-f]+/0x[0-9a-f]+ \(\S+:\d+", r.stdout), \
            r.stdout
    # the inlined helpers are in the chains of the WARN and the fault
    assert len(chains["fgk_test_oops"]) >= 2 and len(chains["fgk_test_warn"]) >= 2, chains

    # the same frames as raw runtime addresses, through the capture
    probes, want = "", []
    for func, off, _ in set(frames_of(warn) + frames_of(oops)):
        addr = c["ksyms"][func] + off
        probes += f"value {addr:016x}\n"
        # a raw address is named with the .ko's own function size
        want.append((addr, func, off, info[func][2], chains[func]))
    r = subprocess.run([str(FGK), "symbolize", str(VMLINUX), "--seed", c["seed"],
                        "--modules", str(MODULES), "--module-sections", str(cap)],
                       input=probes, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for addr, func, off, size, chain in want:
        m = re.search(r"^    %016x = %s\+0x%x/0x%x \[fgk_test\] \((.*)\)$" % (addr, func, off, size),
                      r.stdout, re.M)
        assert m, (hex(addr), func, r.stdout)
        assert same_chain(fgk_chain(m.group(1)), chain), (func, m.group(1), chain)
    print(f"seed {c['seed'][:8]}..: {checked} module frames of the WARN and the oops "
          f"equal addr2line -j, {len(want)} raw addresses too; chains {chains}")


def crash_cmds(c):
    """mod, bt -l, the two words at the oops's RSP (stack_words()), sym and
    dis -l."""
    rsp = oops_rsp(report(c["log"], "BUG: kernel NULL pointer dereference", "module oops"))
    return ["mod", "bt -l", f"rd -s {rsp:x} 2"] + [f"sym {f}" for f in MOD_CHAIN] + \
        ["dis -l fgk_test_oops", "exit"]


def same_place(crash_fl, gdb_fl):
    """crash prints absolute paths, gdb the DWARF's (relative to the tree)."""
    (f1, l1), (f2, l2) = crash_fl, gdb_fl
    return str(l1) == str(l2) and (f1 == f2 or f1.endswith("/" + f2))


def gdb_lines(c, addrs):
    """{addr: (file, line)} of stock gdb on the original fgk_test.ko, each
    section at the address the kernel gave it (the captured
    /sys/module/fgk_test/sections): the reference for crash, which looks
    lines up with gdb, and independent of fgk's relinked module.  gdb
    relocates a .ko's DWARF to those addresses only when no section of the
    .ko has an address of its own; 6.12's module linker script leaves
    __patchable_function_entries and .data at the location counter, so
    gdb reads a copy with those addresses 0 (docs/crash-replay.md, 8)."""
    secs = [l.split("/sections/")[1].split(":") for l in c["caps"]]
    placed = " ".join(f"-s {n} {a}" for n, a in secs
                      if n not in (".symtab", ".strtab") and not n.startswith(".note"))
    ko = c["ko"]
    nonzero = [n for n, (_, addr, _) in readelf_sections(ko).items() if addr]
    if nonzero:
        ko = c["dir"].parent / "fgk_test-addr0.ko"
        run("objcopy", *(a for n in nonzero for a in ("--change-section-address", f"{n}=0")),
            c["ko"], ko, check=True)
    cmd = ["gdb", "-nx", "-batch", "-ex", "set confirm off",
           "-ex", f"add-symbol-file {ko} {placed}"]
    for a in addrs:
        cmd += ["-ex", f"info line *{a:#x}"]
    out = run(*cmd).stdout
    got = re.findall(r'^Line (\d+) of "([^"]+)"\s+starts at address (0x[0-9a-f]+)', out, re.M)
    ranges = [(int(a, 16), (f, l)) for l, f, a in got]
    assert len(ranges) == len(addrs), out
    return {a: fl for a, (_, fl) in zip(addrs, ranges)}


@pytest.mark.k612
def test_crash_through_module(modcrash, tmp_path):
    """fgk crash loads fgk_test.ko relinked in the dump's order (crash places
    only a module's .text at its base: docs/fgk-crash.1.md); bt -l names the
    module frames at kallsyms + the oops offsets, sym and dis -l give the
    kallsyms addresses, all with the lines stock gdb gives on the original
    .ko placed at the sections the kernel chose."""
    if not CRASH:
        pytest.skip("crash not installed: run 'make deps'")
    c = modcrash
    (tmp_path / "cmds").write_text("\n".join(crash_cmds(c)) + "\n")
    r = run(FGK, "crash", c["dir"] / "vmcore", VMLINUX, "-i", tmp_path / "cmds",
            env=env(c), stdin=subprocess.DEVNULL)
    print(r.stderr)
    assert r.returncode == 0, r.stderr + r.stdout[-3000:]
    m = re.search(r"module symbols: (\d+) modules? under \S*/modules \((\d+) relinked", r.stderr)
    assert m and int(m.group(2)) >= 1, r.stderr
    check_module_crash(c, r.stdout)


def check_module_crash(c, out):
    # crash took the .ko fgk made (named after the module)
    assert re.search(r"^[0-9a-f]{16}  fgk_test  [0-9a-f]{16} +\d+  \S+/fgk_test\.ko", out, re.M), \
        out[-3000:]
    oops = report(c["log"], "BUG: kernel NULL pointer dereference", "module oops")
    offs = {f: off for f, off, _ in frames_of(oops)}
    ref = gdb_lines(c, [c["ksyms"][f] + offs[f] for f in MOD_CHAIN] +
                    [c["ksyms"][f] for f in MOD_CHAIN])
    # bt: the exception RIP in fgk_test_oops, with the faulting line
    m = re.search(r"\[exception RIP: (\w+)\+(\d+)\]\n((?:\s+[A-Z].*\n)+?)\s+(/\S+): (\d+)\n", out)
    assert m and m.group(1) == "fgk_test_oops", out[-3000:]
    assert int(m.group(2)) == offs["fgk_test_oops"]
    rip = re.search(r"RIP: ([0-9a-f]{16})", m.group(3))
    assert int(rip.group(1), 16) == c["ksyms"]["fgk_test_oops"] + offs["fgk_test_oops"]
    want = ref[c["ksyms"]["fgk_test_oops"] + offs["fgk_test_oops"]]
    assert same_place(m.group(4, 5), want), (m.group(4, 5), want)
    # then its callers in the module, each with the line of its return
    # address (crash looks the frame's address up as it is).  They are on
    # the stack at the oops's RSP (fgk_test_oops() is a leaf), where `rd -s`
    # names them through the relinked .ko's symbols; crash's bt goes there
    # too, unless the exception frame's alignment slot held a stale text
    # address that it took for a frame (eframe_gap_frames())
    rsp = oops_rsp(oops)
    words = stack_words(out, rsp)
    assert words == [f"{f}+{offs[f]}" for f in MOD_CHAIN[1:]], (words, out[-3000:])
    gap = eframe_gap_frames(out, rsp)
    bt = [b[1:] for b in re.findall(r"^\s*#\d+ \[([0-9a-f]+)\] (\w+) at ([0-9a-f]+) "
                                    r"\[fgk_test\]\n\s+(/\S+): (\d+)$", out, re.M)
          if (int(b[0], 16), b[1]) not in gap]
    names = [b[0] for b in bt]
    if names[:2] != MOD_CHAIN[1:]:
        assert gap and set(names) <= set(MOD_CHAIN[1:]), out[-3000:]
        print(f"crash's bt took the stale word in the exception frame's alignment slot for "
              f"a frame ({gap}); at RSP {rsp:x}: {words}")
    for func, addr, path, line in bt:
        assert int(addr, 16) == c["ksyms"][func] + offs[func], (func, addr)
        want = ref[c["ksyms"][func] + offs[func]]
        assert same_place((path, line), want), (func, path, line, want)
    # sym: kallsyms addresses, in the module, at the function's first line
    for func in MOD_CHAIN:
        m = re.search(r"^([0-9a-f]{16}) \(\w\) %s \[fgk_test\] (\S+): (\d+)$" % func, out, re.M)
        assert m, f"no 'sym {func}' answer: {out[-3000:]}"
        assert int(m.group(1), 16) == c["ksyms"][func]
        want = ref[c["ksyms"][func]]
        assert same_place(m.group(2, 3), want), (func, m.groups(), want)
    # dis -l: the function at its kallsyms address, under its first line
    m = re.search(r"crash> dis -l fgk_test_oops\n(\S+): (\d+)\n0x([0-9a-f]+) <fgk_test_oops>",
                  out)
    assert m, "dis -l output not understood: " + out[-3000:]
    assert int(m.group(3), 16) == c["ksyms"]["fgk_test_oops"]
    assert same_place(m.group(1, 2), ref[c["ksyms"]["fgk_test_oops"]])
    print(f"crash: bt -l {names}, sym and dis -l at the kallsyms addresses with the lines of "
          f"gdb on the original .ko placed at the captured sections: {sorted(set(ref.values()))}")


def test_crash_modules_by_debuginfod(modcrash, kernel_debuginfod, tmp_path):
    """No VMLINUX, no module directory, no build tree: fgk crash fetches the
    vmlinux by the dump's build-id and fgk_test.ko by the build-id of its
    notes in the dump's memory, says so, relinks the module in the dump's
    order, and crash's bt/sym/dis -l through the module are as with the
    local files."""
    if not CRASH:
        pytest.skip("crash not installed: run 'make deps'")
    c = modcrash
    (tmp_path / "bin").mkdir()
    fgk = tmp_path / "bin" / "fgk"
    shutil.copy2(FGK, fgk)
    work = tmp_path / "work"
    work.mkdir()
    (work / "cmds").write_text("\n".join(crash_cmds(c)) + "\n")
    e = dict(kernel_debuginfod.env(tmp_path / "dcache"), FGK_CACHE_DIR=str(c["cache"]),
             TMPDIR=str(tmp_path))
    r = run(fgk, "crash", c["dir"] / "vmcore.kdump", "-i", "cmds", cwd=work, env=e,
            stdin=subprocess.DEVNULL)
    print(r.stderr)
    assert r.returncode == 0, r.stderr + r.stdout[-3000:]
    bid = subprocess.run(["readelf", "-n", str(c["ko"])], capture_output=True, text=True,
                         check=True).stdout
    bid = re.search(r"Build ID: ([0-9a-f]+)", bid).group(1)
    assert f"fetched module fgk_test (build-id {bid}) from {kernel_debuginfod.url}" in r.stderr
    assert re.search(r"module symbols: 1 module fetched \(1 relinked", r.stderr), r.stderr
    check_module_crash(c, r.stdout)


DRGN_MOD_SCRIPT = r"""
import sys
from drgn import Object
from drgn.helpers.linux.percpu import per_cpu
from elftools.elf.elffile import ELFFile

for name in %r:
    sym = prog.symbol(name)
    print("symbol", name, hex(sym.address))
    loc = prog[name]
    print("object", name, hex(loc.address_))
cpu = prog["panic_cpu"].counter.value_()
regs = []
with open(sys.argv[1], "rb") as f:
    for seg in ELFFile(f).iter_segments("PT_NOTE"):
        for note in seg.iter_notes():
            if note["n_type"] == "NT_PRSTATUS" and note["n_name"] == "CORE":
                regs.append(note["n_descdata"][112:112 + 21 * 8])
trace = prog.stack_trace(Object.from_bytes_(prog, "struct pt_regs", regs[cpu]))
for f in trace:
    try:
        src = "%%s:%%d" %% f.source()[:2]
    except LookupError:
        src = "?"
    print("frame", f.name, hex(f.pc), src)
"""


@pytest.mark.skipif(DRGN is None, reason="drgn not installed (python3-drgn)")
def test_drgn_through_module(modcrash, tmp_path):
    c = modcrash
    require_drgn_reads(c["log"], "modules through core_layout, its ORC unwinder")
    r = run(FGK, "relink", VMLINUX, "--seed", c["seed"], env=env(c))
    assert r.returncode == 0, r.stderr
    (tmp_path / "mod.py").write_text(DRGN_MOD_SCRIPT % (MOD_CHAIN,))
    dump = c["dir"] / "vmcore"
    r = run(DRGN, "-q", "-c", dump, "-s", r.stdout.strip(), "-s", c["ko"],
            tmp_path / "mod.py", dump)
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    for name in MOD_CHAIN:
        m = re.search(rf"^symbol {name} (0x[0-9a-f]+)$", r.stdout, re.M)
        assert m and int(m.group(1), 16) == c["ksyms"][name], name
        m = re.search(rf"^object {name} (0x[0-9a-f]+)$", r.stdout, re.M)
        assert m and int(m.group(1), 16) == c["ksyms"][name], name
    frames = re.findall(r"^frame (\S+) 0x([0-9a-f]+) (\S+)$", r.stdout, re.M)
    names = [f[0] for f in frames]
    idx = [names.index(f) for f in MOD_CHAIN]
    assert idx == sorted(idx), names
    # each module frame's source line is what addr2line -j says
    info = func_info(c["ko"])
    oops = report(c["log"], "BUG: kernel NULL pointer dereference", "module oops")
    offs = {f: off for f, off, _ in frames_of(oops)}
    for name, pc, src in frames:
        if name not in MOD_CHAIN:
            continue
        assert int(pc, 16) == c["ksyms"][name] + offs[name], (name, pc)
        section, value, _ = info[name]
        # drgn looks up a caller's line at pc - 1 (inside the call)
        off = offs[name] - (0 if name == "fgk_test_oops" else 1)
        chain = addr2line_one(c["ko"], section, value + off)
        # drgn gives inlined calls frames of their own: the function's
        # frame has the outermost line of the chain, the inlined ones before
        path, _, line = src.rpartition(":")
        assert same_chain([(path, line)], chain[-1:]), (name, src, chain)
        if name == "fgk_test_oops":
            i = names.index(name)
            assert names[i - 1] == "fgk_test_poke" and frames[i - 1][1] == pc
            path, _, line = frames[i - 1][2].rpartition(":")
            assert same_chain([(path, line)], chain[:1]), (frames[i - 1], chain)


@pytest.mark.k612
def test_crash_refuses_module_of_another_build(modcrash, tmp_path):
    """A .ko whose vermagic is not this kernel's, among the --modules."""
    c = modcrash
    bad = tmp_path / "mods" / "fgk_test.ko"
    bad.parent.mkdir()
    data = c["ko"].read_bytes()
    i = data.find(b"vermagic=")
    assert i >= 0
    data = data[:i + 9] + b"0" + data[i + 10:]        # the first digit of the release: 0, another release
    bad.write_bytes(data)
    r = run(FGK, "crash", c["dir"] / "vmcore", VMLINUX, "--modules", bad.parent,
            env=env(c), stdin=subprocess.DEVNULL)
    assert r.returncode == 1, (r.returncode, r.stderr, r.stdout[-500:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "vermagic" in lines[0], r.stderr


@pytest.mark.k612
def test_relinked_module_dwarf_follows_every_section(tmp_path):
    """The .ko fgk crash gives crash: every section at address 0, as in a
    relocatable file (6.12's module linker script leaves
    __patchable_function_entries and .data at 0x10 and 0x88, and gdb,
    crash's too, then relocates no DWARF to the addresses it is given:
    fgk_test_init's lines landed on .text's), so stock gdb with .text and
    .init.text placed apart finds each function of both at its place, with
    the line addr2line -j gives on the original .ko (the innermost of an
    inline chain, as gdb's line table has it)."""
    ko = module_ko()
    out = tmp_path / "fgk_test.ko"
    r = run(FGK, "layout", ko, "--seed", secrets.token_hex(32), "--relink", out)
    assert r.returncode == 0, r.stderr
    secs = readelf_sections(out)
    assert not [n for n, (_, addr, _) in secs.items() if addr], secs
    text, init = 0xffffffffc0200000, 0xffffffffc0300000
    funcs = {f[0]: f for f in elf_sections(out)[1]}
    orig = {f[0]: f for f in elf_sections(ko)[1]}
    probe = [f for f in ("fgk_test_oops", "fgk_test_leaf", "fgk_test_init") if f in funcs]
    cmd = ["gdb", "-nx", "-batch", "-ex", "set confirm off",
           "-ex", f"add-symbol-file {out} {text:#x} -s .init.text {init:#x}"]
    want = {}
    for f in probe:
        _, section, value, _ = funcs[f]
        addr = (text if section == ".text" else init) + value + 4
        want[f] = (addr, addr2line_one(ko, orig[f][1], orig[f][2] + 4)[0])
        cmd += ["-ex", f"info line *{addr:#x}"]
    res = run(*cmd)
    got = re.findall(r'^Line (\d+) of "([^"]+)"\s+(?:starts at address|is at address) '
                     r'0x[0-9a-f]+ <(\w+)[+>]', res.stdout, re.M)
    assert [g[2] for g in got] == probe, res.stdout + res.stderr
    for (line, path, f) in got:
        assert want[f][1][0].endswith(path) and want[f][1][1] == line, (f, line, path, want[f])
    print("relinked .ko: no section address; gdb lines of "
          + ", ".join(f"{f} {want[f][1][1]}" for f in probe) + " = addr2line -j")


@pytest.mark.k612
def test_crash_keeps_the_module_init_frame(tmp_path):
    """An oops inside a module's init function (insmod fgk_test.ko oops=1,
    patch 0015): with module symbols, crash's bt used to go fgk_test_fire ->
    do_one_initcall, and `sym fgk_test_init` found nothing, because the
    relinked .ko left .init.text where crash does not place it.  The init
    frame is kept at the console's fgk_test_init+OFF, and fgk_test_init is
    where crash's own module data (--no-modules, `sym -m`: "MODULE INIT
    START" before 6.4, "MODULE INIT_TEXT START" on struct module_memory)
    says the init text is, plus its offset in the .ko's .init.text (6.12:
    the 16-byte __pfx_ padding), with its source file.

    The guest boots with nofgkaslr (test_crash_through_module covers the
    shuffled module): its modules are laid out in the loader's index order,
    and fgk crash used to hand crash a link to the original .ko, whose
    .text.* functions crash does not place and whose DWARF 6.12's placed
    sections (__patchable_function_entries, .data at 0x10/0x88) kept gdb
    from relocating.  Now it relinks the module in that order with every
    section at address 0: bt -l, sym and dis -l of the core text functions
    give the lines addr2line -j gives on the .ko."""
    require_tools()
    require_fg()
    ko = module_ko()
    d = tmp_path / "D"
    (tmp_path / "g.sh").write_text("insmod /fgk/fgk_test.ko oops=1\necho survived\n")
    r = run(REPO / "qemu-profiles" / "run", "dump", "--dump-dir", d, "--init",
            tmp_path / "g.sh", "--file", f"{ko}:/fgk/fgk_test.ko", "--timeout", "240",
            "--append", "nofgkaslr", "--kernel", KERNEL_DIR / "bzImage")
    assert r.returncode == 0, f"no dump taken: {r.stderr}"
    log = (d / "serial.log").read_text()
    m = re.search(r"fgk_test_init\+(0x[0-9a-f]+)/0x[0-9a-f]+ \[fgk_test\]", log)
    assert m, "no fgk_test_init frame on the console"
    init_off = int(m.group(1), 16)
    offs = {f: off for f, off, _ in frames_of(log)}
    assert {"fgk_test_oops", "fgk_test_fire"} <= set(offs), log[-3000:]
    e = dict(os.environ, FGK_CACHE_DIR=str(tmp_path / "cache"))
    cmds = tmp_path / "cmds"
    cmds.write_text("sym -m fgk_test\nexit\n")
    plain = run(FGK, "crash", "-q", "--no-modules", d / "vmcore.kdump", VMLINUX,
                "-i", cmds, "--crash", CRASH, env=e)
    m = re.search(r"^([0-9a-f]{16}) MODULE INIT(?:_TEXT)? START: fgk_test$", plain.stdout, re.M)
    assert m, plain.stdout[-3000:] + plain.stderr
    init_start = int(m.group(1), 16)
    # fgk_test_init and the names at its address in the .ko (init_module,
    # module_init()'s alias)
    funcs = elf_sections(ko)[1]
    where = {f[0]: (f[1], f[2]) for f in funcs}
    value = where["fgk_test_init"]
    assert value[0] == ".init.text", value
    init_fn = init_start + value[1]
    aliases = {f[0] for f in funcs if (f[1], f[2]) == value}
    cmds.write_text("bt -l\nsym fgk_test_init\nsym fgk_test_fire\ndis -l fgk_test_oops\nexit\n")
    r = run(FGK, "crash", d / "vmcore.kdump", VMLINUX, "-i", cmds, "--crash", CRASH, env=e)
    out = r.stdout
    m = re.search(r"\((\d+) relinked in the dump's order\)", r.stderr)
    assert "seed - (disabled in VMCOREINFO)" in r.stderr and m and int(m.group(1)) >= 1, \
        r.stderr
    assert re.search(rf"^{init_fn:016x} \(\w\) fgk_test_init \[fgk_test\] \S*test_fgkaslr_module\.c",
                     out, re.M), out[-3000:] + r.stderr
    frames = re.findall(r"^\s*#(\d+) \[[0-9a-f]+\] (\S+) at ([0-9a-f]+)", out, re.M)
    names = [f[1] for f in frames]
    assert "fgk_test_fire" in names and "do_one_initcall" in names, out[-3000:]
    after = frames[names.index("fgk_test_fire") + 1]
    assert int(after[2], 16) == init_fn + init_off, (after, out[-3000:])
    # named by the .ko's symbols (6.12: init_module, the global alias crash
    # prefers) or, on 6.1, by crash's pseudo-symbol for the init text's
    # start when fgk_test_init sits at that very address
    assert after[1] in aliases or \
        (after[1] == "_MODULE_INIT_START_fgk_test" and init_fn == init_start), \
        (after, aliases, out[-3000:])
    print(f"init frame #{after[0]} {after[1]} at {after[2]} = fgk_test_init+{init_off:#x}")
    # the core text functions' lines: addr2line -j on the .ko (the
    # innermost of an inline chain, as gdb's line table has it); at a return
    # address, where the line table has several rows (6.12: lines 131, 132
    # and 133 at fgk_test_fire+0xf), stock gdb's on the original .ko placed
    # there, as test_crash_through_module's reference

    def a2l(func, off):
        return addr2line_one(ko, where[func][0], where[func][1] + off)[0]
    got = {}
    m = re.search(r"\[exception RIP: (\w+)\+(\d+)\]\n(?:\s+[A-Z].*\n)+?\s+(/\S+): (\d+)\n", out)
    assert m and m.group(1) == "fgk_test_oops" and int(m.group(2)) == offs["fgk_test_oops"], \
        out[-3000:]
    got["exception RIP fgk_test_oops"] = (m.group(3, 4), a2l("fgk_test_oops", offs["fgk_test_oops"]))
    m = re.search(r"^\s*#\d+ \[[0-9a-f]+\] fgk_test_fire at ([0-9a-f]+) \[fgk_test\]\n"
                  r"\s+(/\S+): (\d+)$", out, re.M)
    assert m, out[-3000:]
    ret = int(m.group(1), 16)
    fire = ret - offs["fgk_test_fire"]
    sec = where["fgk_test_fire"][0]
    ref = gdb_lines({"ko": ko, "dir": d, "caps": [
        f"/sys/module/fgk_test/sections/{sec}:{fire - where['fgk_test_fire'][1]:#x}"]}, [ret])
    got["bt fgk_test_fire"] = (m.group(2, 3), ref[ret])
    m = re.search(r"^([0-9a-f]{16}) \(\w\) fgk_test_fire \[fgk_test\] (\S+): (\d+)$", out, re.M)
    assert m and int(m.group(1), 16) == fire, out[-3000:]
    got["sym fgk_test_fire"] = (m.group(2, 3), a2l("fgk_test_fire", 0))
    m = re.search(r"crash> dis -l fgk_test_oops\n(\S+): (\d+)\n0x[0-9a-f]+ <fgk_test_oops>", out)
    assert m, "dis -l output not understood: " + out[-3000:]
    got["dis -l fgk_test_oops"] = (m.group(1, 2), a2l("fgk_test_oops", 0))
    for what, (crash_fl, want) in got.items():
        assert same_place(crash_fl, want), (what, crash_fl, want, out[-3000:])
    print("nofgkaslr: " + ", ".join(f"{w} {g[1][1]}" for w, g in got.items()) +
          " = addr2line -j (gdb at the return address)")
