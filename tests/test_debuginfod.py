"""The fgk CLI finds vmlinux by build-id through debuginfod (issue 14).

A real Debian `debuginfod` server on 127.0.0.1 (tests/debuginfod_server.py)
indexes a directory holding the build's vmlinux and modules.  Every client
runs with DEBUGINFOD_URLS naming only that server (or nothing), an empty
DEBUGINFOD_CACHE_PATH, from an empty working directory, and is a copy of
the fgk binary outside the build tree (fgk crash would otherwise find
build/kernel/vmlinux beside build/bin/fgk).  No guest is needed here: the
dump and oops side is in test_crash.py (test_*_by_debuginfod).

  * `fgk relink --seed-file RECORD` (no VMLINUX) fetches the record's
    build-id, says from where, and writes the same file as with the local
    vmlinux; a second run with the same cache says "debuginfod cache" (both
    timed);
  * `fgk map --build-id`, `fgk seed show --fetch`;
  * a module by its build-id (libfgk.fetch_module, what `fgk crash` uses for
    the dump's modules): the same bytes as the build's fgk_test.ko;
  * offline (server stopped), unknown build-id (404), DEBUGINFOD_URLS
    unset, and a server answering garbage: one line naming the build-id,
    exit 1, no output file; the garbage is not left in the cache.
"""
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest

from conftest import BIN_DIR, KERNEL_DIR, KERNEL_NAME, REPO, require_kernel
from oracle import run
from debuginfod_server import (client_env, debuginfod_factory,  # noqa: F401
                               kernel_debuginfo_dir, kernel_debuginfod)

FGK = BIN_DIR / "fgk"
VMLINUX = KERNEL_DIR / "vmlinux"


@pytest.fixture
def iso(tmp_path):
    """An fgk outside the build tree, an empty working dir, a record."""
    require_kernel()
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")
    (tmp_path / "bin").mkdir()
    fgk = tmp_path / "bin" / "fgk"
    shutil.copy2(FGK, fgk)
    work = tmp_path / "work"
    work.mkdir()
    seed = run(FGK, "seed", "random", check=True).stdout.strip()
    rec = tmp_path / "boot.seed"
    run(FGK, "seed", "record", "--seed", seed, "--vmlinux", VMLINUX, "-o", rec, check=True)
    bid = re.search(r"^build-id: (\S+)$", rec.read_text(), re.M).group(1)
    return {"fgk": fgk, "work": work, "seed": seed, "rec": rec, "bid": bid,
            "tmp": tmp_path}


def fetch_line(stderr, bid, url):
    m = re.search(rf"^fgk: fetched vmlinux \(build-id {bid}\) from "
                  rf"{re.escape(url)}/buildid/{bid}/debuginfo into (\S+)$", stderr, re.M)
    assert m, stderr
    return m.group(1)


# 6.12 (k612): the build-id lookups and the relink they feed are what differ
# between kernels (a 6.12 vmlinux with __pfx_ padding and its modules); the
# refusals below (offline, 404, garbage) fail before anything of the kernel
# is read and run on the default kernel only.
@pytest.mark.k612
def test_relink_by_record(kernel_debuginfod, iso):
    cache = iso["tmp"] / "dcache"
    env = kernel_debuginfod.env(cache)
    out1, out2 = iso["work"] / "a.fgk", iso["work"] / "b.fgk"
    t0 = time.monotonic()
    r = run(iso["fgk"], "relink", "--seed-file", iso["rec"], "--no-cache", "-o", out1,
            cwd=iso["work"], env=env)
    first = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    path = fetch_line(r.stderr, iso["bid"], kernel_debuginfod.url)
    assert path.startswith(str(cache))
    t0 = time.monotonic()
    r = run(iso["fgk"], "relink", "--seed-file", iso["rec"], "--no-cache", "-o", out2,
            cwd=iso["work"], env=env)
    second = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    assert f"fgk: vmlinux (build-id {iso['bid']}) from the debuginfod cache: {path}" in r.stderr
    local = iso["tmp"] / "local.fgk"
    run(FGK, "relink", VMLINUX, "--seed", iso["seed"], "--no-cache", "-o", local, check=True)
    assert out1.read_bytes() == local.read_bytes() == out2.read_bytes()
    print(f"relink through debuginfod: {first:.2f} s with the download, "
          f"{second:.2f} s from the cache")


