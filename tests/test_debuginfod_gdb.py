"""fgk-gdb: `fgk attach` with no vmlinux at all, through debuginfod.

One guest (debug profile, base KASLR, random seed) that inserted
fgk_test.ko; a local debuginfod (tests/debuginfod_server.py) serving hard
links of build/kernel/vmlinux and the modules.  gdb runs from an empty
directory with no file loaded, gdb's own debuginfod client off, and only
our server in DEBUGINFOD_URLS (DEBUGINFOD_CACHE_PATH a fresh directory):

1. `fgk attach` reads the build-id from guest memory, fetches vmlinux and
   fgk_test.ko from the server, and `bt`, `info symbol`, `p &func`, a
   breakpoint and `list` work as with a local vmlinux (test_gdb.py); a
   second gdb with the same cache says "from the debuginfod cache" (both
   timed);
2. `--build-id HEX` skips the scan; an unknown build-id and DEBUGINFOD_URLS
   unset are one-line errors;
3. the server stopped, the cache empty: one-line error naming the
   build-id, no Python traceback.
"""
import os
import random
import re
import subprocess
import time

import pytest

import libfgk
from conftest import KERNEL_DIR, KERNEL_NAME, guest
from oracle import readelf_sections
from debuginfod_server import (client_env, debuginfod_factory,  # noqa: F401 (fixture)
                               kernel_debuginfo_dir)
from test_gdb import (LOADER, TARGETS, VMLINUX, decl_line, kallsyms, link_breakpoint,
                      live_output, nm_link, require_fg)

KO_NAME = "fgk_test"

GUEST_SCRIPT = r"""
insmod /fgk/%s.ko
for f in %s; do grep " $f\$" /proc/kallsyms; done
grep '\[%s\]' /proc/kallsyms | sed 's/^/ksym /'
echo READY
echo FGK-GDB-READY > /dev/console
while :; do read -r l < /proc/version; uname > /dev/null; sleep 0.1; done
""" % (KO_NAME, " ".join(list(TARGETS) + ["seq_read_iter"]), KO_NAME)


def module_ko():
    mods = KERNEL_DIR / "modules"
    ko = next(mods.rglob(f"{KO_NAME}.ko"), None) if mods.is_dir() else None
    if ko is None:
        pytest.skip(f"{KERNEL_NAME}/modules has no {KO_NAME}.ko: run 'make kernel'")
    return ko


def build_id(path):
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


def run_gdb(port, cwd, env, *commands, timeout=900):
    """gdb -batch -nx in `cwd` (empty: no vmlinux anywhere near), gdb's own
    debuginfod client off; (CompletedProcess, seconds)."""
    args = ["gdb", "-batch", "-nx", "-ex", "set debuginfod enabled off",
            "-ex", "set pagination off", "-ex", "set width 0",
            "-ex", f"target remote 127.0.0.1:{port}", "-ex", f"source {LOADER}"]
    for c in commands:
        args += ["-ex", c]
    t = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                       env=env)
    dt = time.monotonic() - t
    print("$ gdb " + " ".join(f"-ex {c!r}" for c in commands) + f"   ({dt:.2f} s)")
    print(r.stdout[-6000:])
    print(r.stderr[-3000:])
    return r, dt


def assert_no_traceback(r):
    for text in (r.stdout, r.stderr):
        assert "Traceback" not in text and "Python Exception" not in text, text


@pytest.fixture(scope="module")
def setup(debuginfod_factory, tmp_path_factory):  # noqa: F811 (the fixture)
    require_fg()
    ko = module_ko()
    files = kernel_debuginfo_dir(tmp_path_factory.mktemp("debuginfod-files"))
    server = debuginfod_factory([files])
    seed = "%064x" % random.getrandbits(256)
    g = guest(GUEST_SCRIPT, profile="debug", seed=seed, gdb=0, kaslr=True, timeout=900,
              files={f"/fgk/{KO_NAME}.ko": str(ko)})
    port = g.gdb_port
    g.start()
    try:
        assert g.wait_for_console("FGK-GDB-READY", timeout=600), "guest did not come up"
        assert g.wait_for_output(r"(?m)^READY$", timeout=120), live_output(g)
        out = live_output(g)
        ksyms = {m.group(2): int(m.group(1), 16) for m in re.finditer(
            r"^ksym ([0-9a-f]{16}) [tT] (\w+)\s+\[%s\]$" % KO_NAME, out, re.M)}
        assert ksyms, out
        yield {"server": server, "port": port, "seed": seed, "kallsyms": kallsyms(out),
               "ko_kallsyms": ksyms, "bid": build_id(VMLINUX), "ko_bid": build_id(ko),
               "fgk_cache": tmp_path_factory.mktemp("fgk-cache")}
    finally:
        g.kill()
        server.stop()


