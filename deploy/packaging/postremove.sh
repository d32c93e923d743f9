#!/bin/sh
# After tether's deb or rpm package is removed or upgraded. The database
# (/var/lib/tether), the agent's credential (/var/lib/tether-agent) and the
# users stay: remove them by hand once nothing needs them.
set -e

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || true
fi
exit 0
