#!/bin/sh
# postinst of @PACKAGE@ @VERSION@: aicluster lab stand-in (lab/mirror/build.py).
# Like dkms autoinstall it "builds" @MODULE@/@UPSTREAM@ for the running kernel and every kernel
# with an image in /boot, and records each build where dkms keeps it. No compiler runs: each
# .ko is a one-line text marker (module, version, flavour, kernel) that the lab's hwsim reads.
set -e
module=@MODULE@
version=@UPSTREAM@
flavour=@FLAVOUR@
case "$1" in
configure)
    kernels=$(uname -r)
    for image in /boot/vmlinuz-*; do
        [ -e "$image" ] && kernels="$kernels ${image#/boot/vmlinuz-}"
    done
    tree=/var/lib/dkms/$module/$version
    mkdir -p "$tree"
    ln -sfn "/usr/src/$module-$version" "$tree/source"
    # shellcheck disable=SC2086 # the kernels are one word each, split on purpose
    for kernel in $(printf '%s\n' $kernels | sort -u); do
        dir=$tree/$kernel/x86_64/module
        mkdir -p "$dir"
        kos="@KOS@"  # filled in by lab/mirror/build.py: the module names, space-separated
        # shellcheck disable=SC2086 # split on purpose
        for ko in $kos; do
            printf 'aicluster-lab-stand-in module=%s version=%s flavour=%s kernel=%s file=%s.ko\n' \
                "$module" "$version" "$flavour" "$kernel" "$ko" > "$dir/$ko.ko"
        done
        echo "DKMS: built $module/$version for $kernel"
    done
    ;;
esac
exit 0
