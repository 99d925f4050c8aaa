"""Crash dumps of a shuffled kernel: qemu-profiles/run --dump-dir, fgk crash,
fgk seed capture, replay, drgn (issue 7).

One guest boots with a random FG-KASLR seed and base KASLR on, prints its
/proc/fgkaslr_seed and its whole /proc/kallsyms, and panics through
`echo c > /proc/sysrq-trigger`; the runner saves an ELF and a
kdump-compressed dump (module fixture `crashed`).  Then:

  * `fgk crash DUMP -i cmds` (bt, sym, dis -l) on both dumps: the panic
    stack has the right functions, each frame's address is the oops's
    func+off on top of the kallsyms address captured before the crash,
    `sym` addresses equal kallsyms, `dis -l` starts at the kallsyms address
    with the source line addr2line gives for the unshuffled vmlinux;
  * a vmlinux of another build (a copy whose build-id note differs) is
    refused naming both build-ids; truncated dumps and garbage give one-line
    errors; a dump without VMCOREINFO falls back to --seed-file;
  * `fgk seed capture` from the dump and from the script output give the
    runner's record; replaying it boots the same /proc/kallsyms (offset
    removed);
  * drgn on the ELF dump with vmlinux.fgk finds the panicking task, gives
    each symbol its kallsyms address and unwinds the panic stack (the stack
    needs drgn >= 0.0.23 on Linux >= 6.4: scripts/build-drgn).

On a kernel without the FG-KASLR series (no .text.* sections in vmlinux) the
shuffled proofs skip and say why; the *_unshuffled tests run the same
checks with the plain vmlinux instead (the baseline of the same tools), and
the runner, bad-dump and other-build tests run on either.
"""
import os
import re
import secrets
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BIN_DIR, KERNEL_DIR, KERNEL_NAME, REPO, require_kernel
from oracle import run
from debuginfod_server import debuginfod_factory, kernel_debuginfod  # noqa: F401

import fgkdump
import fgkrun
import libfgk

FGK = BIN_DIR / "fgk"
# FGK_TEST_KERNEL_DIR (bzImage, vmlinux, System.map, release) and
# FGK_TEST_APPEND (e.g. qemu_fw_cfg.ioport=0xc@0x510 for a kernel without
# ACPI) run these tests on another build than build/kernel.
KERNEL_DIR = Path(os.environ.get("FGK_TEST_KERNEL_DIR") or KERNEL_DIR)
EXTRA_APPEND = os.environ.get("FGK_TEST_APPEND", "")
VMLINUX = KERNEL_DIR / "vmlinux"
PANIC_FUNCS = ["sysrq_handle_crash", "__handle_sysrq", "write_sysrq_trigger"]
DRGN = shutil.which("drgn")
CRASH = shutil.which("crash")

GUEST_SCRIPT = r"""
echo "fgkaslr-seed: $(cat /proc/fgkaslr_seed 2>/dev/null || echo none)"
echo kallsyms-begin
cat /proc/kallsyms
echo kallsyms-end
echo c > /proc/sysrq-trigger
"""


def is_fg_vmlinux():
    with libfgk.Vmlinux(VMLINUX) as vm:
        return vm.kind != "plain"


def require_tools():
    require_kernel()
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")
    if not CRASH:
        pytest.skip("crash not installed: run 'make deps'")


def require_fg():
    if not is_fg_vmlinux():
        reason = (f"{KERNEL_NAME}/vmlinux has no .text.* sections (not an FG-KASLR "
                  "build yet): no shuffled dump to prove anything on; the *_unshuffled baselines run")
        print(reason)
        pytest.skip(reason)


def kallsyms_of(output):
    m = re.search(r"^kallsyms-begin\n(.*?)^kallsyms-end$", output, re.S | re.M)
    assert m, "no kallsyms in the guest output"
    syms = []
    for line in m.group(1).splitlines():
        if "\t" in line:            # module symbols
            continue
        f = line.split()
        if len(f) == 3:
            syms.append((int(f[0], 16), f[1], f[2]))
    return syms


def frame_index(names, func):
    """Index of func in a list of frame names (func.cold etc. count)."""
    for i, n in enumerate(names):
        if n == func or n.startswith(func + "."):
            return i
    raise AssertionError(f"{func} not in the stack: {names}")


def kallsyms_addr(syms, name):
    addrs = {a for a, _, n in syms if n == name}
    assert len(addrs) == 1, f"{name}: {len(addrs)} addresses in kallsyms"
    return addrs.pop()


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    """(The dumps, 0.5 GiB, are removed after the module unless
    FGK_KEEP_DUMPS is set.)"""
    c = make_crashed(tmp_path_factory)
    yield c
    if not os.environ.get("FGK_KEEP_DUMPS"):
        for name in ("vmcore", "vmcore.kdump"):
            (c["dir"] / name).unlink(missing_ok=True)
        shutil.rmtree(c["cache"], ignore_errors=True)


def make_crashed(tmp_path_factory):
    """Boot with a random seed and base KASLR, capture kallsyms, crash, dump:
    `qemu-profiles/run dump --dump-dir D --init SCRIPT [--seed S]`.  D is
    made by the runner, which runs with umask 022 (test_dump_dir_private)."""
    require_tools()
    fg = is_fg_vmlinux()
    seed = secrets.token_hex(32) if fg else None
    d = tmp_path_factory.mktemp("dump") / "D"
    (d.parent / "guest.sh").write_text(GUEST_SCRIPT)
    cmd = [REPO / "qemu-profiles" / "run", "dump", "--dump-dir", d,
           "--init", d.parent / "guest.sh", "--timeout", "240",
           "--kernel", KERNEL_DIR / "bzImage"]
    if EXTRA_APPEND:
        cmd += ["--append", EXTRA_APPEND]
    if seed:
        cmd += ["--seed", seed]
    r = run(*cmd, preexec_fn=lambda: os.umask(0o022))
    print(r.stderr)
    assert r.returncode == 0, f"no dump taken: {r.stderr}"
    assert f"run: saved in {d}: " in r.stderr
    assert (d / "vmcore").is_file() and (d / "vmcore.kdump").is_file()
    log = (d / "serial.log").read_text()
    output = (d / "output").read_text()
    m = re.search(r"Kernel Offset: (0x[0-9a-f]+) from", log)
    assert m, "no 'Kernel Offset:' line in the panic"
    return {
        "fg": fg, "seed": seed, "dir": d,
        "output": output, "log": log,
        "kallsyms": kallsyms_of(output),
        "offset": int(m.group(1), 16),
        "cache": tmp_path_factory.mktemp("fgk-cache"),
    }


