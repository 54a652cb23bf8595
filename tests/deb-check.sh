#!/usr/bin/env bash
# Installs a Countersign .deb the way a user would (apt pulls its dependencies), checks what it
# put on the system, runs the three commands from /usr/bin without a display, and removes it
# again, also when a check fails.
set -euo pipefail
deb=$(realpath "${1:?usage: tests/deb-check.sh COUNTERSIGN.deb}")
package=$(dpkg-deb --field "$deb" Package)
sudo=$([ "$(id -u)" = 0 ] || echo sudo)
export DEBIAN_FRONTEND=noninteractive

remove() { $sudo apt-get purge -y -qq "$package" >/dev/null; }
$sudo apt-get install -y -qq --no-install-recommends "$deb" >/dev/null
trap remove EXIT

fail() { echo "deb-check: $*" >&2; exit 1; }
files=$(dpkg -L "$package")
for path in /usr/bin/countersign /usr/bin/countersign-gateway /usr/bin/countersign-cli; do
  grep -qx "$path" <<<"$files" || fail "$path is not in the package"
done
grep -qx '/usr/share/applications/.*\.desktop' <<<"$files" || fail "no .desktop entry"
desktop=$(grep -x '/usr/share/applications/.*\.desktop' <<<"$files")
grep -qx 'Exec=countersign %u' "$desktop" || fail "$desktop does not start countersign with a link"
grep -qx 'MimeType=x-scheme-handler/countersign' "$desktop" || fail "$desktop does not open countersign:// links"
for size in 16x16 24x24 32x32 48x48 64x64 128x128 256x256 512x512; do
  grep -qx "/usr/share/icons/hicolor/$size/apps/countersign.png" <<<"$files" ||
    fail "no $size icon"
done

# What a shell on a server (no display, no session bus) sees.
run() { env -u DISPLAY -u WAYLAND_DISPLAY -u DBUS_SESSION_BUS_ADDRESS "$@"; }
version=$(run /usr/bin/countersign --version) || fail "countersign --version failed"
[ "$version" = "countersign $(dpkg-deb --field "$deb" Version)" ] || fail "countersign --version said: $version"
run /usr/bin/countersign --help | grep -q COUNTERSIGN_GATEWAY_URL || fail "countersign --help"
run /usr/bin/countersign-cli --help | grep -q 'pending' || fail "countersign-cli --help"
run /usr/bin/countersign-gateway --help | grep -q 'mcp' || fail "countersign-gateway --help"
# The gateway as a service: a unit systemd accepts, installed disabled, its account, its settings
# file made from the packaged example, and that file served as the unit would serve it.
unit=/usr/lib/systemd/system/countersign-gateway.service
grep -qx "$unit" <<<"$files" || fail "no $unit"
systemd-analyze verify "$unit" || fail "systemd-analyze verify $unit"
[ -z "$(find /etc/systemd/system -name countersign-gateway.service)" ] ||
  fail "the unit is enabled on install"
getent passwd countersign >/dev/null || fail "no countersign account"
[ "$(stat -c %a:%G /etc/countersign/gateway.toml)" = 640:countersign ] ||
  fail "/etc/countersign/gateway.toml: $(stat -c %a:%G /etc/countersign/gateway.toml)"
run /usr/bin/countersign-gateway config check /etc/countersign/gateway.toml |
  grep -qx 'database = "sqlite:///var/lib/countersign/gateway.db"  # the file' ||
  fail "config check of the packaged settings"
# What systemd does before ExecStart (StateDirectory, User=), then ExecStart itself.
state=$(mktemp -d) && chmod 0755 "$state"
trap 'remove; rm -rf "$state"' EXIT
$sudo install -d -m 0700 -o countersign -g countersign "$state/countersign"
$sudo setpriv --reuid countersign --regid countersign --init-groups -- env COUNTERSIGN_DATABASE="sqlite://$state/countersign/gateway.db" \
  COUNTERSIGN_ADDR=127.0.0.1:0 /usr/bin/countersign-gateway serve \
  --config /etc/countersign/gateway.toml >"$state/out" 2>"$state/err" &
served=$!
for _ in $(seq 100); do grep -q listening "$state/out" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$state/out") || { cat "$state/err" >&2; fail "serve did not listen"; }
curl -fsS "$url/readyz" | grep -q '"ready":true' || fail "$url/readyz"
$sudo kill -TERM "$served"
wait "$served" || fail "serve did not stop cleanly on SIGTERM"
$sudo apt-get purge -y -qq "$package" >/dev/null
trap 'rm -rf "$state"' EXIT
[ ! -e /etc/countersign/gateway.toml ] || fail "purge left /etc/countersign/gateway.toml"

echo "deb-check: $package $(dpkg-deb --field "$deb" Version) installed, ran and was removed"
echo "deb-check: 1 passed, 0 failed"
