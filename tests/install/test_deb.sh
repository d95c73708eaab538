#!/usr/bin/env bash
# cpack -G DEB from the build folder: attnviz_<version>_<arch>.deb, its dependencies computed from
# the binary (dpkg-shlibdeps) with the fonts beside them, the installed files inside, and lintian
# with no error and no warning.
# Usage: test_deb.sh BUILD_DIR VERSION       (exit 1 with a line per failure)
set -uo pipefail
BUILD=$1
VERSION=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILED=0
fail() {
    echo "FAIL: $*"
    FAILED=1
}

# The package is built in a folder of its own, so the build folder is left as it was.
if ! cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$TMP" > "$TMP/cpack.log" 2>&1; then
    cat "$TMP/cpack.log"
    echo "FAIL: cpack -G DEB"
    exit 1
fi
DEB=$TMP/attnviz_${VERSION}_$(dpkg --print-architecture).deb
if [ ! -f "$DEB" ]; then
    echo "FAIL: no $(basename "$DEB"); cpack made: $(cd "$TMP" && ls ./*.deb 2> /dev/null)"
    exit 1
fi

# Control fields: the version, the fonts, and the libraries dpkg-shlibdeps found in the binary.
[ "$(dpkg-deb -f "$DEB" Package)" = attnviz ] || fail "Package: $(dpkg-deb -f "$DEB" Package)"
[ "$(dpkg-deb -f "$DEB" Version)" = "$VERSION" ] || fail "Version: $(dpkg-deb -f "$DEB" Version), expected $VERSION"
depends=$(dpkg-deb -f "$DEB" Depends)
names=$(sed 's/ *([^)]*)//g; s/, */\n/g' <<< "$depends")
for dep in fonts-dejavu-core libc6 libstdc++6 libglfw3 libgomp1; do
    grep -qxF "$dep" <<< "$names" || fail "Depends lacks $dep: $depends"
done

# Contents: the same files as cmake --install, owned by root.
dpkg-deb -c "$DEB" > "$TMP/contents"
for f in usr/bin/attnviz usr/share/applications/org.attnviz.attnviz.desktop usr/share/metainfo/org.attnviz.attnviz.metainfo.xml \
    usr/share/icons/hicolor/256x256/apps/attnviz.png usr/share/icons/hicolor/scalable/apps/attnviz.svg \
    usr/share/mime/packages/attnviz.xml usr/share/man/man1/attnviz.1.gz usr/share/bash-completion/completions/attnviz \
    usr/share/doc/attnviz/copyright usr/share/doc/attnviz/changelog.gz usr/lib/python3/dist-packages/attnviz/__init__.py \
    usr/lib/python3/dist-packages/attnviz/_installed.py; do
    grep -q " \./$f\$" "$TMP/contents" || fail "the package lacks /$f"
done
awk '{print $2}' "$TMP/contents" | grep -qv '^root/root$' && fail "files not owned by root: $(awk '$2 != "root/root"' "$TMP/contents" | head -n 3)"

# lintian: no error and no warning (information and pedantic notes are listed, not failures).
if command -v lintian > /dev/null; then
    # (its notice about running as root is not about the package)
    lintian --fail-on error,warning --display-info "$DEB" 2>&1 | grep -v 'running with root privileges' > "$TMP/lintian.log"
    ((PIPESTATUS[0] == 0)) || fail "lintian found errors or warnings"
    sed 's/^/lintian: /' "$TMP/lintian.log"
else
    fail "lintian is not installed (bash scripts/setup.sh installs it)"
fi

((FAILED)) && exit 1
echo "$(basename "$DEB"): Depends: $depends; lintian: no error, no warning"
