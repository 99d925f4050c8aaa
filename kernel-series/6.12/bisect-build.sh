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
# usage: bisect-build.sh PORT-TREE BUILD-DIR [BASE-COMMIT]
#   e.g. nice kernel-series/6.12/bisect-build.sh build/linux-6.12-port \
#            build/linux-6.12-bisect
# Prints one line per commit, "ok" or "FAIL"; exit status 1 if any failed.
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
mk() { make -C "$tree" O="$obj" -j"$J" -s "$@"; }
fail=0
n=0
from=${FROM:-1}     # FROM=k: start at the k-th commit (the build directory
                   # must hold the configuration of commit k-1 or earlier)
for c in $(git -C "$tree" rev-list --reverse "$base..$head"); do
    n=$((n + 1))
    [ "$n" -ge "$from" ] || continue
    [ "$n" -le "${TO:-999}" ] || break
    subj=$(git -C "$tree" log -1 --format=%s "$c")
    git -C "$tree" checkout -q "$c" || die "checkout $c failed"
    files=$(git -C "$tree" show --name-only --format= "$c")
    log="$obj/bisect-$n.log"
    targets=()
    for f in $files; do
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
    if echo "$files" | grep -q '^drivers/firmware/efi/libstub/\|^arch/x86/include/asm/boot.h'; then
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
        mk prepare &&
        { [ ${#targets[@]} -eq 0 ] || mk "${targets[@]}"; }
    } > "$log" 2>&1
    rc=$?
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
