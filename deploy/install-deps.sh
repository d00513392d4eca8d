#!/bin/sh
# deploy/install-deps.sh — install the Debian 12 packages snakepit needs, only those missing.
#
#   deploy/install-deps.sh [run|deb|test|images|all]
#
#   run   what building and running the farm needs (the default), the python.data_science
#         profile's libraries included: `make run` serves every profile
#   deb   run + what `make deb` needs (help2man for the man pages, dpkg-dev for
#         dpkg-shlibdeps)
#   test  deb + what `make test` needs (cmocka, pytest, clang for fuzz targets, iproute2,
#         prometheus and its promtool for the monitoring tests, python3-yaml and python3-jsonschema for manifests,
#         lintian for the package, redis-sentinel for the chaos suite's failover, chromium for
#         the console's browser test)
#   images  what `make test-images` needs besides `deb`: podman (with runc: crun refuses
#         hybrid cgroup hierarchies), netavark and aardvark-dns (the containers' network and
#         their names), debootstrap (the Debian 12 root the images start from: no container
#         registry needs to be reachable, only a Debian mirror)
#   all   test + images
#
# Works as root, or as a user with sudo. Does nothing (and needs no privilege) when every
# package is already installed, so `make run` and `make test` can call it every time.
set -eu

what=${1:-run}

run_pkgs="gcc make pkg-config libzmq3-dev libmsgpack-dev libhiredis-dev libpython3.11-dev libpython3-dev
python3.11 libseccomp-dev libsodium-dev libgnutls28-dev libmicrohttpd-dev libjansson-dev redis-server
python3-numpy python3-pandas python3-scipy python3-matplotlib python3-sympy
python3-sklearn python3-seaborn python3-statsmodels python3-pil python3-openpyxl
python3-networkx python3-bs4 python3-lxml python3-yaml python3-tabulate python3-requests
python3-pip python3-venv python3-packaging python3-cloudpickle"
deb_pkgs="help2man dpkg-dev binutils"
images_pkgs="podman runc netavark aardvark-dns iptables debootstrap"
test_pkgs="lintian libcmocka-dev python3-pytest python3-redis python3-zmq python3-msgpack clang
libclang-rt-14-dev iproute2 nodejs npm prometheus python3-yaml redis-sentinel python3-jsonschema
chromium"

case "$what" in
run) want="$run_pkgs" ;;
deb) want="$run_pkgs $deb_pkgs" ;;
test) want="$run_pkgs $deb_pkgs $test_pkgs" ;;
images) want="$run_pkgs $deb_pkgs $images_pkgs" ;;
all) want="$run_pkgs $deb_pkgs $test_pkgs $images_pkgs" ;;
*) echo "usage: $0 [run|deb|test|images|all]" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
    # nodejs/npm may come from outside Debian (nvm, nodesource): a working binary counts.
    case "$p" in
    nodejs) command -v node >/dev/null 2>&1 && continue ;;
    npm) command -v npm >/dev/null 2>&1 && continue ;;
    esac
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$status" in
    *"install ok installed"*) ;;
    *) missing="$missing $p" ;;
    esac
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
else
    echo "install-deps: missing packages:$missing" >&2
    echo "install-deps: not root and no sudo; install them and run again" >&2
    exit 1
fi

echo "install-deps: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# A stale package list makes apt-get fail on a fresh machine; refresh it once.
$sudo apt-get update -qq >&2
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >&2
