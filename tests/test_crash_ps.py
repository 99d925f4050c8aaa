"""crash's task, log, file and VMA views on a dump of our kernel (issue 27
item 11, issue 29): `ps`, `log`, `files`, `vm`.

Debian 12's crash 8.0.2 lists only the idle tasks on our 6.1 dumps ("active
task ... not found in PID hash"): 6.1.y has the 6.5 change of struct pid's
`numbers[1]` into a flexible array, which crash learned in 8.0.4, and 6.1's
maple-tree VMAs came to crash in 8.0.3.  `make deps` installs a newer crash
(scripts/build-crash; docs/crash-replay.md, "Which crash").

One guest starts `sleep` with two extra descriptors open, writes a marker
into the kernel log, prints its own ps, `ls -l /proc/PID/fd` and
/proc/PID/maps, and panics; the runner saves an ELF and a kdump-compressed
dump.  On each dump, through `fgk crash` (the relinked vmlinux on an
FG-KASLR kernel, the plain one otherwise):

  * `ps` lists exactly the tasks drgn's for_each_task() finds (same task
    addresses, PIDs and names) plus one idle task per online CPU, and every
    process of the guest's own ps with its parent;
  * `files PID` gives the descriptors and paths the guest's ls -l printed;
  * `vm PID` gives the VMAs of the guest's /proc/PID/maps, with their files;
  * `log` holds every kernel line the serial console printed, the marker too.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import REPO
from test_crash import (CRASH, DRGN, EXTRA_APPEND, FGK, KERNEL_DIR, VMLINUX,
                        is_fg_vmlinux, require_tools, run)

GUEST_SCRIPT = r"""
sleep 1000 3</proc/version 4>/dev/null &
pid=$!
sleep 1
echo "fgk-crash-ps-marker pid $pid" > /dev/kmsg
echo "target-pid: $pid"
echo "online-cpus: $(cat /sys/devices/system/cpu/online)"
echo ps-begin; ps -o pid,ppid,comm; echo ps-end
echo fd-begin; ls -l /proc/$pid/fd; echo fd-end
echo maps-begin; cat /proc/$pid/maps; echo maps-end
echo c > /proc/sysrq-trigger
"""

DRGN_TASKS = r"""
from drgn.helpers.linux.pid import for_each_task
for t in for_each_task(prog):
    print("task", hex(t.value_()), t.pid.value_(), t.comm.string_().decode())
