"""One corpus of seeds and seed records, every entry point, one verdict.

tests/seed-corpus/seed/*.txt are seed texts (what --seed takes) and
tests/seed-corpus/record/*.seed are seed records (what --seed-file takes);
the file name says the verdict docs/layout-spec.md section 2 and
docs/seed-records.md give: ok-* are accepted, bad-* refused.  Each one is
fed to

  * the fgk CLI: ``fgk seed parse TEXT`` and ``fgk seed show RECORD``;
  * the Python package: ``libfgk.parse_seed``, ``libfgk.read_seed_record``
    and ``libfgk.parse_seed_record``;
  * fgk-gdb, in gdb: ``fgk attach --seed TEXT`` / ``--seed-file RECORD``
    (no guest: an accepted argument gets as far as "no guest connected");
  * the QEMU runner: ``qemu-profiles/run boot --seed TEXT`` /
    ``--seed-file RECORD`` (with $FGK_QEMU a stand-in that boots nothing
    and a dummy kernel: an accepted seed shows up as fgkaslr_seed=<canonical>
    in the kernel command line given to QEMU, in its 0600 -readconfig file or
    its -append; a refused one is a usage error, rc 2), and its module
    (``fgkrun.Guest``, in this process: what ``make check-unit`` runs; the
    command line, a process per entry, runs in ``make check``);

and all of them must agree with the file name, and on the canonical values.
No kernel is needed.
"""
import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import libfgk

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "seed-corpus"
FGK = REPO / "build" / "bin" / "fgk"
RUN = REPO / "qemu-profiles" / "run"
LOADER = REPO / "fgk-gdb" / "fgk.py"

SEEDS = sorted((CORPUS / "seed").glob("*.txt"))
RECORDS = sorted((CORPUS / "record").glob("*.seed"))


def ok(path: Path) -> bool:
    assert path.name.startswith(("ok-", "bad-")), path
    return path.name.startswith("ok-")


def text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


@pytest.fixture(scope="module")
def tools():
    if not FGK.is_file():
        pytest.skip("build/bin/fgk missing: run 'make tools'")
    try:
        libfgk.library_path()
    except libfgk.FgkError as e:
        pytest.skip(str(e))


def test_corpus_is_there():
    assert len(SEEDS) >= 15 and len(RECORDS) >= 40
    assert sum(map(ok, SEEDS)) >= 5 and sum(not ok(p) for p in SEEDS) >= 10
    assert sum(map(ok, RECORDS)) >= 10 and sum(not ok(p) for p in RECORDS) >= 25
    # the cases the corpus exists for are really in it (bytes, not text)
    raw = {p.name: p.read_bytes() for p in RECORDS}
    assert b"\r\n" in raw["ok-crlf.seed"]
    assert raw["bad-utf8-bom.seed"].startswith(b"\xef\xbb\xbf")
    assert not raw["ok-no-final-newline.seed"].endswith(b"\n")


# --------------------------------------------------------------------------
# each entry point's verdicts: {name: (accepted, canonical value or message)}

def python_verdicts():
    out = {}
    for p in SEEDS:
        try:
            out[p.name] = (True, libfgk.parse_seed(text(p)))
        except libfgk.FgkError as e:
            out[p.name] = (False, str(e))
    for p in RECORDS:
        try:
            rec = libfgk.read_seed_record(p)
            out[p.name] = (True, rec.format())
        except libfgk.FgkError as e:
            out[p.name] = (False, str(e))
        # the same text given as a string
        try:
            again = libfgk.parse_seed_record(text(p), str(p)).format()
            assert out[p.name] == (True, again), p.name
        except libfgk.FgkError as e:
            assert not out[p.name][0], f"{p.name}: file accepted, text refused: {e}"
    return out


def cli_verdicts():
    out = {}
    for p in SEEDS:
        r = subprocess.run([FGK, "seed", "parse", text(p)], capture_output=True, text=True)
        out[p.name] = (r.returncode == 0, r.stdout.strip() if r.returncode == 0
                       else r.stderr.strip())
    for p in RECORDS:
        r = subprocess.run([FGK, "seed", "show", p], capture_output=True, text=True)
        out[p.name] = (r.returncode == 0, r.stdout if r.returncode == 0
                       else r.stderr.strip())
    return out


GDB_SCRIPT = r"""
python
import json
from fgkgdb import commands, core
out = {}
for kind, path, arg in json.load(open(%(cases)r)):
    argv = ["--seed", arg] if kind == "seed" else ["--seed-file", path]
    try:
        commands.attach(argv)
        out[path] = [None, "attach returned without a guest"]
    except core.FgkError as e:
        accepted = str(e).startswith("no guest connected")
        val = None
        if accepted:
            seed, _, off, _ = core.seed_from_args(*(argv[1], None) if kind == "seed"
                                                  else (None, argv[1]))
            val = [seed, off]
        out[path] = [accepted, val if accepted else str(e)]
json.dump(out, open(%(result)r, "w"))
end
"""


def gdb_verdicts(tmp_path):
    cases = [("seed", str(p), text(p)) for p in SEEDS] + \
            [("record", str(p), None) for p in RECORDS]
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    script = tmp_path / "corpus.gdb"
    script.write_text(GDB_SCRIPT % {"cases": str(tmp_path / "cases.json"),
                                    "result": str(tmp_path / "gdb.json")})
    r = subprocess.run(["gdb", "-batch", "-nx", "-ex", f"source {LOADER}", "-x", str(script)],
                       capture_output=True, text=True, timeout=300)
    assert (tmp_path / "gdb.json").is_file(), r.stdout + r.stderr
    res = json.loads((tmp_path / "gdb.json").read_text())
    return {Path(k).name: tuple(v) for k, v in res.items()}


