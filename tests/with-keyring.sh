#!/usr/bin/env bash
# Runs a command inside a private D-Bus session with an unlocked gnome-keyring, so the keyring
# crate talks to a real Secret Service. Its keyring files live in a throwaway data directory.
# Start it outside tests/with-display.sh: with no display in the bus's environment a keyring
# prompt fails at once instead of waiting for a click that never comes.
set -euo pipefail
if [ -z "${COUNTERSIGN_KEYRING_SESSION:-}" ]; then
  export COUNTERSIGN_KEYRING_SESSION=1
  exec dbus-run-session -- "$0" "$@"
fi
keyring_home=$(mktemp -d)
trap 'rm -rf "$keyring_home"' EXIT
export XDG_DATA_HOME="$keyring_home/data"
mkdir -p "$XDG_DATA_HOME"
eval "$(printf countersign | gnome-keyring-daemon --unlock --components=secrets)"
export GNOME_KEYRING_CONTROL

# The unlocked daemon must own the Secret Service name before anyone asks for it; otherwise D-Bus
# activates a second, locked daemon.
owned=false
for _ in $(seq 100); do
  if dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null |
      grep -q 'boolean true'; then
    owned=true
    break
  fi
  sleep 0.1
done
if [ "$owned" != true ]; then
  echo "with-keyring: gnome-keyring did not take org.freedesktop.secrets" >&2
  exit 1
fi

# The default collection must exist before the first write; a throwaway item creates it.
printf probe | timeout 30 secret-tool store --label=countersign-probe countersign probe
timeout 30 secret-tool clear countersign probe
"$@"
