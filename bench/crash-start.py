#!/usr/bin/env python3
"""Benchmark `fgk crash` start-up against plain `crash`, in the same run.

Boots the kernel twice under QEMU (TCG) with qemu-profiles' dump support and
panics it (sysrq c):

  A. a random FG-KASLR seed and base KASLR (what fgk crash is for);
  B. `nofgkaslr` (the unshuffled layout: the baseline crash alone handles).

Then times, to the end of crash's start-up (`-i` a file holding `exit`):

  fgk crash cold     `fgk crash A/vmcore` with an empty relink cache
                     (VMCOREINFO read, build-id check, relink, crash)
  fgk crash cached   the same with vmlinux.fgk already cached
  ... no modules     cached, --no-modules (plain crash loads no module
                     symbols at start-up; fgk crash runs 'mod -S')
  crash (baseline)   `crash vmlinux B/vmcore`
  crash on .fgk      the crash command line fgk crash --no-modules runs
                     (`fgk crash -n`): crash's own share of the cached run
  crash, no-FG build `crash N/vmlinux N/vmcore`, N the same configuration
                     built without FG-KASLR (<kernel dir>-nofg, e.g.
                     build/kernel-6.12-nofg), booted and dumped too, if built:
                     crash on an unshuffled vmlinux

median of REPEAT runs each, and the ratios to the baseline (and to the
no-FG build's crash).  Target: cached
within 1.25x of the baseline (the extra work is reading VMCOREINFO and a
cache lookup); cold is dominated by the relink.  On a kernel without the
FG-KASLR series both dumps are unshuffled and fgk crash does not relink:
the report says so.

Usage: bench/crash-start.py [--repeat N] [--keep DIR] [--kernel-dir DIR] [--append ARGS]
(--kernel-dir: another build's bzImage + vmlinux; --append: more kernel
command line, e.g. qemu_fw_cfg.ioport=0xc@0x510 for a kernel without ACPI)
"""
import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "qemu-profiles"))
import fgkdump  # noqa: E402
import fgkbase  # noqa: E402
import fgkrun  # noqa: E402,F401  (puts the libfgk binding on sys.path)
import libfgk  # noqa: E402

# $FGK_BENCH_FGK: another fgk (an older build, for a before/after comparison)
FGK = Path(os.environ.get("FGK_BENCH_FGK", REPO / "build" / "bin" / "fgk"))
VMLINUX = REPO / "build" / "kernel" / "vmlinux"
TARGET_CACHED = 1.25
GOAL_NOFG = 1.1
SCRIPT = "echo c > /proc/sysrq-trigger\n"


def is_fg():
    with libfgk.Vmlinux(VMLINUX) as vm:
        return vm.kind != "plain"


