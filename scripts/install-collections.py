"""Install the collections named in requirements.yml without Ansible Galaxy.

Galaxy is unreachable from air-gapped sites and from our CI. The `ansible`
package on PyPI bundles the well-kept community collections, so this script
downloads that one wheel (no dependencies) and extracts only the collections
requirements.yml names into a collections path, next to a link that makes
this repository importable as aicluster.infra. Idempotent: a collection whose
MANIFEST.json is already there is left alone.

Usage: install-collections.py [--path .collections] [--ansible-version 12.3.0]
"""
import argparse
import glob
import os
import subprocess
import sys
import zipfile

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wanted_collections(requirements):
    with open(requirements, encoding='utf-8') as handle:
        data = yaml.safe_load(handle) or {}
    names = []
    for entry in data.get('collections', []):
        names.append(entry['name'] if isinstance(entry, dict) else entry)
    return names


def ensure_self_link(path):
    link = os.path.join(path, 'ansible_collections', 'aicluster', 'infra')
    if not os.path.lexists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.relpath(REPO, os.path.dirname(link)), link)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--path', default=os.path.join(REPO, '.collections'))
    parser.add_argument('--requirements', default=os.path.join(REPO, 'requirements.yml'))
    parser.add_argument('--ansible-version', default='12.3.0',
                        help='the ansible package release whose bundled collections to use (12.x pairs with ansible-core 2.19)')
    parser.add_argument('--cache', default=os.path.join(REPO, '.cache', 'wheels'))
    args = parser.parse_args()

    ensure_self_link(args.path)
    missing = [name for name in wanted_collections(args.requirements)
               if not os.path.exists(os.path.join(args.path, 'ansible_collections', *name.split('.'), 'MANIFEST.json'))]
    if not missing:
        print('collections: all present in %s' % args.path)
        return 0

    wheels = glob.glob(os.path.join(args.cache, 'ansible-%s-*.whl' % args.ansible_version))
    if not wheels:
        os.makedirs(args.cache, exist_ok=True)
        subprocess.check_call([sys.executable, '-m', 'pip', 'download', '--quiet', '--no-deps',
                               '--dest', args.cache, 'ansible==%s' % args.ansible_version])
        wheels = glob.glob(os.path.join(args.cache, 'ansible-%s-*.whl' % args.ansible_version))
    with zipfile.ZipFile(wheels[0]) as wheel:
        for name in missing:
            prefix = 'ansible_collections/%s/' % name.replace('.', '/')
            members = [m for m in wheel.namelist() if m.startswith(prefix)]
            if not members:
                print('collections: %s is not bundled in ansible %s' % (name, args.ansible_version), file=sys.stderr)
                return 1
            wheel.extractall(args.path, members)
            print('collections: installed %s from ansible %s' % (name, args.ansible_version))
    return 0


if __name__ == '__main__':
    sys.exit(main())
