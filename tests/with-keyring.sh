#!/usr/bin/env bash
# Runs a command inside a private D-Bus session with an unlocked gnome-keyring, so the keyring
# crate talks to a real Secret Service. Its keyring files live in a throwaway data directory.
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
# The default collection must exist before the first write; a throwaway item creates it.
printf probe | secret-tool store --label=countersign-probe countersign probe
secret-tool clear countersign probe
"$@"
