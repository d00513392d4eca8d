#!/bin/sh
# deploy/debian/build-deb.sh — lays out and builds the snakepit .deb (called by `make deb`).
#
#   build-deb.sh BIN_DIR VERSION OUT.deb "MAINTAINER <email>"
#
# BIN_DIR holds the five binaries, built with Debian's hardening flags. The tree is: binaries
# in /usr/bin (snakepit-executor runs snakepit-zygote from beside itself, and `snakepit up`
# finds the others there), the systemd units of deploy/systemd with their paths turned to
# /usr/bin, the example configuration of deploy/config as conffiles in /etc/snakepit, a man
# page per binary from its --help (help2man), and the maintainer scripts beside this file.
# Depends comes from dpkg-shlibdeps plus what the binaries run rather than link.
set -eu

bin=$1 version=$2 out=$3 maintainer=$4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
arch=$(dpkg --print-architecture)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
binaries="snakepit snakepit-broker snakepit-executor snakepit-mcp snakepit-zygote"
# one date for every timestamp in the package: the last commit's (reproducible builds)
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

install -d "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/snakepit" \
    "$root/usr/share/man/man1" "$root/usr/share/doc/snakepit"

for b in $binaries; do
    install -m 0755 "$bin/$b" "$root/usr/bin/$b"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/$b"
done

for unit in "$src"/deploy/systemd/*.service; do
    sed 's|/usr/local/bin/|/usr/bin/|g' "$unit" >"$root/lib/systemd/system/$(basename "$unit")"
    chmod 0644 "$root/lib/systemd/system/$(basename "$unit")"
done
for conf in "$src"/deploy/config/*.conf; do
    # 0644 here; postinst makes them root:snakepit 0640 (dpkg-statoverride) once the user exists
    install -m 0644 "$conf" "$root/etc/snakepit/"
    echo "/etc/snakepit/$(basename "$conf")" >>"$root/DEBIAN/conffiles"
done

# ---- man pages: help2man on each --help; `snakepit` gets each command's --help as well
manpage() { # NAME DESCRIPTION [help2man options]
    name=$1 what=$2
    shift 2
    help2man --no-info --no-discard-stderr --version-string="$version" --name="$what" "$@" \
        "$root/usr/bin/$name" >"$work/$name.1"
    gzip -9n <"$work/$name.1" >"$root/usr/share/man/man1/$name.1.gz"
}
{
    echo "[COMMANDS]"
    for cmd in up mcp run tenant status usage keygen; do
        echo ".SS \"snakepit $cmd\""
        echo ".nf"
        "$root/usr/bin/snakepit" "$cmd" --help | sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
        echo ".fi"
    done
} >"$work/commands.h2m"
manpage snakepit "run Python code in the snakepit sandbox, start a farm, manage tenants" \
    --include="$work/commands.h2m"
manpage snakepit-broker "the snakepit broker: fair job queues between front-ends and executors"
manpage snakepit-executor "a snakepit executor node: sandboxed Python jobs"
manpage snakepit-mcp "the snakepit MCP front-end (Streamable HTTP and stdio)"
manpage snakepit-zygote "one profile's warm interpreter, started by snakepit-executor"

# ---- documentation
install -m 0644 "$here/copyright" "$root/usr/share/doc/snakepit/copyright"
date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
printf 'snakepit (%s) unstable; urgency=medium\n\n  * Built from the source tree by make deb.\n\n -- %s  %s\n' \
    "$version" "$maintainer" "$date" | gzip -9n >"$root/usr/share/doc/snakepit/changelog.gz"

# ---- control: shared libraries as dpkg-shlibdeps finds them
mkdir -p "$work/src/debian"
printf 'Source: snakepit\n\nPackage: snakepit\nArchitecture: any\n' >"$work/src/debian/control"
shlibs=$(cd "$work/src" && dpkg-shlibdeps -O $(for b in $binaries; do printf -- '-e%s ' "$root/usr/bin/$b"; done) |
    sed -n 's/^shlibs:Depends=//p')
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@INSTALLED_SIZE@|$size|" \
    -e "s|@SHLIBS@|$shlibs|" -e "s|@MAINTAINER@|$maintainer|" "$here/control.in" >"$root/DEBIAN/control"
for script in postinst prerm postrm; do install -m 0755 "$here/$script" "$root/DEBIAN/$script"; done
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
    xargs md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/conffiles" "$root/DEBIAN/control"

find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "built $out"
