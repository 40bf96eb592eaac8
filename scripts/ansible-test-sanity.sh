#!/usr/bin/env bash
# Run `ansible-test sanity` on a copy of the collection laid out where
# ansible-test wants it (a path ending in ansible_collections/aicluster/infra),
# offline: pip's bootstrap script is served from ~/.ansible/test/cache.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${SANITY_WORKDIR:-$repo/build/sanity}
dest=$work/ansible_collections/aicluster/infra

python=${SANITY_PYTHON:-$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')}
pip_version=$(python3 - <<'PY'
import re, ansible_test, os
src = open(os.path.join(os.path.dirname(ansible_test.__file__), '_internal', 'python_requirements.py')).read()
print(re.search(r"pip='([0-9.]+)'", src).group(1))
PY
)
cache=~/.ansible/test/cache
mkdir -p "$cache"
cp "$repo/scripts/get_pip_offline.py" "$cache/get_pip_${pip_version//./_}.py"

# Only what git tracks (plus new files not ignored) goes into the copy, as in the built collection.
rm -rf "$dest"
mkdir -p "$dest"
(cd "$repo" && git ls-files -co --exclude-standard -z | tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$dest"
cd "$dest"
git init -q . && git add -A >/dev/null 2>&1   # ansible-test lists files through git
exec ansible-test sanity --venv --python "$python" --color no "$@"
