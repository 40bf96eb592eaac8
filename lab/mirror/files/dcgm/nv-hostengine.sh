#!/bin/sh
# nv-hostengine of @PACKAGE@ @VERSION@: aicluster lab stand-in (lab/mirror/build.py). Run by nvidia-dcgm.service
# (-n: stay in the foreground), it becomes hwsim's nv-hostengine: it holds the simulated GPUs and writes
# /run/hwsim/nv-hostengine.instance while it runs (lab/hwsim/README.md). No host engine listens on a port.
case "$1" in
--version|-v)
    echo "nv-hostengine version : @UPSTREAM@"
    exit 0
    ;;
esac
HWSIM="${AICLUSTER_LAB_HWSIM_DIR:-/opt/hwsim}/bin/hwsim"
if [ ! -x "$HWSIM" ]; then
    echo "nv-hostengine (lab stand-in): $HWSIM not found: this lab host has no simulated hardware" >&2
    exit 1
fi
exec "$HWSIM" hold nv-hostengine
