#!/bin/sh
# prerm of @PACKAGE@ @VERSION@: aicluster lab stand-in (lab/mirror/build.py): stop the service on removal.
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
    systemctl stop @UNIT@ >/dev/null 2>&1 || true
fi
exit 0
