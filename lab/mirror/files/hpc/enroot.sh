#!/usr/bin/env bash
# enroot of @PACKAGE@ @VERSION@: aicluster lab stand-in (lab/mirror/hpc_packages.py), not NVIDIA's enroot.
# It reads its configuration as enroot does (environment first, then @SYSCONF@/enroot.conf and
# enroot.conf.d/*.conf, lines "NAME VALUE" whose values are expanded as in a shell) and implements the commands
# the roles and the lab's pyxis plugin use:
#   enroot version                    the version
#   enroot create [--name N] [-f] IMAGE.sqsh   unsquashfs IMAGE into $ENROOT_DATA_PATH/N (real unsquashfs)
#   enroot list [-f]                  the containers (directories of $ENROOT_DATA_PATH)
#   enroot remove [-f] NAME...        remove containers (without -f it asks, as enroot does)
#   enroot start [--rw] NAME [CMD...]  run CMD (default /bin/sh) in NAME: a user and mount namespace (the user
#                                     as root, as with enroot's --root), /dev, /proc, /sys bound in, chroot
#   enroot rootfs NAME                stand-in extension: the container's directory (the lab's pyxis plugin asks)
set -euo pipefail
shopt -s nullglob

readonly VERSION_STRING="@UPSTREAM@"
readonly SYSCONF="${ENROOT_SYSCONF_PATH:-@SYSCONF@}"

err() {
    printf '[ERROR] %s\n' "$*" >&2
    exit 1
}

# enroot.conf: the environment wins over the file; a value may use ${VAR} and $(cmd) as in the real one.
load_config() {
    local file key value
    for file in "${SYSCONF}/enroot.conf" "${SYSCONF}"/enroot.conf.d/*.conf; do
        [ -f "${file}" ] || continue
        while read -r key value; do
            case "${key}" in
            '' | '#'*) continue ;;
            esac
            [[ "${key}" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
            if [ -z "${!key+x}" ]; then
                eval "export ${key}=\"${value}\""
            fi
        done < "${file}"
    done
    : "${ENROOT_DATA_PATH:=${XDG_DATA_HOME:-${HOME:-/tmp}/.local/share}/enroot}"
    : "${ENROOT_CACHE_PATH:=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/enroot}"
    : "${ENROOT_RUNTIME_PATH:=${XDG_RUNTIME_DIR:-/run/user/$(id -u)}/enroot}"
    : "${ENROOT_TEMP_PATH:=${TMPDIR:-/tmp}}"
    export ENROOT_DATA_PATH ENROOT_CACHE_PATH ENROOT_RUNTIME_PATH ENROOT_TEMP_PATH
}

check_name() {
    if ! [[ "$1" =~ ^[A-Za-z0-9_.-]+$ ]] || [ "$1" = . ] || [ "$1" = .. ]; then
        err "Invalid container name: $1"
    fi
}

cmd_create() {
    local name="" force="" image
    while [ $# -gt 0 ]; do
        case "$1" in
        -n | --name) name="${2-}"; shift 2 ;;
        --name=*) name="${1#--name=}"; shift ;;
        -f | --force) force=y; shift ;;
        -*) err "Invalid option: $1" ;;
        *) break ;;
        esac
    done
    [ $# -eq 1 ] || err "Usage: enroot create [--name NAME] [--force] IMAGE"
    image="$1"
    [ -f "${image}" ] || err "No such file or directory: ${image}"
    if [ -z "${name}" ]; then
        name="$(basename "${image}")"
        name="${name%.sqsh}"
    fi
    check_name "${name}"
    local rootfs="${ENROOT_DATA_PATH}/${name}"
    if [ -e "${rootfs}" ]; then
        [ -n "${force}" ] || err "File already exists: ${rootfs}"
        rm -rf --one-file-system "${rootfs}"
    fi
    mkdir -p "${ENROOT_DATA_PATH}"
    printf '[INFO] Extracting squashfs filesystem...\n' >&2
    # Into a temporary name first, so a failed extraction leaves no half container behind.
    local tmp="${ENROOT_DATA_PATH}/.${name}.partial"
    rm -rf --one-file-system "${tmp}"
    if ! unsquashfs -quiet -no-xattrs -dest "${tmp}" "${image}" > /dev/null; then
        rm -rf --one-file-system "${tmp}"
        err "Failed to extract ${image}"
    fi
    mv -T "${tmp}" "${rootfs}"
}

cmd_list() {
    local dir
    [ -d "${ENROOT_DATA_PATH}" ] || return 0
    for dir in "${ENROOT_DATA_PATH}"/*/; do
        dir="${dir%/}"
        printf '%s\n' "${dir##*/}"
    done
}

