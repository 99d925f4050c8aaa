"""fgk-gdb's gdb index of a relinked vmlinux (docs/fgk-gdb.md, "The gdb
index"): written once beside the cache entry by a background gdb, then
read by the next load instead of indexing the DWARF again.

No guest: stock gdb loads vmlinux.fgk through fgk-gdb's own load_symbols()
at a KASLR-like offset, once without the index and once with it, and must
answer the same (symbols, lines, types); a user's own index cache never
serves a relinked file (it keys by build-id, which every layout shares);
the index goes with its cache entry.
"""
import os
import random
import shutil
import subprocess
import time

import pytest

from conftest import KERNEL_DIR, REPO, kernel_missing_reason
from oracle import fgk, readelf_build_id

VMLINUX = KERNEL_DIR / "vmlinux"
FGKGDB = REPO / "fgk-gdb"
OFFSET = 0x1e000000
# pc lookups go through the index's address table to a compilation unit:
# asked first, by number, before any lookup by name has read a unit in
PC_FUNCS = ["vfs_read", "schedule", "version_proc_show"]
# then functions shuffled on every FG build, a data symbol and a type, by name
QUERIES = ["info line version_proc_show", "info line *(do_sys_open+8)", "p &version_proc_show",
           "p &init_task", "p sizeof(struct task_struct)", "info address vfs_read",
           "info symbol version_proc_show"]


def pc_queries(path):
    """`info line *0xPC` inside PC_FUNCS, their addresses from nm (not gdb)."""
    r = subprocess.run(["nm", path], capture_output=True, text=True, check=True)
    addr = {f[2]: int(f[0], 16) for f in (x.split() for x in r.stdout.splitlines())
            if len(f) == 3 and f[2] in PC_FUNCS}
    assert sorted(addr) == sorted(PC_FUNCS), addr
    return [f"info line *{addr[n] + OFFSET + 4:#x}" for n in PC_FUNCS]


@pytest.fixture(scope="module")
def entry(tmp_path_factory):
    reason = kernel_missing_reason()
    if reason:
        pytest.skip(reason)
    if not shutil.which("gdb"):
        pytest.skip("gdb not installed (make deps)")
    cache = tmp_path_factory.mktemp("cache")
    seed = "%064x" % random.getrandbits(256)
    env = dict(os.environ, FGK_CACHE_DIR=str(cache))
    r = fgk("relink", str(VMLINUX), "--seed", seed, env=env)
    assert r.returncode == 0, r.stderr
    path = r.stdout.strip()
    assert os.path.isfile(path), r.stdout
    return path, readelf_build_id(VMLINUX), env, {}


def run_gdb(tmp_path, path, build_id, env, index=True, pre=(), write=False):
    """A batch gdb: fgk-gdb's load_symbols(path) at OFFSET, then QUERIES;
    with write, then what fgk attach does after a load without an index.
    Returns (how the index was used, the index-cache setting after the
    load, {query: answer})."""
    script = tmp_path / "load.py"
    script.write_text(
        "import gdb\n"
        "from fgkgdb import symbols\n"
        f"how = symbols.load_symbols({path!r}, {OFFSET}, index={index}, build_id={build_id!r})\n"
        "print('FGK-INDEX ' + how)\n"
        "print('FGK-SETTING %s %s' % (gdb.parameter('index-cache enabled'), "
        "gdb.parameter('index-cache directory')))\n"
        f"for q in {pc_queries(path) + QUERIES!r}:\n"
        "    print('FGK-Q ' + q + ' => ' + gdb.execute(q, to_string=True).strip()"
        ".replace(chr(10), ' | '))\n"
        + (f"print('FGK-WRITER %s' % symbols.write_index_in_background({path!r}, {build_id!r}))\n"
           if write else ""))
    cmd = ["gdb", "-batch", "-nx", "-iex", "set auto-load no", "-iex",
           "set debuginfod enabled off"]
    for p in pre:
        cmd += ["-iex", p]
    r = subprocess.run(cmd + ["-x", str(FGKGDB / "fgk.py"), "-x", str(script)],
                       capture_output=True, text=True, timeout=600,
                       env=env)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    how = [x.split(" ", 1)[1] for x in out if x.startswith("FGK-INDEX ")]
    setting = [x.split(" ", 1)[1] for x in out if x.startswith("FGK-SETTING ")]
    answers = dict(x[len("FGK-Q "):].split(" => ", 1) for x in out if x.startswith("FGK-Q "))
    assert how and setting and len(answers) == len(QUERIES) + len(PC_FUNCS), r.stdout + r.stderr
    for q, a in answers.items():
        assert "No line number" not in a and "not in symtab" not in a, (q, a, r.stderr)
    if write:
        assert "FGK-WRITER True" in out, r.stdout + r.stderr
    return how[0], setting[0], answers


def wait_for(path, timeout=300):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.isfile(path) and not os.path.exists(path + ".lock"):
            return True
        time.sleep(1)
    return False


def test_index_written_then_used_same_answers(entry, tmp_path):
    path, build_id, env, seen = entry
    env = dict(env, FGK_GDB_INDEX="1")
    idx = path + ".gdb-index"
    assert not os.path.exists(idx)
    how, _, plain = run_gdb(tmp_path, path, build_id, env, write=True)
    assert how == "none"
    seen["plain"] = plain
    assert wait_for(idx), f"{idx} not written within 300 s"
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".gdb-index.")], \
        "the writer's temporary directory was left behind"
    how, setting, indexed = run_gdb(tmp_path, path, build_id, env)
    assert how == "used"
    assert setting.startswith("False"), f"index-cache left on after the load: {setting}"
    assert indexed == plain
    assert "version_proc_show" in plain["info symbol version_proc_show"]
    # and the index belongs to this layout: another seed's file does not use it
    other = fgk("relink", str(VMLINUX), "--seed", "%064x" % random.getrandbits(256), env=env)
    assert other.returncode == 0, other.stderr
    assert not os.path.exists(other.stdout.strip() + ".gdb-index")


