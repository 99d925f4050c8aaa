"""Files that hold a seed, or the layout it gives, are private (issue 11,
host side): the seed gives every function address of a booted kernel, so
whatever holds it (seed records, serial logs, script output, dumps) or
what follows from it (a randomized System.map, vmlinux.fgk, whose relink
cache entries are even named by their seed) is created mode 0600, and the
directories made for them 0700, whatever the umask of the caller.

Unit tier (no kernel): the fgk CLI and libfgk's Python binding on the ELF
fixtures of layout-tools/tests/fixtures/build.sh, and the runner's file
helpers (qemu-profiles/fgkbase.py).  The runner's files after real boots
are checked in tests/test_boot.py (test_run_files_are_private,
test_cli_run_files_are_private, test_dump_profile_carries_vmcoreinfo) and
tests/test_crash.py (test_dump_dir_private).

Every test sets umask 022 first (a default-mode create would be 0644), so
a regression fails here whatever umask the test run has.
"""
import functools
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import oracle

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "layout-tools"
FGK = Path(os.environ.get("FGK_BIN", REPO / "build" / "bin" / "fgk"))
sys.path.insert(0, str(REPO / "qemu-profiles"))
sys.path.insert(0, str(TOOLS / "fuzz"))
import fgkbase  # noqa: E402
import inputs as I  # noqa: E402
import libfgk  # noqa: E402  (on sys.path through fgkbase)

SEED = bytes(range(32)).hex()


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def assert_mode(path, want):
    got = mode(path)
    assert got == want, f"{path}: mode {got:04o}, want {want:04o}"


@pytest.fixture(autouse=True)
def umask022():
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.fixture(scope="session")
def fix(elf_fixtures):
    """Tools built, ELF fixtures generated from source (conftest.py)."""
    return elf_fixtures


fgk = functools.partial(oracle.fgk, status=0, timeout=120)


