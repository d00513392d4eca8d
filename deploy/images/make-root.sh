#!/bin/sh
# deploy/images/make-root.sh — a Debian 12 image for the Containerfiles' BASE, made from a
# Debian mirror with debootstrap and imported into podman: for machines that reach a Debian
# mirror but no container registry.
#
#   deploy/images/make-root.sh [IMAGE] [MIRROR] [SECURITY_MIRROR]
#
#   IMAGE            the name it gets (default localhost/debian:bookworm-minbase)
#   MIRROR           default http://deb.debian.org/debian
#   SECURITY_MIRROR  default http://deb.debian.org/debian-security
#
# Then: podman build --build-arg BASE=IMAGE -f deploy/Containerfile[.deb] ... (the images'
# own apt-get reaches the same mirror). Needs root (debootstrap), debootstrap and podman
# (deploy/install-deps.sh images). --variant=minbase: apt and what it needs, nothing else.
set -eu

image=${1:-localhost/debian:bookworm-minbase}
mirror=${2:-http://deb.debian.org/debian}
security=${3:-http://deb.debian.org/debian-security}

if [ "$(id -u)" -ne 0 ]; then
    echo "make-root.sh: debootstrap needs root" >&2
    exit 1
fi
for tool in debootstrap podman; do
    command -v "$tool" >/dev/null || {
        echo "make-root.sh: $tool is missing (deploy/install-deps.sh images)" >&2
        exit 1
    }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root

if ! debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/log" 2>&1; then
    tail -20 "$work/log" >&2
    echo "make-root.sh: debootstrap failed (is $mirror reachable?)" >&2
    exit 1
fi

# the point releases and security updates too, as debian:12 has them
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
# what debootstrap leaves behind that an image should not carry
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log

tar -C "$root" --numeric-owner -c . |
    podman import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "$image"
