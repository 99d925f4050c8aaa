"""Fuzz smoke run (part of make check): every libFuzzer harness of
layout-tools/fuzz runs briefly (about 3 s each, under 30 s in all) on a seed
corpus built now from the ELF fixtures and layout-tools/fuzz/inputs.py.
Any crash, hang, leak or ASan/UBSan report fails the test and names the
artifact.  The long runs are `make fuzz` (FUZZ_SECONDS); see docs/fuzzing.md.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "layout-tools"
FUZZBIN = REPO / "build" / "fuzz" / "bin"
# every untrusted-input parser of libfgk has a harness (docs/fuzzing.md)
HARNESSES = {"fuzz_elf", "fuzz_relink", "fuzz_kallsyms", "fuzz_seed",
             "fuzz_vmcoreinfo", "fuzz_vmcore", "fuzz_oops", "fuzz_kallsyms_capture", "fuzz_lineprog",
             "fuzz_notes"}
SMOKE_SECONDS = 21


def clang_missing():
    if not shutil.which("clang"):
        return "clang missing: make deps (Debian packages clang, libclang-rt-14-dev)"
    r = subprocess.run(["clang", "-print-file-name=libclang_rt.fuzzer-x86_64.a"],
                       capture_output=True, text=True)
    if not Path(r.stdout.strip()).is_file():
        r = subprocess.run(["clang", "--print-runtime-dir"], capture_output=True, text=True)
        if not (Path(r.stdout.strip()) / "libclang_rt.fuzzer-x86_64.a").is_file() and \
                not list(Path("/usr/lib").glob("llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a")):
            return "libFuzzer runtime missing: make deps (libclang-rt-14-dev)"
    return None


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    why = clang_missing()
    if why:
        print(why)
        pytest.skip(why)
    r = subprocess.run(["make", "-s", "-C", str(TOOLS), "fuzz-build"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    fix = tmp_path_factory.mktemp("fixtures")
    r = subprocess.run([str(TOOLS / "tests" / "fixtures" / "build.sh"), str(fix)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return fix


def test_every_parser_has_a_harness():
    src = {p.stem for p in (TOOLS / "fuzz").glob("fuzz_*.c")}
    assert src == HARNESSES, src ^ HARNESSES
    doc = (REPO / "docs" / "fuzzing.md").read_text()
    for h in HARNESSES:
        assert h in doc, f"{h} not described in docs/fuzzing.md"


def test_fuzz_smoke(built, tmp_path):
    out = tmp_path / "summary.json"
    r = subprocess.run([sys.executable, str(TOOLS / "fuzz" / "run.py"), "--bin", str(FUZZBIN),
                        "--fixtures", str(built), "--work", str(tmp_path / "work"),
                        "--seconds", str(SMOKE_SECONDS), "--smoke", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    print(r.stdout)
    print(r.stderr[-5000:])
    res = json.loads(out.read_text())
    assert {x["harness"] for x in res} == HARNESSES
    for x in res:
        assert x["ok"], f"{x['harness']}: exit {x['exit']}, artifacts {x['artifacts']}"
        assert x["executions"] > 100, x
        assert x["corpus"] >= 1, x
    assert r.returncode == 0


def test_runner_reports_a_crash(built, tmp_path):
    """The runner must fail on a crash (a harness that aborts on "FGK")."""
    src = tmp_path / "fuzz_boom.c"
    src.write_text("#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n"
                   "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)\n"
                   "{ if (n >= 3 && !memcmp(d, \"FGK\", 3)) abort(); return 0; }\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    r = subprocess.run(["clang", "-g", "-fsanitize=fuzzer,address", "-o",
                        str(bindir / "fuzz_boom"), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    seeds = tmp_path / "work" / "corpus" / "fuzz_boom"
    seeds.mkdir(parents=True)
    (seeds / "hit").write_bytes(b"FGK!")
    r = subprocess.run([sys.executable, str(TOOLS / "fuzz" / "run.py"), "--bin", str(bindir),
                        "--fixtures", str(built), "--work", str(tmp_path / "work"),
                        "--seconds", "5"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAILED" in r.stdout and "artifact" in r.stderr
