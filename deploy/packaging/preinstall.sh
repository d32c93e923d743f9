#!/bin/sh
# Before tether's deb or rpm package is installed or upgraded: the system
# users its services run as (the package's drop-ins in
# /usr/lib/systemd/system/*.service.d name them). tether owns
# /var/lib/tether (the database and its key), tether-agent owns
# /var/lib/tether-agent (the agent's credential); neither can log in.
set -e

nologin=$(command -v nologin 2>/dev/null || echo /sbin/nologin)
add_user() { # name, comment
	if ! getent passwd "$1" >/dev/null 2>&1; then
		useradd --system --user-group --home-dir "/var/lib/$1" --no-create-home \
			--shell "$nologin" --comment "$2" "$1"
	fi
}
add_user tether "tether control plane"
add_user tether-agent "tether reference agent"
exit 0
