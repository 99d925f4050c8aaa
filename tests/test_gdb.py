"""fgk-gdb: `fgk attach` against a running shuffled kernel (QEMU gdbstub).

Also runs the unit tests of fgk-gdb/fgkgdb/core.py (fgk-gdb/tests/), so
`make check` covers them.

The guest tests need an FG-KASLR build (build/kernel/vmlinux with .text.*
sections) and boot twice:

1. base KASLR on (random offset), random seed; the guest prints the
   /proc/kallsyms lines of the target functions, then loops over actions
   that run shuffled functions.  gdb: `fgk attach --vmlinux vmlinux` with
   nothing else (offset from the IDT, seed from fgkaslr_boot_info), then
   breakpoints by name and file:line stop at the kallsyms address, `bt`
   names the callers, `info line` agrees with addr2line on the original
   vmlinux; negative controls: another seed and a vmlinux whose build-id
   differs are refused.
2. `nokaslr fgkaslr_seed=S`, QEMU halted at reset (-S): `fgk attach --seed
   S --offset 0` loads vmlinux.fgk before the kernel runs and an `hbreak`
   on a shuffled function hit during boot stops there.
"""
import os
import random
import re
import shutil
import subprocess
import stat
import sys
import time

import pytest

from conftest import KERNEL_DIR, KERNEL_NAME, REPO, guest, kernel_missing_reason
from oracle import fgk, output, readelf_build_id, readelf_sections

sys.path.insert(0, str(REPO / "fgk-gdb" / "tests"))
import test_core  # noqa: E402

# the unit tests of fgk-gdb/fgkgdb/core.py, collected here too
globals().update({k: v for k, v in vars(test_core).items()
                  if k.startswith("test_") or k in ("fixture_elf", "fixture_obj")})

VMLINUX = KERNEL_DIR / "vmlinux"
FGK = REPO / "build" / "bin" / "fgk"
LOADER = REPO / "fgk-gdb" / "fgk.py"

# shuffled functions the guest loop runs, and the callers bt must show
TARGETS = {
    # the guest reads /proc/version with the shell's `read` (read(2), not sendfile)
    "version_proc_show": ["seq_read_iter", "vfs_read", "ksys_read", "do_syscall_64"],
    "__do_sys_newuname": ["do_syscall_64"],
}
KALLSYMS_NAMES = list(TARGETS) + ["__x64_sys_newuname", "seq_read_iter"]


def fg_missing_reason():
    reason = kernel_missing_reason()
    if reason:
        return reason
    if not shutil.which("gdb"):
        return "gdb not installed (make deps)"
    if not FGK.is_file():
        return "build/bin/fgk missing: run 'make tools'"
    if not any(n.startswith(".text.") for n in readelf_sections(VMLINUX)):
        return (f"{KERNEL_NAME}/vmlinux has no .text.* sections (not an FG-KASLR build "
                "yet): nothing shuffled to debug")
    return None


def require_fg(nofg_ok=False):
    """Skip unless vmlinux is an FG-KASLR build.  With FGK_GDB_TEST_NOFG=1
    the tests marked nofg_ok also run on a non-FG kernel (fgk attach then
    loads vmlinux at the offset): a check of the harness while the FG
    kernel is not built."""
    reason = fg_missing_reason()
    if reason and nofg_ok and os.environ.get("FGK_GDB_TEST_NOFG") == "1" \
            and "no .text.*" in reason:
        return False
    if reason:
        print(reason)
        pytest.skip(reason)
    return True


def gdb(*commands, timeout=900, env=None):
    # timeouts here are upper bounds for a loaded machine, not measurements
    args = ["gdb", "-batch", "-nx", "-ex", "set pagination off", "-ex", "set width 0"]
    for c in commands:
        args += ["-ex", c]
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                       cwd=REPO, env=env)
    print("$ gdb " + " ".join(f"-ex {c!r}" for c in commands))
    print(r.stdout[-6000:])
    print(r.stderr[-3000:])
    return r


def attach_cmds(port, *attach_args):
    return [f"target remote 127.0.0.1:{port}", f"source {LOADER}",
            "fgk attach " + " ".join(str(a) for a in attach_args)]


def nm_link(name):
    out = output("nm", VMLINUX)
    m = re.search(rf"^([0-9a-f]+) [a-zA-Z] {re.escape(name)}$", out, re.M)
    return int(m.group(1), 16)


def link_breakpoint(spec):
    """Where stock gdb puts `break SPEC` in the original vmlinux (link
    addresses, no target): the expected post-prologue offset."""
    r = subprocess.run(["gdb", "-batch", "-nx", str(VMLINUX), "-ex", f"break {spec}"],
                       capture_output=True, text=True, timeout=600)
    m = re.search(r"Breakpoint 1 at (0x[0-9a-f]+): file (\S+), line (\d+)", r.stdout)
    assert m, r.stdout + r.stderr
    return int(m.group(1), 16), m.group(2), int(m.group(3))