def fgk_env(crashed):
    return dict(os.environ, FGK_CACHE_DIR=str(crashed["cache"]))


def oops_frames(log):
    """{func: {offsets}} of the Call Trace lines of the panic on the console,
    the unreliable ('? f+off') ones included: crash's bt reports return
    addresses it finds on the stack without that mark (Debian's kernel left
    a stale do_syscall_64+0x69 above the live do_syscall_64+0x5d)."""
    frames = {}
    for m in re.finditer(r"^\[[ \d.]+\]\s+(?:\? )?(\S+)\+(0x[0-9a-f]+)/0x[0-9a-f]+$", log, re.M):
        frames.setdefault(m.group(1), set()).add(int(m.group(2), 16))
    return frames


def oops_rsp(log):
    """The interrupted RSP of the first kernel-mode oops on the console
    ('RSP: 0018:...')."""
    m = re.search(r"^\[[ \d.]+\] RSP: 0018:([0-9a-f]{16}) ", log, re.M)
    assert m, "no kernel-mode RSP line on the console"
    return int(m.group(1), 16)


def stack_words(out, addr):
    """The words `rd -s ADDR N` printed from addr on, as crash names them
    (FUNC+DECIMAL or hex)."""
    m = re.search(r"^crash> rd -s %x \d+\n((?:[0-9a-f]{16}:.*\n)+)" % addr, out, re.M)
    assert m, f"no 'rd -s {addr:x}' answer: {out[-3000:]}"
    return [w for line in m.group(1).splitlines() for w in line.split()[1:]]


def eframe_gap_frames(out, rsp):
    """Frames crash's bt printed from the 8-byte slot between a kernel-mode
    exception frame and the stack pointer it interrupted.

    crash 8.0.6's x86_64 bt goes on after an exception frame at the end of
    its pt_regs, not at the RSP saved in it.  When that RSP was 8 mod 16
    (a leaf such as fgk_test_oops() faulting with the return address on
    top), the CPU aligned the stack before pushing the frame and left one
    slot between the two, holding whatever an earlier, deeper call left
    there.  If that is a kernel text address, crash prints it as a frame,
    sizes the frame by its ORC entry and goes on above the real callers:
    on a dump with such a word there, bt goes `[exception RIP:
    fgk_test_oops+4]` -> `param_attr_store` -> `param_attr_store`, without
    fgk_test_fire and fgk_test_param_set (docs/crash-replay.md, "Known
    limits").  That is crash's unwinder on any x86_64 kernel, shuffled or
    not; the callers are still on the stack at RSP, where `rd -s` names
    them through the same symbols."""
    return [(int(a, 16), name) for a, name in
            re.findall(r"^\s*#\d+ \[([0-9a-f]+)\] (\w+) at ", out, re.M)
            if rsp - 16 < int(a, 16) < rsp]


def link_line(func):
    """(file, line) gdb gives for func's link address in the unshuffled
    vmlinux (crash embeds gdb: same line-table rules, independent of the
    relinking)."""
    smap = (KERNEL_DIR / "System.map").read_text()
    m = re.search(rf"^([0-9a-f]{{16}}) [tT] {re.escape(func)}$", smap, re.M)
    assert m, f"{func} not in System.map"
    out = run("gdb", "-nx", "-batch", "-ex", f"info line *0x{m.group(1)}", VMLINUX,
              check=True).stdout
    m = re.search(r'^Line (\d+) of "([^"]+)"', out, re.M)
    assert m, out
    return m.group(2), int(m.group(1))


def same_line(crash_file, crash_line, ref):
    return (crash_file == ref[0] or crash_file.endswith("/" + ref[0])) \
        and int(crash_line) == ref[1]


def crash_session(crashed, dump, tmp_path, extra_cmds=()):
    cmds = ["bt"] + [f"sym {f}" for f in PANIC_FUNCS] + ["dis -l sysrq_handle_crash"] \
        + list(extra_cmds) + ["exit"]
    (tmp_path / "cmds").write_text("\n".join(cmds) + "\n")
    r = run(FGK, "crash", dump, VMLINUX, "-i", tmp_path / "cmds", env=fgk_env(crashed))
    print(r.stderr)
    assert r.returncode == 0, r.stderr + r.stdout[-2000:]
    return r