def fresh(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    return d


@pytest.mark.k612
def test_attach_without_vmlinux_fetches_it(setup, tmp_path):
    s = setup
    url, bid, kbid = s["server"].url, s["bid"], s["ko_bid"]
    cache, cwd = fresh(tmp_path, "debuginfod-cache"), fresh(tmp_path, "empty")
    env = client_env(url, cache)
    env["FGK_CACHE_DIR"] = str(s["fgk_cache"])
    syms, ksyms = s["kallsyms"], s["ko_kallsyms"]
    kfunc = next(n for n in ("fgk_test_fn_a", "fgk_test_leaf") if n in ksyms)
    vfile, vline = decl_line("version_proc_show")
    probe = ["fgk info", "bt", f"info symbol {syms['version_proc_show']:#x}",
             "p &version_proc_show", f"info symbol {ksyms[kfunc]:#x}",
             f"list {vfile}:{vline},{vline + 6}"]
    r, first = run_gdb(s["port"], cwd, env, "fgk attach", *probe,
                       "break version_proc_show", "continue", "p/x $pc", "bt", "delete",
                       "detach")
    out = r.stdout
    assert_no_traceback(r)
    assert "fgk attach:" not in r.stderr, r.stderr
    assert os.listdir(cwd) == []
    # the build-id from guest memory, vmlinux and the module from our server
    assert re.search(rf"^fgk: build-id read from guest memory at 0x[0-9a-f]+: {bid} ",
                     out, re.M), out
    assert re.search(rf"^fgk: vmlinux build-id {bid} fetched from {re.escape(url)}/\S+ into "
                     rf"{re.escape(str(cache))}/\S+", out, re.M), out
    assert re.search(rf"^fgk: module {KO_NAME}: build-id {kbid} fetched from "
                     rf"{re.escape(url)}/\S+ into {re.escape(str(cache))}/", out, re.M), out
    assert re.search(r"^fgk: modules: 1 loaded", out, re.M), out
    assert re.search(rf"fgk: seed {s['seed']} \(guest fgkaslr_boot_info\); \d+/\d+ code", out)
    assert re.search(rf"^vmlinux:\s+{re.escape(str(cache))}/\S+ \(fetched from "
                     rf"{re.escape(url)}/", out, re.M), out
    # symbols as with a local vmlinux (test_gdb.py)
    rt = syms["version_proc_show"]
    assert re.search(r"^version_proc_show in section \.text\.fgkaslr", out, re.M)
    assert re.search(rf"\(\*\)\(.*\)\) {rt:#x} <version_proc_show>", out)
    # gdb's objfile: the fetched .ko, or the copy fgk-gdb made of it when
    # some of its sections have an address (6.12: docs/fgk-gdb.md, Modules)
    copy = re.search(rf"^fgk: module {KO_NAME}: sections .* had an address in the \.ko: gdb "
                     r"reads a copy with address 0 \((\S+)\)$", out, re.M)
    assert bool(copy) == any(a for _, a, _ in readelf_sections(module_ko()).values()), out
    where = re.escape(copy.group(1)) if copy else re.escape(str(cache)) + "/"
    assert re.search(rf"^{kfunc} in section \.text\.{kfunc} of {where}", out, re.M), out
    assert re.search(r"^\d+\s+.*version_proc_show\(struct seq_file \*m", out, re.M), out
    # bt at the stop: a named frame ("#0  f (...) at" when the pc starts a line)
    assert re.search(r"^#0 +(?:0x[0-9a-f]+ in )?\w+ \(", out, re.M)
    chunk = re.split(r"^(?:Thread \d+ hit )?Breakpoint \d+, ", out, flags=re.M)[1]
    assert chunk.startswith(("version_proc_show (", "0x")) and "version_proc_show" in \
        chunk.splitlines()[0], chunk[:300]
    frames = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\w+) ", chunk, re.M)
    assert frames[0] == "version_proc_show"
    for caller in TARGETS["version_proc_show"]:
        assert caller in frames, frames
    link_bp, _, _ = link_breakpoint("version_proc_show")
    pc = int(re.search(r"^\$\d+ = (0x[0-9a-f]+)$", chunk, re.M).group(1), 16)
    assert pc == rt + link_bp - nm_link("version_proc_show")
    fetch1 = float(re.search(r"^attach took:.*\bfetch ([0-9.]+) s", out, re.M).group(1))

    # a second gdb with the same debuginfod cache
    r, second = run_gdb(s["port"], cwd, env, "fgk attach", *probe[:5], "detach")
    out = r.stdout
    assert_no_traceback(r)
    assert "fgk attach:" not in r.stderr, r.stderr
    assert re.search(rf"^fgk: vmlinux build-id {bid} from the debuginfod cache: "
                     rf"{re.escape(str(cache))}/{bid}/", out, re.M), out
    assert re.search(rf"^fgk: module {KO_NAME}: build-id {kbid} from the debuginfod cache",
                     out, re.M), out
    assert re.search(r"^version_proc_show in section \.text\.fgkaslr", out, re.M)
    assert re.search(rf"^{kfunc} in section \.text\.{kfunc} ", out, re.M)
    fetch2 = float(re.search(r"^attach took:.*\bfetch ([0-9.]+) s", out, re.M).group(1))
    print(f"TIMES: first attach (fetch from {url}) gdb {first:.2f} s, of which fetch "
          f"{fetch1:.2f} s; from the debuginfod cache gdb {second:.2f} s, fetch "
          f"{fetch2:.2f} s")


