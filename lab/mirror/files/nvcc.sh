#!/bin/sh
# nvcc of @PACKAGE@ @VERSION@: aicluster lab stand-in (lab/mirror/build.py). It reports its release
# as the real one does and compiles nothing.
case "$1" in
--version|-V)
    cat <<END
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on aicluster lab stand-in
Cuda compilation tools, release @RELEASE@, V@NVCC@
Build cuda_@RELEASE@.r@RELEASE@/compiler.stand-in_0
END
    ;;
*)
    echo "nvcc fatal   : aicluster lab stand-in of nvcc @NVCC@: it compiles nothing" >&2
    exit 1
    ;;
esac