"""


def section(output, name):
    m = re.search(rf"^{name}-begin\n(.*?)^{name}-end$", output, re.S | re.M)
    assert m, f"no {name} section in the guest output"
    return m.group(1).splitlines()


def cpu_count(spec):
    """Number of CPUs in a /sys cpu list such as 0-1,3."""
    n = 0
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


@pytest.fixture(scope="module")
def dumped(tmp_path_factory):
    require_tools()
    d = tmp_path_factory.mktemp("crash-ps") / "D"
    script = d.parent / "guest.sh"
    script.write_text(GUEST_SCRIPT)
    cmd = [REPO / "qemu-profiles" / "run", "dump", "--dump-dir", d, "--init", script,
           "--timeout", "240", "--kernel", KERNEL_DIR / "bzImage"]
    if EXTRA_APPEND:
        cmd += ["--append", EXTRA_APPEND]
    if is_fg_vmlinux():
        cmd += ["--seed", os.urandom(32).hex()]
    r = run(*cmd)
    print(r.stderr)
    assert r.returncode == 0 and (d / "vmcore").is_file() and (d / "vmcore.kdump").is_file(), \
        f"no dump taken: {r.stderr}"
    output = (d / "output").read_text()
    pid = int(re.search(r"^target-pid: (\d+)$", output, re.M).group(1))
    cpus = cpu_count(re.search(r"^online-cpus: (\S+)$", output, re.M).group(1))
    cache = d.parent / "cache"
    env = dict(os.environ, FGK_CACHE_DIR=str(cache))
    cmds = d.parent / "cmds"
    cmds.write_text(f"ps\nfiles {pid}\nvm {pid}\nlog\nexit\n")
    sessions = {}
    for dump in ("vmcore", "vmcore.kdump"):
        s = run(FGK, "crash", d / dump, VMLINUX, "-i", cmds, env=env, stdin=subprocess.DEVNULL)
        assert s.returncode == 0, s.stderr + s.stdout[-2000:]
        sessions[dump] = s.stdout
    yield {"dir": d, "output": output, "pid": pid, "cpus": cpus, "env": env,
           "serial": (d / "serial.log").read_text(errors="replace"), "crash": sessions}
    shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)


def crash_cmd(out, cmd):
    """The output of one command of a crash -i session."""
    m = re.search(rf"^crash> {re.escape(cmd)}\n(.*?)(?=^crash> )", out, re.S | re.M)
    assert m, f"no '{cmd}' in the crash session"
    return m.group(1)


def crash_ps(out):
    """[(task, pid, ppid, cpu, comm)] of crash's ps."""
    rows = []
    for line in crash_cmd(out, "ps").splitlines()[1:]:
        f = line.lstrip(">").split()
        assert len(f) >= 9, f"ps line not understood: {line!r}"
        comm = f[-1]
        if comm.startswith("[") and comm.endswith("]"):     # kernel threads
            comm = comm[1:-1]
        rows.append((int(f[3], 16), int(f[0]), int(f[1]), int(f[2]), comm))
    return rows


DUMPS = ["vmcore", "vmcore.kdump"]


def test_crash_version():
    """The crash `make deps` installs: 8.0.2 cannot read our dumps."""
    if not CRASH:
        pytest.skip("crash not installed: run 'make deps'")
    r = run(REPO / "scripts" / "build-crash", "--check")
    assert r.returncode == 0, r.stderr


@pytest.mark.k612
@pytest.mark.parametrize("dump", DUMPS)
def test_ps_equals_drgn(dumped, dump, tmp_path):
    """crash ps == drgn for_each_task, plus one idle task per online CPU."""
    if DRGN is None:
        pytest.skip("drgn not installed (python3-drgn)")
    out = dumped["crash"][dump]
    assert "not found in PID hash" not in out
    d = dumped["dir"]
    target = VMLINUX
    if is_fg_vmlinux():
        r = run(FGK, "relink", VMLINUX, "--seed-file", d / "seed", env=dumped["env"])
        assert r.returncode == 0, r.stderr
        target = r.stdout.strip()
    (tmp_path / "tasks.py").write_text(DRGN_TASKS)
    r = run(DRGN, "-q", "-c", d / "vmcore", "-s", target, tmp_path / "tasks.py")
    assert r.returncode == 0, r.stderr
    drgn_tasks = {(int(a, 16), int(p), c) for a, p, c in
                  re.findall(r"^task (0x[0-9a-f]+) (\d+) (.*)$", r.stdout, re.M)}
    rows = crash_ps(out)
    print(f"crash ps: {len(rows)} tasks, drgn for_each_task: {len(drgn_tasks)}")
    assert len(drgn_tasks) > 20
    idle = [row for row in rows if row[1] == 0]
    assert sorted(row[3] for row in idle) == list(range(dumped["cpus"])), idle
    crash_tasks = [(a, p, c) for a, p, _, _, c in rows if p != 0]
    assert len(crash_tasks) == len(set(crash_tasks))
    assert set(crash_tasks) == drgn_tasks, \
        f"only crash: {set(crash_tasks) - drgn_tasks}, only drgn: {drgn_tasks - set(crash_tasks)}"


