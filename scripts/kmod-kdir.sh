#!/usr/bin/env bash
# Prints the kernel build tree jackdaw.ko is built against: the newest
# Debian linux-headers-*-amd64 installed that has a matching
# /boot/vmlinuz (the kernel make vm-test boots), else the running kernel's.
# The version is found at run time: Debian replaces it with each update.
set -euo pipefail
best=""
for d in $(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V); do
	[ -d "$d" ] || continue
	rel=${d#/usr/src/linux-headers-}
	[ -r "/boot/vmlinuz-$rel" ] || continue
	best=$d
done
if [ -z "$best" ] && [ -d "/lib/modules/$(uname -r)/build" ]; then
	best=/lib/modules/$(uname -r)/build
fi
echo "$best"