def decl_line(name):
    """(file, line) where `name` is declared, from the original vmlinux."""
    r = subprocess.run(["gdb", "-batch", "-nx", str(VMLINUX), "-ex",
                        f"python s = gdb.lookup_static_symbol('{name}') or "
                        f"gdb.lookup_global_symbol('{name}'); "
                        "print('DECL', s.symtab.filename, s.line)"],
                       capture_output=True, text=True, timeout=600)
    m = re.search(r"^DECL (\S+) (\d+)$", r.stdout, re.M)
    assert m, r.stdout + r.stderr
    return m.group(1), int(m.group(2))


def link_info_line(addr):
    """The line of `info line *ADDR` in stock gdb on the original vmlinux."""
    r = subprocess.run(["gdb", "-batch", "-nx", str(VMLINUX), "-ex", f"info line *{addr:#x}"],
                       capture_output=True, text=True, timeout=600)
    m = re.search(r"Line (\d+) of", r.stdout)
    assert m, r.stdout + r.stderr
    return int(m.group(1))


def addr2line(addr):
    out = output("addr2line", "-e", VMLINUX, f"{addr:#x}").strip()
    f, _, line = out.rpartition(":")
    return f, int(line.split()[0])


def live_output(g):
    """What the guest script printed so far (the virtio port, else ttyS1)."""
    for attr in ("out_path", "out2_path"):
        p = getattr(g, attr, None)
        if p is not None and p.is_file():
            text = p.read_text(errors="replace")
            if "FGK-OUTPUT-BEGIN" in text:
                return text
    return ""


def kallsyms(output):
    syms = {}
    for line in output.splitlines():
        f = line.split()
        if len(f) >= 3 and re.fullmatch(r"[0-9a-f]{16}", f[0]):
            syms.setdefault(f[2], int(f[0], 16))
    return syms


# --------------------------------------------------------------------------
# no guest needed

