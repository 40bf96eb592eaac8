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
# Only the collection's runtime content: an allow-list of top-level paths, no caches, and a size bound (a stray
# capture, lab image or virtual environment would blow it).
allowed='^(MANIFEST\.json|FILES\.json|README\.md|COPYING|requirements\.txt|bin|meta|plugins|roles|playbooks|docs|changelogs|inventories)(/|$)'
unexpected=$(tar -tzf "$tarball" | sed 's|^\./||' | grep -Ev "$allowed" || true)
caches=$(tar -tzf "$tarball" | grep -E '(^|/)(__pycache__|\.hypothesis|\.pytest_cache|\.molecule)(/|$)|\.pyc$' || true)
lab=$(tar -tzf "$tarball" | grep -E '^(\./)?inventories/' | grep -Ev '^(\./)?inventories/(example)?(/|$)' || true)
if [ -n "$unexpected$caches$lab" ]; then
  echo "build-check: the tarball holds more than the collection's runtime content (see build_ignore in galaxy.yml):" >&2
  printf '%s\n' "$unexpected" "$caches" "$lab" | grep -v '^$' | head -20 >&2
  exit 1
fi
kib=$(du -k "$tarball" | cut -f1)
if [ "$kib" -gt 2048 ]; then
  echo "build-check: the tarball is $kib KiB, over the 2048 KiB bound; what grew?" >&2
  exit 1
fi
echo "build-check: contents: $(tar -tzf "$tarball" | sed 's|^\./||' | cut -d/ -f1 | sort -u | tr '\n' ' ')"
# The command-line entry point comes with the collection, executable, and runs from the installed copy.
cli=$out/path/ansible_collections/aicluster/infra/bin/aicluster
test -x "$cli" || { echo "build-check: bin/aicluster is missing or not executable in the installed collection" >&2; exit 1; }
stages=$("$cli" stages)
grep -q '^verify ' <<<"$stages" || { echo "build-check: bin/aicluster stages does not list verify" >&2; exit 1; }
# The execution environment: ansible-builder makes a build context holding this tarball, and its introspection of
# the installed collection finds the Python and system packages meta/execution-environment.yml names.
version=$(sed -n 's/^version: *//p' "$repo/galaxy.yml")
grep -q "aicluster-infra-$version.tar.gz" "$repo/execution-environment.yml" || {
  echo "build-check: execution-environment.yml does not name aicluster-infra-$version.tar.gz (galaxy.yml's version)" >&2; exit 1; }
rm -rf "$repo/build/ee" && mkdir -p "$repo/build/ee"
cp "$tarball" "$repo/build/ee/"
(cd "$repo" && ansible-builder create -f execution-environment.yml -c build/ee/context >/dev/null)
test -s "$repo/build/ee/context/Containerfile" && test -s "$repo/build/ee/context/_build/collections/aicluster-infra-$version.tar.gz"
deps=$(python3 "$repo/build/ee/context/_build/scripts/introspect.py" introspect "$out/path")
for dep in netaddr 'openssh-client \[platform:dpkg\]' 'openssh-clients \[platform:rpm\]'; do
  echo "$deps" | grep -q "$dep" || { echo "build-check: the EE introspection misses $dep:" >&2; echo "$deps" >&2; exit 1; }
done
echo "build-check: ansible-builder create made build/ee/context; the collection asks the EE for: $(echo "$deps" | grep -c 'from collection') packages"

# Every module, filter and role in the tree must resolve from the installed copy.
check() { ansible-doc -t "$1" "$2" >/dev/null || { echo "build-check: ansible-doc -t $1 $2 failed" >&2; exit 1; }; }
n=0
for f in "$repo"/plugins/modules/*.py; do check module "aicluster.infra.$(basename "$f" .py)"; n=$((n+1)); done
for f in "$repo"/plugins/filter/*.yml; do check filter "aicluster.infra.$(basename "$f" .yml)"; n=$((n+1)); done
for d in "$repo"/roles/*/; do check role "aicluster.infra.$(basename "$d")"; n=$((n+1)); done
echo "build-check: installed into an empty path; $n modules, filters and roles resolve by FQCN"