def check_crash_output(crashed, r):
    out = r.stdout
    syms = crashed["kallsyms"]
    # bt: the panic stack, in order, each frame at kallsyms + the oops offset
    bt = re.findall(r"^\s*#\d+ \[[0-9a-f]+\] (\S+) at ([0-9a-f]+)", out, re.M)
    names = [n for n, _ in bt]
    idx = [frame_index(names, f) for f in PANIC_FUNCS]
    assert idx == sorted(idx), f"bt order: {names}"
    oops = oops_frames(crashed["log"])
    checked = 0
    # frame #0 is where panic() waits (panic=0), the oops shows its call to
    # dump_stack(): compare the callers
    for name, addr in bt[1:]:
        if name in oops and any(n == name for _, _, n in syms):
            want = {kallsyms_addr(syms, name) + off for off in oops[name]}
            assert int(addr, 16) in want, \
                f"bt {name} at {addr}, oops+kallsyms say {sorted(map(hex, want))}"
            checked += 1
    assert checked >= 3, f"only {checked} frames compared"
    for f in PANIC_FUNCS:
        frame_index(list(oops), f)      # in the serial oops too
    # sym: addresses equal /proc/kallsyms captured before the crash
    for f in PANIC_FUNCS:
        m = re.search(rf"^([0-9a-f]{{16}}) \(\w\) {re.escape(f)} (\S+): (\d+)$", out, re.M)
        assert m, f"no 'sym {f}' answer"
        assert int(m.group(1), 16) == kallsyms_addr(syms, f), f"sym {f}"
        ref = link_line(f)
        assert same_line(m.group(2), m.group(3), ref), \
            f"sym {f}: {m.group(2)}:{m.group(3)}, vmlinux says {ref}"
    # dis -l: starts at the kallsyms address, with the function's source line
    m = re.search(r"crash> dis -l sysrq_handle_crash\n(\S+): (\d+)\n0x([0-9a-f]+) <sysrq_handle_crash>",
                  out)
    assert m, "dis -l output not understood"
    assert int(m.group(3), 16) == kallsyms_addr(syms, "sysrq_handle_crash")
    assert same_line(m.group(1), m.group(2), link_line("sysrq_handle_crash"))
    # its call to panic() lands on panic's kallsyms address
    m = re.search(r"^0x[0-9a-f]+ <sysrq_handle_crash\+\d+>:\s+call\s+0x([0-9a-f]+) <panic>$", out, re.M)
    assert m, "no call to panic in dis -l sysrq_handle_crash"
    assert int(m.group(1), 16) == kallsyms_addr(syms, "panic")


# ---------------------------------------------------------------------------

@pytest.mark.k612
def test_dump_dir(crashed):
    d = crashed["dir"]
    for name in ("vmcore", "vmcore.kdump", "vmcoreinfo", "serial.log", "output"):
        assert (d / name).is_file(), name
    build_id = fgkrun.elf_build_id(VMLINUX)
    for dump in ("vmcore", "vmcore.kdump"):
        r = run(FGK, "crash", "--info", d / dump)
        assert r.returncode == 0, r.stderr
        print(r.stdout)
        assert f"build-id: {build_id}\n" in r.stdout
        assert f"offset: {crashed['offset']:#x}\n" in r.stdout
        if crashed["fg"]:
            assert f"fgkaslr-seed: {crashed['seed']}\n" in r.stdout
    if crashed["fg"]:
        # really shuffled: most functions are not at link address + offset
        smap = {}
        for line in (KERNEL_DIR / "System.map").read_text().splitlines():
            a, t, n = line.split()[:3]
            if t in "tT":
                smap.setdefault(n, int(a, 16))
        moved = sum(1 for a, t, n in crashed["kallsyms"]
                    if t in "tT" and n in smap and a - crashed["offset"] != smap[n])
        print(f"{moved} functions not at their link address + offset")
        assert moved > 1000
        rec = fgkrun.read_seed_record(d / "seed")
        assert rec.seed == crashed["seed"] and rec.build_id == build_id
        assert rec.offset == crashed["offset"]
    else:
        assert not (d / "seed").exists()


def require_unshuffled(crashed):
    if crashed["fg"]:
        pytest.skip("FG-KASLR kernel: the shuffled variant of this test runs instead")


@pytest.mark.k612
def test_dump_dir_private(crashed):
    """Everything --dump-dir saves holds the seed (the dumps: all guest
    memory): 0600 files in a 0700 directory, although the runner ran with
    umask 022; the dumps QEMU wrote included, and no flattened temp left."""
    d = crashed["dir"]
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    names = sorted(p.name for p in d.iterdir())
    want = {"vmcore", "vmcore.kdump", "vmcoreinfo", "serial.log", "output"} | \
        ({"seed"} if crashed["fg"] else set())
    assert set(names) == want, names
    modes = {n: stat.S_IMODE(os.lstat(d / n).st_mode) for n in names}
    assert all(m == 0o600 for m in modes.values()), {n: f"{m:04o}" for n, m in modes.items()}


@pytest.mark.k612
@pytest.mark.parametrize("dump", ["vmcore", "vmcore.kdump"])
def test_fgk_crash(crashed, dump, tmp_path):
    """The proof: crash on a shuffled dump through fgk crash."""
    require_fg()
    r = crash_session(crashed, crashed["dir"] / dump, tmp_path)
    assert ".vmlinux.fgk" in r.stderr and f"seed {crashed['seed']} (VMCOREINFO)" in r.stderr
    assert f"kaslr={crashed['offset']:#x}" in r.stderr
    check_crash_output(crashed, r)


@pytest.mark.k612
def test_plain_crash_is_wrong(crashed, tmp_path):
    """Why fgk crash exists: stock crash with the link-order vmlinux does
    not give the shuffled dump's panic stack: it names the wrong functions
    (6.1), or cannot read the stack at all (6.12, crash 8.0.6: "bt: read of
    stack at ADDR failed")."""
    require_fg()
    (tmp_path / "cmds").write_text("bt\nexit\n")
    r = run(CRASH, VMLINUX, crashed["dir"] / "vmcore", "-i", tmp_path / "cmds",
            stdin=subprocess.DEVNULL)
    bt = re.findall(r"^\s*#\d+ \[[0-9a-f]+\] (\S+) at", r.stdout, re.M)
    unread = re.search(r"^bt: read of stack at [0-9a-f]+ failed$", r.stdout + r.stderr, re.M)
    print("crash vmlinux vmcore: bt", bt, "stack unreadable" if unread else "")
    assert bt or unread, r.stdout[-2000:] + r.stderr
    assert not all(any(n == f or n.startswith(f + ".") for n in bt) for f in PANIC_FUNCS)


@pytest.mark.parametrize("dump", ["vmcore", "vmcore.kdump"])
def test_fgk_crash_unshuffled(crashed, dump, tmp_path):
    """Baseline on a kernel without the series: same checks, plain vmlinux."""
    require_unshuffled(crashed)
    r = crash_session(crashed, crashed["dir"] / dump, tmp_path)
    assert "vmlinux has no .text.* sections" in r.stderr
    assert f"kaslr={crashed['offset']:#x}" in r.stderr
    check_crash_output(crashed, r)


