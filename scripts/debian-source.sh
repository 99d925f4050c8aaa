# shellcheck shell=bash
# scripts/debian-source.sh: build a newer Debian release's source package
# on Debian 12 and install its .deb; sourced by scripts/build-crash and
# scripts/build-drgn (not run by itself).
#
# Only a deb-src entry for that release is added: no binary package comes
# from the newer release.  apt verifies what it downloads against the signed
# index.  Every function fails with one line naming the package and what
# went wrong.
#
#   debsrc_installed PKG MIN       0 if the .deb PKG >= MIN (or MIN~rc) is installed
#   debsrc_lock NAME PKG MIN       one build at a time (make deps may run from
#                                  several targets); exits 0 when, once the
#                                  lock is ours, PKG >= MIN is installed
#   debsrc_begin                   SUDO (when not root), noninteractive apt
#   debsrc_source SRC VERSION SUITE  the deb-src entry, if `apt-cache showsrc`
#                                  does not know SRC VERSION yet
#   debsrc_build_deps PKG...       install build dependencies (bookworm's)
#   debsrc_fetch SRC VERSION WORK [FALLBACK]
#                                  `apt-get source` into a fresh WORK and cd to
#                                  the unpacked tree; without Debian's
#                                  packaging, the orig tarball and FALLBACK
#                                  (a function writing debian/) in the tree
#   debsrc_buildpackage WORK       dpkg-buildpackage -b, nice 10, nocheck;
#                                  DEBSRC_BUILD_OPTIONS/_PROFILES add to it
#   debsrc_install DEB...          apt-get install of local .debs
#
# The caller sets $here (the repository: locks go in $here/build) and runs
# with set -euo pipefail; $DEBSRC_NAME (the calling script's name) prefixes
# every message.

DEBSRC_NAME=${DEBSRC_NAME:-$(basename "$0")}
# One deb-src file for every package these scripts build.  It is named for
# crash, its first user, so that machines that have it get no second entry.
DEBSRC_LIST=/etc/apt/sources.list.d/fgk-crash-src.sources

debsrc_die() { echo "$DEBSRC_NAME: $*" >&2; exit 1; }

debsrc_installed() {
    local have
    have=$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true)
    [ -n "$have" ] && dpkg --compare-versions "$have" ge "$2~"
}

debsrc_lock() {
    mkdir -p "$here/build"
    exec 9>"$here/build/.$1.lock"
    flock 9
    if debsrc_installed "$2" "$3"; then
        exit 0
    fi
}

debsrc_begin() {
    SUDO=
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || debsrc_die "not root and no sudo: cannot install $*"
        SUDO=sudo
    fi
    export DEBIAN_FRONTEND=noninteractive
}

debsrc_has() { apt-cache showsrc "$1" 2>/dev/null | grep -q "^Version: $2\$"; }

debsrc_source() {
    if ! debsrc_has "$1" "$2"; then
        [ -f "$DEBSRC_LIST" ] || $SUDO tee "$DEBSRC_LIST" >/dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $3
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        $SUDO apt-get update -qq
    fi
    debsrc_has "$1" "$2" || debsrc_die "Debian source package $1 $2 not found (deb-src $3 in $DEBSRC_LIST)"
}

debsrc_build_deps() {
    $SUDO apt-get install -y -qq --no-install-recommends build-essential dpkg-dev fakeroot \
        "$@" >/dev/null
}

debsrc_fetch() {
    local src=$1 version=$2 work=$3 fallback=${4:-} upstream=${2%-*}
    upstream=${upstream#*:}
    rm -rf "$work"
    mkdir -p "$work"
    cd "$work" || exit 1
    if apt-get source -qq "$src=$version" >apt-source.log 2>&1; then
        cd "$src-$upstream" || exit 1
        return 0
    fi
    # Debian's packaging is not reachable: the upstream tarball alone.
    rm -rf "$src-$upstream"
    local orig
    apt-get source -qq --tar-only "$src=$version" >>apt-source.log 2>&1 &&
        orig=$(ls "$src"_"$upstream".orig.tar.* 2>/dev/null | head -1) && [ -n "$orig" ] ||
        debsrc_die "cannot download $src $version's source (see $work/apt-source.log)"
    [ -n "$fallback" ] ||
        debsrc_die "Debian's packaging of $src $version (.dsc, .debian.tar.xz) cannot be downloaded (see $work/apt-source.log)"
    tar xf "$orig"
    cd "$src-$upstream" || exit 1
    "$fallback"
}

debsrc_buildpackage() {
    local profiles=()
    [ -z "${DEBSRC_BUILD_PROFILES:-}" ] || profiles=("DEB_BUILD_PROFILES=$DEBSRC_BUILD_PROFILES")
    env DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)${DEBSRC_BUILD_OPTIONS:+ $DEBSRC_BUILD_OPTIONS}" \
        "${profiles[@]}" nice -n 10 \
        dpkg-buildpackage -b -uc -us >"$1/build.log" 2>&1 || {
        echo "$DEBSRC_NAME: dpkg-buildpackage failed; last lines of $1/build.log:" >&2
        tail -20 "$1/build.log" >&2
        exit 1
    }
}

debsrc_install() {
    $SUDO apt-get install -y -qq --no-install-recommends --allow-downgrades "$@" >/dev/null
}
