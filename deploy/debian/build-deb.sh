#!/bin/sh
# deploy/debian/build-deb.sh — lays out and builds the snakepit .deb (called by `make deb`).
#
#   build-deb.sh BIN_DIR VERSION OUT.deb "MAINTAINER <email>" PROFILE_MODULES
#
# BIN_DIR holds the five binaries, built with Debian's hardening flags. The tree is: binaries
# in /usr/bin (snakepit-executor runs snakepit-zygote and snakepit-egress from beside itself, and `snakepit up`
# finds the others there), the systemd units of deploy/systemd with their paths turned to
# /usr/bin, the example configuration of deploy/config as conffiles in /etc/snakepit, a man
# page per binary from its --help (help2man), the documentation and the monitoring files
# (Prometheus, alert rules, Grafana) in /usr/share/doc/snakepit, and the maintainer scripts
# beside this file.
#
# Depends: the shared libraries dpkg-shlibdeps finds, what the binaries run rather than link,
# and the packages that hold the modules of the default profile. Recommends: the packages that
# hold every other profile's modules (python.data_science's libraries). Both come from the
# profiles table itself: PROFILE_MODULES (deploy/debian/profile_modules.c) prints each
# profile's modules, the Python the zygote embeds finds each one's files the way the zygote
# does (-I -S, Debian's dist-packages), and dpkg -S names the package that owns them. A module
# of the table that is not installed from a Debian package here stops the build, naming it.
set -eu

bin=$1 version=$2 out=$3 maintainer=$4 profile_modules=$5
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
arch=$(dpkg --print-architecture)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
binaries="snakepit snakepit-broker snakepit-executor snakepit-mcp snakepit-zygote snakepit-egress"
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
    for cmd in up down mcp run tenant status usage backup restore keygen; do
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
manpage snakepit-egress "an executor node's network egress proxy, started by snakepit-executor"

# ---- documentation: the guides (compressed, as Debian policy wants past 4 kB) and the
# monitoring files as examples to copy (uncompressed: Prometheus and Grafana read them as is)
doc=$root/usr/share/doc/snakepit
gzip -9n <"$src/README.md" >"$doc/README.md.gz"
for part in deploy monitoring broker executor-node mcp-frontend; do
    gzip -9n <"$src/$part/README.md" >"$doc/$part.md.gz"
done
gzip -9n <"$src/proto/PROTOCOL.md" >"$doc/PROTOCOL.md.gz"
install -d "$doc/examples/monitoring/rules" "$doc/examples/monitoring/grafana" \
    "$doc/examples/monitoring/file_sd"
install -m 0644 "$src"/monitoring/prometheus*.yml "$doc/examples/monitoring/"
install -m 0644 "$src"/monitoring/rules/*.yml "$doc/examples/monitoring/rules/"
install -m 0644 "$src"/monitoring/grafana/*.json "$doc/examples/monitoring/grafana/"
install -m 0644 "$src"/monitoring/file_sd/*.yml "$doc/examples/monitoring/file_sd/"
install -m 0644 "$here/copyright" "$root/usr/share/doc/snakepit/copyright"
date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
printf 'snakepit (%s) unstable; urgency=medium\n\n  * Built from the source tree by make deb.\n\n -- %s  %s\n' \
    "$version" "$maintainer" "$date" | gzip -9n >"$root/usr/share/doc/snakepit/changelog.gz"

# ---- relationships from the profiles table: each module's file as the zygote would find it
# ("PROFILE MODULE PATH"; modules built into the interpreter have none: libpython3.11), then
# "PROFILE PACKAGE" for the package dpkg says owns it
"$profile_modules" >"$work/modules"
/usr/bin/python3.11 -I -S -c '
import importlib.util, sys
sys.path.append("/usr/lib/python3/dist-packages")  # the profiles site_paths
seen = set()
for line in sys.stdin:
    profile, module = line.split()
    top = module.split(".")[0]
    if (profile, top) in seen:
        continue
    seen.add((profile, top))
    try:
        spec = importlib.util.find_spec(top)
    except ValueError:  # __main__, the module of the job itself: no file
        continue
    if spec is None:
        sys.exit("build-deb.sh: module %s of profile %s is not installed here: install its "
                 "Debian package (deploy/install-deps.sh run)" % (top, profile))
    if spec.origin in (None, "namespace") and spec.submodule_search_locations:
        print(profile, top, list(spec.submodule_search_locations)[0])
    elif spec.origin not in ("built-in", "frozen"):
        print(profile, top, spec.origin)
' <"$work/modules" >"$work/paths"
# one dpkg -S for every path (it reads every package's file list each time it runs)
cut -d' ' -f3 "$work/paths" | LC_ALL=C sort -u | xargs -r dpkg -S 2>/dev/null |
    grep -v '^diversion ' >"$work/dpkg-S" || true
while read -r profile module path; do
    pkgs=$(awk -v p="$path" '{ f = $0; sub(/^.*: /, "", f) } f == p {
        sub(/:.*/, ""); sub(/,.*/, ""); print; exit }' "$work/dpkg-S")
    if [ -z "$pkgs" ]; then
        echo "build-deb.sh: $path (module $module of $profile) belongs to no Debian package" >&2
        exit 1
    fi
    echo "$profile $pkgs"
done <"$work/paths" >"$work/owners"
default_profile=$("$profile_modules" | head -n1 | cut -d' ' -f1)
join_pkgs() { LC_ALL=C sort -u | paste -sd, - | sed 's/,/, /g'; }
profile_depends=$(awk -v p="$default_profile" '$1 == p { print $2 }' "$work/owners" | join_pkgs)
profile_recommends=$(awk -v p="$default_profile" '$1 == p { d[$2] = 1; next } { r[$2] = 1 }
    END { for (k in r) if (!(k in d)) print k }' "$work/owners" | join_pkgs)
[ -n "$profile_depends" ] || { echo "build-deb.sh: no package for $default_profile" >&2; exit 1; }

# ---- control: shared libraries as dpkg-shlibdeps finds them
mkdir -p "$work/src/debian"
printf 'Source: snakepit\n\nPackage: snakepit\nArchitecture: any\n' >"$work/src/debian/control"
shlibs=$(cd "$work/src" && dpkg-shlibdeps -O $(for b in $binaries; do printf -- '-e%s ' "$root/usr/bin/$b"; done) |
    sed -n 's/^shlibs:Depends=//p')
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@INSTALLED_SIZE@|$size|" \
    -e "s|@SHLIBS@|$shlibs|" -e "s|@MAINTAINER@|$maintainer|" \
    -e "s|@PROFILE_DEPENDS@|$profile_depends|" -e "s|@PROFILE_RECOMMENDS@|$profile_recommends|" \
    "$here/control.in" >"$root/DEBIAN/control"
for script in postinst prerm postrm; do install -m 0755 "$here/$script" "$root/DEBIAN/$script"; done
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
    xargs md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/conffiles" "$root/DEBIAN/control"

find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "built $out"