def test_relink_through_the_shared_cache(tmp_path):
    """fgk-gdb relinks through libfgk's one relink-through-cache function:
    the entry `fgk relink` made is reused as it is; a cache that cannot be
    written falls back to $TMPDIR/fgk-gdb-UID (0700), said in one line."""
    require_fg()
    seed = "d7" * 32
    cache = tmp_path / "cache"
    env = dict(os.environ, FGK_CACHE_DIR=str(cache), TMPDIR=str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    r = fgk("relink", VMLINUX, "--seed", seed, env=env, status=0)
    entry = r.stdout.strip()
    mtime = os.stat(entry).st_mtime_ns
    py = ("python from fgkgdb import attach, state; "
          f"print('RELINKED', attach.relink(state.elf({str(VMLINUX)!r}), {seed!r})[0])")
    g = gdb(f"source {LOADER}", py, env=env)
    assert f"RELINKED {entry}\n" in g.stdout, g.stdout + g.stderr
    assert os.stat(entry).st_mtime_ns == mtime, "the cache entry was written again"
    (tmp_path / "file").write_text("")
    env["FGK_CACHE_DIR"] = str(tmp_path / "file" / "cache")
    g = gdb(f"source {LOADER}", py, env=env)
    fb = tmp_path / "t" / f"fgk-gdb-{os.geteuid()}"
    assert f"RELINKED {fb / (seed + '.vmlinux.fgk')}\n" in g.stdout, g.stdout + g.stderr
    assert "not caching" in g.stdout
    assert stat.S_IMODE(os.stat(fb).st_mode) == 0o700


def test_attach_without_guest_says_what_to_do():
    if not shutil.which("gdb"):
        pytest.skip("gdb not installed")
    vm = VMLINUX if VMLINUX.is_file() else "/nonexistent"
    r = gdb(f"source {LOADER}", f"fgk attach --vmlinux {vm}", "help fgk attach",
            "fgk info", timeout=60)
    assert "fgk attach: no guest connected" in r.stderr
    assert "target remote 127.0.0.1:PORT" in r.stderr
    assert "Load the symbols of the FG-KASLR kernel" in r.stdout      # help = docstring
    assert "not attached" in r.stdout


# --------------------------------------------------------------------------
# guest 1: random base offset, random seed, attach to the running kernel

GUEST_SCRIPT = r"""
for f in %s; do grep " $f\$" /proc/kallsyms; done
echo "seed: $(cat /proc/fgkaslr_seed)"
echo "version: $(cat /proc/version)"
echo "cmdline: $(cat /proc/cmdline)"
echo "online: $(cat /sys/devices/system/cpu/online)"
echo "comm1: $(cat /proc/1/comm)"
sed 's/^/mount: /' /proc/mounts
echo READY
echo FGK-GDB-READY > /dev/console
# until the fixture kills the guest: a fixed count would end the guest early
# on a slow, loaded machine
while :; do read -r l < /proc/version; uname > /dev/null; sleep 0.1; done
""" % " ".join(KALLSYMS_NAMES)


@pytest.fixture(scope="module")
def running_guest():
    fg = require_fg(nofg_ok=True)
    seed = "%064x" % random.getrandbits(256)
    g = guest(GUEST_SCRIPT, profile="debug", seed=seed, gdb=0, kaslr=True, timeout=900)
    port = g.gdb_port      # bound by the runner: no race for the port
    g.start()
    try:
        assert g.wait_for_console("FGK-GDB-READY", timeout=600), "guest did not come up"
        assert g.wait_for_output(r"(?m)^READY$", timeout=120), live_output(g)
        out = live_output(g)
        syms = kallsyms(out)
        m = re.search(r"seed: (\S+)", out)
        assert not fg or (m and m.group(1) == seed), out
        print(f"guest: seed {seed}, port {port}, kallsyms {len(syms)} lines")
        yield {"guest": g, "port": port, "seed": seed, "kallsyms": syms, "fg": fg, "out": out}
    finally:
        g.kill()


@pytest.mark.k612
def test_attach_breakpoints_backtrace_lines(running_guest):
    port, syms = running_guest["port"], running_guest["kallsyms"]
    cmds = attach_cmds(port, "--vmlinux", VMLINUX) + ["fgk info"]
    for name in TARGETS:
        cmds += [f"p &{name}", f"info symbol {syms[name]:#x}", f"break {name}",
                 "continue", "p/x $pc", "bt", "info line *$pc", "delete"]
    # a breakpoint by file:line, and `list`
    vfile, vline = decl_line("version_proc_show")
    fl_spec = f"{vfile}:{vline + 4}"          # a line in the function's body
    cmds += [f"break {fl_spec}", "continue", "p/x $pc", "delete",
             f"list {vfile}:{vline},{vline + 6}", "fgk addr version_proc_show", "detach"]
    r = gdb(*cmds)
    assert r.returncode == 0
    out = r.stdout
    assert "fgk attach:" not in r.stderr, r.stderr
    fg = running_guest["fg"]
    if fg:
        assert re.search(r"fgk: seed %s \(guest fgkaslr_boot_info\); \d+/\d+ code bytes"
                         % running_guest["seed"], out)
    else:
        assert "not an FG-KASLR build" in out
    assert "offset:" in out and "IDT gate 0" in out

    pcs = [int(x, 16) for x in re.findall(r"^\$\d+ = (0x[0-9a-f]+)$", out, re.M)]
    stops = re.findall(r"^(?:Thread \d+ hit )?Breakpoint \d+, (?:0x[0-9a-f]+ in )?(\w+) \(",
                       out, re.M)
    assert stops[:len(TARGETS)] == list(TARGETS), stops
    offset = int(re.search(r"kernel offset (0x[0-9a-f]+)", out).group(1), 16)
    print(f"base offset {offset:#x}")

    chunks = re.split(r"^(?:Thread \d+ hit )?Breakpoint \d+, ", out, flags=re.M)[1:]
    for i, name in enumerate(TARGETS):
        rt = syms[name]
        # p &func: the kallsyms address
        assert re.search(rf"\(\*\)\(.*\)\) {rt:#x} <{name}>", out), name
        # vmlinux.fgk: the shuffled code in one section, as a linker emits it
        assert re.search(rf"^{name} in section \.text" + (r"\.fgkaslr" if fg else ""),
                         out, re.M), name
        # the stop: kallsyms address + the prologue gdb skips in vmlinux
        link_bp, bfile, bline = link_breakpoint(name)
        pc = pcs[i]
        assert pc == rt + (link_bp - nm_link(name)), (name, hex(pc), hex(rt))
        chunk = chunks[i]
        frames = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\w+) ", chunk, re.M)
        assert frames[0] == name
        for caller in TARGETS[name]:
            assert caller in frames, (name, frames)
        # info line *$pc: the file addr2line gives for the link address in
        # vmlinux, and the line stock gdb gives there (addr2line takes the
        # first of several line rows at one address, gdb the last)
        m = re.search(r'Line (\d+) of "([^"]+)"', chunk)
        assert m, chunk
        afile, aline = addr2line(link_bp)
        assert os.path.normpath(afile).endswith(os.path.normpath(m.group(2))), \
            (m.groups(), afile)
        assert int(m.group(1)) == link_info_line(link_bp), (m.groups(), afile, aline)
        assert abs(int(m.group(1)) - aline) <= 3, (m.groups(), afile, aline)
    # break FILE:LINE stopped in version_proc_show where it is in vmlinux
    assert stops[len(TARGETS)] == "version_proc_show"
    link_fl, _, _ = link_breakpoint(fl_spec)
    assert pcs[len(TARGETS)] == syms["version_proc_show"] + link_fl - \
        nm_link("version_proc_show")
    assert re.search(r"^\d+\s+.*version_proc_show\(struct seq_file \*m", out, re.M)
    if fg:      # fgk addr: runtime address, link address, symbol, section
        assert re.search(r"^version_proc_show\t%#x\t%#x\tversion_proc_show\+0x0/0x[0-9a-f]+"
                         r"\t\.text\.version_proc_show$"
                         % (syms["version_proc_show"], nm_link("version_proc_show")),
                         out, re.M), out[-2000:]


