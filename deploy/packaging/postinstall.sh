#!/bin/sh
# After tether's deb or rpm package is installed or upgraded. $1 is
# "configure" (deb, with the old version in $2 on an upgrade) or 1 / 2
# (rpm: install / upgrade). Nothing is started or restarted here: a new
# tether migrates the database when it opens it, so an upgrade waits for
# the backup docs/deployment.md asks for, and the agent needs its settings.
set -e

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || true
fi

case "$1" in
configure) upgrade=${2:+yes} ;;
1) upgrade= ;;
*) upgrade=yes ;;
esac

if [ -n "$upgrade" ]; then
	cat <<'MSG'
tether was upgraded. A running service keeps the old version until it is
restarted: back up first (tether backup), then
  systemctl try-restart tether tether-agent
MSG
else
	cat <<'MSG'
tether is installed. The server:   systemctl enable --now tether
  (settings: /etc/tether/tether.env; database: /var/lib/tether)
The agent: set TETHER_SERVER, TETHER_EXEC and the registration token in
  /etc/tether/tether-agent.env, then systemctl enable --now tether-agent
MSG
fi
exit 0