def runner_module_verdicts(tmp_path):
    """fgkrun.Guest, what qemu-profiles/run builds from --seed/--seed-file
    (constructed, never started)."""
    import fgkrun
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"")
    out = {}
    for p in SEEDS + RECORDS:
        kw = {"seed": text(p)} if p.suffix == ".txt" else {"seed_file": p}
        try:
            g = fgkrun.Guest("boot", kernel=kernel, log=tmp_path / f"{p.name}.log", **kw)
            out[p.name] = (True, g.seed)
        except fgkrun.UsageError as e:
            out[p.name] = (False, str(e))
    return out


# QEMU's stand-in: boots nothing, keeps a copy of the -readconfig file (the
# kernel command line; the runner removes the file after the run)
QEMU_STUB = """#!/bin/sh
while [ $# -gt 0 ]; do
    if [ "$1" = -readconfig ]; then cp "$2" "$2.seen"; fi
    shift
done
"""


def runner_verdicts(tmp_path):
    kernel = tmp_path / "bzImage"           # never booted: QEMU is the stand-in
    kernel.write_bytes(b"")
    qemu_stub = tmp_path / "qemu"
    qemu_stub.write_text(QEMU_STUB)
    qemu_stub.chmod(0o755)
    env = dict(os.environ, FGK_QEMU=str(qemu_stub))

    def one(p):
        opt = ["--seed", text(p)] if p.suffix == ".txt" else ["--seed-file", str(p)]
        log = tmp_path / f"{p.name}.log"
        r = subprocess.run([str(RUN), "boot", *opt, "--kernel", str(kernel), "-v",
                            "--timeout", "10", "--log", str(log)],
                           capture_output=True, text=True, env=env, timeout=120)
        qemu = next((line for line in r.stderr.splitlines()
                     if line.startswith(f"run: {qemu_stub} ")), None)
        if qemu is not None:
            # the kernel command line: the -readconfig file's append, or -append
            cfg = Path(f"{log.with_suffix('.qemu-cfg')}.seen")
            cmdline = qemu
            if "-readconfig" in qemu.split():
                assert cfg.is_file(), f"{p.name}: the stand-in saw no -readconfig file"
                cmdline = cfg.read_text()
            seed = cmdline.split("fgkaslr_seed=")[1].split()[0].rstrip('"') \
                if "fgkaslr_seed=" in cmdline else None
            return p.name, (True, seed)
        assert r.returncode == 2, f"{p.name}: rc {r.returncode}: {r.stderr}"
        return p.name, (False, r.stderr.strip())

    with ThreadPoolExecutor(4) as ex:
        return dict(ex.map(one, SEEDS + RECORDS))


# --------------------------------------------------------------------------

def check(verdicts: dict, who: str):
    wrong = [f"{name}: {who} {'accepted' if v[0] else 'refused'} it"
             + ("" if v[0] else f" ({v[1]})")
             for name, v in sorted(verdicts.items()) if v[0] != ok(Path(name))]
    assert not wrong, "\n".join(wrong)
    assert set(verdicts) == {p.name for p in SEEDS + RECORDS}


def test_python_package(tools):
    check(python_verdicts(), "libfgk")


def test_fgk_cli(tools):
    cli, py = cli_verdicts(), python_verdicts()
    check(cli, "fgk seed parse/show")
    # same canonical seed and record text
    for name, (accepted, val) in cli.items():
        if accepted:
            assert val == py[name][1], name


def expected_values(seed_value, record_value):
    """{name: what an entry point should report for each accepted entry}:
    seed_value(canonical seed text) for seed texts, record_value(record)
    for seed records, from the binding's parse."""
    out = {}
    for p in SEEDS + RECORDS:
        if ok(p):
            out[p.name] = seed_value(libfgk.parse_seed(text(p))) if p.suffix == ".txt" \
                else record_value(libfgk.read_seed_record(p))
    return out


def check_values(got: dict, want: dict, who: str):
    wrong = [f"{name}: {who} gives {got[name][1]!r}, libfgk {w!r}"
             for name, w in sorted(want.items()) if got[name][1] != w]
    assert not wrong, "\n".join(wrong)


def test_fgk_gdb(tools, tmp_path):
    if not shutil.which("gdb"):
        pytest.skip("gdb not installed (make deps)")
    got = gdb_verdicts(tmp_path)
    check(got, "fgk-gdb 'fgk attach'")
    check_values(got, expected_values(lambda s: [s, None], lambda r: [r.seed, r.offset]),
                 "fgk-gdb (seed, offset)")


def check_runner(verdicts, who):
    """The runner's verdicts and the seed it would boot (fgkaslr_seed=)."""
    if not shutil.which("busybox"):
        pytest.skip("busybox-static not installed (make deps): the runner builds an initramfs")
    got = verdicts()
    check(got, who)
    check_values(got, expected_values(lambda s: s, lambda r: r.seed), f"{who} (the seed it boots)")


def test_qemu_runner_module(tools, tmp_path):
    check_runner(lambda: runner_module_verdicts(tmp_path), "fgkrun.Guest")


def test_qemu_runner_cli(tools, tmp_path):
    check_runner(lambda: runner_verdicts(tmp_path), "qemu-profiles/run")