@pytest.mark.k612
def test_attach_wrong_seed_is_refused(running_guest):
    if not running_guest["fg"]:
        pytest.skip("non-FG kernel: any seed is ignored")
    other = "%064x" % (int(running_guest["seed"], 16) ^ 0x5a5a)
    r = gdb(*attach_cmds(running_guest["port"], "--vmlinux", VMLINUX, "--seed", other),
            "info symbol version_proc_show", "fgk info", "detach")
    assert f"the guest's code does not match seed {other} (wrong seed or wrong vmlinux)" \
        in r.stderr
    assert "nothing loaded" in r.stderr
    assert "not attached" in r.stdout          # no state, no symbols from the wrong seed
    assert "No symbol table is loaded" in r.stderr or "version_proc_show in" not in r.stdout


@pytest.mark.k612
def test_attach_wrong_build_id_is_refused(running_guest, tmp_path):
    import libfgk
    from elftools.elf.elffile import ELFFile
    copy = tmp_path / "vmlinux"
    shutil.copyfile(VMLINUX, copy)
    with open(copy, "rb") as f:
        notes = ELFFile(f).get_section_by_name(".notes")
        off, data = notes["sh_offset"], notes.data()
    bid = bytes.fromhex(libfgk.Vmlinux(copy).build_id)
    pos = data.index(bid)
    with open(copy, "r+b") as f:
        f.seek(off + pos)
        f.write(bytes(b ^ 0xff for b in bid[:4]))
    r = gdb(*attach_cmds(running_guest["port"], "--vmlinux", copy), "detach")
    assert "vmlinux build-id differs from the guest's" in r.stderr
    assert "--vmlinux" in r.stderr


def test_attach_without_fgk_tool_says_make_tools(running_guest, tmp_path):
    if not running_guest["fg"]:
        pytest.skip("non-FG kernel: the fgk tool is not needed")
    ext = tmp_path / "elsewhere" / "fgk-gdb"        # no build/bin/fgk next to it
    shutil.copytree(REPO / "fgk-gdb", ext, ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "FGK"}
    env["PATH"] = "/usr/bin:/bin"
    assert not shutil.which("fgk", path=env["PATH"])
    r = gdb(f"target remote 127.0.0.1:{running_guest['port']}", f"source {ext}/fgk.py",
            f"fgk attach --vmlinux {VMLINUX}", "detach", env=env)
    assert "fgk attach: the libfgk Python binding is missing" in r.stderr
    assert "run 'make tools'" in r.stderr


def test_attach_twice_with_the_loaded_file(running_guest):
    """No --vmlinux: the file gdb has loaded; a second attach (now the loaded
    file is vmlinux.fgk) still means the original vmlinux."""
    r = gdb(f"file {VMLINUX}", f"target remote 127.0.0.1:{running_guest['port']}",
            f"source {LOADER}", "fgk attach --no-modules", "fgk attach --no-modules",
            "fgk info", f"info symbol {running_guest['kallsyms']['version_proc_show']:#x}",
            "detach")
    assert "fgk attach:" not in r.stderr, r.stderr
    assert r.stdout.count("kernel offset 0x") == 2
    assert re.search(rf"^vmlinux:\s+{VMLINUX}$", r.stdout, re.M)
    assert re.search(r"^version_proc_show in section", r.stdout, re.M)


@pytest.mark.k612
def test_attach_seed_file_and_offset(running_guest, tmp_path):
    """--seed-file (seed, build-id, offset from a seed record) and a wrong
    --offset or a record for another build are refused with what to do."""
    if not running_guest["fg"]:
        pytest.skip("non-FG kernel")
    port, seed = running_guest["port"], running_guest["seed"]
    bid = readelf_build_id(VMLINUX)
    r = gdb(*attach_cmds(port, "--vmlinux", VMLINUX), "detach")
    offset = int(re.search(r"kernel offset (0x[0-9a-f]+)", r.stdout).group(1), 16)
    good = tmp_path / "good.seed"
    good.write_text(f"# test\nseed: {seed}\nbuild-id: {bid}\noffset: {offset:#x}\n")
    other = tmp_path / "other.seed"
    other.write_text(f"seed: {seed}\nbuild-id: {'0' * 40}\n")
    r = gdb(*attach_cmds(port, "--vmlinux", VMLINUX, "--seed-file", good, "--no-modules"),
            "fgk info", "fgk attach --seed-file " + str(other),
            f"fgk attach --offset {offset + 0x200000:#x} --seed {seed}", "detach")
    assert re.search(rf"^seed:\s+{seed} \(from seed record {good}\)$", r.stdout, re.M)
    assert re.search(rf"^offset:\s+{offset:#x} \(from seed record {good} \(build-id "
                     rf"{bid} matches", r.stdout, re.M)
    assert f"fgk attach: seed record {other} is for build-id {'0' * 40}" in r.stderr
    assert "wrong --offset" in r.stderr