@pytest.mark.k612
def test_map_and_seed_show_by_build_id(kernel_debuginfod, iso):
    env = kernel_debuginfod.env(iso["tmp"] / "dcache")
    r = run(iso["fgk"], "map", "--build-id", iso["bid"].upper(), "--seed", iso["seed"],
            cwd=iso["work"], env=env)
    assert r.returncode == 0, r.stderr
    want = run(FGK, "map", VMLINUX, "--seed", iso["seed"], check=True).stdout
    assert r.stdout == want
    r = run(iso["fgk"], "seed", "show", iso["rec"], "--fetch", cwd=iso["work"], env=env)
    assert r.returncode == 0, r.stderr
    assert f"seed: {iso['seed']}" in r.stdout
    assert re.search(rf"^fgk: {re.escape(str(iso['rec']))}: vmlinux \S+ matches$", r.stderr,
                     re.M), r.stderr


FETCH_MODULE = """
import sys, libfgk
path, url = libfgk.fetch_module(sys.argv[1], sys.argv[2])
print(path)
print(url)
"""


@pytest.mark.k612
def test_module_by_build_id(kernel_debuginfod, tmp_path):
    """The build's fgk_test.ko by the build-id of its notes: fetched once
    from the server, then from the cache, byte for byte the local file."""
    mods = KERNEL_DIR / "modules"
    ko = next(mods.rglob("fgk_test.ko"), None) if mods.is_dir() else None
    if ko is None:
        pytest.skip(f"{KERNEL_NAME}/modules has no fgk_test.ko: run 'make kernel'")
    notes = subprocess.run(["readelf", "-n", str(ko)], capture_output=True, text=True,
                           check=True).stdout
    bid = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    env = dict(kernel_debuginfod.env(tmp_path / "dcache"), PYTHONPATH=str(REPO / "python"))
    got = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", FETCH_MODULE, bid, "fgk_test"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        got.append(r.stdout.splitlines())
    (path, url), (path2, url2) = got
    assert url == f"{kernel_debuginfod.url}/buildid/{bid}/debuginfo" and url2 == "None", got
    assert path == path2 and path.startswith(str(tmp_path / "dcache")), got
    assert open(path, "rb").read() == ko.read_bytes()
    print(f"fgk_test.ko (build-id {bid}) from {url}, then from the cache {path}")


def refused(iso, env, *want, args=None):
    out = iso["work"] / "out.fgk"
    args = args or ["relink", "--seed-file", iso["rec"], "--no-cache", "-o", out]
    r = run(iso["fgk"], *args, cwd=iso["work"], env=env)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for w in want:
        assert w in lines[0], lines[0]
    assert not out.exists()
    return lines[0]


def test_offline(debuginfod_factory, iso, tmp_path):  # noqa: F811
    """A server that answered, then stopped: a clear error, not a hang."""
    server = debuginfod_factory([kernel_debuginfo_dir(tmp_path / "files")])
    out = iso["work"] / "ok.fgk"
    r = run(iso["fgk"], "relink", "--seed-file", iso["rec"], "--no-cache", "-o", out,
            cwd=iso["work"], env=server.env(tmp_path / "c0"))
    assert r.returncode == 0, r.stderr
    out.unlink()
    server.stop()
    line = refused(iso, server.env(tmp_path / "c1"), iso["bid"], "unreachable", server.url)
    print(line)


def test_unknown_build_id(kernel_debuginfod, iso, tmp_path):
    bid = "0123456789abcdef0123456789abcdef01234567"
    line = refused(iso, kernel_debuginfod.env(tmp_path / "c"), bid, "not found",
                   args=["map", "--build-id", bid, "--seed", iso["seed"]])
    print(line)
    line = refused(iso, client_env("", tmp_path / "c"), iso["bid"], "DEBUGINFOD_URLS")
    print(line)
    refused(iso, client_env("", tmp_path / "c"), "not hex",
            args=["map", "--build-id", "xyz", "--seed", iso["seed"]])


class _Garbage(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html>not an ELF file</html>\n" * 40
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_garbage_server(iso, tmp_path):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Garbage)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        cache = tmp_path / "c"
        line = refused(iso, client_env(url, cache), iso["bid"], "answered garbage",
                       "removed from the cache")
        print(line)
        assert not list(cache.rglob("debuginfo")), "garbage left in the cache"
    finally:
        srv.shutdown()
