#!/bin/sh
# ofed_info of @PACKAGE@ @VERSION@: aicluster lab stand-in (lab/mirror/build.py).
case "$1" in
-s)
    echo "OFED-internal-@OFED@:"
    ;;
-n)
    echo "@OFED@"
    ;;
"")
    printf 'OFED-internal-@OFED@:\n\nInstalled Packages:\n-------------------\n'
    dpkg-query -W -f='ii  ${Package} ${Version}\n' 'mlnx-ofed-kernel-*' 'doca-ofed' 2>/dev/null
    ;;
*)
    echo "Usage: ofed_info [-s|-n]" >&2
    echo "  -s  short version string; -n  version number only" >&2
    exit 1
    ;;
esac
