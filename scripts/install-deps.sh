#!/usr/bin/env bash
# Installs the Debian packages jackdaw needs. Idempotent: packages already
# present are skipped, so `make` can call it on every run at the cost of one
# dpkg query.
#
#   install-deps.sh          everything: build, tests, benchmarks, the
#                            real-server suite, the module's VM test (make test)
#   install-deps.sh --demo   what building jackdaw and running `jackdaw demo`
#                            need, nothing for the tests (make demo, make install)
set -euo pipefail

# Building jackdaw and its test server and load driver (CMake's configure
# step finds GoogleTest even when no test is built, so it is here too).
build_packages=(
	make cmake g++ clang llvm pkg-config ccache
	libbpf-dev bpftool libelf-dev zlib1g-dev libzstd-dev
	libcli11-dev nlohmann-json3-dev libfmt-dev
	systemtap-sdt-dev libpcap-dev libssl-dev
	libgtest-dev libgmock-dev
)

test_packages=(
	# tests and benchmarks
	libbenchmark-dev
	linux-perf bpftrace jq
	# benchmarks and the interact benchmark: a real server under a real load generator
	nginx wrk
	# report rendering check (headless screenshot of the HTML report)
	chromium
	# pcapng export test (tshark reads what jackdaw export --pcap writes)
	tshark
	# real-server validation suite (jackdaw reproduce --real): run privately
	# on loopback with generated configs; their packaged services are left
	# stopped (see below)
	nginx memcached apache2 postgresql redis-server lighttpd mariadb-server unbound
	# its LEMP stack: nginx -> php-fpm -> MariaDB and redis
	php8.2-fpm php8.2-mysql php8.2-redis
	# a Go server (goroutines over GOMAXPROCS threads: an M:N runtime)
	caddy
	# a Java server: the JDK's HTTP server on a pool fed from a shared queue
	openjdk-17-jdk-headless
	# jackdaw live --metrics test: a private Prometheus on loopback (own
	# config and data dir) scrapes a live session; its service stays stopped
	prometheus
	# ClickHouse sink test (tests/clickhouse): a private clickhouse-server
	# (18.16) on loopback with its own config and data dir; its service
	# stays stopped
	clickhouse-server
	# kernel-module backend (make kmod) and its VM test (make vm-test): the
	# metapackages keep Debian's kernel image and its headers at one version
	linux-image-amd64 linux-headers-amd64 qemu-system-x86 busybox-static cpio
)

case "${1:-}" in
	"") packages=("${build_packages[@]}" "${test_packages[@]}") ;;
	--demo) packages=("${build_packages[@]}") ;;
	*)
		echo "install-deps: unknown mode '$1': use --demo for the build and demo packages, or nothing for everything" >&2
		exit 2
		;;
esac

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root (sudo make ...) to install them" >&2
	exit 2
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# wireshark-common asks whether non-root users may capture; answer no.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -qq
# The servers' packages would start their system services (nginx,
# apache2 and lighttpd on port 80, memcached on 11211, redis on 6379,
# mariadb on 3306, unbound on 53, php-fpm on its socket, clickhouse on 8123): the suite needs only their binaries. A policy-rc.d
# that denies starts is put in place for the install only, unless the
# system already has one (containers often do).
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	own_policy=1
fi
status=0
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || status=$?
if [ "$own_policy" -eq 1 ]; then rm -f "$policy"; fi
exit "$status"
