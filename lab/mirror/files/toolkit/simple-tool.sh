#!/bin/sh
# @PROGRAM@ of @PACKAGE@ @VERSION@: aicluster lab stand-in (lab/mirror/build.py). It prints its version; anything
# else fails, as the lab runs no container through it.
case "$1" in
    --version|-v|version) echo "@VERSION_LINE@"; exit 0 ;;
esac
echo "@PROGRAM@: aicluster lab stand-in: only --version is implemented" >&2
exit 1
