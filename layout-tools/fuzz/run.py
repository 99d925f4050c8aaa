#!/usr/bin/env python3
"""Build the seed corpora and run the libFuzzer harnesses (make fuzz).

    run.py --bin DIR --fixtures DIR --work DIR --seconds N [--only NAME...]
           [--smoke] [--json FILE]

Seed corpora are generated now from the ELF fixtures (tests/fixtures/build.sh)
and from fuzz/inputs.py; nothing binary is kept in the repository.  Each
harness runs alone (one process, one thread) for its share of N
seconds on <work>/corpus/<harness> (kept between runs, so fuzzing resumes)
plus the fresh seeds.  Any crash, leak, hang or sanitizer report is a
failure: the run exits 1 and names the artifact.  --smoke: a fresh corpus,
N seconds in all, for `make check`.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import inputs as I  # noqa: E402

# relative share of the time; slow harnesses (whole-ELF) get more
WEIGHTS = {"fuzz_elf": 3, "fuzz_relink": 3, "fuzz_kallsyms": 2, "fuzz_vmcore": 2,
           "fuzz_kallsyms_capture": 2,
           "fuzz_oops": 2, "fuzz_seed": 1, "fuzz_vmcoreinfo": 1, "fuzz_lineprog": 1,
           "fuzz_notes": 1}
NEEDS_VMLINUX = {"fuzz_kallsyms", "fuzz_oops", "fuzz_kallsyms_capture"}
ELF_FIXTURES = ["fixture.elf", "fixture-rel.elf", "nokallsyms.elf", "relocs.elf",
                "notext.elf", "overlap.elf", "short.elf", "nofit.elf",
                "stripped.elf", "truncated.elf"]


def seeds(name, fix):
    """name -> {file name: bytes} seed corpus."""
    out = {}
    if name in ("fuzz_elf", "fuzz_relink"):
        for f in ELF_FIXTURES if name == "fuzz_elf" else ["relocs.elf", "fixture.elf"]:
            if (fix / f).exists():
                out[f] = (fix / f).read_bytes()
        if (fix / "relocs.elf").exists():
            e = I.Elf64((fix / "relocs.elf").read_bytes())
            # a few hostile shapes to start from (see tests/test_hostile.py)
            rela = e.sections(4)[0]
            e.set_shdr(rela, link=0)
            out["bad-rela-link"] = e.bytes()
    elif name == "fuzz_kallsyms":
        for f in ("fixture.elf", "fixture-rel.elf"):
            e = I.Elf64((fix / f).read_bytes())
            h = e.shdr(e.find(".rodata"))
            out[f + ".rodata"] = e.bytes()[h["offset"]:h["offset"] + h["size"]]
    elif name == "fuzz_kallsyms_capture":
        # root's /proc/kallsyms of the fixture booted with two seeds, as
        # the fgk map of this tree prints it (fgk map == the kernel's own)
        fgk = Path(__file__).resolve().parents[2] / "build" / "bin" / "fgk"
        for k, seed in enumerate(("11" * 32, "5a" * 32)):
            r = subprocess.run([str(fgk), "map", str(fix / "fixture.elf"), "--seed", seed,
                                "--offset", "0x1c000000"], capture_output=True)
            if r.returncode == 0:
                out[f"capture{k}"] = r.stdout
        out["zero"] = b"0000000000000000 T _text\n0000000000000000 t fn_tiny\n"
        out["module"] = b"ffffffffc0001000 t mod_fn\t[mod]\n"
    elif name == "fuzz_lineprog":
        # the compilers' own line programs: address, unit offset 0, section
        for f in ("fixture.elf", "funcs.o"):
            if not (fix / f).exists():
                continue
            e = I.Elf64((fix / f).read_bytes())
            try:
                h = e.shdr(e.find(".debug_line"))
            except KeyError:
                continue
            sec = e.bytes()[h["offset"]:h["offset"] + h["size"]]
            for k, addr in enumerate((0x10, 0xffffffff81000045)):
                out[f"{f}.debug_line.{k}"] = addr.to_bytes(8, "little") + b"\0" + sec
        out["advance-line-overflow"] = bytes(9) + I.line_program(
            bytes([0x03]) + I.sleb(2**63 - 1) + bytes([0x03]) + I.sleb(1) + bytes([0x01]))
    elif name == "fuzz_seed":
        s = bytes(range(32)).hex()
        out.update({
            "seed": s.encode(), "seed-prefixed": f"fgkaslr_seed={s}\n".encode(),
            "disabled": b"disabled\n", "record": I.record(),
            "record-note": I.record(note="from a test", offset=None),
            "record-comments": b"# a record\n\n" + I.record(build_id=None),
        })
    elif name == "fuzz_notes":
        # guest memory at a page: a kernel build-id note, an ELF64 image
        # (the vDSO) with its own; a struct fgkaslr_boot_info; typed text
        base = (0xffffffff81000000).to_bytes(8, "little")
        gnu = I.note("GNU", 3, bytes(range(20)))
        img = bytearray(0x1000)
        img[:7] = b"\x7fELF\x02\x01\x01"
        img[0x20:0x28] = (64).to_bytes(8, "little")
        img[0x28:0x30] = (0xc00).to_bytes(8, "little")
        img[0x36:0x3e] = bytes([56, 0, 4, 0, 64, 0, 8, 0])
        img[0x400:0x400 + len(gnu)] = gnu
        out["memory"] = base + bytes(0xc8) + gnu + bytes(0x1000 - 0xc8 - len(gnu)) + bytes(img)
        out["notes"] = I.note("Linux", 1, b"6.1") + gnu
        out["boot-info"] = (0x4b474621).to_bytes(4, "little") + bytes(range(148))
        out["build-id"] = b"0x" + bytes(range(20)).hex().encode()
        out["offset"] = b"0x1e000000"
    elif name == "fuzz_vmcoreinfo":
        out.update({
            "full": I.vmcoreinfo(),
            "disabled": I.vmcoreinfo(seed="disabled"),
            "noseed": I.vmcoreinfo(seed=None, offset=None),
            "kernel": b"OSRELEASE=6.1.0\nPAGESIZE=4096\nSYMBOL(init_uts_ns)=ffffffff82a1b2c0\n"
                      b"NUMBER(phys_base)=0\nKERNELOFFSET=1c000000\nCRASHTIME=1700000000\n",
        })
    elif name == "fuzz_vmcore":
        v = I.vmcoreinfo()
        k = I.kdump(v, pages=4)
        out.update({
            "elf-core": I.elf_core(v, load_size=512),
            "elf-core-novmci": I.elf_core(None, load_size=256),
            "kdump": k, "kdump-v3": I.kdump(v, pages=2, version=3),
            "kdump-flat": I.flatten(k, chunk=5000),
            "kdump-cut": k[:-1000],
        })
    elif name == "fuzz_oops":
        base = 0xffffffff81000000 + 0x1c000000
        out.update({
            "oops": I.oops([(base + 0x45, "fn_tiny+0x5/0x10"),
                            (base + 0x60, "fn_small+0x10/0x30"),
                            (0xffffffffc0001234, "mod_fn+0x4/0x20 [mod]"),
                            (base + 0x1010, None)]),
            "oops-disabled": I.oops([(0xffffffff81000045, "fn_tiny+0x5/0x10")], offset=None),
            "regs": b"RAX: ffffffff9d000045 RBX: 0000000000000000 RCX: ffffffff9d001000\n"
                    b"RIP: 0010:fn_medium+0x3/0x40\n",
            # issue 27: 0x forms, annotated input, own explanation lines,
            # a build-id module tag, a Code: line
            "issue27": b" ? 0xffffffff9d000045\nRIP: 0010:0xffffffff9d000045\n"
                       b" fn_tiny+0x5/0x10 (a.c:3 b.c:4)\n"
                       b"    0xffffffff9d000045 = fn_tiny+0x5/0x10 (a.c:3)\n"
                       b" mod_fn+0x4/0x20 [mod 0123456789abcdef] (m.c:1)\n"
                       b"Code: 48 89 e5 <0f> 0b 5d c3\n",
        })
    return out


def corpus_size(d):
    return sum(1 for p in d.iterdir() if p.is_file()) if d.exists() else 0


def run_one(name, binary, fix, work, seconds, smoke):
    seed_dir = work / "seeds" / name
    shutil.rmtree(seed_dir, ignore_errors=True)
    seed_dir.mkdir(parents=True)
    for fname, data in seeds(name, fix).items():
        (seed_dir / fname).write_bytes(data)
    corpus = work / ("smoke-corpus" if smoke else "corpus") / name
    if smoke:
        shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True, exist_ok=True)
    art = work / "artifacts"
    art.mkdir(parents=True, exist_ok=True)
    tmp = work / "tmp"
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(tmp),
               ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:allocator_may_return_null=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    if name in NEEDS_VMLINUX:
        env["FGK_FUZZ_VMLINUX"] = str(fix / "fixture.elf")
    before = set(art.iterdir())
    cmd = [str(binary), f"-max_total_time={max(1, int(seconds))}", "-timeout=20", "-rss_limit_mb=2048", "-max_len=131072",
           "-print_final_stats=1", f"-artifact_prefix={art}/{name}-",
           str(corpus), str(seed_dir)]
    t0 = time.time()
    # one process, one thread: libFuzzer's default (no -jobs: the machine is shared)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, errors="replace",
                       cwd=work)
    elapsed = time.time() - t0
    log = r.stdout + r.stderr
    (work / f"{name}.log").write_text(log)
    execs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
    new_art = sorted(str(p) for p in set(art.iterdir()) - before)
    res = {"harness": name, "executions": int(execs[-1]) if execs else 0,
           "corpus": corpus_size(corpus), "seeds": corpus_size(seed_dir),
           "seconds": round(elapsed, 1), "exit": r.returncode, "artifacts": new_art}
    res["ok"] = r.returncode == 0 and not new_art and bool(execs)
    if not res["ok"]:
        tail = "\n".join(log.splitlines()[-40:])
        res["log_tail"] = tail
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", type=Path, required=True)
    ap.add_argument("--fixtures", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=240)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    a.bin, a.fixtures, a.work = a.bin.resolve(), a.fixtures.resolve(), a.work.resolve()
    names = sorted(p.name for p in a.bin.iterdir() if p.name.startswith("fuzz_"))
    if a.only:
        names = [n for n in names if n in a.only]
    if not names:
        sys.exit(f"run.py: no harnesses in {a.bin} (make fuzz-build)")
    total_w = sum(WEIGHTS.get(n, 1) for n in names)
    a.work.mkdir(parents=True, exist_ok=True)
    results = []
    for n in names:
        secs = a.seconds * WEIGHTS.get(n, 1) / total_w
        res = run_one(n, a.bin / n, a.fixtures, a.work, secs, a.smoke)
        results.append(res)
        print(f"{n:16} {res['executions']:>10} execs  corpus {res['corpus']:>5} "
              f"(seeds {res['seeds']})  {res['seconds']:>6}s  "
              f"{'ok' if res['ok'] else 'FAILED'}", flush=True)
        if not res["ok"]:
            print(res.get("log_tail", ""), file=sys.stderr)
            for p in res["artifacts"]:
                print(f"run.py: {n}: artifact {p}", file=sys.stderr)
    total = sum(r["executions"] for r in results)
    print(f"{'total':16} {total:>10} execs, "
          f"{sum(not r['ok'] for r in results)} failing harnesses")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1) + "\n")
    sys.exit(0 if all(r["ok"] for r in results) else 1)


if __name__ == "__main__":
    main()
