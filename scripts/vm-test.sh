#!/usr/bin/env bash
echo "vm-test: the kernel-module backend is not built yet (see kmod/README.md)" >&2
exit 1
