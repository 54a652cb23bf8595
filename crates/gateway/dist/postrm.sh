#!/bin/sh
# On purge, the settings file the package made goes; the store in /var/lib/countersign and the
# service account stay, as every plan, decision and audit row is in that store.
set -e
if [ "$1" = purge ]; then
  rm -f /etc/countersign/gateway.toml
  rmdir /etc/countersign 2>/dev/null || true
fi
