"""Test helpers for stand-in authors: a temporary lab (fabric.yml + state directory) and in-process runs.

    lab = make_lab(tmp_path, 'hgx-h100-ib')           # ctl01 + gpu01, gpu02
    status, out, err = lab.run('gpu01', ['ibstat', 'mlx5_0'])
"""
import io
import os

from hwsim import cli, fabric as fabrics

HWSIM_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROFILES = ('hgx-h100-ib', 'hgx-a100-ib', 'hgx-h100-roce')


class Lab(object):
    """A temporary lab: fabric.yml and a state directory under tmp_path."""

    def __init__(self, tmp_path, hosts, **fabric_options):
        self.root = tmp_path
        self.state_dir = str(tmp_path / 'state')
        self.fabric_path = str(tmp_path / 'fabric.yml')
        self.fabric = fabrics.build_fabric(hosts, **fabric_options)
        fabrics.write_fabric(self.fabric, self.fabric_path)

    def env(self, host):
        return {'HWSIM_HOST': host, 'HWSIM_STATE_DIR': self.state_dir, 'HWSIM_FABRIC': self.fabric_path}

    def run(self, host, argv):
        """(exit status, stdout, stderr) of ``argv`` (argv[0] is the tool name) on ``host``."""
        out = io.StringIO()
        err = io.StringIO()
        status = cli.main(list(argv), environ=self.env(host), stdout=out, stderr=err)
        return status, out.getvalue(), err.getvalue()

    def ok(self, host, argv):
        """stdout of a run that must succeed."""
        status, out, err = self.run(host, argv)
        assert status == 0, (argv, status, err)
        return out


def make_lab(tmp_path, profile, compute=2, **fabric_options):
    """ctl01 (no hardware) + gpu01..gpuNN of one profile; ``fabric_options`` go to build_fabric."""
    hosts = [('ctl01', None)] + [('gpu%02d' % number, profile) for number in range(1, compute + 1)]
    return Lab(tmp_path, hosts, **fabric_options)
