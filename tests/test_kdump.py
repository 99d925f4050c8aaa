"""Real kdump in the guest (issue 18, item 5): the kdump profile.

A guest (1 GiB, crashkernel=256M, a random FG-KASLR seed, base KASLR on)
loads fgk_test.ko, prints its seed and /proc/kallsyms, loads the same
bzImage as capture kernel with Debian's `kexec -p` and oopses inside the
module (oops=panic).  The capture kernel boots (shuffling with a seed of
its own), saves /proc/vmcore with Debian's makedumpfile, `-c -d 31` and
`-l -d 31` (`-d 1` where makedumpfile is older than the kernel needs,
below), onto a virtio disk; the runner reads them back
(qemu-profiles/fgkkdump.py).  Then, on the host, for both files:

  * `fgk crash` takes the first kernel's seed and offset from the dump's
    VMCOREINFO; `bt -l` shows the oops in fgk_test_oops and its module
    callers with their lines, the kernel frames of the panic at kallsyms
    addresses; `sym` of kernel and module functions equals the kallsyms the
    guest printed;
  * `fgk seed capture` makes the record of the first kernel from the dump;
  * replaying that record, and loading the same module, boots the crashed
    kernel's /proc/kallsyms (minus the base offset; the module's symbols at
    the same offsets from its base).
  * crash's ps, files and vm on the -c file: the page filtering kept the
    tasks.

The guest is booted once, through the command-line recipe
(`qemu-profiles/run kdump --dump-dir`).  Every test runs on 6.12 too
(k612; the whole file takes about 40 s there, the replay boot included).
Where the makedumpfile is older than the kernel needs
(fgkkdump.MAKEDUMPFILE_NEEDED: Debian 12's 1.7.2 drops slab pages of Linux
>= 6.2 with -d 31, and on 6.12 crash then misses tasks, or stops at "page
excluded" before its prompt; with 1.7.2 and 6.12 that passed in one run
and failed in the next), the capture filters with -d 1 (zero pages only,
found by content), the nearest sound level it has; the tests check the
capture said which.
"""
import os
import re
import secrets
import shutil
import subprocess
import sys

import pytest

from conftest import KERNEL_DIR, REPO, boot, require_kernel
from test_crash import (CRASH, FGK, VMLINUX, eframe_gap_frames, oops_rsp, require_fg, run,
                        stack_words)
from test_crash_modules import frames_of
from test_crash_ps import crash_cmd, crash_ps, section
from test_modules import module_ko

import fgkkdump
from fgkbase import UsageError

SCRIPT = r"""
insmod /fgk/fgk_test.ko
sleep 1000 3</proc/version 4>/dev/null &
pid=$!
sleep 1
echo "target-pid: $pid"
echo ps-begin; ps -o pid,ppid,comm; echo ps-end
echo "fgkaslr-seed: $(cat /proc/fgkaslr_seed)"
echo kallsyms-begin
cat /proc/kallsyms
echo kallsyms-end
""" + fgkkdump.KEXEC_LOAD + r"""
echo 1 > /sys/module/fgk_test/parameters/oops
echo "survived the oops"
"""
PANIC_FUNCS = ["oops_end", "page_fault_oops"]
MOD_CHAIN = ["fgk_test_oops", "fgk_test_fire", "fgk_test_param_set"]


@pytest.fixture(scope="module")
def kdumped(tmp_path_factory):
    """One kdump, through the command-line recipe (qemu-profiles/run kdump
    --dump-dir): the runner loads the capture kernel before SCRIPT."""
    require_kernel()
    require_fg()
    if not CRASH:
        pytest.skip("crash not installed: run 'make deps'")
    try:
        fgkkdump.guest_tools()
    except UsageError as e:
        print(f"kdump: {e}")
        pytest.skip(str(e))
    ko = module_ko()
    d = tmp_path_factory.mktemp("kdump")
    (d / "script").write_text(SCRIPT)
    seed = secrets.token_hex(32)
    r = subprocess.run([sys.executable, str(REPO / "qemu-profiles" / "run"), "kdump",
                        "--dump-dir", str(d), "--init", str(d / "script"), "--seed", seed,
                        "--kaslr", "--file", f"{ko}:/fgk/fgk_test.ko", "--out",
                        str(d / "output"), "--log", str(d / "serial.log")],
                       capture_output=True, text=True, timeout=900)
    out, log = (d / "output").read_text(), (d / "serial.log").read_text()
    print(r.stderr)
    assert f"fgkaslr-seed: {seed}" in out, (r.stderr, out[-2000:])
    assert "crash kernel loaded: 1" in out, out[-2000:]
    assert "survived the oops" not in out
    # the capture kernel ran its script to the end
    assert "capture saved" in log or "capture saved" in out, log[-4000:]
    assert r.returncode == 0, r.stderr
    assert f"run: saved in {d}: vmcore.kdump-c, vmcore.kdump-l" in r.stderr, r.stderr
    dumps = {n: d / n for n in fgkkdump.DUMPS}
    assert not (d / "capture.img").exists()
    ksyms = {}
    m = re.search(r"^kallsyms-begin\n(.*?)^kallsyms-end$", out, re.S | re.M)
    for line in m.group(1).splitlines():
        f = line.split()
        if len(f) >= 3:
            ksyms.setdefault(f[2], int(f[0], 16))
    c = {"seed": seed, "dir": d, "dumps": dumps, "ksyms": ksyms, "log": log, "output": out,
         "cache": d / "cache"}
    print(f"kdump: seed {seed[:8]}.., dumps "
          + ", ".join(f"{n} {p.stat().st_size} bytes" for n, p in sorted(dumps.items())))
    yield c
    if not os.environ.get("FGK_KEEP_DUMPS"):
        for p in dumps.values():
            p.unlink(missing_ok=True)
        shutil.rmtree(c["cache"], ignore_errors=True)


