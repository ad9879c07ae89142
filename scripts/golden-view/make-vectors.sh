#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Regenerate tests/data/golden-view/*.json: the kernel's own group_cpus_evenly() on drawn
# machines whose CPUs are offline, never brought up, or whose clusters split SMT sets, with
# the sibling and cluster masks x86 and arm64 give them (gen.py says how).
#
#   scripts/golden-view/make-vectors.sh [OUTDIR]      (default tests/data/golden-view)
#
# The kernel's lib/group_cpus.c and lib/sort.c come from Debian's source packages at run
# time, never from this tree: KSRC_612 and KSRC_72 name unpacked trees (default
# /tmp/ksrc/linux-source-6.12 and /tmp/ksrc/linux-source-7.2); a tree that is absent is
# replaced by the two files taken out of the package's tarball (`apt-get download
# linux-source-6.12` from the system's sources; linux-source-7.2 from Debian unstable through
# a private apt configuration in the scratch directory, the system's sources untouched).
# Needs gcc, python3, and for downloads apt-get, dpkg-deb, tar, xz.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-"$root/tests/data/golden-view"}
work=$(mktemp -d "${TMPDIR:-/tmp}/golden-view.XXXXXX")
trap 'rm -rf "$work"' EXIT

# take VERSION TREE [apt-get -o options...]: lib/group_cpus.c and lib/sort.c into $work/VERSION
take() {
  version=$1 tree=$2
  shift 2
  mkdir -p "$work/$version"
  if [ -f "$tree/lib/group_cpus.c" ] && [ -f "$tree/lib/sort.c" ]; then
    cp "$tree/lib/group_cpus.c" "$tree/lib/sort.c" "$work/$version/"
    echo "make-vectors: $version from $tree" >&2
    return
  fi
  (cd "$work/$version" && apt-get "$@" download "linux-source-$version" >&2)
  deb=$(ls "$work/$version"/linux-source-"$version"_*.deb)
  dpkg-deb -x "$deb" "$work/$version/pkg"
  tarball=$(ls "$work/$version/pkg/usr/src/linux-source-$version".tar.*)
  tar -xf "$tarball" -C "$work/$version" \
    "linux-source-$version/lib/group_cpus.c" "linux-source-$version/lib/sort.c"
  cp "$work/$version/linux-source-$version/lib/group_cpus.c" \
    "$work/$version/linux-source-$version/lib/sort.c" "$work/$version/"
  echo "make-vectors: $version from $(basename "$deb")" >&2
}

take 6.12 "${KSRC_612:-/tmp/ksrc/linux-source-6.12}"
sid=$work/apt-sid
mkdir -p "$sid/lists/partial" "$sid/cache/archives/partial"
mirror=$(grep -rhoE 'https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
  grep -E '/debian/?$' | grep -v snapshot | head -n 1 || true)
echo "deb ${mirror:-http://deb.debian.org/debian} sid main" > "$sid/sources.list"
set -- -o "Dir::Etc::SourceList=$sid/sources.list" -o Dir::Etc::SourceParts=/dev/null \
  -o "Dir::State::Lists=$sid/lists" -o "Dir::Cache=$sid/cache"
tree72=${KSRC_72:-/tmp/ksrc/linux-source-7.2}
if [ ! -f "$tree72/lib/group_cpus.c" ]; then
  apt-get "$@" update -qq >&2
fi
take 7.2 "$tree72" "$@"

flags="-O2 -std=gnu11 -fno-strict-aliasing -fwrapv -Wall -I$here/shim -I$root/kernel-c/include"
# 6.12's group_cpus_evenly() has no nummasks out-parameter.
if grep -Fq 'group_cpus_evenly(unsigned int numgrps)' "$work/6.12/group_cpus.c"; then
  api612=-DKC_GCE_NUMGRPS_ONLY
else
  api612=
fi
gcc $flags $api612 -o "$work/gce-6.12" "$here/harness.c" "$work/6.12/group_cpus.c" "$work/6.12/sort.c"
gcc $flags -o "$work/gce-7.2" "$here/harness.c" "$work/7.2/group_cpus.c" "$work/7.2/sort.c"
sha256sum "$work"/6.12/group_cpus.c "$work"/7.2/group_cpus.c | sed "s|$work/||" >&2
python3 "$here/gen.py" "$work/gce-6.12" "$work/gce-7.2" "$out"
