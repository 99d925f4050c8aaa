"""Foundation tests: the kernel build, the QEMU runner and its exit codes."""

import os
import re
import secrets
import stat
import subprocess
import sys
import time

import pytest
from pathlib import Path

from conftest import KERNEL_NAME, REPO, boot, fgkbase, fgkrun
from oracle import pyelf_core_notes, pyelf_machine, pyelf_sections, readelf_build_id

RUN = REPO / "qemu-profiles" / "run"

EM_X86_64 = 62


# ---------------------------------------------------------------- artifacts

@pytest.mark.k612
def test_artifacts_exist(kernel):
    for name in ("vmlinux", "bzImage", "System.map", "config", "release"):
        assert (kernel / name).is_file(), name
    assert (kernel / "modules").is_dir()
    assert (kernel / "bzImage").stat().st_size > 100_000


@pytest.mark.k612
def test_vmlinux_is_x86_64_elf_with_dwarf(vmlinux):
    assert pyelf_machine(vmlinux) == EM_X86_64
    secs = pyelf_sections(vmlinux)
    assert ".debug_info" in secs and secs[".debug_info"][2] > 0
    assert ".text" in secs
    assert fgkrun.elf_build_id(vmlinux) == readelf_build_id(vmlinux), "vmlinux build-id"


@pytest.mark.k612
def test_system_map_matches_vmlinux(kernel):
    lines = (kernel / "System.map").read_text().splitlines()
    assert len(lines) > 1000
    assert any(l.endswith(" T start_kernel") or l.endswith(" t start_kernel") for l in lines)


@pytest.mark.k612
def test_config_has_fragment_options(kernel):
    have = set((kernel / "config").read_text().splitlines())
    want = {}
    for frag in fgkbase.kernel_fragments():
        for line in frag.read_text().splitlines():
            m = re.match(r"(CONFIG_\w+)=", line) or re.match(r"# (CONFIG_\w+) is not set", line)
            if m:
                want[m.group(1)] = line
    assert want
    missing = [l for l in want.values()
               if l not in have and not (l.startswith("# ") and
                                         l.split()[1] + "=y" not in have and
                                         l.split()[1] + "=m" not in have)]
    names = ", ".join(f.name for f in fgkbase.kernel_fragments())
    assert not missing, f"options from {names} not in the built config: {missing}"


@pytest.mark.k612
def test_release_is_the_trees(kernel, release):
    tree = kernel / "build"
    if not tree.is_dir():
        pytest.skip(f"{KERNEL_NAME}/build (link to the kernel tree) is missing")
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(tree),
                          "kernelrelease"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == release


# ---------------------------------------------------------------- booting

INFO_SCRIPT = r"""
echo "uname=$(uname -r)"
echo "cmdline=$(cat /proc/cmdline)"
echo "uid=$(id -u)"
echo "nproc=$(nproc)"
echo "kallsyms-begin"
cat /proc/kallsyms
echo "kallsyms-end"
echo "unpriv-begin"
su -s /bin/sh -c 'id -u; head -n 5 /proc/kallsyms' fgk
echo "unpriv-end"
exit 7
"""


@pytest.fixture(scope="module")
def info(kernel):
    res = boot(INFO_SCRIPT, append="fgk.test=hello-42", timeout=180)
    assert res.rc == 7, f"rc {res.rc}: {res.message}\n{res.log[-3000:]}"
    return res


def section(output, name):
    m = re.search(rf"^{name}-begin\n(.*?)^{name}-end$", output, re.S | re.M)
    assert m, f"no {name} section in guest output"
    return m.group(1).splitlines()


def field(output, key):
    m = re.search(rf"^{key}=(.*)$", output, re.M)
    assert m, f"no {key}= line in guest output"
    return m.group(1)


@pytest.mark.k612
def test_script_rc_is_propagated(info):
    assert info.rc == 7 and info.script_rc == 7
    assert not info.panicked and not info.timed_out


@pytest.mark.k612
def test_script_runs_as_root_on_smp(info):
    assert field(info.output, "uid") == "0"
    assert field(info.output, "nproc") == "2"


@pytest.mark.k612
def test_uname_is_built_release(info, release):
    assert field(info.output, "uname") == release


@pytest.mark.k612
def test_cmdline_has_appended_args(info):
    cmdline = field(info.output, "cmdline")
    assert "fgk.test=hello-42" in cmdline.split()
    assert "console=ttyS0" in cmdline.split()
    assert info.cmdline == cmdline