def require_sound_filtering(c):
    """The capture filtered with -d 31, or with -d 1 (zero pages only) where
    the makedumpfile is older than the kernel needs
    (fgkkdump.MAKEDUMPFILE_NEEDED: its -d 31 drops slab pages, and crash then
    misses tasks or does not start at all, "page excluded: ... xa_node shift";
    which pages go depends on the run): the dump crash reads is sound either
    way, and the capture said which level it used."""
    release = (KERNEL_DIR / "release").read_text().strip()
    gap = fgkkdump.makedumpfile_gap(release)
    level = fgkkdump.dump_level(release)
    if gap:
        print(f"{gap}: the capture used -d {level}")
    assert re.search(rf"^dump level {level}\r?$", c["output"], re.M), \
        f"the capture did not say 'dump level {level}'"


@pytest.mark.k612
@pytest.mark.parametrize("name", ["vmcore.kdump-c", "vmcore.kdump-l"])
def test_fgk_crash_on_makedumpfile(kdumped, name, tmp_path):
    c = kdumped
    require_sound_filtering(c)
    oops = c["log"][c["log"].find("BUG: kernel NULL pointer dereference"):]
    rsp = oops_rsp(oops)
    cmds = ["bt -l", f"rd -s {rsp:x} 2"] + [f"sym {f}" for f in PANIC_FUNCS + MOD_CHAIN] + \
        ["dis -l fgk_test_oops", "dis -l page_fault_oops", "exit"]
    (tmp_path / "cmds").write_text("\n".join(cmds) + "\n")
    r = run(FGK, "crash", c["dumps"][name], VMLINUX, "-i", tmp_path / "cmds",
            env=dict(os.environ, FGK_CACHE_DIR=str(c["cache"])), stdin=subprocess.DEVNULL)
    print(r.stderr)
    assert r.returncode == 0, r.stderr + r.stdout[-3000:]
    assert f"seed {c['seed']} (VMCOREINFO)" in r.stderr, r.stderr
    assert f"{c['dumps'][name]} (kdump-compressed)" in r.stderr, r.stderr
    out = r.stdout
    m = re.search(r"\[exception RIP: (\w+)\+(\d+)\]", out)
    assert m and m.group(1) == "fgk_test_oops", out[-3000:]
    bt = re.findall(r"^\s*#\d+ \[[0-9a-f]+\] (\w+) at ([0-9a-f]+)(?: \[fgk_test\])?\n"
                    r"\s+(/\S+): (\d+)$", out, re.M)
    names = [b[0] for b in bt]
    bt_text = out[out.find("crash> bt -l"):out.find("crash> rd -s ")]
    for f in PANIC_FUNCS:
        assert f in names, f"{f} not among the frames with a line: {names}\n{bt_text}"
    # the module's callers, with lines; or, where crash's bt took a stale
    # word in the exception frame's alignment slot for a frame and went on
    # above them (eframe_gap_frames(): crash's unwinder, not the symbols),
    # on the stack at the interrupted RSP as the console's trace has them
    offs = {f: off for f, off, _ in frames_of(oops)}
    assert set(MOD_CHAIN[1:]) <= set(offs), "the console's trace lacks the module's callers"
    words = stack_words(out, rsp)
    assert words == [f"{f}+{offs[f]}" for f in MOD_CHAIN[1:]], (words, bt_text)
    if not set(MOD_CHAIN[1:]) <= set(names):
        gap = eframe_gap_frames(out, rsp)
        assert gap, f"{MOD_CHAIN[1:]} not among the frames with a line: {names}\n{bt_text}"
        print(f"{name}: crash's bt took the stale word in the exception frame's alignment "
              f"slot for a frame ({gap}); at RSP {rsp:x}: {words}")
    for f in PANIC_FUNCS + MOD_CHAIN:
        m = re.search(r"^([0-9a-f]{16}) \(\w\) %s(?: \[fgk_test\])? (\S+): (\d+)$" % f, out, re.M)
        assert m, f"no 'sym {f}' answer with a line: {out[-3000:]}"
        assert int(m.group(1), 16) == c["ksyms"][f], f
    # dis -l: module and kernel functions at their kallsyms addresses, with lines
    for f in ("fgk_test_oops", "page_fault_oops"):
        m = re.search(r"crash> dis -l %s\n(\S+): (\d+)\n0x([0-9a-f]+) <%s>" % (f, f), out)
        assert m and int(m.group(3), 16) == c["ksyms"][f], (f, out[-3000:])
    print(f"{name}: bt {names}")