def test_user_index_cache_never_serves_a_relinked_file(entry, tmp_path):
    """A user's `set index-cache enabled on` (keyed by build-id) would give
    vmlinux.fgk the index of the original vmlinux, same build-id, other
    addresses: load_symbols turns it off for the load and restores it."""
    path, build_id, env, seen = entry
    user = tmp_path / "user-index-cache"
    user.mkdir()
    # the user's cache holds the original vmlinux's index
    r = subprocess.run(["gdb", "-batch", "-nx", "-iex", f"set index-cache directory {user}",
                        "-iex", "set index-cache enabled on", "-ex", f"file {VMLINUX}"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert (user / f"{build_id}.gdb-index").is_file(), list(user.iterdir())
    env = dict(env, FGK_GDB_INDEX="0")
    how, setting, answers = run_gdb(
        tmp_path, path, build_id, env,
        pre=[f"set index-cache directory {user}", "set index-cache enabled on"])
    assert how == "none"
    assert setting == f"True {user}", setting        # the user's settings, restored
    plain = seen.get("plain") or run_gdb(tmp_path, path, build_id, env)[2]
    assert answers == plain


def test_index_goes_with_its_entry(entry, tmp_path):
    """A cache entry that fails verification is replaced: its index goes too."""
    path, build_id, env, _ = entry
    idx = path + ".gdb-index"
    if not os.path.isfile(idx):
        pytest.skip("no index written (test_index_written_then_used_same_answers did not run)")
    seed = os.path.basename(path).split(".")[0]
    with open(path, "r+b") as f:            # truncate the entry: verification fails
        f.truncate(4096)
    r = fgk("relink", str(VMLINUX), "--seed", seed, env=env)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(idx), "the replaced entry's gdb index was kept"


def test_killed_writer_leaves_no_temporary_directory(entry, tmp_path):
    """A background index writer that is killed (SIGKILL to its process
    group, before its rename) leaves its temporary directory beside the
    entry; the next use of that cache directory removes it.  Directories
    of writers that still run stay unless they are 600 s old (fgk-gdb's
    lock goes stale then), and nothing else of the directory is touched."""
    _, build_id, env, _ = entry
    r = fgk("relink", str(VMLINUX), "--seed", "%064x" % random.getrandbits(256), env=env)
    assert r.returncode == 0, r.stderr
    path = r.stdout.strip()
    d = os.path.dirname(path)
    script = tmp_path / "kill.py"
    script.write_text(
        "import os, signal, time\n"
        "from fgkgdb import symbols\n"
        f"d = {d!r}\n"
        f"before = set(os.listdir(d))\n"
        f"assert symbols.write_index_in_background({path!r}, {build_id!r})\n"
        "tmp = [n for n in os.listdir(d) if n.startswith('.gdb-index.') and n not in before]\n"
        "assert len(tmp) == 1, tmp\n"
        "pidfile = os.path.join(d, tmp[0], 'writer.pid')\n"
        "end = time.monotonic() + 60\n"
        "while not os.path.exists(pidfile) and time.monotonic() < end:\n"
        "    time.sleep(0.05)\n"
        "pid = int(open(pidfile).read())\n"
        "os.killpg(pid, signal.SIGKILL)\n"
        "os.waitpid(pid, 0)\n"           # the writer is this gdb's child: reaped
        "print('FGK-KILLED ' + tmp[0])\n")
    r = subprocess.run(["gdb", "-batch", "-nx", "-iex", "set auto-load no", "-x",
                        str(FGKGDB / "fgk.py"), "-x", str(script)],
                       capture_output=True, text=True, timeout=300,
                       env=dict(env, FGK_GDB_INDEX="1"))
    killed = [x.split(" ", 1)[1] for x in r.stdout.splitlines() if x.startswith("FGK-KILLED ")]
    assert r.returncode == 0 and killed, r.stdout + r.stderr
    left = os.path.join(d, killed[0])
    assert os.path.isdir(left), "the killed writer's directory is already gone: nothing tested"
    assert not os.path.exists(path + ".gdb-index")

    def writer_dir(name, pid, age):
        p = os.path.join(d, name)
        os.mkdir(p, 0o700)
        if pid:
            with open(os.path.join(p, "writer.pid"), "w") as f:
                f.write(f"{pid}\n")
        t = time.time() - age
        os.utime(p, (t, t))
        return p

    running = writer_dir(".gdb-index.running", os.getpid(), 0)      # this process: alive
    starting = writer_dir(".gdb-index.starting", None, 0)            # no pid written yet
    old = writer_dir(".gdb-index.old", os.getpid(), 601)             # alive, but stale
    stranger = os.path.join(d, ".gdb-index.notes")                   # not a directory
    with open(stranger, "w") as f:
        f.write("x")
    r = fgk("relink", str(VMLINUX), "--seed", os.path.basename(path).split(".")[0], env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == path
    assert not os.path.exists(left), f"the killed writer's {left} was left behind"
    assert not os.path.exists(old), "a writer directory 601 s old was kept"
    assert os.path.isdir(running) and os.path.isdir(starting), \
        "a directory of a writer that may still run was removed"
    assert os.path.isfile(stranger) and os.path.isfile(path)
    for p in (running, starting):
        shutil.rmtree(p)
    os.unlink(stranger)
