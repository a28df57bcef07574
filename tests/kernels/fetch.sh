#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# fetch.sh PACKAGE CACHE OUT: the kernel image of Debian's PACKAGE (linux-image-...), from the
# .deb that `apt-get download` puts in CACHE (once; the package is never installed), unpacked
# with dpkg-deb and copied to OUT.
set -eu
pkg=$1 cache=$2 out=$3

mkdir -p "$cache"
deb=$(ls "$cache/${pkg}_"*.deb 2>/dev/null | head -n 1 || true)
if [ -z "$deb" ]; then
	if ! apt-cache show "$pkg" >/dev/null 2>&1; then
		echo "$pkg is not on the mirror (any more): its ABI number moved." >&2
		echo "Pick the newest of \`apt-cache search linux-image-6.1.0\` and set" >&2
		echo "KERNEL_ABI in tests/tests.mk to its number (e.g. 6.1.0-NN)." >&2
		exit 1
	fi
	echo "  APT      $pkg (into $cache)"
	# apt-get download writes into the current folder.
	# (As root, apt warns that it cannot drop privileges to _apt for this folder.)
	(cd "$cache" && apt-get download -q=2 "$pkg" 2>&1 |
		grep -v '^W: Download is performed unsandboxed' >&2 || true)
	deb=$(ls "$cache/${pkg}_"*.deb 2>/dev/null | head -n 1 || true)
	[ -n "$deb" ] || { echo "apt-get download $pkg failed" >&2; exit 1; }
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*'
mkdir -p "$(dirname "$out")"
cp "$tmp"/boot/vmlinuz-* "$out.tmp" && mv "$out.tmp" "$out"