def test_help_and_man_page_agree_on_module_sections():
    """fgk crash --help said crash places every module section itself;
    fgk-crash(1) says it places only .text, .data, .bss and .rodata (which
    is why fgk relinks shuffled modules).  Both must say the latter."""
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")
    norm = lambda t: " ".join(t.replace("`", "").split())  # noqa: E731
    helptext = norm(run(FGK, "crash", "--help").stdout)
    man = norm((REPO / "docs" / "fgk-crash.1.md").read_text())
    assert "put each module section, shuffled or not" not in helptext
    for text in (helptext, man):
        assert "places only .text (at the module's base), .data, .bss and .rodata" in text
    assert "Nothing is written" in man and "nothing is written" in helptext


@pytest.mark.k612
def test_info_json(crashed):
    """fgk crash --info --json: the fields of the text output, through the
    CLI's JSON writer (offset a hex string, a missing value null)."""
    import json
    for name in ("vmcore", "vmcore.kdump"):
        dump = crashed["dir"] / name
        text = run(FGK, "crash", "--info", dump)
        assert text.returncode == 0, text.stderr
        fields = dict(line.split(": ", 1) for line in text.stdout.splitlines())
        for opt in ("--json", "--pretty"):
            r = run(FGK, "crash", "--info", opt, dump)
            assert r.returncode == 0, r.stderr
            j = json.loads(r.stdout)
            assert j["dump"] == fields["dump"] == str(dump)
            assert j["format"] == fields["format"]
            assert j["release"] == fields["release"]
            assert j["build_id"] == fields["build-id"]
            assert j["offset"] == fields["offset"] == f"{crashed['offset']:#x}"
            assert (j["fgkaslr_seed"] or "-") == fields["fgkaslr-seed"]
            if crashed["seed"]:
                assert j["fgkaslr_seed"] == crashed["seed"]
    r = run(FGK, "crash", "--json", crashed["dir"] / "vmcore")
    assert r.returncode == 2 and "go with --info" in r.stderr, r.stderr


@pytest.mark.k612
def test_dry_run_writes_nothing(crashed, tmp_path):
    """fgk crash -n prints the command and the path vmlinux.fgk would have;
    it relinks nothing (it wrote a 211 MB relink) in the cache or the
    fallback directory, and makes no module directory."""
    require_fg()
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, FGK_CACHE_DIR=str(cache), TMPDIR=str(tmp))
    r = run(FGK, "crash", "-n", crashed["dir"] / "vmcore", VMLINUX, env=env)
    assert r.returncode == 0, r.stderr
    fgk_file = r.stdout.split()[-2]
    assert fgk_file.startswith(str(cache)) and fgk_file.endswith(".vmlinux.fgk"), r.stdout
    assert "not written, -n" in r.stderr, r.stderr
    assert not os.path.exists(fgk_file)
    assert not cache.exists() or not any(cache.rglob("*.vmlinux.fgk")), list(cache.rglob("*"))
    assert list(tmp.iterdir()) == []


@pytest.mark.k612
def test_relink_cached(crashed, tmp_path):
    require_fg()
    # into the cache, as fgk relink does; fgk crash -n then names that entry
    r = run(FGK, "relink", VMLINUX, "--seed", crashed["seed"], env=fgk_env(crashed))
    assert r.returncode == 0, r.stderr
    r = run(FGK, "crash", "-n", crashed["dir"] / "vmcore", VMLINUX, env=fgk_env(crashed))
    assert r.returncode == 0, r.stderr
    assert "(cached relink of" in r.stderr
    assert r.stdout.startswith(f"crash --kaslr={crashed['offset']:#x} ")
    fgk_file = r.stdout.split()[-2]
    assert fgk_file.endswith(".vmlinux.fgk")
    # given vmlinux.fgk itself, fgk would shuffle twice: refused
    r = run(FGK, "crash", "-n", crashed["dir"] / "vmcore", fgk_file, env=fgk_env(crashed))
    assert r.returncode == 1 and "already relinked" in r.stderr, r.stderr


@pytest.mark.k612
def test_other_build_refused(crashed, tmp_path):
    """A vmlinux whose build-id note differs is refused, naming both ids."""
    require_tools()
    theirs = fgkrun.elf_build_id(VMLINUX)
    data = bytearray(VMLINUX.read_bytes())
    old = bytes.fromhex(theirs)
    new = bytes(b ^ 0xff for b in old)
    n = data.count(old)
    assert n >= 1
    data[:] = data.replace(old, new)
    other = tmp_path / "vmlinux"
    other.write_bytes(data)
    assert fgkrun.elf_build_id(other) == new.hex()
    for dump in ("vmcore", "vmcore.kdump"):
        r = run(FGK, "crash", "-n", crashed["dir"] / dump, other)
        print(r.stderr)
        assert r.returncode == 1 and r.stdout == ""
        assert len(r.stderr.strip().splitlines()) == 1
        assert new.hex() in r.stderr and theirs in r.stderr and "not the kernel of dump" in r.stderr
    other.unlink()


def flatten(src, dst, chunk=1 << 20):
    """makedumpfile -F: the flattened stream QEMU writes for kdump formats."""
    import struct
    data = src.read_bytes()
    out = bytearray(b"makedumpfile".ljust(16, b"\0") + struct.pack(">qq", 1, 1))
    out += b"\0" * (4096 - len(out))
    for off in range(0, len(data), chunk):
        piece = data[off:off + chunk]
        out += struct.pack(">qq", off, len(piece)) + piece
    out += struct.pack(">qq", -1, -1)
    dst.write_bytes(out)
    return dst


@pytest.mark.k612
def test_flattened_kdump(crashed, tmp_path):
    """QEMU's own kdump output (flattened) is read too (reassembled in a
    temporary file for libkdumpfile); crash gets the original file."""
    flat = flatten(crashed["dir"] / "vmcore.kdump", tmp_path / "vmcore.flat")
    r = run(FGK, "crash", "--info", flat)
    assert r.returncode == 0, r.stderr
    assert "format: kdump-compressed (flattened)\n" in r.stdout
    assert f"offset: {crashed['offset']:#x}\n" in r.stdout
    r = run(FGK, "crash", "-n", flat, VMLINUX, env=fgk_env(crashed))
    assert r.returncode == 0 and r.stdout.rstrip().endswith(str(flat)), r.stderr
    cut = tmp_path / "cut.flat"
    cut.write_bytes(flat.read_bytes()[:3 << 20])
    r = run(FGK, "crash", "-n", cut, VMLINUX)
    assert r.returncode == 1 and "truncated dump: flattened" in r.stderr, r.stderr