@pytest.mark.k612
def test_address_functions(running_guest):
    """$fgk_runtime(link) and $fgk_link(runtime) agree with /proc/kallsyms."""
    syms = running_guest["kallsyms"]
    cmds = attach_cmds(running_guest["port"], "--vmlinux", VMLINUX, "--no-modules")
    for name in TARGETS:
        cmds += [f"p/x $fgk_runtime({nm_link(name):#x})", f"p/x $fgk_link({syms[name]:#x})"]
    r = gdb(*cmds, "detach")
    vals = [int(x, 16) for x in re.findall(r"^\$\d+ = (0x[0-9a-f]+)$", r.stdout, re.M)]
    want = []
    for name in TARGETS:
        want += [syms[name], nm_link(name)]
    assert vals == want, [hex(v) for v in vals]


def test_attach_to_running_guest_says_stop_it(running_guest):
    r = gdb(f"target remote 127.0.0.1:{running_guest['port']}", f"source {LOADER}",
            "continue &", f"fgk attach --vmlinux {VMLINUX}", "interrupt", "shell sleep 1",
            "detach")
    assert "fgk attach: the guest is running: stop it first (Ctrl-C or 'interrupt')" \
        in r.stderr


@pytest.mark.k612
def test_kernel_scripts_work(running_guest):
    if not any(os.path.isfile(p) for p in (KERNEL_DIR / "vmlinux-gdb.py",
                                           KERNEL_DIR / "build" / "vmlinux-gdb.py")):
        pytest.skip(f"no vmlinux-gdb.py next to {KERNEL_NAME}/vmlinux (CONFIG_GDB_SCRIPTS)")
    # the per-CPU current task: current_task, in struct pcpu_hot since 6.2
    nm = output("nm", VMLINUX)
    pcpu = "current_task" if re.search(r" current_task$", nm, re.M) else "pcpu_hot"
    r = gdb(*attach_cmds(running_guest["port"], "--vmlinux", VMLINUX),
            "lx-dmesg", "lx-ps", "lx-lsmod", "p $lx_current().comm", f"p &{pcpu}",
            "echo ====\\n", "lx-version", "echo ====\\n", "lx-cmdline", "echo ====\\n",
            "lx-mounts", "echo ====\\n", "lx-cpus", "p $lx_task_by_pid(1).comm", "detach")
    assert "kernel gdb scripts: loaded" in r.stdout
    assert "Python Exception" not in r.stderr, r.stderr
    # what the guest's own /proc says, read by the tree's scripts through
    # the relinked symbols
    guest_out = running_guest["out"]
    proc = dict(re.findall(r"^(version|cmdline|online|comm1): (.*)$", guest_out, re.M))
    _, version, cmdline, mounts, rest = r.stdout.split("====\n")
    assert version.strip() == proc["version"].strip(), (version, proc["version"])
    assert cmdline.strip() == proc["cmdline"].strip(), (cmdline, proc["cmdline"])
    want = {tuple(line.split()[:3]) for line in re.findall(r"^mount: (.*)$", guest_out, re.M)}
    got = {tuple(line.split()[2:5]) for line in mounts.splitlines()
           if re.match(r"0x[0-9a-f]+ 0x[0-9a-f]+ ", line)}
    assert got == want and want, (got, want)
    online = [int(c) for part in proc["online"].split(",")
              for c in ([part] if "-" not in part else
                        range(int(part.split("-")[0]), int(part.split("-")[1]) + 1))]
    assert re.search(r"^Online CPUs\s*: %s$" % re.escape(str(online)), rest, re.M), rest
    assert re.search(r'^\$\d+ = "%s"' % re.escape(proc["comm1"]), rest, re.M), rest
    # per-CPU symbols are not moved by the base offset
    # gdb's automatic language follows the frame the guest stopped in: C
    # prints "(struct task_struct **)", asm (entry code, user mode) drops
    # "struct".  fgk attach leaves the language alone (docs/fgk-gdb.md).
    m = re.search(r"\((?:struct )?(?:task_struct \*\*|pcpu_hot \*)\) (0x[0-9a-f]+) <%s>" % pcpu,
                  r.stdout)
    assert m, r.stdout
    cur = int(m.group(1), 16)
    assert cur == nm_link(pcpu) < 0x100000
    assert re.search(r'^\$1 = "', r.stdout, re.M)                  # $lx_current()
    assert re.search(r"^Address\s+Module\s+Size\s+Used by", r.stdout, re.M)   # lx-lsmod
    assert "Linux version" in r.stdout                          # lx-dmesg
    assert re.search(r"\b1\s+init\b|\bsh\b|\bswapper", r.stdout)  # lx-ps


SECTS_PY = r"""
import gdb
m = gdb.parse_and_eval("mod").dereference()
sa = m["sect_attrs"]
print("MODNAME", m["name"].string())
print("MODINIT", hex(int(m["init"])), gdb.execute(f"info symbol {int(m['init'])}",
      to_string=True).strip())
for i in range(int(sa["nsections"])):
    a = sa["attrs"][i]
    n = a["battr"]["attr"]["name"].string()
    ad = int(a["address"])
    if ad:
        print("SECT", n, hex(ad), gdb.execute(f"info symbol {ad}", to_string=True).strip())
"""


