#!/usr/bin/env bash
# Build the collection tarball, install it into an empty collections path and
# check that its plugins and roles resolve by FQCN from there (not from this tree).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/build/collection
rm -rf "$out" && mkdir -p "$out/path"
cd "$repo"
ansible-galaxy collection build --force --output-path "$out" . >/dev/null
tarball=$(ls "$out"/aicluster-infra-*.tar.gz)
echo "build-check: built $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB)"

export ANSIBLE_COLLECTIONS_PATH=$out/path
ansible-galaxy collection install --offline --no-deps --force -p "$out/path" "$tarball" >/dev/null
cd "$out"   # away from the repository's ansible.cfg
unset ANSIBLE_CONFIG
if tar -tzf "$tarball" | grep -E '(^|/)(\.venv|\.collections|lab/\.state|artifacts|build)/' ; then
  echo "build-check: the tarball holds lab or build artefacts (see build_ignore in galaxy.yml)" >&2
  exit 1
fi
# Every module, filter and role in the tree must resolve from the installed copy.
check() { ansible-doc -t "$1" "$2" >/dev/null || { echo "build-check: ansible-doc -t $1 $2 failed" >&2; exit 1; }; }
n=0
for f in "$repo"/plugins/modules/*.py; do check module "aicluster.infra.$(basename "$f" .py)"; n=$((n+1)); done
for f in "$repo"/plugins/filter/*.yml; do check filter "aicluster.infra.$(basename "$f" .yml)"; n=$((n+1)); done
for d in "$repo"/roles/*/; do check role "aicluster.infra.$(basename "$d")"; n=$((n+1)); done
echo "build-check: installed into an empty path; $n modules, filters and roles resolve by FQCN"
