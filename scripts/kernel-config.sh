# shellcheck shell=bash
# shellcheck disable=SC2034  # its variables are for the script that sources it
# scripts/kernel-config.sh: which kernel (KVERSION), which configuration
# (KVARIANT) and how that configuration is made; sourced by
# scripts/build-kernel (`make kernel`) and scripts/kernel-deb (`make
# kernel-deb`), so that both make one configuration the one way.
#
# The caller runs with set -euo pipefail from the top of the repository and
# defines say and die (one line, its own prefix).  Sourcing checks the
# inputs and sets:
#
#   KVER, SRCVER        "" or 6.12; the source version (6.1 or 6.12)
#   TARBALL, TARBALL_TOP  Debian's linux-source tarball and its top directory
#   SERIES_DIR, SERIES, PATCHES  the patch series, the patches in order
#   VARIANT             KVARIANT ("" = the default configuration)
#   FRAGS               the config fragments, merged in order
#   BASE_CONFIG, LSMOD  a distribution's config to start from and the
#                       guest's module list for localmodconfig ("" if none)
#   KMAKE               make variables for every make run in the tree
#                       (KVARIANT=name with a file kernel[-X]-name.make:
#                       its NAME=value words, e.g. LLVM=1 for clang)
#   TREE, OUT           make kernel's tree and artifact directory ($KTREE,
#                       if set, instead of the variant's own tree: make
#                       kernel-matrix builds its variants in one tree)
#   tree_hash           what the pristine + patched tree depends on
#   full_hash           what the configured kernel depends on (the tree, the
#                       fragments, the base config and the module list)
#
# and defines:
#
#   apply_series DIR [quiet]   the series, in order, to the tree in DIR
#   configure_tree DIR LOG     DIR/.config from the inputs above, then
#                              verified against the fragments

KVER=${KVERSION:-}
[ "$KVER" != 6.1 ] || KVER=""
case "$KVER" in
    *[!0-9.]*) die "bad KVERSION '$KVER' (a kernel version such as 6.12)" ;;
esac
SRCVER=${KVER:-6.1}
TARBALL=${KERNEL_TARBALL:-/usr/src/linux-source-$SRCVER.tar.xz}
TARBALL_TOP=linux-source-$SRCVER
SERIES_DIR=kernel-series${KVER:+/$KVER}
SERIES=$SERIES_DIR/series
VARIANT=${KVARIANT:-}
# KVERSION=X: fragment "kernel-X-NAME" if it exists, else "kernel-NAME"
vfile() {
    if [ -n "$KVER" ] && [ -f "qemu-profiles/kernel-$KVER-$1" ]; then
        echo "qemu-profiles/kernel-$KVER-$1"
    else
        echo "qemu-profiles/kernel-$1"
    fi
}
MAIN_FRAG=qemu-profiles/kernel${KVER:+-$KVER}.config

BASE_CONFIG=""     # a distribution config to start from instead of tinyconfig
LSMOD=""
if [ -n "$VARIANT" ]; then
    case "$VARIANT" in
        *[!A-Za-z0-9_-]*) die "bad KVARIANT '$VARIANT' (letters, digits, - and _ only)" ;;
    esac
    TREE=build/linux-${KVER:+$KVER-}$VARIANT
    OUT=build/kernel-${KVER:+$KVER-}$VARIANT
    FRAGS=("$MAIN_FRAG" "$(vfile "$VARIANT.config")")
    # NAME-nofg: variant NAME with qemu-profiles/kernel-nofg.config merged
    # last (the same configuration without FG-KASLR, for the benchmarks)
    DISTRO=$VARIANT
    case $VARIANT in *-nofg) DISTRO=${VARIANT%-nofg} ;; esac
    if [ -f "$(vfile "$DISTRO.base")" ]; then
        read -r base_file < "$(vfile "$DISTRO.base")"
        BASE_CONFIG=/usr/src/linux-config-$SRCVER/$base_file
        [ -f "$BASE_CONFIG" ] ||
            die "$BASE_CONFIG not found (run 'make deps': package linux-config-$SRCVER)"
        FRAGS=("$(vfile "$DISTRO.config")")
        [ "$DISTRO" = "$VARIANT" ] || FRAGS+=("$(vfile nofg.config)")
        LSMOD=$(vfile "$DISTRO.lsmod")
        [ -f "$LSMOD" ] || die "$LSMOD not found (the modules the guest loads)"
    fi
else
    TREE=build/$TARBALL_TOP
    OUT=build/kernel${KVER:+-$KVER}
    FRAGS=("$MAIN_FRAG")
fi

# make variables of the variant (one NAME=value word or more a line, '#'
# comments): the compiler is not a config option, yet a kernel built with
# another one is another kernel
KMAKE=()
KMAKE_FILE=""
if [ -n "$VARIANT" ] && [ -f "$(vfile "$VARIANT.make")" ]; then
    KMAKE_FILE=$(vfile "$VARIANT.make")
    while read -r line; do
        line=${line%%#*}
        for w in $line; do
            case $w in
                [A-Za-z_]*=*) KMAKE+=("$w") ;;
                *) die "$KMAKE_FILE: '$w' is not NAME=value" ;;
            esac
        done
    done < "$KMAKE_FILE"
