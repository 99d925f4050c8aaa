#!/usr/bin/env bash
# kernel-series/6.12/bisect-build.sh: does every prefix of the 6.12 series
# build?  A full build per patch takes too long on a small machine, so for
# each commit of a git tree holding the series (one commit per patch, on top
# of pristine linux-source-6.12) this
#   - checks the commit out,
#   - configures an out-of-tree build directory from the published
#     configuration (build/kernel-6.12/config, `make olddefconfig`: options a
#     later patch adds are dropped),
#   - runs `make prepare` (host tools: objtool, kallsyms, relocs; linker
#     script headers),
#   - compiles every .c/.S file the patch touches (`make path.o`) and the
#     linker script when vmlinux.lds.S changes,
#   - compiles the kernel .c files that include a header the patch touches.
# Not reachable this way: the link (link-vmlinux.sh, Makefile.postlink) and
# the decompressor, arch/x86/boot/compressed/ (kbuild builds it only
# through bzImage after the link, with its own flags): the full build of
# the whole series (make kernel KVERSION=6.12) proves those.
#
# LINK=1: instead, link and boot every prefix.  For each commit: the same
# configuration, then vmlinux, its postlink step (relocs) and the
# decompressor are made again (`make bzImage`, incremental; vmlinux and the
# decompressor's outputs are removed first, so a changed host tool or link
# script is used), and the bzImage boots under QEMU (TCG) with the
# project's runner (qemu-profiles/run, busybox initramfs; each boot under
# flock $HEAVY_LOCK, default BUILD-DIR/boot.lock: point it at a lock shared
# with the machine's other guest jobs).  A boot passes when the guest
# reaches init, runs the check script and shuts down in order ("reboot:
# Restarting system": the runner's QEMU has -no-reboot), with no oops,
# panic or WARN, and where the series' KUnit suite ran, it reports fail:0.
# Whether the text was shuffled is read from /proc/kallsyms: the offsets
# of a few functions from _text against System.map (link order).  Boots
# per prefix:
#   - no FG-KASLR shuffle in the prefix (before patch 4, or the base):
#     one boot, the functions where they were linked;
#   - with the shuffle (CONFIG_FG_KASLR=y and the decompressor's
#     fgkaslr.c exists): a random seed (moved), fgkaslr_seed=SEED (moved,
#     and where /proc/fgkaslr_seed exists it reads SEED) and nofgkaslr
#     (where linked).
# FROM=0 includes the base commit as a control (LINK mode only).  A file
# BUILD-DIR/stop makes it stop before the next commit (and say which); to
# resume, or after killing it in a commit, FROM=that commit (the build is
# incremental, so a half-built commit costs only what is left of it).  The
# compile-only mode above is unchanged when LINK is unset.
#
# usage: bisect-build.sh PORT-TREE BUILD-DIR [BASE-COMMIT]
#   e.g. nice kernel-series/6.12/bisect-build.sh build/linux-6.12-port \
#            build/linux-6.12-bisect
#        LINK=1 FROM=0 JOBS=2 kernel-series/6.12/bisect-build.sh \
#            build/linux-6.12-port build/linux-6.12-bisect
#        (LINK mode builds at nice 19 itself, boots under the lock at
#        nice 10)
# Prints one line per commit, "ok" or "FAIL" (LINK=1: build seconds and
# the result of each boot); exit status 1 if any failed.
set -uo pipefail
die() { echo "bisect-build: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: bisect-build.sh PORT-TREE BUILD-DIR [BASE-COMMIT]"
tree=$(realpath "$1") || die "$1: no such tree"
obj=$(realpath -m "$2")
built=$(realpath build/kernel-6.12/build)
cfg=$(realpath build/kernel-6.12/config) || die "build/kernel-6.12/config missing (make kernel KVERSION=6.12)"
base=${3:-$(git -C "$tree" log --format=%H --grep='(pristine)' -1)}
[ -n "$base" ] || die "$tree: no base commit named '(pristine)'; pass BASE-COMMIT"
[ -z "$(git -C "$tree" status --porcelain --untracked-files=no)" ] ||
    die "$tree has uncommitted changes"
head=$(git -C "$tree" rev-parse HEAD)
back=$(git -C "$tree" symbolic-ref -q --short HEAD || echo "$head")
mkdir -p "$obj"
J=${JOBS:-2}
link=${LINK:-}
nice_build=()
[ -z "$link" ] || nice_build=(nice -n 19)
mk() { "${nice_build[@]}" make -C "$tree" O="$obj" -j"$J" -s "$@"; }
runner=$(realpath "$(dirname "$0")/../../qemu-profiles/run")
lock=${HEAVY_LOCK:-$obj/boot.lock}
seed=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
# functions in .text.<name> sections (not .sched.text and the like)
probe_fns="do_sys_open vfs_read vfs_write kernel_clone __x64_sys_getpid"

# boot KIND [runner options]: boot $obj's bzImage, print "KIND:ok" or
# "KIND:FAIL(why)"; the check script's output and the serial log stay in
# $obj/boot-$n-KIND.{out,log}.  Expects $n and $fgseedfile.
boot() {
    local kind=$1 out log rc why="" moved=0 same=0 f a t m g
    shift
    out="$obj/boot-$n-$kind.out"; log="$obj/boot-$n-$kind.log"
    rm -f "$out" "$log"
    flock "$lock" nice -n 10 "$runner" boot --kernel "$obj/arch/x86/boot/bzImage" \
        --timeout 600 --log "$log" --out "$out" "$@" --init - > "$out.err" 2>&1 <<EOS
echo "release \$(uname -r)"
for f in _text $probe_fns; do
    grep -m1 " [tT] \$f\$" /proc/kallsyms | sed 's/^/sym /'
done
dmesg | grep -E 'FG-KASLR|# fgkaslr: pass|fgkaslr.*(not ok|fail)' | sed 's/^/dmesg /'
[ ! -e /proc/fgkaslr_seed ] || echo "seedfile \$(cat /proc/fgkaslr_seed)"
EOS
    rc=$?
    [ $rc -eq 0 ] || why="rc=$rc"
    grep -qE 'reboot: (Power down|Restarting system)' "$log" 2>/dev/null || why="$why no-poweroff"
    grep -q 'kernel warning' "$out.err" && why="$why WARN"
    grep -q 'fail:[1-9]' "$out" 2>/dev/null && why="$why kunit-fail"
    # functions where they were linked?
    t=$(awk '$3 == "_text" {print $1; exit}' "$obj/System.map")
    a=$(awk '$1 == "sym" && $4 == "_text" {print $2; exit}' "$out" 2>/dev/null)
    for f in $probe_fns; do
        m=$(awk -v f="$f" '$3 == f {print $1; exit}' "$obj/System.map")
        g=$(awk -v f="$f" '$1 == "sym" && $4 == f {print $2; exit}' "$out" 2>/dev/null)
        [ -n "$m" ] && [ -n "$g" ] && [ -n "$a" ] || continue
        if [ $(( 0x$g - 0x$a )) -eq $(( 0x$m - 0x$t )) ]; then
            same=$((same + 1))
        else
            moved=$((moved + 1))
        fi
    done
    [ $((same + moved)) -gt 0 ] || why="$why no-symbols"
    case $kind in
        random|seed) [ "$same" -eq 0 ] && [ "$moved" -gt 0 ] || why="$why not-shuffled($moved/$((same + moved)))" ;;
        *) [ "$moved" -eq 0 ] || why="$why moved($moved/$((same + moved)))" ;;
    esac
    if [ "$kind" = seed ] && [ -n "$fgseedfile" ]; then
        grep -q "^seedfile $seed\$" "$out" || why="$why seedfile"
    fi
    if [ -n "$why" ]; then echo "$kind:FAIL(${why# })"; return 1; fi
    echo "$kind:ok($moved/$((same + moved)) moved)"
}
fail=0
n=0
from=${FROM:-1}     # FROM=k: start at the k-th commit (the build directory
                   # must hold the configuration of commit k-1 or earlier)
