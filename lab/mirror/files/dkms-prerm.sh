#!/bin/sh
# prerm of @PACKAGE@ @VERSION@: aicluster lab stand-in (lab/mirror/build.py).
# Like `dkms remove @MODULE@/@UPSTREAM@ --all`: the version's build records go with the package
# (on removal and on upgrade; the new version's postinst records its own builds).
set -e
case "$1" in
remove|upgrade|deconfigure|failed-upgrade)
    rm -rf "/var/lib/dkms/@MODULE@/@UPSTREAM@"
    rmdir "/var/lib/dkms/@MODULE@" 2>/dev/null || true
    ;;
esac
exit 0
