#!/bin/bash
# Builds dist/apm-agent_<version>_<arch>.deb with a plain dpkg-deb build (see docs/agent.md):
# a private virtualenv under /opt/apm-agent made by Debian's own /usr/bin/python3.11, holding
# the agent (agent/ and apm/ from this tree) and the pinned wheels of requirements.txt; the
# systemd unit and the config as `apm agent install` renders them (agent/install.py, one
# source of truth); the maintainer scripts beside this file. Nothing is fetched at install time.
#
#   deploy/deb/build.sh [--version V] [--out DIR]     (run from anywhere; needs root or fakeroot
#                                                      only for the ownerships in the archive)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TREE=$(cd "$HERE/../.." && pwd)
PY=${PY:-$TREE/.venv/bin/python}          # the tree's python: renders the unit, runs pip
TARGET_PY=${TARGET_PY:-/usr/bin/python3.11}  # Debian's: the venv in the package is made by it
VERSION=$("$PY" -c 'import tomllib;print(tomllib.load(open("'"$TREE"'/pyproject.toml","rb"))["project"]["version"])')
OUT=$TREE/dist
while [ $# -gt 0 ]; do
  case "$1" in
    --version) VERSION=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "usage: $0 [--version V] [--out DIR]" >&2; exit 2 ;;
  esac
done
[ -x "$TARGET_PY" ] || { echo "build.sh: $TARGET_PY missing: this builds on Debian bookworm (apt-get install python3.11)" >&2; exit 1; }
"$TARGET_PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
  || { echo "build.sh: $TARGET_PY is not Python 3.11" >&2; exit 1; }
ARCH=$(dpkg --print-architecture)
DEB=$OUT/apm-agent_${VERSION}_${ARCH}.deb
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/apm-agent-deb.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
ROOT=$STAGE/root
VENV=$ROOT/opt/apm-agent

# 1. The virtualenv, made by Debian's python, then relocated: it is built under $STAGE but
#    runs as /opt/apm-agent (bin/python links to /usr/bin/python3.11; no script keeps $STAGE).
"$TARGET_PY" -m venv --without-pip "$VENV"
"$PY" -m pip --python "$VENV/bin/python" install -q --no-compile --only-binary=:all: \
  --no-deps -r "$HERE/requirements.txt"
SITE=$VENV/lib/python3.11/site-packages
for pkg in agent apm; do
  cp -r "$TREE/$pkg" "$SITE/$pkg"
done
find "$SITE" -name __pycache__ -prune -exec rm -rf {} +
echo "$VERSION" > "$SITE/agent/_build_version.txt"
# Only the interpreter links stay in bin/ (the wheels' scripts would name $STAGE).
find "$VENV/bin" -mindepth 1 ! -name 'python*' -delete
rm -f "$VENV/lib64"
sed -i "s#$VENV#/opt/apm-agent#g" "$VENV/pyvenv.cfg"
find "$SITE" -name '*.so' -exec strip --strip-unneeded {} +
# Every dependency must import under Debian's python, or the package is refused here.
PYTHONDONTWRITEBYTECODE=1 "$VENV/bin/python" -c 'import psutil, pydantic, pydantic_settings, agent.main' \
  || { echo "build.sh: the venv does not import" >&2; exit 1; }

# 2. The command, the unit, the config, the state directory.
install -d "$ROOT/usr/bin" "$ROOT/lib/systemd/system" "$ROOT/etc/apm/agent.d" \
  "$ROOT/var/lib/apm-agent" "$ROOT/usr/share/doc/apm-agent" "$ROOT/DEBIAN" \
  "$ROOT/usr/share/man/man1" "$ROOT/usr/share/lintian/overrides"
install -m 0755 "$HERE/apm-agent" "$ROOT/usr/bin/apm-agent"
gzip -9n < "$HERE/apm-agent.1" > "$ROOT/usr/share/man/man1/apm-agent.1.gz"
install -m 0644 "$HERE/lintian-overrides" "$ROOT/usr/share/lintian/overrides/apm-agent"
"$PY" - "$ROOT" <<'PY'
import sys
from pathlib import Path

from agent.install import InstallPlan, render_config, render_unit

root = Path(sys.argv[1])
plan = InstallPlan(python="/opt/apm-agent/bin/python", ingest_url="")
(root / "lib/systemd/system/apm-agent.service").write_text(render_unit(plan))
(root / "etc/apm/agent.toml").write_text(render_config(plan))
PY
chmod 0644 "$ROOT/lib/systemd/system/apm-agent.service"
chmod 0600 "$ROOT/etc/apm/agent.toml"
chmod 0750 "$ROOT/etc/apm/agent.d" "$ROOT/var/lib/apm-agent"
install -m 0644 "$HERE/README.agent.d" "$ROOT/etc/apm/agent.d/README"
install -m 0644 "$HERE/copyright" "$ROOT/usr/share/doc/apm-agent/copyright"
printf 'apm-agent (%s) bookworm; urgency=medium\n\n  * Built from the apm-platform tree.\n\n -- APM maintainers <apm@example.org>  %s\n' \
  "$VERSION" "$(date -R -d @"${SOURCE_DATE_EPOCH:-$(git -C "$TREE" log -1 --format=%ct 2>/dev/null || date +%s)}")" \
  | gzip -9n > "$ROOT/usr/share/doc/apm-agent/changelog.gz"

# 3. Control files.
for script in postinst prerm postrm; do
  install -m 0755 "$HERE/$script" "$ROOT/DEBIAN/$script"
done
echo /etc/apm/agent.toml > "$ROOT/DEBIAN/conffiles"
SIZE=$(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$ARCH/" -e "s/@SIZE@/$SIZE/" \
  "$HERE/control.in" > "$ROOT/DEBIAN/control"

mkdir -p "$OUT"
# --root-owner-group: every file root's, whoever builds; postinst gives the agent its own.
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$DEB" >/dev/null
echo "$DEB"