@pytest.mark.k612
def test_crash_tasks_on_makedumpfile(kdumped, tmp_path):
    """makedumpfile's page filtering (-d 31, or -d 1 where it is older than
    the kernel needs) keeps the kernel data crash needs for tasks: on the -c
    file crash finds every pid, ps lists every process the guest's ps
    printed (except ps) with its parent, and files and vm of a sleeping
    process show its open files and busybox mapping."""
    c = kdumped
    require_sound_filtering(c)
    pid = int(re.search(r"^target-pid: (\d+)$", c["output"], re.M).group(1))
    (tmp_path / "cmds").write_text(f"ps\nfiles {pid}\nvm {pid}\nexit\n")
    r = run(FGK, "crash", c["dumps"]["vmcore.kdump-c"], VMLINUX, "-i", tmp_path / "cmds",
            env=dict(os.environ, FGK_CACHE_DIR=str(c["cache"])), stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr + r.stdout[-3000:]
    out = r.stdout
    for bad in ("cannot read pid struct", "not found in PID hash", "page excluded"):
        assert bad not in out, (bad, out[-3000:])
    guest = {}
    for line in section(c["output"], "ps")[1:]:
        p, pp, comm = line.split(None, 2)
        if comm != "ps":
            guest[int(p)] = int(pp)
    crash = {p: pp for _, p, pp, _, _ in crash_ps(out) if p}
    missing = {p: pp for p, pp in guest.items() if crash.get(p) != pp}
    assert pid in guest and not missing, f"not in crash ps (pid: ppid): {missing}"
    files = crash_cmd(out, f"files {pid}")
    for fd, path in ((3, "/proc/version"), (4, "/dev/null")):
        assert re.search(rf"^\s*{fd}\s.*\s{re.escape(path)}$", files, re.M), files
    assert re.search(r"\s/bin/busybox$", crash_cmd(out, f"vm {pid}"), re.M), out[-3000:]
    print(f"crash ps: {len(crash)} tasks, the guest's {len(guest)} processes among them")


@pytest.mark.k612
def test_seed_capture_from_makedumpfile(kdumped):
    """The record of the first kernel, from each makedumpfile file."""
    c = kdumped
    for name, path in sorted(c["dumps"].items()):
        r = run(FGK, "seed", "capture", "--vmcore", path)
        assert r.returncode == 0, (name, r.stderr)
        assert re.search(rf"^seed\s*[:=]?\s*{c['seed']}$", r.stdout, re.M | re.I) or \
            c["seed"] in r.stdout, (name, r.stdout)
        # the base offset: _text of the kallsyms the guest printed
        m = re.search(r"^offset\s*[:=]?\s*(0x[0-9a-f]+)$", r.stdout, re.M | re.I)
        assert m, r.stdout
        assert int(m.group(1), 16) == c["ksyms"]["_text"] - 0xffffffff81000000, r.stdout
        print(f"{name}: record\n{r.stdout}")


def kallsyms_split(output):
    """(kernel {(addr, type, name)}, module {(addr, type, name, mod)})."""
    m = re.search(r"^kallsyms-begin\n(.*?)^kallsyms-end$", output, re.S | re.M)
    assert m, "no kallsyms in the guest output"
    kern, mods = [], []
    for line in m.group(1).splitlines():
        f = line.split()
        if len(f) == 4:
            mods.append((int(f[0], 16), f[1], f[2], f[3]))
        elif len(f) == 3:
            kern.append((int(f[0], 16), f[1], f[2]))
    return kern, mods


@pytest.mark.k612
def test_replay_from_makedumpfile_record(kdumped, tmp_path):
    """Replaying the record taken from the kdump file boots the crashed
    kernel's layout; loading the same module gives it the same layout.
    (Only the module area's base differs: the kernel draws it at each boot
    with base KASLR, independently of the seed, and replay boots nokaslr.)"""
    c = kdumped
    r = run(FGK, "seed", "capture", "--vmcore", c["dumps"]["vmcore.kdump-c"])
    assert r.returncode == 0, r.stderr
    rec = tmp_path / "record"
    rec.write_text(r.stdout)
    rec.chmod(0o600)
    script = ("insmod /fgk/fgk_test.ko\necho kallsyms-begin\ncat /proc/kallsyms\n"
              "echo kallsyms-end\n")
    res = boot(script, profile="replay", seed_file=rec, timeout=180,
               files={"/fgk/fgk_test.ko": str(module_ko())})
    assert res.rc == 0, res.message
    off = int(re.search(r"^offset: (0x[0-9a-f]+)$", r.stdout, re.M).group(1), 16)
    crashed_k, crashed_m = kallsyms_split(c["output"])
    replay_k, replay_m = kallsyms_split(res.output)
    want = sorted((a - off if a >= 0xffffffff80000000 else a, t, n) for a, t, n in crashed_k)
    assert sorted(replay_k) == want, "kernel symbols differ"
    base_c, base_r = min(a for a, *_ in crashed_m), min(a for a, *_ in replay_m)
    rel_c = sorted((a - base_c, t, n, mod) for a, t, n, mod in crashed_m)
    rel_r = sorted((a - base_r, t, n, mod) for a, t, n, mod in replay_m)
    assert rel_c == rel_r, "module symbols differ"
    print(f"replay: {len(replay_k)} kernel symbols equal the crashed boot's minus {off:#x}; "
          f"{len(rel_r)} fgk_test symbols at the same offsets from the module base "
          f"({base_c:#x} crashed, {base_r:#x} replayed)")


@pytest.mark.k612
@pytest.mark.parametrize("cut", [0.5, 0.001])
def test_truncated_makedumpfile_file(kdumped, tmp_path, cut):
    """A makedumpfile file cut short: one line naming it, exit status 1,
    from fgk crash and from fgk seed capture alike."""
    src = kdumped["dumps"]["vmcore.kdump-c"]
    bad = tmp_path / "vmcore.cut"
    data = src.read_bytes()
    bad.write_bytes(data[:max(1, int(len(data) * cut))])
    for cmd in ([FGK, "crash", bad, VMLINUX, "-n"], [FGK, "seed", "capture", "--vmcore", bad]):
        r = run(*cmd, stdin=subprocess.DEVNULL)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1 and len(lines) == 1 and str(bad) in lines[0], \
            (cmd[1], r.returncode, r.stderr)
        print(f"{cmd[1]}, {cut:.1%} of the file: {lines[0]}")


@pytest.mark.k612
def test_makedumpfile_file_without_vmcoreinfo(kdumped, tmp_path):
    """A kdump file whose VMCOREINFO is gone (sub-header size 0, the note
    renamed): fgk crash says so and falls back to --seed; without one it
    asks for it."""
    import struct
    c = kdumped
    data = bytearray(c["dumps"]["vmcore.kdump-l"].read_bytes())
    assert data[:8] == b"KDUMP   "
    # struct disk_dump_header: block_size after the 8-byte signature, the
    # 4-byte version, struct new_utsname (6 x 65) padded to 8, timeval, status
    block_size = struct.unpack_from("<i", data, 8 + 4 + 390 + 6 + 16 + 4)[0]
    assert block_size == 4096, block_size
    # struct kdump_sub_header: offset_vmcoreinfo at +32, size_vmcoreinfo at +40
    struct.pack_into("<Q", data, block_size + 40, 0)
    n = data.count(b"VMCOREINFO\0")
    assert n >= 1
    data[:] = data.replace(b"VMCOREINFO\0", b"XMCOREINFO\0")
    p = tmp_path / "vmcore.novmci"
    p.write_bytes(bytes(data))
    env = dict(os.environ, FGK_CACHE_DIR=str(c["cache"]))
    r = run(FGK, "crash", "-n", p, VMLINUX, env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 1 and "--seed" in r.stderr, (r.returncode, r.stderr)
    r = run(FGK, "crash", "-n", p, VMLINUX, "--seed", c["seed"], env=env,
            stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert "kdump file without VMCOREINFO" in r.stderr and \
        "falling back to --seed/--seed-file" in r.stderr, r.stderr
    assert ".vmlinux.fgk" in r.stdout, r.stdout
    print(r.stderr.strip().splitlines()[0])


def test_kdump_profile_needs_dump_dir(tmp_path):
    """`run kdump` without --dump-dir: one line saying what is missing, exit
    status 2 (usage), no guest started."""
    r = subprocess.run([sys.executable, str(REPO / "qemu-profiles" / "run"), "kdump", "--log",
                        str(tmp_path / "log")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.strip() == ("run: profile kdump needs --dump-dir DIR "
                                "(where the capture kernel's dumps go)"), r.stderr
    assert not r.stdout and not (tmp_path / "log").exists()