def ko_section_heads(ko):
    """{section name: [function names at offset 0 of it]} of a .ko; with
    CALL_PADDING (6.12) a section starts with __pfx_F, and F, at the end of
    that padding, counts as its head too."""
    out = subprocess.run(["readelf", "-sW", "-SW", str(ko)], capture_output=True,
                         text=True, check=True).stdout
    names = {}
    for m in re.finditer(r"^\s*\[\s*(\d+)\]\s+(\S+)\s+PROGBITS", out, re.M):
        names[m.group(1)] = m.group(2)
    funcs = [f for f in (line.split() for line in out.splitlines())
             if len(f) == 8 and f[0].endswith(":") and f[3] == "FUNC" and f[6] in names]
    pfx_end = {f[6]: int(f[2]) for f in funcs
               if int(f[1], 16) == 0 and f[7].startswith("__pfx_")}
    heads = {}
    for f in funcs:
        if int(f[1], 16) in (0, pfx_end.get(f[6], 0)):
            heads.setdefault(names[f[6]], []).append(f[7])
    return heads


def ko_function(ko, name):
    """(section, offset in it, size) of the function `name` of a .ko."""
    out = output("readelf", "-sW", "-SW", ko)
    names = {m.group(1): m.group(2)
             for m in re.finditer(r"^\s*\[\s*(\d+)\]\s+(\S+)", out, re.M)}
    for f in (line.split() for line in out.splitlines()):
        if len(f) == 8 and f[0].endswith(":") and f[3] == "FUNC" and f[7] == name:
            return names[f[6]], int(f[1], 16), int(f[2], 0)
    raise AssertionError(f"no function {name} in {ko}")


def ko_addr2line(ko, section, off):
    """(file, line) addr2line gives for offset `off` of `section` of a .ko."""
    out = output("addr2line", "-e", ko, "-j", section, f"{off:#x}").strip()
    f, _, line = out.rpartition(":")
    return f, int(line.split()[0])


@pytest.mark.k612
def test_module_dwarf_with_placed_sections(tmp_path):
    """gdb relocates a .ko's DWARF to the addresses add-symbol-file gives
    only when no section of the .ko has an address of its own; Linux 6.12's
    scripts/module.lds.S gives __patchable_function_entries and .data none,
    so `ld -r` leaves them at the location counter.  fgk-gdb then loads a
    copy with addresses 0: `p &FUNC`, `info line` and `break FUNC` of each
    shuffled function land in the section given, where addr2line -j puts
    its lines.  A .ko without placed sections (6.1's) gets a placed .data
    from objcopy, as 6.12's are built."""
    if not shutil.which("gdb"):
        pytest.skip("gdb not installed")
    ko = module_ko_under_test()
    placed = [n for n, (_, addr, _) in readelf_sections(ko).items() if addr]
    if not placed:
        orig, ko = ko, tmp_path / ko.name
        subprocess.run(["objcopy", "--change-section-address", ".data=0x88", str(orig),
                        str(ko)], check=True)
        placed = [".data"]
    # every allocated section somewhere else, as the module loader does
    out = output("readelf", "-SW", ko)
    secs, addr = {}, 0xffffffffc0100000
    for m in re.finditer(r"^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+"
                         r"([0-9a-f]+)\s+[0-9a-f]+\s+(\w*)", out, re.M):
        if "A" in m.group(3) and int(m.group(2), 16):
            secs[m.group(1)] = addr
            addr += (int(m.group(2), 16) + 0xfff) & ~0xfff
    funcs = [f for f in ("fgk_test_leaf", "fgk_test_fire", "fgk_test_oops")
             if ko.name == "fgk_test.ko"] or ["init_module"]
    where = {f: ko_function(ko, f) for f in funcs}
    script = tmp_path / "load.py"
    script.write_text(
        "import gdb\nfrom fgkgdb import core, modules\n"
        f"path, note = modules.gdb_loadable_ko({str(ko)!r})\n"
        "print('NOTE', note)\n"
        f"gdb.execute(core.add_symbol_file_command(path, {secs!r}), to_string=True)\n")
    cmds = [f"source {LOADER}", "set confirm off", f"source {script}"]
    for f in funcs:
        sect, off, _ = where[f]
        cmds += [f"echo ==== {f}\\n", f"p &{f}",
                 f"info line *{secs[sect] + off + 4:#x}", f"break {f}"]
    r = gdb(*cmds, timeout=120)
    assert "Python Exception" not in r.stderr, r.stderr
    assert re.search(r"^NOTE sections %s had an address in the \.ko: gdb reads a copy with "
                     r"address 0 \(/" % re.escape(", ".join(placed)), r.stdout, re.M), r.stdout
    for f in funcs:
        sect, off, size = where[f]
        start = secs[sect] + off
        chunk = r.stdout.split(f"==== {f}\n", 1)[1].split("====", 1)[0]
        # p &FUNC: the function's DWARF address in the section given
        assert re.search(rf"^\$\d+ = \(.*\) {start:#x} <{f}>$", chunk, re.M), (f, hex(start))
        # info line: the line addr2line -j gives at that offset of the section
        m = re.search(r'^Line (\d+) of "([^"]+)"', chunk, re.M)
        assert m, (f, chunk)
        afile, aline = ko_addr2line(ko, sect, off + 4)
        assert afile.endswith(m.group(2)) and int(m.group(1)) == aline, (f, m.groups(), afile,
                                                                         aline)
        # break FUNC: after its prologue, inside it
        m = re.search(r"^Breakpoint \d+ at (0x[0-9a-f]+): file ", chunk, re.M)
        assert m and start <= int(m.group(1), 16) < start + size, (f, hex(start), chunk)


