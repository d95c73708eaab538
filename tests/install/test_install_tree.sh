#!/usr/bin/env bash
# cmake --install into a DESTDIR, then the installed files checked with the tools a distribution
# uses: the binary run from there (no font folder given), desktop-file-validate, appstreamcli
# validate --no-net, the manual page rendered by man -l, the scenario file type compiled by
# update-mime-database (and by the install itself when there is no DESTDIR), the installed app's
# screenshot under a virtual display, the bash completion.
# Usage: test_install_tree.sh BUILD_DIR VERSION       (exit 1 with a line per failure)
set -uo pipefail
BUILD=$1
VERSION=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ROOT=$TMP/root
FAILED=0
fail() {
    echo "FAIL: $*"
    FAILED=1
}
APP_ID=org.attnviz.attnviz

if ! DESTDIR=$ROOT cmake --install "$BUILD" --prefix /usr > "$TMP/install.log" 2>&1; then
    cat "$TMP/install.log"
    echo "FAIL: cmake --install"
    exit 1
fi

# 1. The files, where GNUInstallDirs and the freedesktop specifications put them.
for f in bin/attnviz share/applications/$APP_ID.desktop share/metainfo/$APP_ID.metainfo.xml \
    share/icons/hicolor/scalable/apps/attnviz.svg share/mime/packages/attnviz.xml share/man/man1/attnviz.1.gz \
    share/bash-completion/completions/attnviz share/doc/attnviz/copyright share/doc/attnviz/changelog.gz; do
    [ -f "$ROOT/usr/$f" ] || fail "not installed: /usr/$f"
