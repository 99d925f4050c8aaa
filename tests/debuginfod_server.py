"""A local debuginfod server for the tests (a helper, not a test file).

Debian's ``debuginfod`` (package ``debuginfod``, /usr/bin/debuginfod)
indexes directories of ELF files (``-F``) and serves them by build-id over
HTTP.  The API, all other test files need:

  DebuginfodServer(dirs, timeout=120)
      Context manager (also usable without ``with``: call .stop()).  Starts
      ``debuginfod -F -p PORT -d DB -t 0 -g 0 --disable-source-scan DIRS``
      on a free port and returns once its first scan of `dirs` finished
      (its /metrics: traverse done, no scan work pending or busy) and the
      listening socket on PORT is its own (not another session's server).
      .url    "http://127.0.0.1:PORT" (the value for DEBUGINFOD_URLS)
      .port, .dirs, .log_path (the server's stderr)
      .env(cache_dir, base=None) -> dict: os.environ (or `base`) for a
              CLIENT: DEBUGINFOD_URLS=.url, DEBUGINFOD_CACHE_PATH=cache_dir,
              every other DEBUGINFOD_* variable removed
      .stop() terminate + wait (idempotent); the URL refuses connections
              afterwards.  The server also dies with the test process.
      The server itself runs without DEBUGINFOD_URLS (else it would forward
      misses upstream).  debuginfod 0.188 has no option to bind one address:
      it listens on every interface, on the random port, while a test runs.

  client_env(urls, cache_dir, base=None) -> dict
      The same as .env() for any URL list (None or "" -> DEBUGINFOD_URLS
      set to "", i.e. debuginfod off).  Debian sets DEBUGINFOD_URLS for
      login shells (/etc/profile.d/debuginfod.sh): tests must always pass
      one of these environments to a client, never the inherited one.

  kernel_debuginfo_dir(dest) -> Path
      Hard links (copies where a link fails) of build/kernel/vmlinux and of
      every .ko under build/kernel/modules, flat in `dest` (created).

  debuginfod_missing_reason() -> str | None

Fixtures (import them into a test module: ``from debuginfod_server import
debuginfod_factory, kernel_debuginfod``):

  debuginfod_factory   session scope; start(dirs) -> a running
                       DebuginfodServer, stopped at the end of the session
                       (or earlier by .stop()); skips when debuginfod is
                       not installed.
  kernel_debuginfod    module scope; a server indexing
                       kernel_debuginfo_dir() of a tmp dir (skips without
                       a built kernel).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
from conftest import KERNEL_DIR  # noqa: E402
DEBUGINFOD = "/usr/bin/debuginfod"


def debuginfod_missing_reason():
    if not os.access(DEBUGINFOD, os.X_OK):
        return f"{DEBUGINFOD} missing: install Debian's debuginfod package"
    return None


def client_env(urls, cache_dir, base=None) -> dict:
    """Environment for a debuginfod client: only our server (or none)."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith("DEBUGINFOD_")}
    env["DEBUGINFOD_URLS"] = urls or ""
    env["DEBUGINFOD_CACHE_PATH"] = str(cache_dir)
    return env


def kernel_debuginfo_dir(dest) -> Path:
    """build/kernel/vmlinux and every module .ko, hard-linked into dest."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    files = [KERNEL_DIR / "vmlinux"]
    mods = KERNEL_DIR / "modules"
    if mods.is_dir():
        files += sorted(mods.rglob("*.ko"))
    for f in files:
        if not f.is_file():
            continue
        out = dest / f.name
        if out.exists():
            continue
        try:
            os.link(f, out)
        except OSError:
            shutil.copyfile(f, out)
    return dest


def _pdeathsig():
    """preexec: the server dies with the test process, whatever kills it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except Exception:
        pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listens_on(pid, port) -> bool:
    """Whether process pid holds a listening TCP socket on port: the free
    port is chosen before debuginfod binds it, and another session's server
    (make check runs two tiers at once) may take it meanwhile and answer
    /metrics in its place until ours gives up."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            col = row.split()
            if len(col) > 9 and col[3] == "0A" and int(col[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{col[9]}]")
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
        except OSError:
            pass
    return False


def _metrics(url, timeout=5.0) -> dict:
    """{'name{labels}': float} of /metrics."""
    with urllib.request.urlopen(url + "/metrics", timeout=timeout) as r:
        text = r.read().decode(errors="replace")
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+)\s+([-+0-9.eE]+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


class DebuginfodServer:
    """debuginfod -F serving `dirs` on 127.0.0.1:PORT (see the module doc)."""

    def __init__(self, dirs, timeout: float = 120.0):
        reason = debuginfod_missing_reason()
        if reason:
            raise RuntimeError(reason)
        self.dirs = [str(d) for d in ([dirs] if isinstance(dirs, (str, Path)) else dirs)]
        self._tmp = tempfile.mkdtemp(prefix="fgk-debuginfod-")
        self.log_path = Path(self._tmp) / "debuginfod.log"
        self.proc = None
        self.port = None
        self.url = None
        env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
        for _attempt in range(5):           # the free port may be taken meanwhile
            self.port = _free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [DEBUGINFOD, "-F", "-p", str(self.port), "-d",
                     os.path.join(self._tmp, f"db-{self.port}.sqlite"), "-t", "0",
                     "-g", "0", "--disable-source-scan", *self.dirs],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                    cwd=self._tmp, preexec_fn=_pdeathsig)
            if self._wait_ready(timeout):
                return
            exited = self.proc.poll() is not None
            self._terminate()
            if not exited:                  # up, but its scan did not finish
                break
        log = self.log_path.read_text(errors="replace")[-2000:]
        self.stop()
        raise RuntimeError(f"debuginfod did not come up: {log}")

    def _wait_ready(self, timeout) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False                # exited: e.g. the port was taken
            try:
                m = _metrics(self.url)
            except (OSError, urllib.error.URLError):
                m = None
            # the first traversal done (every file queued), the queue empty
            # (the pending metric appears with the first file queued)
            if m and m.get('thread_work_total{role="traverse"}', 0) >= 1 \
                    and m.get('thread_work_pending{role="scan"}', 0) == 0 \
                    and m.get('thread_busy{role="scan"}', 0) == 0 \
                    and m.get('thread_busy{role="traverse"}', 1) == 0 \
                    and _listens_on(self.proc.pid, self.port):
                return True
            time.sleep(0.1)
        return False

    def metrics(self) -> dict:
        return _metrics(self.url)

    def env(self, cache_dir, base=None) -> dict:
        return client_env(self.url, cache_dir, base)

    def _terminate(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def stop(self):
        self._terminate()
        if self._tmp and os.path.isdir(self._tmp):
            # keep the log readable for a failing test's output
            try:
                print(f"--- debuginfod log (last lines) ---\n"
                      f"{self.log_path.read_text(errors='replace')[-1500:]}")
            except OSError:
                pass
            shutil.rmtree(self._tmp, ignore_errors=True)
        self._tmp = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __del__(self):
        try:
            self._terminate()
        except Exception:
            pass


@pytest.fixture(scope="session")
def debuginfod_factory():
    reason = debuginfod_missing_reason()
    if reason:
        pytest.skip(reason)
    servers = []

    def start(dirs, **kw):
        s = DebuginfodServer(dirs, **kw)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


@pytest.fixture(scope="module")
def kernel_debuginfod(debuginfod_factory, tmp_path_factory):
    from conftest import require_kernel
    require_kernel()
    d = kernel_debuginfo_dir(tmp_path_factory.mktemp("debuginfod-files"))
    server = debuginfod_factory([d])
    yield server
    server.stop()
