"""What the boot scripts here share: one QEMU boot of a kernel dir through
fgkrun, its autogroup at nice 19 (they run beside builds), and the seeded
nokaslr boot with the /proc/kcore offset of _text that the *sum.py scripts
read the shuffled kernel's memory through."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "qemu-profiles"))
import fgkrun  # noqa: E402

SEED = "5eed" * 16


def boot(script, kernel, **kw):
    """Boot kernel (a bzImage), run script in the guest; the fgkrun Result."""
    g = fgkrun.Guest("boot", script, kernel=kernel, **kw)
    g.start()
    with open(f"/proc/{g.proc.pid}/autogroup", "w") as f:
        f.write("19")
    try:
        return g.wait()
    finally:
        g.kill()


def boot_seeded(kdir, script):
    """boot() of kdir's bzImage with fgkaslr_seed=SEED nokaslr, KUnit off."""
    return boot(script, kdir / "bzImage", append=f"fgkaslr_seed={SEED} kunit.enable=0 nokaslr",
                kaslr=False, timeout=900)


def kcore_offset(text):
    """Shell that sets $off to the /proc/kcore file offset of the program
    header whose vaddr is text (_text's address), and echoes it."""
    return f"""n=$(od -A n -t u2 -j 56 -N 2 /proc/kcore); i=0; off=
while [ $i -lt $n ]; do set -- $(od -A n -t x8 -j $((64+56*i)) -N 56 /proc/kcore); [ "$3" = "{text:016x}" ] && off=$((0x$2)); i=$((i+1)); done
echo kcoreoff $off
"""
