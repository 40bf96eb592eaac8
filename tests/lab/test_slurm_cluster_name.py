"""A changed slurm_cluster_name against a running controller (make lab-check, on the lab check lab that
test_oldest_ansible.py converged under the lab's name, `cluster`).

slurmctld records ClusterName in <StateSaveLocation>/clustername on its first start and refuses to start under another
name, so a plain run with a new name used to write slurm.conf everywhere, restart slurmctld into "CLUSTER NAME
MISMATCH" and leave the cluster without a controller (found by the README's path: the example inventory names its
cluster `hgx`). The slurm role now refuses before it changes anything; the deliberate rename that docs/slurm.md
"Renaming a cluster" describes then works.
"""
import os
import sys

import pytest

from _labrun import REPO, aicluster, on_controller, recap_changed

WORK = os.path.join(REPO, '.cache', 'cluster-name-runs')
STATE = '/var/lib/slurm/slurmctld'  # slurm_state_save_location's default; the lab keeps it


@pytest.fixture(scope='module')
def converged_lab(gpu_lab):
    if not os.path.isdir(os.path.join(REPO, '.cache', 'facts-%s' % gpu_lab[0])):
        aicluster(sys.executable, WORK, 'slurm')
    return gpu_lab


def test_a_new_cluster_name_is_refused_before_anything_changes_then_renamed_on_purpose(converged_lab):
    assert on_controller(sys.executable, 'cat %s/clustername' % STATE).split()[-1] == 'cluster'
    before = on_controller(sys.executable, 'sha1sum /etc/slurm/slurm.conf; systemctl show -p MainPID slurmctld')

    refused = aicluster(sys.executable, WORK, 'slurm', '-e', 'slurm_cluster_name=renamed')
    assert refused.returncode == 2, refused.stdout[-4000:]
    assert ("slurm_cluster_name is 'renamed', but slurmctld's saved state on ctl01 (%s/clustername) belongs to cluster "
            "'cluster'" % STATE) in refused.stdout, refused.stdout[-4000:]
    assert set(recap_changed(refused.stdout).values()) == {0}, refused.stdout[-4000:]
    # slurm.conf and slurmctld untouched, and the controller answers
    assert on_controller(sys.executable, 'sha1sum /etc/slurm/slurm.conf; systemctl show -p MainPID slurmctld') == before
    assert 'is UP' in on_controller(sys.executable, 'scontrol ping')

    # the rename on purpose: stop slurmctld, set its saved name aside, run with the new name
    on_controller(sys.executable, 'systemctl stop slurmctld && mv %s/clustername %s/clustername.cluster' % (STATE, STATE))
    renamed = aicluster(sys.executable, WORK, 'slurm', '-e', 'slurm_cluster_name=renamed')
    assert renamed.returncode == 0, renamed.stdout[-4000:]
    assert on_controller(sys.executable, 'cat %s/clustername' % STATE).split()[-1] == 'renamed'
    assert 'is UP' in on_controller(sys.executable, 'scontrol ping')
    assert 'renamed' in on_controller(sys.executable, 'sacctmgr --noheader --parsable2 show cluster format=cluster')
    again = aicluster(sys.executable, WORK, 'slurm', '-e', 'slurm_cluster_name=renamed')
    assert again.returncode == 0 and set(recap_changed(again.stdout).values()) == {0}, again.stdout[-4000:]