fi
if [ -n "${KTREE:-}" ]; then
    case $KTREE in
        build/*) TREE=${KTREE%/} ;;
        *) die "KTREE '$KTREE' must be a directory under build/" ;;
    esac
fi

[ -f "$TARBALL" ] || die "$TARBALL not found (run 'make deps': package linux-source-$SRCVER)"
for f in "${FRAGS[@]}"; do
    [ -f "$f" ] || die "config fragment $f not found"
done
[ -f "$SERIES" ] || die "$SERIES not found (an empty file means: no patches)"

# Patches named in the series, in order ('#' comments and blank lines ignored).
PATCHES=()
while read -r line; do
    line=${line%%#*}
    line=$(echo "$line" | xargs)   # trim
    [ -n "$line" ] || continue
    [ -f "$SERIES_DIR/$line" ] || die "patch $line listed in $SERIES does not exist"
    PATCHES+=("$line")
done < "$SERIES"

hash_of() { sha256sum | cut -d' ' -f1; }

# What the pristine+patched tree depends on.
tree_hash=$(
    {
        echo "tarball $(basename "$TARBALL") $(stat -Lc '%s %Y' "$TARBALL")"
        echo "series"; cat "$SERIES"
        for p in "${PATCHES[@]}"; do echo "patch $p"; cat "$SERIES_DIR/$p"; done
    } | hash_of)
# What the published artifacts depend on.
full_hash=$(
    {
        echo "tree $tree_hash"
        for f in "${FRAGS[@]}"; do echo "fragment $f"; cat "$f"; done
        [ ${#KMAKE[@]} -eq 0 ] || echo "make ${KMAKE[*]}"
        if [ -n "$BASE_CONFIG" ]; then
            echo "base $BASE_CONFIG"; xzcat "$BASE_CONFIG"
            echo "lsmod"; cat "$LSMOD"
        fi
    } | hash_of)

apply_series() {    # apply_series DIR [quiet]: the series, in order, to the tree in DIR
    local p out
    for p in "${PATCHES[@]}"; do
        [ -n "${2:-}" ] || say "applying $p"
        if ! out=$(patch -d "$1" -p1 --forward --no-backup-if-mismatch --batch \
                    < "$SERIES_DIR/$p" 2>&1); then
            echo "$out" | tail -n 20 >&2
            say "patch $p failed to apply" >&2
            return 1
        fi
    done
}

configure_tree() {  # configure_tree DIR LOG
    local dir=$1 log=$2 f bad abs_frags=()
    for f in "${FRAGS[@]}"; do abs_frags+=("$PWD/$f"); done
    if [ -n "$BASE_CONFIG" ]; then
        say "configuring: $(basename "$BASE_CONFIG") + ${FRAGS[*]} + localmodconfig ($LSMOD)"
        {
            xzcat "$BASE_CONFIG" > "$dir/.config"
            (cd "$dir" && scripts/kconfig/merge_config.sh -m .config "${abs_frags[@]}")
            make -C "$dir" -s "${KMAKE[@]}" olddefconfig
            yes '' | make -C "$dir" -s "${KMAKE[@]}" LSMOD="$PWD/$LSMOD" localmodconfig
            # localmodconfig keeps only the listed modules; the fragment is
            # merged again so that its own =m options survive
            (cd "$dir" && scripts/kconfig/merge_config.sh -m .config "${abs_frags[@]}")
            make -C "$dir" -s "${KMAKE[@]}" olddefconfig
        } > "$log" 2>&1 ||
            { tail -n 30 "$log" >&2; die "configuration failed (log: $log)"; }
    else
        say "configuring: tinyconfig + ${FRAGS[*]}"
        {
            make -C "$dir" -s "${KMAKE[@]}" tinyconfig
            (cd "$dir" && scripts/kconfig/merge_config.sh -m .config "${abs_frags[@]}")
            make -C "$dir" -s "${KMAKE[@]}" olddefconfig
        } > "$log" 2>&1 ||
            { tail -n 30 "$log" >&2; die "configuration failed (log: $log)"; }
    fi

    # Verify: the effective value of every option in the fragments (later
    # fragments override earlier ones) must be what the final .config has.
    bad=$(awk '
        FNR == NR { have[$0] = 1; next }   # first file: final .config lines
        /^CONFIG_[A-Za-z0-9_]+=/ { split($0, kv, "="); want[kv[1]] = $0; next }
        /^# CONFIG_[A-Za-z0-9_]+ is not set/ { want[$2] = "unset"; next }
        END {
            for (k in want) {
                if (want[k] == "unset") {
                    if ((k "=y") in have || (k "=m") in have) print k " (wanted: not set)"
                } else if (!(want[k] in have)) {
                    print want[k]
                }
            }
        }' "$dir/.config" "${FRAGS[@]}" | sort)
    if [ -n "$bad" ]; then
        say "these options from ${FRAGS[*]} did not stick in $dir/.config:" >&2
        echo "$bad" | sed 's/^/  /' >&2
        die "fix the fragment (missing dependencies?) and run it again"
    fi
}
