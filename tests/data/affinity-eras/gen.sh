#!/bin/sh
# Regenerates the vectors in this directory: the kernel's own irq_create_affinity_masks() of
# both eras, built in user space from Debian's sources, on the cases of
# examples/affinity_eras.rs. The kernel files are taken at run time and never kept here.
#
#   tests/data/affinity-eras/gen.sh
#
# Kernel trees: KSRC_612 and KSRC_72 name unpacked linux-source-6.12 / linux-source-7.2 trees
# (default /tmp/ksrc/linux-source-X.Y when present); otherwise the packages are downloaded with
# apt-get (6.12 from the system's sources, 7.2 from Debian unstable through a private apt
# configuration in the work directory, as .ci/run does) and only kernel/irq/affinity.c,
# lib/group_cpus.c, lib/sort.c and the Makefile are taken out. Needs gcc and cargo.
# Writes *.json and SOURCES.txt here. Exit 2 with one line when something is missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
command -v gcc >/dev/null 2>&1 || { echo "gen.sh: gcc not found (apt-get install gcc)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/affinity-eras.XXXXXX")
trap 'rm -rf "$work"' EXIT
files="kernel/irq/affinity.c lib/group_cpus.c lib/sort.c Makefile"

# tree PACKAGE VAR -> prints a directory holding $files of that Debian package
tree() {
  pkg=$1 given=$2
  if [ -n "$given" ] && [ -f "$given/lib/group_cpus.c" ]; then echo "$given"; return; fi
  if [ -f "/tmp/ksrc/$pkg/lib/group_cpus.c" ]; then echo "/tmp/ksrc/$pkg"; return; fi
  dl=$work/dl-$pkg
  mkdir -p "$dl"
  if [ "$pkg" = linux-source-7.2 ]; then
    sid=$work/apt-sid
    mkdir -p "$sid/lists/partial" "$sid/cache/archives/partial"
    mirror=$(grep -rhoE 'https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
      grep -E '/debian/?$' | grep -v snapshot | head -n 1)
    echo "deb ${mirror:-http://deb.debian.org/debian} sid main" >"$sid/sources.list"
    set -- -o "Dir::Etc::SourceList=$sid/sources.list" -o Dir::Etc::SourceParts=/dev/null \
      -o "Dir::State::Lists=$sid/lists" -o "Dir::Cache=$sid/cache"
    apt-get "$@" update -qq >&2
  else
    set --
  fi
  (cd "$dl" && apt-get "$@" download "$pkg" >&2) ||
    { echo "gen.sh: apt-get download $pkg failed" >&2; exit 2; }
  dpkg-deb -x "$dl"/"$pkg"_*.deb "$dl/x"
  tarball=$(ls "$dl"/x/usr/src/"$pkg".tar.*)
  paths=
  for f in $files; do paths="$paths $pkg/$f"; done
  # shellcheck disable=SC2086
  tar -xf "$tarball" -C "$dl" $paths
  echo "$dl/$pkg"
}

k612=$(tree linux-source-6.12 "${KSRC_612:-}")
k72=$(tree linux-source-7.2 "${KSRC_72:-}")

# build TREE OUT: the harness over that tree's three files.
build() {
  k=$1 out=$2
  d=
  grep -Fq 'group_cpus_evenly(unsigned int numgrps, unsigned int *nummasks)' "$k/lib/group_cpus.c" && d=-DKSHIM_NUMMASKS
  for f in kernel/irq/affinity.c lib/group_cpus.c lib/sort.c; do
    gcc -O1 -std=gnu11 -fno-strict-aliasing -fwrapv -w $d -I"$here/harness" -include "$here/harness/kshim.h" \
      -c "$k/$f" -o "$out-$(basename "$f" .c).o"
  done
  gcc -O1 -std=gnu11 -Wall $d -I"$here/harness" -c "$here/harness/harness.c" -o "$out-harness.o"
  gcc -o "$out" "$out-affinity.o" "$out-group_cpus.o" "$out-sort.o" "$out-harness.o"
}
build "$k612" "$work/numgrps"
build "$k72" "$work/nummasks"
grep -Fq 'curvec += this_vecs;' "$k612/kernel/irq/affinity.c" ||
  { echo "gen.sh: $k612's affinity.c is not the numgrps era" >&2; exit 2; }
grep -Fq 'curvec += nr_masks;' "$k72/kernel/irq/affinity.c" ||
  { echo "gen.sh: $k72's affinity.c is not the nummasks era" >&2; exit 2; }

rm -f "$here"/*.json
(cd "$root" && cargo run --quiet --example affinity_eras -- "$work/numgrps" "$work/nummasks" "$here")

version() { awk '/^VERSION =/ {v=$3} /^PATCHLEVEL =/ {p=$3} /^SUBLEVEL =/ {s=$3} END {print v "." p "." s}' "$1/Makefile"; }
{
  echo "Vectors written by gen.sh from these kernel files (sha256):"
  for k in "$k612" "$k72"; do
    echo "$(basename "$k") $(version "$k"):"
    for f in kernel/irq/affinity.c lib/group_cpus.c lib/sort.c; do
      echo "  $(sha256sum "$k/$f" | cut -d' ' -f1)  $f"
    done
  done
} >"$here/SOURCES.txt"
echo "gen.sh: $(ls "$here"/*.json | wc -l) cases written to $here"
