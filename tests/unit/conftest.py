"""Make the collection importable as ansible_collections.aicluster.infra.

The repository root is the collection root; a link under .collections/ gives
it the path that Ansible and these tests import it by.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
COLLECTIONS = os.path.join(REPO, '.collections')
_LINK = os.path.join(COLLECTIONS, 'ansible_collections', 'aicluster', 'infra')

if not os.path.lexists(_LINK):
    os.makedirs(os.path.dirname(_LINK), exist_ok=True)
    os.symlink(os.path.relpath(REPO, os.path.dirname(_LINK)), _LINK)
for path in (COLLECTIONS, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)
