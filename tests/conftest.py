"""Shared helpers and fixtures for the fgk tests.

Helpers other tests reuse (``from conftest import boot, KERNEL_DIR, ...``):

  boot(script, profile='boot', seed=None, append='', timeout=180, **kw)
      Boot build/kernel/bzImage in QEMU (TCG), run the shell `script` as root
      in the guest and return an fgkrun.Result: .rc (script rc, 124 timeout,
      125 panic/oops), .output (script stdout+stderr), .log (serial console),
      .log_path, .cmdline, .panicked, .panic_line, .qemu_pid.  Extra keyword
      arguments go to fgkrun.Guest (seed_file, files, kernel, qmp, gdb, ...).

  guest(...)
      The same arguments, returns a started-able fgkrun.Guest for tests that
      talk to QEMU while the script runs (QMP, gdbstub):
          with guest("echo up; sleep 30", profile="dump") as g:
              g.wait_for_output("up")       # or g.wait_for_console(regex)
              fgkrun.qmp_command(g.wait_for_qmp(), "dump-guest-memory", ...)
          # QEMU is dead here
      A started Guest drains its console in a thread, so it never blocks;
      g.output_so_far() / g.console_so_far() read what came so far.

Every test runs with $FGK_CACHE_DIR set, to a directory of the session
(under pytest's --basetemp) unless the caller set it.

Fixtures: ``kernel`` (the build/kernel directory; skips, saying why, when
`make kernel` has not been run), ``vmlinux``, ``release``; ``elf_fixtures``
(no kernel: the tools built and the ELF fixtures of
layout-tools/tests/fixtures/build.sh generated, once per session).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "qemu-profiles"))

import fgkrun  # noqa: E402

# Debian's libdebuginfod-common sets DEBUGINFOD_URLS for login shells
# (/etc/profile.d/debuginfod.sh, debuginfod.debian.net).  No test may reach
# the network: clients get the URL of a test's own server explicitly
# (tests/debuginfod_server.py), every other process none.
os.environ["DEBUGINFOD_URLS"] = ""
# fgk-gdb indexes a relinked vmlinux in a background gdb after an attach
# without an index (docs/fgk-gdb.md, "The gdb index"): in the suite that is
# CPU the guests need, for files about to be deleted.  tests/test_gdb_index.py
# turns it on and tests it.
os.environ.setdefault("FGK_GDB_INDEX", "0")

import fgkbase  # noqa: E402

# build/kernel, or build/kernel-$KVARIANT (make check-debian: KVARIANT=debian)
KERNEL_DIR = fgkbase.KERNEL_DIR
KERNEL_NAME = fgkbase.KERNEL_NAME
BIN_DIR = REPO / "build" / "bin"


def load_script(name, path):
    """A script that is not a module (bench/boot-time.py) loaded as module
    name, for its functions."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def kernel_missing_reason():
    for name in ("bzImage", "vmlinux", "System.map", "release"):
        if not (KERNEL_DIR / name).is_file():
            make = "make kernel" + "".join(
                f" {k}={v}" for k, v in (("KVERSION", fgkbase.KVERSION),
                                         ("KVARIANT", fgkbase.KVARIANT)) if v)
            return f"{KERNEL_NAME}/{name} missing: run '{make}' first"
    return None


def require_kernel():
    reason = kernel_missing_reason()
    if reason:
        pytest.skip(reason)


# Timeouts are upper bounds for a guest on a loaded 2-core machine (a TCG
# boot takes seconds when idle): generous, never what a test measures.
def boot(script, profile="boot", seed=None, append="", timeout=180, **kw):
    """Boot the kernel, run `script` as root in the guest, return the Result."""
    require_kernel()
    res = fgkrun.run(profile, script, seed=seed, append=append, timeout=timeout, **kw)
    if res.message:
        print(res.message)      # shown by pytest when the test fails
    if res.timed_out:
        # where the guest was: its last console lines and vCPU registers
        print("--- the console's last lines ---")
        print("\n".join(res.log.splitlines()[-120:]))
    return res


def guest(script, profile="boot", seed=None, append="", timeout=180, **kw):
    """An fgkrun.Guest (not started) for tests that need QMP or the gdbstub."""
    require_kernel()
    return fgkrun.Guest(profile, script, seed=seed, append=append, timeout=timeout, **kw)


# A passed test's tmp_path is removed when the test is done; a failed
# test's stays for inspection (FGK_KEEP_TMP=1 keeps every one).  pytest 7.2
# (Debian 12's) keeps them all until a later session (its
# tmp_path_retention_policy came in 7.3), and make check runs its two tiers
# at once: with vmlinux copies, relinks and guest memory dumps their
# --basetemp directories grew to 7.1 and 4.8 GB and filled a CI machine's
# disk.  Directories of module and session fixtures (tmp_path_factory) stay.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "setup":
        args = getattr(item, "funcargs", None) or {}
        path = args.get("tmp_path") or args.get("tmpdir")
        if path is not None:
            item._fgk_tmp_path = Path(str(path))
    if rep.failed:
        item._fgk_failed = True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    path = getattr(item, "_fgk_tmp_path", None)
    if path is not None and not getattr(item, "_fgk_failed", False) \
            and not os.environ.get("FGK_KEEP_TMP"):
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _session_relink_cache(tmp_path_factory):
    """The relink cache (lib/cache.c: $FGK_CACHE_DIR, else ~/.cache/fgk) of
    everything a test runs without naming one (fgk attach in gdb, fgk crash,
    ...) is this session's own, under its --basetemp: make check runs the
    6.1 and the k612 tiers at once, and a test's relinks of guest seeds do
    not belong in the user's cache.  A FGK_CACHE_DIR set by the caller is
    kept; tests that need a cache of their own still set it themselves."""
    if not os.environ.get("FGK_CACHE_DIR"):
        os.environ["FGK_CACHE_DIR"] = str(tmp_path_factory.mktemp("fgk-cache"))
    yield


@pytest.fixture(scope="session")
def kernel():
    require_kernel()
    return KERNEL_DIR


@pytest.fixture(scope="session")
def vmlinux(kernel):
    return kernel / "vmlinux"


@pytest.fixture(scope="session")
def release(kernel):
    return (kernel / "release").read_text().strip()


@pytest.fixture(scope="session")
def elf_fixtures(tmp_path_factory):
    """The tools built (unless FGK_BIN names another fgk, e.g. the sanitizer
    build), the ELF fixtures generated from source into a private dir."""
    tools = REPO / "layout-tools"
    if "FGK_BIN" not in os.environ:
        r = subprocess.run(["make", "-s", "-C", str(tools), "all"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
    d = tmp_path_factory.mktemp("fixtures")
    r = subprocess.run([str(tools / "tests" / "fixtures" / "build.sh"), str(d)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    for f in ("fixture.elf", "relocs.elf"):
        assert (d / f).exists(), f"build.sh did not make {f}"
    return d