def timed(cmd, env=None):
    t = time.perf_counter()
    r = subprocess.run([str(c) for c in cmd], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(map(str, cmd))} failed (rc {r.returncode}):\n"
                 f"{r.stderr[-2000:]}{r.stdout[-2000:]}")
    if "crash>" not in r.stdout and "exit" not in r.stdout:
        sys.exit(f"bench: {cmd[0]} did not reach its prompt:\n{r.stdout[-2000:]}")
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR", help="keep the dumps in DIR")
    ap.add_argument("--kernel-dir", metavar="DIR", help="bzImage and vmlinux (default build/kernel)")
    ap.add_argument("--append", default="", metavar="ARGS", help="more kernel command line")
    args = ap.parse_args()
    global VMLINUX
    kdir = Path(args.kernel_dir) if args.kernel_dir else fgkbase.KERNEL_DIR
    VMLINUX = kdir / "vmlinux"
    for p in (FGK, VMLINUX, kdir / "bzImage"):
        if not p.is_file():
            print(f"bench crash-start: {p} missing (make kernel tools); skipped")
            return 0
    crash = shutil.which("crash")
    if not crash:
        print("bench crash-start: crash not installed (make deps); skipped")
        return 0
    fg = is_fg()
    nofg_dir = kdir.with_name(kdir.name + "-nofg")
    if not (nofg_dir / "vmlinux").is_file() or not (nofg_dir / "bzImage").is_file():
        nofg_dir = None
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="fgk-bench-crash-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        seed = os.urandom(32).hex() if fg else None
        dumps = {}
        boots = [("A", kdir, {"seed": seed, "append": args.append}),
                 ("B", kdir, {"append": " ".join(filter(None, [args.append, "nofgkaslr"]))})]
        if nofg_dir:
            boots.append(("N", nofg_dir, {"append": args.append}))
        for name, bdir, kw in boots:
            t = time.perf_counter()
            res = fgkdump.dump_run("dump", SCRIPT, dump_dir=work / name, timeout=240,
                                   kernel=bdir / "bzImage",
                                   **{k: v for k, v in kw.items() if v})
            if not res.dumped:
                sys.exit(f"bench crash-start: boot {name}: no dump ({res.message}; "
                         f"{res.result.message})")
            dumps[name] = work / name / "vmcore"
            if fg and name != "N":
                want = "disabled" if name == "B" else seed
                got = res.vmcoreinfo.get("FGKASLR_SEED")
                if got != want:
                    sys.exit(f"bench crash-start: dump {name}: FGKASLR_SEED={got}, expected {want}")
            print(f"boot+panic+dump {name}: {time.perf_counter() - t:.1f} s "
                  f"({(work / name / 'vmcore').stat().st_size >> 20} MiB ELF)")
        (work / "exit").write_text("exit\n")
        cache = work / "cache"
        env = dict(os.environ, FGK_CACHE_DIR=str(cache))
        fgk_cmd = [FGK, "crash", "-q", dumps["A"], VMLINUX, "-i", work / "exit"]
        base_cmd = [crash, VMLINUX, dumps["B"], "-i", work / "exit"]
        # what plain crash does at start-up: no module symbols ('mod -S')
        nomod_cmd = fgk_cmd[:3] + ["--no-modules"] + fgk_cmd[3:]

        nofg_cmd = ([crash, nofg_dir / "vmlinux", dumps["N"], "-i", work / "exit"]
                    if nofg_dir else None)

        timed(base_cmd)                         # warm the page cache
        cold, cached, nomod, base, plain, nofg = [], [], [], [], [], []
        for _ in range(args.repeat):
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(timed(fgk_cmd, env))
            cached.append(timed(fgk_cmd, env))
            nomod.append(timed(nomod_cmd, env))
            base.append(timed(base_cmd))
            # what fgk crash --no-modules execs, run without fgk in front
            line = subprocess.run([str(x) for x in nomod_cmd[:2] + ["-n"] + nomod_cmd[2:]],
                                  capture_output=True, text=True, env=env).stdout
            if fg and line.strip():
                plain.append(timed(shlex.split(line), env))
            if nofg_cmd:
                nofg.append(timed(nofg_cmd))
        c, k, b = (statistics.median(x) for x in (cold, cached, base))
        n = statistics.median(nomod)
        print(f"\nkernel: {'FG-KASLR (dump A shuffled, seed ' + seed[:16] + '...)' if fg else 'no .text.* sections: nothing to relink, A is unshuffled too'}")
        rows = [("crash (baseline)", b), ("fgk crash, cached", k), ("fgk crash, cold", c),
                ("fgk crash, cached, no module symbols", n)]
        if plain:
            rows.append(("crash on vmlinux.fgk (fgk crash -n)", statistics.median(plain)))
        if nofg:
            u = statistics.median(nofg)
            rows.append((f"crash, no-FG build ({nofg_dir.name})", u))
        w = max(len(r[0]) for r in rows)
        print(f"{'':{w}} {'median s':>9} {'vs crash':>9}" + ("  vs no-FG" if nofg else "")
              + f"   (runs: {args.repeat})")
        for label, x in rows:
            print(f"{label:{w}} {x:9.2f} {x / b:9.2f}" + (f" {x / u:9.2f}" if nofg else ""))
        ok = k / b <= TARGET_CACHED
        print(f"target: cached <= {TARGET_CACHED}x crash: {'met' if ok else 'NOT met'}")
        if nofg:
            print(f"goal (issue 33): cached <= {GOAL_NOFG}x crash on the no-FG build: "
                  f"{k / u:.2f}x, {'met' if k / u <= GOAL_NOFG else 'NOT met'}")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