def test_bad_dumps(crashed, tmp_path):
    d = crashed["dir"]
    cases = {
        "truncated.elf": ((d / "vmcore").read_bytes()[:50 << 20], "truncated dump"),
        "header.elf": ((d / "vmcore").read_bytes()[:100], "corrupt ELF header"),
        "truncated.kdump": ((d / "vmcore.kdump").read_bytes()[:2 << 20], "truncated or corrupt dump"),
        "garbage": (secrets.token_bytes(8192), "not a crash dump"),
        "empty": (b"", "empty file"),
    }
    for name, (data, msg) in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        r = run(FGK, "crash", "-n", p, VMLINUX)
        print(name, r.stderr.strip())
        assert r.returncode == 1, name
        assert len(r.stderr.strip().splitlines()) == 1 and msg in r.stderr, (name, r.stderr)
    r = run(FGK, "crash", "-n", VMLINUX, VMLINUX)
    assert r.returncode == 1 and "not a core dump" in r.stderr


def no_vmcoreinfo_copy(crashed, tmp_path):
    """The ELF dump with its VMCOREINFO note renamed (as if QEMU had no
    -device vmcoreinfo)."""
    data = bytearray((crashed["dir"] / "vmcore").read_bytes())
    i = data.find(b"VMCOREINFO\0")
    assert 0 < i < 1 << 20
    data[i:i + 10] = b"XMCOREINFO"
    p = tmp_path / "vmcore.novmci"
    p.write_bytes(data)
    return p


@pytest.mark.k612
def test_no_vmcoreinfo_fallback(crashed, tmp_path):
    p = no_vmcoreinfo_copy(crashed, tmp_path)
    r = run(FGK, "crash", "-n", p, VMLINUX, env=fgk_env(crashed))
    print(r.stderr)
    if not crashed["fg"]:
        assert r.returncode == 0 and "without a VMCOREINFO note" in r.stderr
        assert "--kaslr=auto" in r.stdout
        p.unlink()
        return
    assert r.returncode == 1 and "--seed" in r.stderr
    r = run(FGK, "crash", "-n", p, VMLINUX, "--seed-file", crashed["dir"] / "seed",
            env=fgk_env(crashed))
    assert r.returncode == 0, r.stderr
    assert "falling back to --seed/--seed-file" in r.stderr
    assert f"--kaslr={crashed['offset']:#x}" in r.stdout and ".vmlinux.fgk" in r.stdout
    p.unlink()


def strip_seed(src, dst):
    """A copy of the dump whose VMCOREINFO no longer says FGKASLR_SEED: the
    line becomes an unknown key of the same length (the kdump file keeps
    VMCOREINFO uncompressed, so it is found in either format).  Returns how
    many lines were replaced."""
    import mmap
    shutil.copyfile(src, dst)
    n = 0
    with open(dst, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        for hit in re.finditer(rb"FGKASLR_SEED=([0-9a-f]{64}|disabled)\n", m):
            m[hit.start():hit.start() + 12] = b"FGKASLR_GONE"
            m[hit.start() + 13:hit.end() - 1] = b"x" * (hit.end() - 1 - hit.start() - 13)
            n += 1
    return n


@pytest.mark.parametrize("dump", ["vmcore", pytest.param("vmcore.kdump", marks=pytest.mark.k612)])
def test_fgk_crash_without_seed_in_dump(crashed, dump, tmp_path):
    """No FGKASLR_SEED in VMCOREINFO: fgk crash rebuilds the layout from
    the kallsyms tables in the dump's memory, says so, and crash works as
    with the seed; the relinked file equals the seed's relink (up to the
    sections it names as interchangeable)."""
    require_fg()
    from test_kallsyms_layout import guessed
    bad = tmp_path / dump
    assert strip_seed(crashed["dir"] / dump, bad) >= 1
    info = run(FGK, "crash", "--info", bad)
    assert info.returncode == 0 and "FGKASLR_SEED" not in info.stdout.replace(
        "FGKASLR_SEED: (none)", ""), info.stdout
    env = dict(fgk_env(crashed), TMPDIR=str(tmp_path))
    cmds = ["bt"] + [f"sym {f}" for f in PANIC_FUNCS] + ["dis -l sysrq_handle_crash", "exit"]
    (tmp_path / "cmds").write_text("\n".join(cmds) + "\n")
    r = run(FGK, "crash", bad, VMLINUX, "-i", tmp_path / "cmds", env=env)
    print(r.stderr)
    assert r.returncode == 0, r.stderr + r.stdout[-2000:]
    assert "no FGKASLR_SEED in VMCOREINFO; layout rebuilt from the kallsyms tables in its memory" \
        in r.stderr
    check_crash_output(crashed, r)
    rel = list((tmp_path / f"fgk-crash-{os.geteuid()}").glob("*.kallsyms.vmlinux.fgk"))
    assert len(rel) == 1, rel
    want = tmp_path / "seed.fgk"
    assert run(FGK, "relink", VMLINUX, "--seed", crashed["seed"], "--no-cache",
               "-o", want).returncode == 0
    # every symbol where the seed put it (the sections kallsyms cannot
    # order have none); byte-identical when nothing was named
    assert run("nm", "-n", rel[0]).stdout == run("nm", "-n", want).stdout
    if not guessed(r.stderr):
        assert rel[0].read_bytes() == want.read_bytes()
    bad.unlink()


def isolated_fgk(tmp_path):
    """A copy of fgk outside the build tree (as installed: fgk crash looks
    beside the dump, in ./ and the system's debug paths, never in a build
    tree) and an empty directory."""
    (tmp_path / "bin").mkdir()
    fgk = tmp_path / "bin" / "fgk"
    shutil.copy2(FGK, fgk)
    (tmp_path / "work").mkdir()
    return fgk, tmp_path / "work"


def test_fgk_crash_by_debuginfod(crashed, kernel_debuginfod, tmp_path):
    """No VMLINUX, no build tree, an empty cache: fgk crash fetches the
    dump's vmlinux by its build-id from debuginfod, says so, and crash
    works; a second run comes from the cache (timed); with no server
    answering, one clear line naming the build-id."""
    fgk, work = isolated_fgk(tmp_path)
    cmds = ["bt"] + [f"sym {f}" for f in PANIC_FUNCS] + ["dis -l sysrq_handle_crash", "exit"]
    (work / "cmds").write_text("\n".join(cmds) + "\n")
    env = dict(kernel_debuginfod.env(tmp_path / "dcache"), FGK_CACHE_DIR=str(tmp_path / "rc"),
               TMPDIR=str(tmp_path))
    dump = crashed["dir"] / "vmcore.kdump"
    times = []
    for k in range(2):
        t0 = time.monotonic()
        r = run(fgk, "crash", dump, "-i", "cmds", cwd=work, env=env)
        times.append(time.monotonic() - t0)
        print(r.stderr)
        assert r.returncode == 0, r.stderr + r.stdout[-2000:]
        said = "fgk: fetched vmlinux (build-id " if k == 0 else \
            "from the debuginfod cache: "
        assert said in r.stderr and (k or kernel_debuginfod.url in r.stderr)
        check_crash_output(crashed, r)
    print(f"fgk crash through debuginfod: {times[0]:.1f} s with the download, "
          f"{times[1]:.1f} s from the cache")
    bid = libfgk.Vmlinux(str(VMLINUX)).build_id
    off = dict(env, DEBUGINFOD_URLS="http://127.0.0.1:1", DEBUGINFOD_CACHE_PATH=str(tmp_path / "c2"))
    r = run(fgk, "crash", dump, "-i", "cmds", cwd=work, env=off)
    assert r.returncode == 1 and bid in r.stderr and "unreachable" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) <= 2