def module_ko_under_test():
    """fgk_test.ko (the series' test module: shuffled functions, a call
    chain its init runs through), else the first module the kernel built."""
    kos = sorted((KERNEL_DIR / "modules").rglob("*.ko")) if (KERNEL_DIR / "modules").is_dir() \
        else []
    if not kos:
        reason = f"the kernel builds no modules (no .ko under {KERNEL_NAME}/modules)"
        print(reason)
        pytest.skip(reason)
    return next((k for k in kos if k.name == "fgk_test.ko"), kos[0])


@pytest.mark.k612
def test_module_symbols(tmp_path):
    """A module inserted after attach: the do_init_module hook loads its .ko
    with every section's address; gdb then names the function at the start
    of each of its code sections and its init function, and (fgk_test.ko)
    a breakpoint in a shuffled function its init calls stops there, with
    the module's frames and lines in bt."""
    fg = require_fg(nofg_ok=True)
    ko = module_ko_under_test()
    modname = ko.name[:-3].replace("-", "_")
    (tmp_path / "sects.py").write_text(SECTS_PY)
    script = ("echo READY > /dev/console\n"
              "while :; do insmod /fgk/m.ko 2>/dev/null; rmmod %s "
              "2>/dev/null; sleep 0.2; done\n" % modname)
    g = guest(script, profile="debug", seed="%064x" % random.getrandbits(256), gdb=0,
              kaslr=True, timeout=600, files={"/fgk/m.ko": ko})
    port = g.gdb_port      # bound by the runner: no race for the port
    g.start()
    try:
        assert g.wait_for_console("READY", timeout=600), "guest did not come up"
        # fgk_test's init runs fgk_test_unwind -> _top -> _mid -> _leaf
        leaf = ["break fgk_test_leaf", "continue", "p/x $pc", "bt", "info line *$pc",
                "p &fgk_test_leaf"] if ko.name == "fgk_test.ko" else []
        r = gdb(*attach_cmds(port, "--vmlinux", VMLINUX), "break do_init_module",
                "continue", f"source {tmp_path / 'sects.py'}", "fgk info", "fgk modules",
                "delete", *leaf, "delete", "detach")
    finally:
        g.kill()
    out = r.stdout
    assert "fgk attach:" not in r.stderr, r.stderr
    assert f"fgk: module {modname}: {ko}" in out, "the hook did not load the module"
    assert re.search(rf"^  {modname}: {re.escape(str(ko))} \(\d+ sections\)", out, re.M)
    m = re.search(r"^MODINIT (0x[0-9a-f]+) (\w+) in section \.init\.text", out, re.M)
    assert m, out
    heads = ko_section_heads(ko)
    assert m.group(2) in heads[".init.text"], (m.group(2), heads)
    code = {n: h for n, h in heads.items() if n == ".text" or n.startswith(".text.")}
    seen = 0
    for name, addr, sym in re.findall(r"^SECT (\S+) (0x[0-9a-f]+) (\S+)", out, re.M):
        if name in code:
            # gdb names the split-off part of f (ELF symbol f.cold) "f[cold]"
            sym = re.sub(r"\[cold\]$", ".cold", sym)
            # and may drop a clone's number: loop_config_discard.isra(.0)
            assert any(c == sym or c.startswith(sym + ".") for c in code[name]), \
                (name, addr, sym, code[name])
            seen += 1
    assert seen >= 1
    if fg:
        assert seen == len(code) and len(code) > 1, (seen, code)
    assert re.search(r"^fgk: modules: 1 loaded$", out, re.M)         # fgk modules
    print(f"module {modname}: {seen} code sections named right")
    if ko.name != "fgk_test.ko":
        return
    # the breakpoint by name in a shuffled module function: its section's
    # address in the guest + the function's offset in it, the lines
    # addr2line -j gives there, the module's callers with file:line
    sect, off, size = ko_function(ko, "fgk_test_leaf")
    base = int(re.search(rf"^SECT {re.escape(sect)} (0x[0-9a-f]+) ", out, re.M).group(1), 16)
    assert re.search(rf"^\$\d+ = \(.*\) {base + off:#x} <fgk_test_leaf>$", out, re.M), out
    assert re.search(r"^(?:Thread \d+ hit )?Breakpoint \d+, (?:0x[0-9a-f]+ in )?"
                     r"fgk_test_leaf \(", out, re.M), out
    pc = int(re.search(r"^\$\d+ = (0x[0-9a-f]+)$", out, re.M).group(1), 16)
    assert base + off <= pc < base + off + size, (hex(pc), hex(base + off))
    # (at a function's first byte the line table has several rows, '{'
    # and the first statement: addr2line takes the first, gdb the last)
    m = re.search(r'^Line (\d+) of "([^"]+)"', out, re.M)
    afile, aline = ko_addr2line(ko, sect, pc - base)
    assert m and afile.endswith(m.group(2)) and 0 <= int(m.group(1)) - aline <= 3, \
        (m and m.groups(), afile, aline)
    frames = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\w+) \(.*\) at (\S+):(\d+)$", out, re.M)
    names = [f[0] for f in frames]
    assert names[:4] == ["fgk_test_leaf", "fgk_test_mid", "fgk_test_top", "fgk_test_unwind"], \
        frames
    assert all(f[1].endswith("test_fgkaslr_module.c") for f in frames[:4]), frames
    # on through the init text into the kernel that called it
    assert {"fgk_test_init", "do_one_initcall"} <= set(names), frames


