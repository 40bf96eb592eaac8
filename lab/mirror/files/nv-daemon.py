"""@PROGRAM@ of @PACKAGE@ @VERSION@: aicluster lab stand-in (lab/mirror/build.py).

Started by its unit (Type=forking), it compares its own version with the loaded
nvidia kernel module's, as the real daemon does: on a mismatch it says so and
exits 1 (the unit fails to start); with a match it forks, the parent writes the
PID file and exits 0, and the child stays running until SIGTERM.

The loaded version is read from $AICLUSTER_LAB_MODULE_VERSION_FILE when set,
else from /run/hwsim/module/nvidia/version (the lab's stand-in for a loaded
module), else from /sys/module/nvidia/version.
Config (-c FILE): KEY=VALUE lines; DAEMONIZE=0 keeps it in the foreground,
LOG_FILE_NAME is where it logs.

Once started it writes the boot id (/run/hwsim/boot_id) to
/run/hwsim/@PROGRAM@.started (under $HWSIM_ROOT in tests): a real fabric manager
registers the GPUs with the NVSwitch fabric at its start, and hwsim's nvidia-smi
reports the GPUs' fabric state "In Progress" after a boot until the fabric
manager has started in that boot (lab/hwsim/hwsim/driver.py fabric_registered).
The file stays when the daemon stops: the registration lasts until the reboot.
"""
import os
import signal
import sys
import time

PROGRAM = '@PROGRAM@'
UPSTREAM = '@UPSTREAM@'
VERSION_LINE = '@VERSION_LINE@'
MISMATCH = "@MISMATCH@"
DEFAULT_CONFIG = '@CONFIG@'
DEFAULT_LOG = '@LOG@'
PID_FILE = '@PID_FILE@'
MODULE_VERSION_FILES = ('/run/hwsim/module/nvidia/version', '/sys/module/nvidia/version')
RUN_DIR = 'run/hwsim'  # under $HWSIM_ROOT, else /
USAGE = 'usage: %s [-h] [-v|--version] [-c|--config FILE]' % PROGRAM


def read_config(path):
    config = {}
    try:
        with open(path, encoding='utf-8') as handle:
            for line in handle:
                key, sep, value = line.strip().partition('=')
                if sep and not key.startswith('#'):
                    config[key.strip()] = value.strip()
    except OSError as err:
        sys.exit('%s: cannot read the config file %s: %s' % (PROGRAM, path, err.strerror))
    return config


def loaded_version():
    override = os.environ.get('AICLUSTER_LAB_MODULE_VERSION_FILE')
    for path in (override,) if override else MODULE_VERSION_FILES:
        try:
            with open(path, encoding='utf-8') as handle:
                return handle.read().strip()
        except OSError:
            continue
    return None


def log(config, text, level='INFO'):
    try:
        with open(config.get('LOG_FILE_NAME') or DEFAULT_LOG, 'a', encoding='utf-8') as handle:
            handle.write('[%s] [%s] %s\n' % (time.strftime('%b %d %Y %H:%M:%S'), level, text))
    except OSError:
        pass


def record_start():
    """Write this boot's id to <root>/run/hwsim/PROGRAM.started (best effort: a host without hwsim has no boot id)."""
    run_dir = os.path.join(os.environ.get('HWSIM_ROOT') or '/', RUN_DIR)
    try:
        with open(os.path.join(run_dir, 'boot_id'), encoding='utf-8') as handle:
            boot = handle.read().strip()
    except OSError:
        boot = ''
    try:
        os.makedirs(run_dir, exist_ok=True)
        path = os.path.join(run_dir, '%s.started' % PROGRAM)
        with open(path + '.tmp', 'w', encoding='utf-8') as handle:
            handle.write(boot + '\n')
        os.replace(path + '.tmp', path)
    except OSError:
        pass


def parse(argv):
    config_path, show_version = DEFAULT_CONFIG, False
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ('-v', '--version'):
            show_version = True
        elif arg in ('-c', '--config') and args:
            config_path = args.pop(0)
        elif arg in ('-h', '--help'):
            print(USAGE)
            sys.exit(0)
        else:
            sys.exit('%s: unknown argument %r\n%s' % (PROGRAM, arg, USAGE))
    return config_path, show_version


def serve(pid_file):
    def stop(_signum, _frame):
        if pid_file:
            try:
                os.unlink(pid_file)
            except OSError:
                pass
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        signal.pause()


def main(argv):
    config_path, show_version = parse(argv)
    if show_version:
        print(VERSION_LINE)
        return 0
    config = read_config(config_path)
    loaded = loaded_version()
    if loaded is None:
        message = ('%s: request to query NVIDIA GPU driver version failed: the nvidia kernel module is not loaded'
                   % PROGRAM)
        print(message, file=sys.stderr)
        log(config, message, 'ERROR')
        return 1
    if loaded != UPSTREAM:
        message = MISMATCH.format(upstream=UPSTREAM, loaded=loaded)
        print(message, file=sys.stderr)
        log(config, message, 'ERROR')
        return 1
    log(config, '%s %s started (driver %s)' % (PROGRAM, UPSTREAM, loaded))
    record_start()
    if config.get('DAEMONIZE', '1') == '0':
        serve(None)
    child = os.fork()
    if child:
        os.makedirs(os.path.dirname(PID_FILE), exist_ok=True)
        with open(PID_FILE, 'w', encoding='utf-8') as handle:
            handle.write('%d\n' % child)
        return 0
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    serve(PID_FILE)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