@pytest.mark.k612
def test_kallsyms_has_real_addresses_for_root(info):
    lines = section(info.output, "kallsyms")
    assert len(lines) > 5000
    rx = re.compile(r"^([0-9a-f]{16}) (\S) (\S+)")
    parsed = [rx.match(l) for l in lines]
    assert all(parsed), [l for l, m in zip(lines, parsed) if not m][:5]
    addrs = {m.group(3): int(m.group(1), 16) for m in parsed}
    assert addrs["start_kernel"] >= 0xffffffff80000000
    assert sum(1 for m in parsed if int(m.group(1), 16) == 0) < len(parsed) / 100


@pytest.mark.k612
def test_kallsyms_hides_addresses_from_users(info):
    lines = section(info.output, "unpriv")
    assert lines[0] == "1000", "setpriv did not drop to uid 1000 (CONFIG_MULTIUSER?)"
    assert len(lines) == 6
    assert all(l.startswith("0000000000000000 ") for l in lines[1:]), lines


@pytest.mark.k612
def test_output_is_clean_of_kernel_messages(info):
    # the script's output channel (ttyS1) carries nothing but the script
    assert not re.search(r"^\[\s*\d+\.\d+\] ", info.output, re.M)
    assert fgkrun.MARK_BEGIN in info.log and "=====FGK-OUTPUT-END rc=7=====" in info.log


def test_log_file_written(info):
    assert info.log_path.is_file()
    text = info.log_path.read_text()
    assert "Linux version" in text and "=====FGK-OUTPUT-END rc=7=====" in text


def test_timeout_kills_guest(kernel):
    t0 = time.monotonic()
    res = boot("echo sleeping; sleep 300", timeout=10)
    assert res.rc == 124 and res.timed_out
    assert time.monotonic() - t0 < 40
    assert "timed out after 10 s" in res.message
    # where the guest was: every vCPU's registers, from QEMU, in the log
    assert re.search(r"vCPU RIPs( ffffffff[0-9a-f]{8}){2}$", res.message), res.message
    regs = res.log.split("=== fgkrun: guest timed out; vCPU registers ===\n")[1]
    assert len(re.findall(r"^RIP=ffffffff", regs, re.M)) == 2 and "CR3=" in regs
    assert "YMM" not in regs and regs.rstrip().endswith("=== end vCPU registers ===")
    # and the code there, as memory holds it
    assert re.search(r"^code at ffffffff[0-9a-f]{8}:( [0-9a-f]{2}){16}$", regs, re.M), regs
    assert res.qemu_pid and not os.path.exists(f"/proc/{res.qemu_pid}"), "QEMU still running"


def test_panic_is_reported(kernel):
    res = boot("echo about to crash; echo c > /proc/sysrq-trigger; sleep 5; echo survived",
               timeout=180)
    assert res.rc == 125, res.message
    assert res.panicked
    assert "Kernel panic" in res.panic_line or "sysrq" in res.panic_line.lower()
    assert str(res.log_path) in res.message
    assert "about to crash" in res.output and "survived" not in res.output
    assert not os.path.exists(f"/proc/{res.qemu_pid}")


