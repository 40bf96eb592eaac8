#!/usr/bin/env bash
# The lab image recipe: a Debian root filesystem with systemd as PID 1,
# python3 and sshd, built with debootstrap (no container registry is needed).
# lab/lab.py hashes this file: changing it is what triggers a rebuild.
#
# Usage: build-rootfs.sh ROOTFS SUITE MIRROR
set -euo pipefail
rootfs=$1 suite=$2 mirror=$3

packages=systemd,systemd-sysv,dbus,python3,python3-apt,sudo,iproute2,procps,curl,ca-certificates
packages+=,iputils-ping,less,openssh-server,gnupg
# python3-yaml: the simulated hardware (lab/hwsim) reads YAML profiles
packages+=,python3-yaml

debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror"

# The same archive areas a real Debian node has: the release, its updates and security fixes.
cat > "$rootfs/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
EOF

# Every container gets its own identity at first boot.
: > "$rootfs/etc/machine-id"
rm -f "$rootfs"/etc/ssh/ssh_host_*
mkdir -p "$rootfs/etc/systemd/system/ssh.service.d"
cat > "$rootfs/etc/systemd/system/ssh.service.d/lab-host-keys.conf" <<'EOF'
# Lab image: host keys are made at first boot, not baked into the image.
[Service]
ExecStartPre=
ExecStartPre=/usr/bin/ssh-keygen -A
ExecStartPre=/usr/sbin/sshd -t
EOF
chroot "$rootfs" systemctl enable ssh.service >/dev/null 2>&1 || true
# Units that cannot work in an unprivileged container and only add noise.
for unit in systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket \
            systemd-networkd-wait-online.service getty@tty1.service; do
  chroot "$rootfs" systemctl mask "$unit" >/dev/null 2>&1 || true
done

chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/*
# Ansible's apt with cache_valid_time must see a stale cache and update it,
# or it skips the update and finds no packages.
touch -d 2000-01-01 "$rootfs/var/lib/apt/lists"