@pytest.mark.k612
def test_attach_build_id_option(setup, tmp_path):
    """--build-id skips the scan; a build-id the server does not have, and no
    DEBUGINFOD_URLS, are one-line errors."""
    s = setup
    bid = s["bid"]
    cache, cwd = fresh(tmp_path, "cache"), fresh(tmp_path, "empty")
    env = client_env(s["server"].url, cache)
    env["FGK_CACHE_DIR"] = str(s["fgk_cache"])
    unknown = "00" * 20
    r, _ = run_gdb(s["port"], cwd, env, f"fgk attach --build-id {unknown}",
                   f"fgk attach --build-id {bid.upper()} --no-modules",
                   f"info symbol {s['kallsyms']['version_proc_show']:#x}", "detach")
    assert_no_traceback(r)
    assert "build-id read from guest memory" not in r.stdout
    assert f"fgk: vmlinux build-id {bid} fetched from {s['server'].url}/" in r.stdout
    assert re.search(r"^version_proc_show in section \.text\.fgkaslr", r.stdout,
                     re.M)
    errs = [l for l in r.stderr.splitlines() if l.startswith("fgk attach:")]
    assert len(errs) == 1, r.stderr
    assert f"no vmlinux with build-id {unknown} on {s['server'].url} (not found)" in errs[0]

    env = client_env(None, fresh(tmp_path, "cache2"))
    r, _ = run_gdb(s["port"], cwd, env, "fgk attach", "detach")
    assert_no_traceback(r)
    assert "fgk attach: no vmlinux: pass --vmlinux PATH or load it first with 'file " \
        "PATH/vmlinux', or set DEBUGINFOD_URLS" in r.stderr


def test_attach_server_stopped(setup, debuginfod_factory, tmp_path):  # noqa: F811
    """The server gone and nothing cached: `fgk attach` is one clear line
    naming the build-id, no traceback, nothing loaded."""
    s = setup
    gone = debuginfod_factory([fresh(tmp_path, "nothing")])
    url = gone.url
    gone.stop()
    cwd = fresh(tmp_path, "empty")
    env = client_env(url, fresh(tmp_path, "cache"))
    r, dt = run_gdb(s["port"], cwd, env, "fgk attach", "fgk info", "detach")
    assert_no_traceback(r)
    errs = [l for l in r.stderr.splitlines() if "fgk attach:" in l]
    assert len(errs) == 1, r.stderr
    assert errs[0].startswith("fgk attach: debuginfod: cannot fetch vmlinux with build-id "
                              f"{s['bid']}: {url} unreachable"), errs[0]
    assert "pass --vmlinux PATH" in errs[0]
    assert "not attached" in r.stdout
    print(f"error after {dt:.2f} s: {errs[0]}")
