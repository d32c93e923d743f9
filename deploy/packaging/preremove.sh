#!/bin/sh
# Before tether's deb or rpm package is removed. $1 is "remove" (deb) or 0
# (rpm) when it goes for good, something else on an upgrade, when the
# services keep running.
set -e

case "$1" in
remove | 0)
	if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
		systemctl disable --now tether.service tether-agent.service >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