commits=$(git -C "$tree" rev-list --reverse "$base..$head")
if [ -n "$link" ] && [ "$from" -eq 0 ]; then
    commits="$base $commits"; n=-1      # the base, as a control
fi
[ -n "$link" ] || [ "$from" -ge 1 ] || die "FROM=0 (the base) only with LINK=1"
for c in $commits; do
    n=$((n + 1))
    if [ "$n" -ge "$from" ] && [ -e "$obj/stop" ]; then
        echo "stopped before commit $n ($obj/stop): resume with FROM=$n"
        break
    fi
    [ "$n" -ge "$from" ] || continue
    [ "$n" -le "${TO:-999}" ] || break
    subj=$(git -C "$tree" log -1 --format=%s "$c")
    git -C "$tree" checkout -q "$c" || die "checkout $c failed"
    files=$(git -C "$tree" show --name-only --format= "$c")
    log="$obj/bisect-$n.log"
    targets=()
    # the objects to compile (compile-only mode; LINK mode makes bzImage,
    # and for the base commit, whose diff is the whole tree, this search
    # would run for hours)
    [ -n "$link" ] || for f in $files; do
        case $f in
            *.lds.S) targets+=("${f%.S}") ;;
            arch/x86/boot/compressed/*) ;;
            arch/x86/tools/*|scripts/*|Documentation/*) ;;   # host tools: make prepare
            *.c|*.S) targets+=("${f%.?}.o") ;;
            *.h)
                # the kernel .c files (not the decompressor's) that include it
                h=${f#include/}; h=${h#arch/x86/include/}
                for u in $(git -C "$tree" grep -l -e "#include [<\"]$h[>\"]" \
                               -e "#include \"$(basename "$f")\"" -- "$(dirname "$f")/*.c" '*.c' |
                           grep -v '^arch/x86/boot/\|^arch/x86/realmode/\|^arch/x86/tools/\|^drivers/firmware/efi/libstub/\|^tools/\|^scripts/' |
                           awk '!/^arch\// || /^arch\/x86\//' | head -n 20); do
                    # only those the configuration builds (the published
                    # tree of the whole series has their .o)
                    [ ! -f "$built/${u%.c}.o" ] || targets+=("${u%.c}.o")
                done ;;
        esac
    done
    # The decompressor (arch/x86/boot/compressed/) is not reachable as a
    # single target: kbuild builds it only through bzImage, after the link,
    # with its own flags (a `make path.o` compiles it with the kernel's
    # flags and fails on ../voffset.h), so its objects are proven by the
    # full build only.
    if [ -z "$link" ] &&
       echo "$files" | grep -q '^drivers/firmware/efi/libstub/\|^arch/x86/include/asm/boot.h'; then
        targets+=(drivers/firmware/efi/libstub/x86-stub.o)
    fi
    mapfile -t targets < <(printf '%s\n' "${targets[@]}" | grep . | sort -u)
    start=$(date +%s)
    {
        echo "== $n $c $subj"
        echo "files: $files"
        echo "targets: ${targets[*]}"
        # Kconfig runs dozens of compiler probes: configure again only when
        # the commit changes a Kconfig file (else the result is the same)
        has_fg=$(grep -c '^config FG_KASLR$' "$tree/arch/x86/Kconfig")
        if [ "$n" -eq "$from" ] || echo "$files" | grep -q 'Kconfig' ||
           { [ "$has_fg" -gt 0 ] && ! grep -q '^CONFIG_FG_KASLR=y' "$obj/.config"; }; then
            cp "$cfg" "$obj/.config" && mk olddefconfig &&
            if [ "$has_fg" -gt 0 ] && ! grep -q '^CONFIG_FG_KASLR=y' "$obj/.config"; then
                # before patches 9 and 10, FG_KASLR excludes DYNAMIC_FTRACE
                # and X86_KERNEL_IBT: build those prefixes without them
                echo "FG_KASLR not selectable: without X86_KERNEL_IBT and DYNAMIC_FTRACE"
                "$tree/scripts/config" --file "$obj/.config" -d X86_KERNEL_IBT \
                    -d DYNAMIC_FTRACE -e FG_KASLR -e FG_KASLR_KUNIT_TEST \
                    -m FG_KASLR_TEST_MODULE && mk olddefconfig
            fi
        fi &&
        { [ "$has_fg" -eq 0 ] || grep '^CONFIG_FG_KASLR' "$obj/.config"; } &&
        if [ -n "$link" ]; then
            # relink and rebuild the decompressor (6.12 makes
            # compressed/vmlinux.relocs only in vmlinux's postlink step)
            rm -f "$obj/vmlinux" "$obj/arch/x86/boot/bzImage" \
                "$obj"/arch/x86/boot/compressed/vmlinux* \
                "$obj"/arch/x86/boot/vmlinux.bin "$obj/System.map" &&
            mk bzImage
        else
            mk prepare &&
            { [ ${#targets[@]} -eq 0 ] || mk "${targets[@]}"; }
        fi
    } > "$log" 2>&1
    rc=$?
    if [ -n "$link" ]; then
        secs=$(( $(date +%s) - start ))
        res=ok; boots=""
        if [ $rc -ne 0 ]; then
            res=FAIL; fail=1; boots="build-failed"
        else
            shuffle=""; fgseedfile=""
            grep -q '^CONFIG_FG_KASLR=y' "$obj/.config" &&
                [ -f "$tree/arch/x86/boot/compressed/fgkaslr.c" ] && shuffle=1
            grep -qs 'proc_create.*"fgkaslr_seed"' "$tree/kernel/fgkaslr.c" && fgseedfile=1
            bstart=$(date +%s)
            if [ -n "$shuffle" ]; then
                boots="$(boot random) $(boot seed --seed "$seed") $(boot nofgkaslr --append nofgkaslr)"
            else
                boots=$(boot linked)
            fi
            case $boots in *FAIL*) res=FAIL; fail=1 ;; esac
            boots="$boots $(( $(date +%s) - bstart ))s"
        fi
        printf '%02d %-4s %4ss build  %s  %s\n' "$n" "$res" "$secs" "$boots" "$subj"
        [ "$res" = ok ] || grep -E 'error|Error' "$log" | head -n 10 | sed 's/^/    /'
        continue
    fi
    # kbuild builds only what exists: a .o that is not configured in is
    # silently skipped, so check that each requested object now exists
    missing=""
    for t in "${targets[@]}"; do
        case $t in *.o) [ -f "$obj/$t" ] || missing="$missing $t" ;; esac
    done
    if [ $rc -eq 0 ] && [ -n "$missing" ]; then
        echo "not built (not configured?):$missing" >> "$log"
    fi
    res=ok; [ $rc -eq 0 ] || { res=FAIL; fail=1; }
    printf '%02d %-4s %4ss %3d objects%s  %s\n' "$n" "$res" "$(( $(date +%s) - start ))" \
        "${#targets[@]}" "${missing:+ (not configured:$missing)}" "$subj"
    [ $rc -eq 0 ] || grep -E 'error|Error' "$log" | head -n 10 | sed 's/^/    /'
done
git -C "$tree" checkout -q "$back"
exit $fail
