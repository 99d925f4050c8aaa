#!/usr/bin/env python3
"""Benchmark `fgk map` against `nm -n` on the same ELF, in the same run.

1. build/kernel/vmlinux (when it is an FG-KASLR build: has .text.*)
2. a synthetic vmlinux-sized ELF generated now: 60,000 functions, each in
   its own .text.* section (written as the assembly gcc -ffunction-sections
   emits: compiling 60,000 C functions takes minutes here), linked with the
   fixtures' linker script, with real kallsyms tables from the kernel's own
   scripts/kallsyms.

Each command runs REPEAT times (output to /dev/null) after one warm-up; the
median wall time is reported, and the ratio fgk/nm.  Target: fgk map within
2x of nm -n.  Uses hyperfine when installed.

Usage: bench/layout-tools.py [--repeat N] [--functions N] [--keep DIR]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
import libfgk  # noqa: E402  (libfgk reads the ELF files)
FGK = REPO / "build" / "bin" / "fgk"
VMLINUX = REPO / "build" / "kernel" / "vmlinux"
FIXDIR = REPO / "layout-tools" / "tests" / "fixtures"
SEED = bytes(range(32)).hex()
TARGET = 2.0


def median_time(cmd, repeat):
    if shutil.which("hyperfine"):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            subprocess.run(["hyperfine", "-N", "--warmup", "1", "--runs", str(repeat),
                            "--export-json", f.name, "--output=null",
                            " ".join(map(str, cmd))], check=True,
                           stdout=subprocess.DEVNULL)
            return json.load(open(f.name))["results"][0]["median"]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)   # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def gen_synthetic(outdir, nfuncs, jobs=2):
    """An ELF with nfuncs functions, each in its own .text.<name> section.

    Written as assembly (what gcc -ffunction-sections emits: one section,
    .type/.size per function; sizes 3..400 bytes, mostly 16-byte aligned,
    some 64; one in eleven static) so that generating 60,000 functions
    takes seconds, then linked with the fixtures' linker script.
    """
    import random
    outdir.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(60000)
    objs = []
    per = 10000
    for k in range(0, nfuncs, per):
        asm = outdir / f"synth{k // per}.s"
        with open(asm, "w") as f:
            for i in range(k, min(k + per, nfuncs)):
                name = f"synth_func_{i}"
                size = rnd.choice((3, 8, 16, 40, 90, 150, 400))
                align = 64 if i % 50 == 0 else 16
                f.write(f'.section .text.{name},"ax",@progbits\n.p2align {align.bit_length() - 1}\n')
                if i % 11:
                    f.write(f".globl {name}\n")
                f.write(f".type {name},@function\n{name}:\n\t.fill {size - 1},1,0x90\n\tret\n"
                        f".size {name},{size}\n")
        objs.append(asm.with_suffix(".o"))
        subprocess.run(["as", "-o", str(objs[-1]), str(asm)], check=True)
        asm.unlink()
    main = outdir / "main.c"
    main.write_text('int sink;\nconst char linux_banner[] = "Linux version 6.1.0-synth (bench)\\n";\n'
                    "void _start(void) { for (;;) ; }\n")
    objs.append(outdir / "main.o")
    subprocess.run(["gcc", "-O2", "-fno-pic", "-mcmodel=kernel", "-ffreestanding",
                    "-fno-asynchronous-unwind-tables", "-c", "-o", str(objs[-1]), str(main)],
                   check=True)

    def link(out, extra=()):
        subprocess.run(["ld", "-T", str(FIXDIR / "fixture.lds"), "--defsym=FGK_SLACK=0x10000",
                        "--unique=.text.*", "--build-id=sha1", "--no-warn-rwx-segments",
                        "-z", "noexecstack", "-o", str(out), *map(str, objs), *extra],
                       check=True)

    # kallsyms tables like scripts/link-vmlinux.sh, if a kernel tree is around
    ksrc = next((d for d in (REPO / "build" / "linux-source-6.1",)
                 if (d / "scripts" / "kallsyms.c").is_file()), None)
    final = outdir / "synth.elf"
    if ksrc is None:
        link(final)
        return final, False
    ks = outdir / "kallsyms"
    subprocess.run(["gcc", "-O2", "-o", str(ks), str(ksrc / "scripts" / "kallsyms.c")], check=True)
    (outdir / "inc" / "asm").mkdir(parents=True, exist_ok=True)
    (outdir / "inc" / "asm" / "bitsperlong.h").write_text("#define BITS_PER_LONG 64\n")
    extra = []
    for step in (1, 2):
        tmp = outdir / f"tmp{step}.elf"
        link(tmp, extra)
        nm = subprocess.run(["nm", "-n", str(tmp)], capture_output=True, text=True,
                            check=True).stdout
        syms = outdir / f"tmp{step}.syms"
        syms.write_text("".join(l + "\n" for l in nm.splitlines()
                                if not any(p in l for p in (" a ", " N ", " U ", " w ", " $", " .L"))))
        asm = outdir / f"tmp{step}.S"
        with open(asm, "w") as f:
            subprocess.run([str(ks), "--all-symbols", "--absolute-percpu", "--base-relative",
                            str(syms)], stdout=f, check=True)
        o = outdir / f"tmp{step}-ks.o"
        subprocess.run(["gcc", f"-I{outdir / 'inc'}", "-Wa,--noexecstack", "-c", "-o", str(o),
                        str(asm)], check=True)
        extra = [o]
    link(final, extra)
    return final, True


def bench_one(label, elf, repeat, formats):
    rows = []
    t_nm = median_time(["nm", "-n", str(elf)], repeat)
    for fmt in formats:
        t = median_time([str(FGK), "map", str(elf), "--seed", SEED, "--format", fmt], repeat)
        rows.append((label, fmt, t, t_nm, t / t_nm))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--functions", type=int, default=60000)
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    if not FGK.is_file():
        subprocess.run(["make", "-s", "-C", str(REPO / "layout-tools")], check=True)
    rows = []
    if VMLINUX.is_file():
        r = subprocess.run([str(FGK), "layout", str(VMLINUX), "--seed", SEED],
                           capture_output=True, text=True)
        if r.returncode == 0:
            rows += bench_one("build/kernel/vmlinux", VMLINUX, args.repeat,
                              ["kallsyms", "system-map"])
        else:
            print(f"bench: build/kernel/vmlinux skipped: {r.stderr.strip()}")
    else:
        print("bench: build/kernel/vmlinux missing (make kernel): skipped")
    work = args.keep or Path(tempfile.mkdtemp(prefix="fgk-bench-"))
    try:
        t = time.perf_counter()
        elf, has_ks = gen_synthetic(work, args.functions)
        with libfgk.Vmlinux(elf) as vm:
            nsec = sum(1 for s in vm.sections() if s.name.startswith(".text."))
        print(f"bench: synthetic ELF: {args.functions} functions, {nsec} .text.* sections, "
              f"{elf.stat().st_size / 1e6:.1f} MB, generated in {time.perf_counter() - t:.1f}s")
        rows += bench_one(f"synthetic {args.functions} functions", elf, args.repeat,
                          ["kallsyms", "system-map"] if has_ks else ["system-map"])
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"{'file':32} {'fgk map --format':18} {'fgk (s)':>9} {'nm -n (s)':>10} {'ratio':>7}")
    worst = 0
    for label, fmt, t, t_nm, ratio in rows:
        print(f"{label:32} {fmt:18} {t:9.4f} {t_nm:10.4f} {ratio:7.2f}")
        worst = max(worst, ratio)
    print(f"\nbench: worst ratio fgk map / nm -n = {worst:.2f} (target <= {TARGET})")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