@pytest.mark.parametrize("dump", DUMPS)
def test_ps_equals_guest_ps(dumped, dump):
    """Every process the guest's ps printed, with its parent, except ps."""
    lines = section(dumped["output"], "ps")
    guest = {}
    for line in lines[1:]:
        pid, ppid, comm = line.split(None, 2)
        guest[int(pid)] = (int(ppid), comm)
    ps_pid = [p for p, (_, c) in guest.items() if c == "ps"]
    assert len(ps_pid) == 1
    del guest[ps_pid[0]]
    crash = {p: (pp, c) for _, p, pp, _, c in crash_ps(dumped["crash"][dump]) if p}
    missing = {p: v for p, v in guest.items() if p not in crash}
    assert not missing, f"in the guest's ps, not in crash ps: {missing}"
    for pid, (ppid, comm) in guest.items():
        assert crash[pid][0] == ppid, f"pid {pid}: ppid {crash[pid][0]}, guest says {ppid}"
        # the guest's ps adds a kworker's workqueue after '-'
        assert comm == crash[pid][1] or comm.startswith(crash[pid][1] + "-"), (pid, comm, crash[pid])


@pytest.mark.k612
@pytest.mark.parametrize("dump", DUMPS)
def test_files(dumped, dump):
    """crash files PID == ls -l /proc/PID/fd in the guest."""
    guest = {}
    for line in section(dumped["output"], "fd"):
        m = re.search(r" (\d+) -> (\S+)$", line)
        if m:
            guest[int(m.group(1))] = m.group(2)
    assert guest.get(3) == "/proc/version" and guest.get(4) == "/dev/null", guest
    out = crash_cmd(dumped["crash"][dump], f"files {dumped['pid']}")
    crash = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\d+)\s+[0-9a-f]{16}\s+[0-9a-f]{16}\s+[0-9a-f]{16}\s+\S+\s+(\S+)$", line)
        if m:
            crash[int(m.group(1))] = m.group(2)
    assert crash == guest, out


@pytest.mark.k612
@pytest.mark.parametrize("dump", DUMPS)
def test_vm(dumped, dump):
    """crash vm PID == /proc/PID/maps in the guest (the VMAs of its mm, so
    not the [vsyscall] gate page), files included."""
    guest = []
    for line in section(dumped["output"], "maps"):
        f = line.split()
        start, end = (int(x, 16) for x in f[0].split("-"))
        path = f[5] if len(f) > 5 else ""
        if path != "[vsyscall]":
            guest.append((start, end, path if path.startswith("/") else ""))
    assert len(guest) >= 6 and any(p == "/bin/busybox" for _, _, p in guest)
    out = crash_cmd(dumped["crash"][dump], f"vm {dumped['pid']}")
    crash = []
    for line in out.splitlines():
        m = re.match(r"^\s*[0-9a-f]{16}\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s*(\S*)$", line)
        if m:
            crash.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
    assert crash == guest, out


@pytest.mark.k612
@pytest.mark.parametrize("dump", DUMPS)
def test_log(dumped, dump):
    """crash log holds every kernel line of the serial console, in order."""
    ts = re.compile(r"^\[\s*(\d+\.\d+)\] (.*)$")
    serial = [m.groups() for line in dumped["serial"].splitlines()
              if (m := ts.match(line.rstrip("\r")))]
    log = []
    for line in crash_cmd(dumped["crash"][dump], "log").splitlines():
        if m := ts.match(line):
            log.append(m.groups())
            width = len(line) - len(m.group(2))
        elif log and line.strip():
            # the next line of a multi-line record: the console repeats the
            # timestamp, crash indents it
            log.append((log[-1][0], line[width:]))
    assert len(serial) > 50, "serial console log too short"
    assert any(f"fgk-crash-ps-marker pid {dumped['pid']}" in t for _, t in log)
    assert any("sysrq triggered crash" in t for _, t in log)
    it = iter(log)
    missing = [s for s in serial if s not in it]
    assert not missing, f"{len(missing)} console lines not in crash log, e.g. {missing[:3]}"
