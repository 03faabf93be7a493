#!/usr/bin/env bash
# Builds the Debian package of jackdaw from built binaries: what `make
# install PREFIX=/usr` installs (the binaries, the schemas, the man pages
# and the bash completion, all generated from the binary itself), a
# control file whose Depends are the Debian packages that hold the shared
# libraries the binaries link, and dpkg-deb to put it together.
# Usage: make-deb.sh BIN_DIR SCHEMA_DIR OUT_DIR   (prints the .deb's path)
set -euo pipefail
bin=${1:?usage: make-deb.sh BIN_DIR SCHEMA_DIR OUT_DIR}
schemas=${2:?usage: make-deb.sh BIN_DIR SCHEMA_DIR OUT_DIR}
out=${3:?usage: make-deb.sh BIN_DIR SCHEMA_DIR OUT_DIR}
binaries=(jackdaw jackdaw-testserver jackdaw-load jackdaw-workload)
for b in "${binaries[@]}"; do
	[ -x "$bin/$b" ] || { echo "make-deb: $bin/$b is missing: build it first (make binaries)" >&2; exit 2; }
done
version=$("$bin/jackdaw" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
install -d "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/share/jackdaw/schemas" "$stage/usr/share/man/man1" \
	"$stage/usr/share/bash-completion/completions" "$stage/usr/share/doc/jackdaw"
for b in "${binaries[@]}"; do install -m 755 -s "$bin/$b" "$stage/usr/bin/"; done
install -m 644 "$schemas"/*.schema "$stage/usr/share/jackdaw/schemas/"
"$bin/jackdaw" help-man | gzip -9n >"$stage/usr/share/man/man1/jackdaw.1.gz"
for c in $("$bin/jackdaw" help-man --list); do
	"$bin/jackdaw" help-man "$c" | gzip -9n >"$stage/usr/share/man/man1/jackdaw-$c.1.gz"
done
"$bin/jackdaw" help-completion >"$stage/usr/share/bash-completion/completions/jackdaw"
chmod 644 "$stage/usr/share/bash-completion/completions/jackdaw"
printf 'jackdaw: Linux request tracing and analysis (eBPF)\n' >"$stage/usr/share/doc/jackdaw/copyright"

# Depends: the package of every shared library a binary links directly
# (its NEEDED entries, found where the loader finds them); what those
# libraries need in turn their packages depend on.
depends=$(for b in "${binaries[@]}"; do
	ldd "$bin/$b" >"$stage/ldd"
	objdump -p "$bin/$b" | awk '/NEEDED/{print $2}' | while read -r soname; do
		awk -v s="$soname" '$1 == s && $3 ~ /^\// {print $3}' "$stage/ldd"
	done
done | sort -u | while read -r lib; do
	dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true
done | cut -d: -f1 | sort -u | paste -sd, | sed 's/,/, /g')
rm -f "$stage/ldd"
[ -n "$depends" ] || { echo "make-deb: could not find the packages of the binaries' libraries (dpkg -S)" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<CONTROL
Package: jackdaw
Version: $version
Architecture: $arch
Maintainer: jackdaw developers <jackdaw@localhost>
Installed-Size: $size
Depends: $depends
Section: devel
Priority: optional
Description: request tracing and workload models from kernel events (eBPF)
 jackdaw records scheduler, syscall, block-I/O and network events with eBPF,
 joins them into requests across threads and processes, and clusters them
 into a workload model (Magpie); live mode, reports, diff and prediction.
CONTROL
mkdir -p "$out"
deb="$out/jackdaw_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