cmd_remove() {
    local force="" name answer
    while [ $# -gt 0 ]; do
        case "$1" in
        -f | --force) force=y; shift ;;
        -*) err "Invalid option: $1" ;;
        *) break ;;
        esac
    done
    [ $# -ge 1 ] || err "Usage: enroot remove [--force] NAME..."
    for name in "$@"; do
        check_name "${name}"
        [ -d "${ENROOT_DATA_PATH}/${name}" ] || err "No such container: ${name}"
        if [ -z "${force}" ]; then
            read -r -p "Do you really want to delete ${name}? [y/N] " answer || answer=""
            [[ "${answer}" =~ ^[Yy] ]] || continue
        fi
        rm -rf --one-file-system "${ENROOT_DATA_PATH:?}/${name}"
    done
}

cmd_rootfs() {
    [ $# -eq 1 ] || err "Usage: enroot rootfs NAME"
    check_name "$1"
    [ -d "${ENROOT_DATA_PATH}/$1" ] || err "No such container: $1"
    printf '%s\n' "${ENROOT_DATA_PATH}/$1"
}

cmd_start() {
    local name
    while [ $# -gt 0 ]; do
        case "$1" in
        -w | --rw) shift ;;
        -*) err "Invalid option: $1" ;;
        *) break ;;
        esac
    done
    [ $# -ge 1 ] || err "Usage: enroot start [--rw] NAME [COMMAND...]"
    name="$1"
    shift
    check_name "${name}"
    local rootfs="${ENROOT_DATA_PATH}/${name}"
    [ -d "${rootfs}" ] || err "No such container: ${name}"
    [ $# -gt 0 ] || set -- /bin/sh
    local env
    for env in /etc/enroot/environ.d/*.env; do
        while IFS='=' read -r key value; do
            [[ "${key}" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
            [ -n "${!key+x}" ] || export "${key}=${value}"
        done < "${env}"
    done
    # util-linux mount refuses a user that is not root in its namespace: the stand-in maps the user to root (as
    # enroot's --root does); the lab's pyxis plugin maps the user to itself.
    # shellcheck disable=SC2016  # the inner script expands its own arguments
    exec unshare --user --map-root-user --mount --propagation private -- /bin/sh -c '
        root=$1; shift
        for dir in dev proc sys; do mkdir -p "$root/$dir"; mount --rbind "/$dir" "$root/$dir" || exit 1; done
        exec chroot "$root" "$@"' enroot-start "${rootfs}" "$@"
}

main() {
    local command="${1-}"
    [ $# -gt 0 ] && shift
    case "${command}" in
    version | --version) printf '%s\n' "${VERSION_STRING}"; return ;;
    '' | help | -h | --help)
        printf 'Usage: enroot COMMAND [ARG...]\n\nCommands: version create list remove start rootfs (lab stand-in)\n'
        return ;;
    esac
    load_config
    case "${command}" in
    create) cmd_create "$@" ;;
    list) cmd_list "$@" ;;
    remove) cmd_remove "$@" ;;
    start) cmd_start "$@" ;;
    rootfs) cmd_rootfs "$@" ;;
    import | export | bundle | load | exec | batch)
        err "enroot ${command}: not implemented by the lab stand-in (images come as .sqsh files)" ;;
    *) err "Unknown command: ${command}" ;;
    esac
}

main "$@"