@pytest.mark.k612
def test_symbolize_by_debuginfod(crashed, kernel_debuginfod, tmp_path):
    """fgk symbolize --build-id / --seed-file without VMLINUX: the panic's
    oops decodes exactly as with the local vmlinux."""
    require_fg()
    fgk, work = isolated_fgk(tmp_path)
    log = crashed["dir"] / "serial.log"
    want = run(FGK, "symbolize", VMLINUX, "--seed-file", crashed["dir"] / "seed", log)
    assert want.returncode == 0, want.stderr
    assert re.search(r"sysrq_handle_crash\+0x[0-9a-f]+/0x[0-9a-f]+ \(\S+:\d+", want.stdout)
    env = kernel_debuginfod.env(tmp_path / "dcache")
    bid = libfgk.Vmlinux(str(VMLINUX)).build_id
    r = run(fgk, "symbolize", "--build-id", bid, log, cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    assert f"fetched vmlinux (build-id {bid}) from {kernel_debuginfod.url}" in r.stderr
    nosed = run(FGK, "symbolize", VMLINUX, log)
    assert r.stdout == nosed.stdout
    r = run(fgk, "symbolize", "--seed-file", crashed["dir"] / "seed", log, cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    assert "from the debuginfod cache" in r.stderr
    assert r.stdout == want.stdout


@pytest.mark.k612
def test_seed_capture(crashed, tmp_path):
    require_fg()
    d = crashed["dir"]
    want = fgkrun.read_seed_record(d / "seed").as_dict()
    want.pop("note", None)
    for args in (["--vmcore", d / "vmcore"], ["--vmcore", d / "vmcore.kdump"],
                 ["--text", d / "output", "--vmlinux", VMLINUX,
                  "--offset", hex(crashed["offset"])]):
        r = run(FGK, "seed", "capture", *args)
        assert r.returncode == 0, r.stderr
        got = fgkrun.parse_seed_record(r.stdout).as_dict()
        assert got == want, (args, got, want)
    # the panic log: the seed only if the log shows it (the boot's
    # "Command line:" with fgkaslr_seed=), else said clearly
    (tmp_path / "oops").write_text(crashed["log"])
    r = run(FGK, "seed", "capture", "--oops", tmp_path / "oops", "--vmlinux", VMLINUX)
    if f"fgkaslr_seed={crashed['seed']}" in crashed["log"]:
        assert r.returncode == 0, r.stderr
        assert fgkrun.parse_seed_record(r.stdout).as_dict() == want
    else:
        assert r.returncode == 1 and "cannot be derived" in r.stderr, r.stderr
    no_seed = re.sub(r"fgkaslr_seed=\S+", "fgkaslr_seed=<masked>", crashed["log"])
    (tmp_path / "oops").write_text(no_seed)
    r = run(FGK, "seed", "capture", "--oops", tmp_path / "oops", "--vmlinux", VMLINUX)
    assert r.returncode == 1 and "cannot be derived" in r.stderr, r.stderr


SEED_A = "00" * 31 + "2a"


def test_seed_capture_text(tmp_path):
    """Text capture, no guest needed: /proc/fgkaslr_seed output, the offset
    from a 'Kernel Offset:' line, build-id and release from vmlinux."""
    require_tools()
    text = ("[    0.000000] Linux version 6.1.192 (x@y) #1 SMP\n"
            f"fgkaslr-seed: {SEED_A.upper()}\n"
            "[    1.5] Kernel Offset: 0x1c000000 from 0xffffffff81000000 (relocation range: x)\n")
    (tmp_path / "log").write_text(text)
    r = run(FGK, "seed", "capture", "--text", tmp_path / "log", "--vmlinux", VMLINUX,
            "--note", "from a test", "-o", tmp_path / "rec")
    assert r.returncode == 0, r.stderr
    rec = fgkrun.read_seed_record(tmp_path / "rec").as_dict()
    assert rec == {"seed": SEED_A, "build-id": fgkrun.elf_build_id(VMLINUX),
                   "release": (KERNEL_DIR / "release").read_text().strip(),
                   "offset": 0x1c000000, "note": "from a test"}
    r = run(FGK, "seed", "capture", "--text", "-", input=f"FGKASLR_SEED={SEED_A}\n")
    assert r.returncode == 0 and r.stdout == f"seed: {SEED_A}\n", r.stderr
    bad = {
        "two": (f"{SEED_A}\n{'11' * 32}\n", "several different seeds"),
        "none": ("Kernel Offset: disabled\n", "no seed found"),
        "disabled": ("FGKASLR_SEED=disabled\n", "disabled in that boot"),
    }
    for name, (t, msg) in bad.items():
        r = run(FGK, "seed", "capture", "--text", "-", input=t)
        assert r.returncode == 1 and msg in r.stderr and len(r.stderr.splitlines()) == 1, \
            (name, r.stderr)
    (tmp_path / "oops").write_text("Kernel panic - not syncing: x\n Call Trace:\n")
    r = run(FGK, "seed", "capture", "--oops", tmp_path / "oops", "--vmlinux", VMLINUX)
    assert r.returncode == 1 and "cannot be derived from function addresses" in r.stderr
    r = run(FGK, "seed", "capture", "--oops", tmp_path / "oops")
    assert r.returncode == 2 and "needs --vmlinux" in r.stderr


def test_seed_capture_plain(crashed):
    if crashed["fg"]:
        pytest.skip("FG-KASLR kernel: covered by test_seed_capture")
    r = run(FGK, "seed", "capture", "--vmcore", crashed["dir"] / "vmcore")
    assert r.returncode == 1 and "no FGKASLR_SEED" in r.stderr


@pytest.mark.k612
def test_replay_same_layout(crashed):
    """Replaying the captured record boots the crashed kernel's layout."""
    require_fg()
    res = fgkrun.run("replay", "echo kallsyms-begin; cat /proc/kallsyms; echo kallsyms-end",
                     seed_file=crashed["dir"] / "seed", timeout=180,
                     kernel=KERNEL_DIR / "bzImage", append=EXTRA_APPEND)
    assert res.rc == 0, res.message
    off = crashed["offset"]
    # absolute (per-CPU) symbols are neither shuffled nor offset
    crashed_set = sorted((a - off if a >= 0xffffffff80000000 else a, t, n)
                         for a, t, n in crashed["kallsyms"])
    replay_set = sorted(kallsyms_of(res.output))
    assert len(replay_set) == len(crashed_set)
    diff = [(x, y) for x, y in zip(crashed_set, replay_set) if x != y]
    assert not diff, f"{len(diff)} symbols differ, e.g. {diff[:5]}"
    print(f"replay: {len(replay_set)} kallsyms lines equal the crashed boot's minus {off:#x}")


DRGN_SCRIPT = r"""
# drgn 0.0.22 takes QEMU's PRSTATUS pr_pid (CPU number + 1) for a PID, so
# prog.crashed_thread() names the wrong task on SMP guests; unwind from the
# panicking CPU's registers instead (QEMU writes one note per CPU, in order).
import struct, sys
from drgn import Object
from drgn.helpers.linux.percpu import per_cpu

def prstatus_regs(path):
    # pr_reg (struct pt_regs) of each NT_PRSTATUS note, read with pyelftools
    from elftools.elf.elffile import ELFFile
    out = []
    with open(path, "rb") as f:
        for seg in ELFFile(f).iter_segments("PT_NOTE"):
            for note in seg.iter_notes():
                if note["n_type"] == "NT_PRSTATUS" and note["n_name"] == "CORE":
                    out.append(note["n_descdata"][112:112 + 21 * 8])
    return out

cpu = prog["panic_cpu"].counter.value_()
task = per_cpu(prog["runqueues"], cpu).curr
print("panic-cpu", cpu, "task", task.pid.value_(), task.comm.string_().decode())
for name in %r:
    print("symbol", name, hex(prog.symbol(name).address))
regs = Object.from_bytes_(prog, "struct pt_regs", prstatus_regs(sys.argv[1])[cpu])
try:
    for f in prog.stack_trace(regs):
        print("frame", f.name)
except Exception as e:
    print("stack-error", type(e).__name__, e)
"""

# drgn 0.0.23 is the first that reads Linux >= 6.4: `struct module_memory`
# (modules) and the renumbered ORC types ("unknown ORC entry type 3" before)
DRGN_FOR_6_4 = (0, 0, 23)


def drgn_version():
    out = run(DRGN, "--version", check=True).stdout
    return tuple(int(x) for x in re.match(r"drgn (\d+)\.(\d+)\.(\d+)", out).groups())


def require_drgn_reads(log, what):
    """Skip when the installed drgn predates the kernel whose serial log
    (its 'Linux version' banner) is given (scripts/build-drgn)."""
    m = re.search(r"Linux version ((\d+)\.(\d+)\S*)", log)
    assert m, "no 'Linux version' banner in the serial log"
    kernel_release, kv = m.group(1), (int(m.group(2)), int(m.group(3)))
    have = drgn_version()
    if kv >= (6, 4) and have < DRGN_FOR_6_4:
        pytest.skip(f"drgn {'.'.join(map(str, have))} predates Linux 6.4 ({what}); "
                    f"{kernel_release} needs drgn >= 0.0.23 (scripts/build-drgn; "
                    "docs/crash-replay.md, section 8)")


@pytest.fixture(scope="module")
def drgn_out(crashed, tmp_path_factory):
    """drgn's view of the ELF dump, one run per target: through vmlinux.fgk
    ("fg", the FG-KASLR kernel) or the plain vmlinux ("plain")."""
    if DRGN is None:
        pytest.skip("drgn not installed (python3-drgn)")
    runs = {}

    def get(kind):
        if kind not in runs:
            if kind == "fg":
                r = run(FGK, "relink", VMLINUX, "--seed-file", crashed["dir"] / "seed",
                        env=fgk_env(crashed))
                assert r.returncode == 0, r.stderr
                target = r.stdout.strip()
            else:
                target = VMLINUX
            tmp = tmp_path_factory.mktemp("drgn")
            (tmp / "bt.py").write_text(DRGN_SCRIPT % (PANIC_FUNCS,))
            dump = crashed["dir"] / "vmcore"
            r = run(DRGN, "-q", "-c", dump, "-s", target, tmp / "bt.py", dump)
            print(r.stdout, r.stderr)
            assert r.returncode == 0, r.stderr
            runs[kind] = r.stdout
        return runs[kind]
    return get


@pytest.mark.k612
def test_drgn_symbols(crashed, drgn_out):
    """drgn -c vmcore -s vmlinux.fgk: the panicking task, and every symbol at
    its /proc/kallsyms address of the crashed boot."""
    require_fg()
    drgn_symbols_check(crashed, drgn_out("fg"))


@pytest.mark.k612
def test_drgn(crashed, drgn_out):
    """drgn -c vmcore -s vmlinux.fgk: the panicking task's stack."""
    require_fg()
    drgn_stack_check(crashed, drgn_out("fg"))


def test_drgn_unshuffled(crashed, drgn_out):
    require_unshuffled(crashed)
    drgn_symbols_check(crashed, drgn_out("plain"))
    drgn_stack_check(crashed, drgn_out("plain"))


def drgn_symbols_check(crashed, out):
    assert re.search(r"^panic-cpu \d+ task \d+ sh$", out, re.M)
    found = re.findall(r"^symbol (\S+) (0x[0-9a-f]+)$", out, re.M)
    assert len(found) == len(PANIC_FUNCS)
    for name, addr in found:
        assert int(addr, 16) == kallsyms_addr(crashed["kallsyms"], name)


def drgn_stack_check(crashed, out):
    require_drgn_reads(crashed["log"], "its ORC unwinder")
    assert not re.search(r"^stack-error", out, re.M), out
    frames = re.findall(r"^frame (\S+)$", out, re.M)
    idx = [frame_index(frames, f) for f in PANIC_FUNCS]
    assert idx == sorted(idx), frames


# ---------------------------------------------------------------------------
# VMCOREINFO parsing on ELF cores generated here (no guest, no kernel)

def elf_core(path, notes):
    """A minimal x86_64 ELF core: one PT_NOTE segment with `notes`
    [(name, type, desc)] and one small PT_LOAD."""
    import struct
    blob = b""
    for name, ntype, desc in notes:
        n = name.encode() + b"\0"
        blob += struct.pack("<III", len(n), len(desc), ntype)
        blob += n + b"\0" * (-len(n) % 4) + desc + b"\0" * (-len(desc) % 4)
    phoff, phnum = 64, 2
    note_off = phoff + 56 * phnum
    load_off = note_off + len(blob)
    ehdr = struct.pack("<4sBBBBB7xHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0,
                       4, 62, 1, 0, phoff, 0, 0, 64, 56, phnum, 64, 0, 0)
    ph_note = struct.pack("<IIQQQQQQ", 4, 0, note_off, 0, 0, len(blob), len(blob), 0)
    ph_load = struct.pack("<IIQQQQQQ", 1, 7, load_off, 0, 0, 4096, 4096, 0)
    path.write_bytes(ehdr + ph_note + ph_load + blob + b"\0" * 4096)
    return path


VMCI = ("OSRELEASE=6.1.192\nBUILD-ID=0123456789abcdef0123456789abcdef01234567\n"
        "PAGESIZE=4096\nKERNELOFFSET=2a000000\n")


def test_vmcoreinfo_synthetic(tmp_path):
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")
    seed = "ab" * 32
    cases = {
        "seed": (VMCI + f"FGKASLR_SEED={seed.upper()}\n", 0, f"fgkaslr-seed: {seed}\n"),
        "disabled": (VMCI + "FGKASLR_SEED=disabled\n", 0, "fgkaslr-seed: disabled\n"),
        "absent": (VMCI, 0, "fgkaslr-seed: -\n"),
        "bad": (VMCI + "FGKASLR_SEED=12345\n", 1, "bad FGKASLR_SEED=12345"),
        "badoff": (VMCI.replace("2a000000", "zz"), 1, "bad KERNELOFFSET"),
    }
    for name, (text, rc, want) in cases.items():
        core = elf_core(tmp_path / name, [("CORE", 1, b"\0" * 336),
                                          ("VMCOREINFO", 0, text.encode())])
        r = run(FGK, "crash", "--info", core)
        out = r.stdout if rc == 0 else r.stderr
        assert r.returncode == rc and want in out, (name, r.stdout, r.stderr)
        if rc == 0:
            assert "offset: 0x2a000000\n" in out and "release: 6.1.192\n" in out
            assert "build-id: 0123456789abcdef0123456789abcdef01234567\n" in out
    # capture: a record from the seed; disabled/absent: no seed to record
    r = run(FGK, "seed", "capture", "--vmcore", tmp_path / "seed", "--note", "n")
    assert r.returncode == 0, r.stderr
    assert fgkrun.parse_seed_record(r.stdout).as_dict() == {
        "seed": seed, "build-id": "0123456789abcdef0123456789abcdef01234567",
        "release": "6.1.192", "offset": 0x2a000000, "note": "n"}
    for name, msg in (("disabled", "disabled in that boot"), ("absent", "no FGKASLR_SEED")):
        r = run(FGK, "seed", "capture", "--vmcore", tmp_path / name)
        assert r.returncode == 1 and msg in r.stderr, r.stderr
    # no VMCOREINFO note: --info says so; fgk crash falls back or asks for a seed
    core = elf_core(tmp_path / "novmci", [("CORE", 1, b"\0" * 336)])
    r = run(FGK, "crash", "--info", core)
    assert r.returncode == 1 and "without a VMCOREINFO note" in r.stderr
    # an ELF that is not a core
    r = run(FGK, "crash", "--info", FGK)
    assert r.returncode == 1 and "not a core dump" in r.stderr