done
for size in 16 22 24 32 48 64 128 256; do
    png=$ROOT/usr/share/icons/hicolor/${size}x$size/apps/attnviz.png
    if [ ! -f "$png" ]; then
        fail "not installed: the ${size}x$size icon"
        continue
    fi
    got=$(python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(24); print("%dx%d" % struct.unpack(">II", d[16:24]) if d[:8]==b"\x89PNG\r\n\x1a\n" else "not a PNG")' "$png")
    [ "$got" = "${size}x$size" ] || fail "the ${size}x$size icon is $got"
done
[ -x "$ROOT/usr/bin/attnviz" ] || fail "/usr/bin/attnviz is not executable"

# The Python entry, where Debian's python3 finds it, naming the installed program; a figure from it.
PYDIR=$ROOT/usr/lib/python3/dist-packages
[ -f "$PYDIR/attnviz/__init__.py" ] || fail "not installed: /usr/lib/python3/dist-packages/attnviz"
got=$(PYTHONPATH=$PYDIR python3 -c 'import attnviz, attnviz._installed as i; print(i.BINARY)' 2>&1)
[ "$got" = "/usr/bin/attnviz" ] || fail "import attnviz: the installed program is '$got', expected /usr/bin/attnviz"
if python3 -c 'import numpy' 2> /dev/null; then
    PYTHONPATH=$PYDIR ATTNVIZ_BINARY=$ROOT/usr/bin/attnviz python3 - "$TMP/py.svg" << 'PY' || fail "attnviz.figure from the installed module"
import sys, numpy as np, attnviz
a = np.tril(np.ones((2, 3, 3), np.float32))
a /= a.sum(-1, keepdims=True)
attnviz.figure(a, ["a", "b", "c"], view="heatmap").save(sys.argv[1])
PY
    grep -q '<svg' "$TMP/py.svg" 2> /dev/null || fail "attnviz.figure wrote no SVG"
fi

# 2. The installed binary runs from there, finding its fonts where Debian puts them.
BIN=$ROOT/usr/bin/attnviz
got=$(env -u ATTNVIZ_FONT_DIR "$BIN" --version 2>&1)
[ "$got" = "attnviz $VERSION" ] || fail "--version printed '$got', expected 'attnviz $VERSION'"
if env -u ATTNVIZ_FONT_DIR "$BIN" --preset seed000-three-tokens --export - > "$TMP/export.json" 2> "$TMP/err"; then
    python3 - "$TMP/export.json" << 'PY' || fail "--export - from the installed binary is not seed 000's first row"
import json, sys
w = json.load(open(sys.argv[1]))["heads"][0]["weights"][0]
sys.exit(0 if [round(x, 3) for x in w] == [0.401, 0.198, 0.401] else 1)
PY
else
    fail "--export - from the installed binary: $(cat "$TMP/err")"
fi
printf '{"tokens": ["a", "b"], "X": [[1, 0], [0, 1]], "W_Q": "identity", "W_K": "identity", "W_V": "identity"}' > "$TMP/two.attnviz.json"
env -u ATTNVIZ_FONT_DIR "$BIN" "$TMP/two.attnviz.json" --export-heatmap "$TMP/figure.svg" 2> "$TMP/err" ||
    fail "attnviz FILE --export-heatmap (text drawn with the system's fonts): $(cat "$TMP/err")"
grep -q '<text' "$TMP/figure.svg" 2> /dev/null || fail "the figure from the installed binary has no text"
if command -v xvfb-run > /dev/null; then
    if env -u ATTNVIZ_FONT_DIR XDG_CONFIG_HOME="$TMP/config" xvfb-run -a "$BIN" --fresh --preset seed004-causal --size 640x400 --screenshot "$TMP/shot.png" \
        > "$TMP/xvfb.log" 2>&1; then
        got=$(python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(24); print("%dx%d" % struct.unpack(">II", d[16:24]))' "$TMP/shot.png")
        [ "$got" = "640x400" ] || fail "the installed app's screenshot is $got, not 640x400"
    else
        fail "xvfb-run attnviz --screenshot from the install: $(tail -n 3 "$TMP/xvfb.log")"
    fi
fi

# 3. The menu entry: valid, and pointing at what was installed.
DESKTOP=$ROOT/usr/share/applications/$APP_ID.desktop
out=$(desktop-file-validate "$DESKTOP" 2>&1) || fail "desktop-file-validate: $out"
# hints (the two main categories Education and Science that the entry asks for) are not faults
grep -v ': hint: ' <<< "$out" | grep -q . && fail "desktop-file-validate: $out"
grep -qx 'Exec=attnviz %f' "$DESKTOP" || fail "the desktop entry does not open a file: $(grep Exec= "$DESKTOP")"
grep -qx 'Categories=Education;Science;' "$DESKTOP" || fail "the desktop entry's categories: $(grep Categories= "$DESKTOP")"
grep -qx 'MimeType=application/x-attnviz-scenario;' "$DESKTOP" || fail "the desktop entry does not claim scenario files"

# 4. AppStream metainfo: valid without the network, and released at this version.
METAINFO=$ROOT/usr/share/metainfo/$APP_ID.metainfo.xml
out=$(appstreamcli validate --no-net "$METAINFO" 2>&1) || fail "appstreamcli validate --no-net: $out"
release=$(python3 -c 'import sys, xml.etree.ElementTree as E; print(E.parse(sys.argv[1]).find("releases/release").get("version"))' "$METAINFO")
[ "$release" = "$VERSION" ] || fail "the metainfo's newest release is $release, the project's version $VERSION"
changelog=$(gzip -dc "$ROOT/usr/share/doc/attnviz/changelog.gz" | head -n 1)
[[ $changelog == "attnviz ($VERSION) "* ]] || fail "the changelog's newest entry is '$changelog', not $VERSION"

# 5. The manual page renders, without groff warnings, with its sections and the version.
if man_text=$(MANWIDTH=100 LC_ALL=C.UTF-8 man --warnings -l "$ROOT/usr/share/man/man1/attnviz.1.gz" 2> "$TMP/man.err" | col -b); then
    [ -s "$TMP/man.err" ] && fail "man -l warns: $(head -n 3 "$TMP/man.err")"
    for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" FILES EXAMPLES; do
        grep -qx "$section" <<< "$man_text" || fail "the manual page has no $section section"
    done
    grep -q "attnviz $VERSION" <<< "$man_text" || fail "the manual page does not name version $VERSION"
    grep -q -- "--export-heatmap" <<< "$man_text" || fail "the rendered manual page lacks --export-heatmap"
else
    fail "man -l: $(cat "$TMP/man.err")"
fi

# 6. The scenario file type: *.attnviz.json is application/x-attnviz-scenario once compiled.
if update-mime-database "$ROOT/usr/share/mime" > "$TMP/mime.log" 2>&1; then
    grep -qx '60:application/x-attnviz-scenario:\*\.attnviz\.json' "$ROOT/usr/share/mime/globs2" ||
        fail "the MIME database has no glob *.attnviz.json: $(cat "$ROOT/usr/share/mime/globs2" 2> /dev/null)"
else
    fail "update-mime-database: $(cat "$TMP/mime.log")"
fi

# 7. Installed straight into a prefix (no DESTDIR), the install updates the desktop's MIME
# database there, so a double-click knows the file type without a package's triggers.
if env -u DESTDIR cmake --install "$BUILD" --prefix "$TMP/prefix" > "$TMP/prefix.log" 2>&1; then
    grep -q 'application/x-attnviz-scenario:\*\.attnviz\.json' "$TMP/prefix/share/mime/globs2" 2> /dev/null ||
        fail "cmake --install --prefix did not update the MIME database in the prefix"
else
    fail "cmake --install --prefix: $(tail -n 3 "$TMP/prefix.log")"
fi

# 8. The bash completion loads in a plain shell and completes a flag's values.
got=$(bash --norc --noprofile -c 'source "$1"; COMP_WORDS=(attnviz --theme h); COMP_CWORD=2; _attnviz; echo "${COMPREPLY[*]}"' _ \
    "$ROOT/usr/share/bash-completion/completions/attnviz" 2>&1)
[ "$got" = "high-contrast" ] || fail "completing 'attnviz --theme h' gave '$got'"

((FAILED)) && exit 1
echo "installed into a DESTDIR: files, binary, desktop entry, metainfo, manual page, file type and completion all pass"
