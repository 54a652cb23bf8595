#!/usr/bin/env bash
# Runs a command inside a private D-Bus session with an unlocked gnome-keyring, so the keyring
# crate talks to a real Secret Service. Its keyring files live in a throwaway data directory.
# Start it outside tests/with-display.sh: with no display in the bus's environment a keyring
# prompt fails at once instead of waiting for a click that never comes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${COUNTERSIGN_KEYRING_SESSION:-}" ]; then
  export COUNTERSIGN_KEYRING_SESSION=1
  exec dbus-run-session --config-file="$here/session-bus.conf" -- "$0" "$@"
fi
keyring_home=$(mktemp -d)
export XDG_DATA_HOME="$keyring_home/data"
mkdir -p "$XDG_DATA_HOME"
mkdir -m 700 "$keyring_home/control"
log="$keyring_home/daemon.log"

# gnome-keyring-daemon 42 aborts now and then when a client goes away in the middle of a request
# (a test's process ending while its app or gateway reads a key). Its keyring file is on disk, so
# a daemon started again with the same password serves the same items; the console retries a
# failed keyring call for as long as that takes (countersign_console::os_keyring). The loop's
# own stderr is shut, so bash's report of a killed job stays out of the test output.
exec 3>&2
(
  while :; do
    status=0
    printf countersign | gnome-keyring-daemon --foreground --unlock --components=secrets \
      --control-directory="$keyring_home/control" >>"$log" 2>&1 || status=$?
    [ -e "$keyring_home/stop" ] && exit 0
    echo "with-keyring: gnome-keyring-daemon ended (status $status); starting it again" >&3
    echo "$status" >>"$keyring_home/restarts"
    sleep 0.1
  done
) 2>/dev/null &
supervisor=$!
finish() {
  touch "$keyring_home/stop"
  pkill -P "$supervisor" gnome-keyring-d 2>/dev/null || true
  wait "$supervisor" 2>/dev/null || true
  if [ -s "$keyring_home/restarts" ]; then
    echo "with-keyring: the keyring daemon was started again $(wc -l <"$keyring_home/restarts") time(s); its log ends:" >&2
    tail -n 20 "$log" >&2
  fi
  rm -rf "$keyring_home"
}
trap finish EXIT

# The unlocked daemon must own the Secret Service name before anyone asks for it.
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
  echo "with-keyring: gnome-keyring did not take org.freedesktop.secrets:" >&2
  cat "$log" >&2
  exit 1
fi

# The default collection must exist before the first write; a throwaway item creates it.
printf probe | timeout 30 secret-tool store --label=countersign-probe countersign probe
timeout 30 secret-tool clear countersign probe
status=0
"$@" || status=$?
exit "$status"
