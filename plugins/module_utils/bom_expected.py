# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicluster.infra contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the verify stage expects from the bill of materials (``aicluster_bom``; docs/stack.md, docs/verify.md).

The verify roles' expected versions default from the BOM the fleet is installed from, so a BOM bump moves the
expectation with it: in a rolling upgrade each upgraded batch is checked against the new BOM, never against a version
copied by hand into the inventory. An explicit ``verify_*`` variable still overrides. Pure functions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# mlnx-ofed-kernel-{dkms,utils} versions: 24.10.OFED.24.10.1.1.4.1-1 is the DOCA-OFED release 24.10-1.1.4
# (DOCA-Host 2.9.1 LTS release notes: "DOCA-OFED 24.10-1.1.4"; lab/mirror/build.py ofed_release does the same).
_OFED_KERNEL = re.compile(r'OFED\.(?P<year>[0-9]+)\.(?P<month>[0-9]+)\.(?P<rest>[0-9]+\.[0-9]+\.[0-9]+)')
_OFED_PACKAGES = ('mlnx-ofed-kernel-utils', 'mlnx-ofed-kernel-dkms')
# `ofed_info -s` of DOCA-OFED prints "OFED-internal-<release>:" (ib_info drops the colon); some builds add fields
# after the release ("OFED-internal-24.10-1.1.4.0.200:" on DGX OS 7 with DOCA 2.9.1-2), which
# verify.ib.evaluate_ib_fleet accepts for an expected "OFED-internal-24.10-1.1.4".
OFED_PREFIX = 'OFED-internal-'


def upstream_version(version):
    """The upstream part of a Debian version: ``1:4.4.1-1`` -> ``4.4.1``, ``580.95.05-1`` -> ``580.95.05``."""
    text = str(version or '').strip()
    if ':' in text:
        text = text.split(':', 1)[1]
    if '-' in text:
        text = text.rsplit('-', 1)[0]
    return text


def ofed_release(kernel_version):
    """DOCA-OFED's release from an mlnx-ofed-kernel package version, or '' when it is not of that form."""
    match = _OFED_KERNEL.search(str(kernel_version or ''))
    if not match:
        return ''
    return '%s.%s-%s' % (match.group('year'), match.group('month'), match.group('rest'))


def _mapping(value):
    return value if isinstance(value, dict) else {}


def verify_expected(bom, rdma_stack='doca'):
    """The versions the verify stage expects from ``bom``.

    Returns ``driver`` (the driver's upstream version, as nvidia-smi prints it), ``cuda_major`` (the DCGM CUDA
    package's major, the driver's CUDA major), ``cuda`` (the toolkit's upstream version), ``firmware`` (PSID ->
    version, as ``aicluster_bom.rdma.firmware``) and ``ofed`` (``ofed_info -s`` of the BOM's DOCA-OFED; '' when
    ``rdma_stack`` is not ``doca``). A key the BOM does not define is '' (or {}): the fleet's majority decides.
    A BOM that is not a mapping (none defined) gives every key empty.
    """
    bom = _mapping(bom)
    driver = _mapping(bom.get('nvidia_driver'))
    cuda = _mapping(bom.get('cuda'))
    dcgm = _mapping(bom.get('dcgm'))
    rdma = _mapping(bom.get('rdma'))
    packages = _mapping(rdma.get('packages'))
    ofed = ''
    if str(rdma_stack or 'doca') == 'doca':
        release = next((ofed_release(packages[name]) for name in _OFED_PACKAGES if ofed_release(packages.get(name))), '')
        ofed = OFED_PREFIX + release if release else ''
    return {
        'driver': upstream_version(driver.get('version')),
        'cuda': upstream_version(cuda.get('version')),
        'cuda_major': str(dcgm.get('cuda_major') or ''),
        'firmware': dict((str(psid), str(version)) for psid, version in _mapping(rdma.get('firmware')).items()),
        'ofed': ofed,
    }