def test_attach_unshuffled_boot(tmp_path):
    """nofgkaslr: fgkaslr_boot_info says not shuffled: vmlinux itself is
    loaded at the offset, and a breakpoint stops at link address + offset."""
    fg = require_fg()
    script = ('grep " version_proc_show$" /proc/kallsyms\necho READY > /dev/console\n'
              "while :; do read -r l < /proc/version; sleep 0.1; done\n")
    g = guest(script, profile="debug", gdb=0, kaslr=True, append="nofgkaslr",
              timeout=600)
    port = g.gdb_port      # bound by the runner: no race for the port
    g.start()
    try:
        assert g.wait_for_console("READY", timeout=600), "guest did not come up"
        assert g.wait_for_output(r" version_proc_show\n", timeout=120), live_output(g)
        syms = kallsyms(live_output(g))
        r = gdb(*attach_cmds(port, "--vmlinux", VMLINUX), "break version_proc_show",
                "continue", "p/x $pc", "detach")
    finally:
        g.kill()
    assert fg
    out = r.stdout
    assert "fgk attach:" not in r.stderr, r.stderr
    assert re.search(r"the guest did not shuffle \(flags: [^)]*nofgkaslr[^)]*\): its layout "
                     r"is link order; loaded \S+/vmlinux at offset 0x[0-9a-f]+", out), out
    offset = int(re.search(r"kernel offset (0x[0-9a-f]+)", out).group(1), 16)
    assert syms["version_proc_show"] == nm_link("version_proc_show") + offset
    pc = int(re.search(r"^\$1 = (0x[0-9a-f]+)$", out, re.M).group(1), 16)
    link_bp, _, _ = link_breakpoint("version_proc_show")
    assert pc == link_bp + offset


# --------------------------------------------------------------------------
# guest 2: halted at reset, nokaslr + fixed seed: hbreak before the kernel runs

EARLY_FUNC = "vprintk_emit"     # first printk of start_kernel; shuffled


def test_attach_before_boot_hbreak():
    fg = require_fg(nofg_ok=True)
    seed = "%064x" % random.getrandbits(256)
    if fg:
        lay = fgk("layout", VMLINUX, "--seed", seed, status=0).stdout
        if f"\t.text.{EARLY_FUNC}\t" not in lay:
            pytest.skip(f"{EARLY_FUNC} is not in a .text.* section of this vmlinux")
    script = f'grep " {EARLY_FUNC}$" /proc/kallsyms\n'
    g = guest(script, profile="debug", seed=seed, gdb=0, wait_gdb=True, timeout=900)
    port = g.gdb_port      # bound by the runner: no race for the port
    g.start()
    try:
        time.sleep(1)
        r = gdb(*attach_cmds(port, "--vmlinux", VMLINUX, "--seed", seed, "--offset", "0"),
                f"hbreak {EARLY_FUNC}", "continue", "p/x $pc", "bt 2", "delete",
                "fgk info", "detach")
        res = g.wait()
    finally:
        g.kill()
    out = r.stdout
    assert "fgk attach:" not in r.stderr, r.stderr
    assert "NOT verified" in out
    if fg:
        assert re.search(r"loaded \S+ at offset 0x0 \(\d+ shuffled sections\)", out)
    assert re.search(rf"Breakpoint \d+, (?:0x[0-9a-f]+ in )?{EARLY_FUNC} \(", out), out
    pc = int(re.search(r"^\$1 = (0x[0-9a-f]+)$", out, re.M).group(1), 16)
    syms = kallsyms(res.output)
    assert EARLY_FUNC in syms, res.output
    link_bp, _, _ = link_breakpoint(EARLY_FUNC)
    assert pc == syms[EARLY_FUNC] + (link_bp - nm_link(EARLY_FUNC))