def test_cli_prints_output_and_returns_rc(kernel, tmp_path):
    script = tmp_path / "s.sh"
    script.write_text("echo from-guest; exit 3\n")
    log = tmp_path / "serial.log"
    p = subprocess.run([sys.executable, str(RUN), "boot", "--init", str(script),
                        "--log", str(log), "--timeout", "120"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 3, p.stderr
    assert p.stdout == "from-guest\n"
    assert "Linux version" in log.read_text()


def test_cli_default_script_and_seed_arg(kernel, tmp_path):
    seed = "ab" * 32
    p = subprocess.run([sys.executable, str(RUN), "boot", "--seed", seed,
                        "--log", str(tmp_path / "l.log")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "release: " in p.stdout
    # the cmdline line; the kernel may mask the value (layout-spec section 9)
    assert re.search(r"^cmdline: .*fgkaslr_seed=", p.stdout, re.M), p.stdout


# ---------------------------------------------------------------- private files

def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_run_files_are_private(kernel):
    """Everything a run leaves under build/runs holds the seed (the log, the
    script's output, the initrd with the script) or gives the guest away
    (the QMP socket): files 0600, the socket QEMU makes no group/other
    bits, build/runs 0700 -- with umask 022, and even when build/runs was
    0755 (made by an older runner).  Checked while the guest runs (the
    scratch files go at the end), then the final log."""
    from conftest import guest
    seed = secrets.token_hex(32)
    old = os.umask(0o022)
    try:
        fgkrun.RUNS_DIR.mkdir(parents=True, exist_ok=True)
        fgkrun.RUNS_DIR.chmod(0o755)
        # dump profile: a QMP socket beside the log
        g = guest("cat /proc/fgkaslr_seed 2>/dev/null; echo up; sleep 300", profile="dump",
                  seed=seed, timeout=300)
        g.start()
        try:
            assert g.wait_for_output(r"up\n", timeout=240), "guest did not start"
            g.wait_for_qmp()
            assert mode(fgkrun.RUNS_DIR) == 0o700
            live = sorted(fgkrun.RUNS_DIR.glob(glob_escape(g.log_path.stem) + ".*"))
            assert {p.suffix for p in live} >= {".log", ".initrd", ".out", ".ttyS1",
                                                 ".qemu-stderr", ".qmp", ".qemu-cfg", ".diag"}, live
            # the kernel command line reaches QEMU through the 0600 config
            # file, not its argv, which every local user can read
            argv = Path(f"/proc/{g.proc.pid}/cmdline").read_bytes()
            assert b"-readconfig" in argv and seed.encode() not in argv, argv
            for p in live:
                if stat.S_ISSOCK(os.lstat(p).st_mode):
                    assert mode(p) & 0o077 == 0, f"{p.name}: {mode(p):04o}"
                else:
                    assert mode(p) == 0o600, f"{p.name}: {mode(p):04o}"
            g.kill()
            res = g.wait()
        finally:
            g.kill()
    finally:
        os.umask(old)
    assert res.log_path.is_file() and mode(res.log_path) == 0o600
    assert not res.log_path.with_suffix(".initrd").exists()


def glob_escape(s):
    return re.sub(r"([*?[])", r"[\1]", s)


def test_cli_run_files_are_private(kernel, tmp_path):
    """qemu-profiles/run --log in directories it makes, --out over an
    existing 0644 file: 0600 files, 0700 new directories, umask 022; the
    directory the user named (tmp_path) is left alone."""
    seed = secrets.token_hex(32)
    log = tmp_path / "new" / "logs" / "serial.log"
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    out.chmod(0o644)
    tmp_path.chmod(0o755)
    p = subprocess.run([sys.executable, str(RUN), "replay", "--seed", seed,
                        "--log", str(log), "--out", str(out), "--timeout", "240"],
                       capture_output=True, text=True, timeout=300,
                       preexec_fn=lambda: os.umask(0o022))
    assert p.returncode == 0, p.stderr
    assert "release: " in out.read_text()
    assert mode(log) == 0o600 and mode(out) == 0o600
    assert mode(tmp_path / "new") == 0o700 and mode(log.parent) == 0o700
    assert mode(tmp_path) == 0o755
    assert sorted(q.name for q in log.parent.iterdir()) == ["serial.log"]


# ---------------------------------------------------------------- runner, no boot

@pytest.mark.parametrize("argv", [
    ["no-such-profile"],
    ["replay"],                          # needs a seed
    ["boot", "--seed", "xyz"],
    ["boot", "--seed", "0x" + "1" * 62],
    ["boot", "--no-such-option"],
    ["boot", "--seed-file", "/nonexistent/record"],
])
def test_cli_usage_errors_exit_2(argv):
    p = subprocess.run([sys.executable, str(RUN), *argv], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.strip()


def test_profiles_load():
    names = fgkrun.list_profiles()
    for n in ("boot", "replay", "debug", "dump"):
        assert n in names
        fgkrun.load_profile(n)
    assert fgkrun.load_profile("replay").require_seed
    assert "nokaslr" in fgkrun.load_profile("replay").append.split()
    assert fgkrun.load_profile("debug").gdb
    dump = fgkrun.load_profile("dump")
    assert dump.qmp and "vmcoreinfo" in dump.qemu_args


def test_make_demo_reproduces_the_boot(kernel):
    """scripts/demo (`make demo`): libfgk rebuilds the booted layout from the
    guest's /proc/kallsyms, and fgk map on the captured seed predicts that
    /proc/kallsyms line for line."""
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "demo")], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert "fgk reproduced the booted layout exactly" in r.stdout, r.stdout[-3000:]
    m = re.search(r"^base KASLR offset: (0x[0-9a-f]+)", r.stdout, re.M)
    rec = fgkrun.read_seed_record(REPO / "build" / "demo" / "last.seed")
    assert m and rec.offset == int(m.group(1), 16) and rec.offset % 0x200000 == 0
    assert f"FG-KASLR seed:    {rec.seed}" in r.stdout


def test_seed_record_roundtrip():
    seed = "0123456789abcdef" * 4
    text = fgkrun.format_seed_record(seed, build_id="DEADBEEF", release="6.1.192",
                                     offset=0x1a000000, note="a # in a note")
    assert text.splitlines()[0] == f"seed: {seed}"
    rec = fgkrun.parse_seed_record("# comment\n\n" + text)
    assert rec.as_dict() == {"seed": seed, "build-id": "deadbeef", "release": "6.1.192",
                             "offset": 0x1a000000, "note": "a # in a note"}
    assert fgkrun.format_seed_record(seed, offset="0x1a000000") == \
        fgkrun.format_seed_record(seed, offset=0x1a000000)


@pytest.mark.parametrize("text,err", [
    ("build-id: ab\n", "no 'seed:'"),
    ("seed: 1234\n", "64 hex"),
    ("seed: " + "0" * 64 + "\nseed: " + "1" * 64 + "\n", "duplicate"),
    ("seed: " + "0" * 64 + "\ncolour: red\n", "unknown key"),
    ("seed " + "0" * 64 + "\n", "key: value"),
    ("seed: " + "0" * 64 + "\noffset: 1234\n", "0x"),
])
def test_seed_record_errors(text, err):
    with pytest.raises(fgkrun.UsageError, match=err):
        fgkrun.parse_seed_record(text, "t.seed")


def test_base_initramfs_is_padded():
    # the script archive that follows must start 4-byte aligned, or the
    # kernel never sees it
    base = fgkrun.base_initramfs()
    data = base.read_bytes()
    assert data[:2] == b"\x1f\x8b" and len(data) % 4 == 0


def test_cpio_archive_layout():
    data = fgkrun.overlay_archive("echo hi\n", {"/opt/x/data": b"abc"})
    assert data.startswith(b"070701") and len(data) % 512 == 0
    for name in (b"fgk/script", b"opt/x/data", b"TRAILER!!!"):
        assert name + b"\0" in data
    # every header is aligned and well formed
    pos, names = 0, []
    while True:
        assert data[pos:pos + 6] == b"070701", pos
        filesize = int(data[pos + 54:pos + 62], 16)
        namesize = int(data[pos + 94:pos + 102], 16)
        name = data[pos + 110:pos + 110 + namesize - 1].decode()
        names.append(name)
        pos += 110 + namesize
        pos += -pos % 4
        pos += filesize
        pos += -pos % 4
        if name == "TRAILER!!!":
            break
    assert names == ["fgk/script", "opt", "opt/x", "opt/x/data", "TRAILER!!!"]


# ---------------------------------------------------------------- dump profile

@pytest.mark.k612
def test_dump_profile_carries_vmcoreinfo(kernel, tmp_path):
    """QMP dump-guest-memory of a `dump` guest has the guest's VMCOREINFO.
    QEMU runs with umask 077: the QMP socket and the dump it writes (the
    whole guest memory, the seed in it) have no group/other bits, although
    the test's umask is 022."""
    from conftest import guest
    core = tmp_path / "vmcore"
    g = guest("ls /sys/firmware/qemu_fw_cfg/by_name/etc > /dev/null && echo fw_cfg-ok; "
              "sleep 120", profile="dump", qmp=tmp_path / "qmp.sock", timeout=240)
    old = os.umask(0o022)
    try:
        with g:
            assert g.wait_for_console("=====FGK-OUTPUT-BEGIN=====", timeout=120), \
                "guest did not start"
            qmp = g.wait_for_qmp()
            assert mode(qmp) & 0o077 == 0, f"QMP socket {mode(qmp):04o}"
            fgkrun.qmp_command(qmp, "dump-guest-memory", paging=False,
                               protocol=f"file:{core}")
            g.kill()
    finally:
        os.umask(old)
    assert mode(core) & 0o077 == 0, f"dump {mode(core):04o}"
    notes = {name: desc for name, _, desc in pyelf_core_notes(core)}
    assert "VMCOREINFO" in notes, f"notes in the dump: {sorted(notes)}"
    info = notes["VMCOREINFO"].decode("ascii", "replace")
    assert "OSRELEASE=" + (kernel / "release").read_text().strip() in info
    assert "SYMBOL(swapper_pg_dir)=" in info and "KERNELOFFSET=" in info


# ---------------------------------------------------------------- live guests

def test_live_guest_console_is_drained_and_output_readable(kernel):
    """A running guest never blocks on its console (200 kB written while the
    test only polls the script's output), and its output is readable live."""
    from conftest import guest
    spam = ("i=0; while [ $i -lt 3000 ]; do "
            "echo console-spam-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx > /dev/console; "
            "i=$((i+1)); done; echo done-spamming; sleep 120")
    with guest(spam, timeout=240) as g:
        deadline = time.monotonic() + 180
        while "done-spamming" not in g.output_so_far() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "done-spamming" in g.output_so_far()
        assert g.wait_for_output(r"done-spamming\n", timeout=5)
        assert g.wait_for_console("console-spam-2999", timeout=30)
        assert "console-spam-0-" in g.console_so_far()
        pid = g.proc.pid
    assert not os.path.exists(f"/proc/{pid}"), "QEMU still running after the with block"