def clean_env(tmp_path, **extra):
    """No relink cache from the caller's environment; TMPDIR private to the test."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("FGK_CACHE_DIR", "XDG_CACHE_HOME", "HOME")}
    env["TMPDIR"] = str(tmp_path)
    env.update(extra)
    return env


def build_id(fix):
    with libfgk.Vmlinux(fix / "relocs.elf") as vm:
        return vm.build_id


# ------------------------------------------------------------- the fgk CLI

def test_cli_outputs_are_0600(fix, tmp_path):
    """-o of seed record, seed capture, map and relink: 0600, also when a
    0644 file was there before (a new inode: an old reader's descriptor
    does not see the new content)."""
    v = fix / "relocs.elf"
    env = clean_env(tmp_path)
    text = tmp_path / "console.log"
    text.write_text(f"[    0.000000] Command line: fgkaslr_seed={SEED}\n")
    outs = {
        "record": ["seed", "record", "--seed", SEED, "--vmlinux", v, "-o"],
        "capture": ["seed", "capture", "--text", text, "--vmlinux", v, "-o"],
        "map": ["map", v, "--seed", SEED, "--format", "system-map", "-o"],
        "relink": ["relink", v, "--seed", SEED, "--no-cache", "-o"],
    }
    for name, args in outs.items():
        out = tmp_path / f"{name}.out"
        fgk(*args, out, env=env)
        assert_mode(out, 0o600)
        out.chmod(0o644)
        ino = out.stat().st_ino
        fgk(*args, out, env=env)
        assert_mode(out, 0o600)
        assert out.stat().st_ino != ino, f"{name}: the 0644 file was rewritten in place"
    # the seed really is in them (what makes them worth protecting)
    assert SEED in (tmp_path / "record.out").read_text()
    assert SEED in (tmp_path / "capture.out").read_text()


def test_cli_relink_cache_is_private(fix, tmp_path):
    """The relink cache: entries 0600, named by their seed in a 0700
    <build-id> directory; the directories fgk makes are 0700; -o beside the
    cache is 0600 too."""
    cache = tmp_path / "new" / "cache"
    env = clean_env(tmp_path, FGK_CACHE_DIR=str(cache))
    r = fgk("relink", fix / "relocs.elf", "--seed", SEED, "-o", tmp_path / "copy", env=env)
    entry = cache / build_id(fix) / f"{SEED}.vmlinux.fgk"
    assert entry.is_file(), r.stdout + r.stderr
    assert_mode(entry, 0o600)
    assert_mode(tmp_path / "copy", 0o600)
    for d in (entry.parent, cache, tmp_path / "new"):
        assert_mode(d, 0o700)


def test_cli_relink_cache_of_older_fgk_is_tightened(fix, tmp_path):
    """A cache written before this change (0755 directory, 0644 entries)
    is made private when it is used, not left readable."""
    cache = tmp_path / "cache"
    env = clean_env(tmp_path, FGK_CACHE_DIR=str(cache))
    fgk("relink", fix / "relocs.elf", "--seed", SEED, env=env)
    entry = cache / build_id(fix) / f"{SEED}.vmlinux.fgk"
    entry.chmod(0o644)
    entry.parent.chmod(0o755)
    r = fgk("relink", fix / "relocs.elf", "--seed", SEED, "--stats", env=env)
    assert "cached" in r.stderr, r.stderr           # reused, not rewritten
    assert_mode(entry, 0o600)
    assert_mode(entry.parent, 0o700)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a directory of another user")
def test_cli_relink_cache_of_another_user_is_not_used(fix, tmp_path):
    """A <build-id> directory of another user (who could list the seeds in
    it, or plant an entry) is not used: with -o the relink is written there
    only, without it is an error."""
    cache = tmp_path / "cache"
    env = clean_env(tmp_path, FGK_CACHE_DIR=str(cache))
    bdir = cache / build_id(fix)
    bdir.mkdir(parents=True)
    os.chown(bdir, 1000, 1000)
    r = fgk("relink", fix / "relocs.elf", "--seed", SEED, "-o", tmp_path / "out", env=env)
    assert "not caching" in r.stderr and "owned by uid 1000" in r.stderr, r.stderr
    assert_mode(tmp_path / "out", 0o600)
    assert list(bdir.iterdir()) == []
    r = subprocess.run([str(FGK), "relink", fix / "relocs.elf", "--seed", SEED],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1 and "owned by uid 1000" in r.stderr, r.stderr
    assert list(bdir.iterdir()) == []


def test_cli_crash_fallback_is_private(fix, tmp_path):
    """fgk crash without a relink cache writes vmlinux.fgk to
    $TMPDIR/fgk-crash-<uid>/<seed>.vmlinux.fgk: 0600 in a 0700 directory,
    not $TMPDIR/fgk-crash-<seed>.vmlinux.fgk, whose name, in a
    world-readable /tmp, was the seed."""
    dump = tmp_path / "vmcore"
    dump.write_bytes(I.elf_core(I.vmcoreinfo(build_id=None, seed=SEED)))
    env = clean_env(tmp_path)
    r = fgk("crash", dump, fix / "relocs.elf", "--crash", "echo", "-q", env=env)
    d = tmp_path / f"fgk-crash-{os.geteuid()}"
    target = d / f"{SEED}.vmlinux.fgk"
    assert str(target) in r.stdout, r.stdout
    assert_mode(target, 0o600)
    assert_mode(d, 0o700)
    assert not [p.name for p in tmp_path.iterdir() if SEED in p.name]
    # a looser directory of ours (an older fgk, a umask): tightened
    d.chmod(0o755)
    fgk("crash", dump, fix / "relocs.elf", "--crash", "echo", "-q", env=env)
    assert_mode(d, 0o700)
    assert_mode(target, 0o600)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a directory of another user")
def test_cli_crash_fallback_refuses_another_users_directory(fix, tmp_path):
    dump = tmp_path / "vmcore"
    dump.write_bytes(I.elf_core(I.vmcoreinfo(build_id=None, seed=SEED)))
    d = tmp_path / f"fgk-crash-{os.geteuid()}"
    d.mkdir(mode=0o777)
    os.chown(d, 1000, 1000)
    r = subprocess.run([str(FGK), "crash", dump, fix / "relocs.elf", "--crash", "echo", "-q"],
                       capture_output=True, text=True, env=clean_env(tmp_path))
    assert r.returncode == 1 and "owned by uid 1000" in r.stderr, r.stderr
    assert list(d.iterdir()) == []


# ------------------------------------------------------ the Python binding

def test_binding_outputs_are_0600(fix, tmp_path):
    """What Python writes through libfgk (the runner, fgk-gdb, tests):
    seed records, vmlinux.fgk, unflattened dumps."""
    rec = libfgk.SeedRecord(SEED, None, None, 0, "test")
    rec.write(tmp_path / "rec")
    assert_mode(tmp_path / "rec", 0o600)
    with libfgk.Vmlinux(fix / "relocs.elf") as vm:
        vm.layout(SEED).relink(tmp_path / "vmlinux.fgk")
    assert_mode(tmp_path / "vmlinux.fgk", 0o600)
    flat = tmp_path / "vmcore.flat"
    flat.write_bytes(I.flatten(I.kdump(I.vmcoreinfo(seed=SEED))))
    libfgk.unflatten(flat, tmp_path / "vmcore.kdump")
    assert_mode(tmp_path / "vmcore.kdump", 0o600)


# ----------------------------------------------- the runner's file helpers

def test_runner_write_private(tmp_path):
    p = fgkbase.write_private(tmp_path / "log", "fgkaslr_seed=" + SEED)
    assert_mode(p, 0o600)
    # an existing 0644 file: replaced by a new 0600 one
    p.chmod(0o644)
    with open(p) as old_reader:
        fgkbase.write_private(p, b"new")
        assert old_reader.read() == "fgkaslr_seed=" + SEED     # the old inode, not "new"
    assert_mode(p, 0o600)
    assert p.read_bytes() == b"new"
    with fgkbase.open_private(tmp_path / "stderr", "w+b") as f:
        f.write(b"x")
        f.seek(0)
        assert f.read() == b"x"
    assert_mode(tmp_path / "stderr", 0o600)
    # a umask that takes the owner's bits away does not change it either
    os.umask(0o277)
    fgkbase.write_private(tmp_path / "log2", "x")
    assert_mode(tmp_path / "log2", 0o600)


def test_runner_write_private_leaves_devices_alone(tmp_path):
    """--out /dev/stdout, a FIFO: written, their mode not touched."""
    before = mode("/dev/null")
    fgkbase.write_private("/dev/null", "x")
    assert mode("/dev/null") == before
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o644)
    r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fgkbase.write_private(fifo, "through")
        assert os.read(r, 100) == b"through"
    finally:
        os.close(r)
    assert_mode(fifo, 0o644)


def test_runner_private_dir(tmp_path):
    d = fgkbase.private_dir(tmp_path / "a" / "b" / "c")
    for p in (tmp_path / "a", tmp_path / "a" / "b", d):
        assert_mode(p, 0o700)
    # an existing directory the user named is left as it is ...
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    fgkbase.private_dir(shared)
    assert_mode(shared, 0o755)
    # ... one the runner owns (build/runs) is tightened
    fgkbase.private_dir(shared, tighten=True)
    assert_mode(shared, 0o700)
    os.umask(0o277)
    fgkbase.private_dir(tmp_path / "x" / "y")
    assert_mode(tmp_path / "x" / "y", 0o700)


def test_runner_make_private(tmp_path):
    """What QEMU writes (dump-guest-memory makes its file 0400 or by its umask)."""
    p = tmp_path / "vmcore"
    p.write_bytes(b"core")
    p.chmod(0o644)
    fgkbase.make_private(p)
    assert_mode(p, 0o600)
    p.chmod(0o400)
    fgkbase.make_private(p)
    assert_mode(p, 0o600)
