#!/bin/sh
# The gateway's service account and its settings file, made once: an upgrade keeps both as the
# admin left them. The service itself stays disabled until the admin enables it.
set -e
if [ "$1" = configure ]; then
  if ! getent passwd countersign >/dev/null; then
    useradd --system --user-group --home-dir /var/lib/countersign --no-create-home \
      --shell /usr/sbin/nologin --comment "Countersign gateway" countersign
  fi
  if [ ! -e /etc/countersign/gateway.toml ]; then
    install -d -m 0750 -g countersign /etc/countersign
    install -m 0640 -g countersign /usr/share/countersign/gateway.toml /etc/countersign/gateway.toml
  fi
fi
