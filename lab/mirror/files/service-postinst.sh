#!/bin/sh
# postinst of @PACKAGE@ @VERSION@: aicluster lab stand-in (lab/mirror/build.py).
# As NVIDIA's package does, the unit is installed but neither enabled nor started here; a running
# service is restarted on upgrade (and may then refuse to run against the loaded driver).
set -e
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
    if [ -n "$2" ]; then
        systemctl try-restart @UNIT@ >/dev/null 2>&1 || true
    fi
fi
exit 0
