/*
 * spank_pyxis.so of the lab's nvslurm-plugin-pyxis @VERSION@ stand-in (aicluster.infra lab/mirror/hpc_packages.py).
 *
 * Test equipment, not NVIDIA's pyxis: a small SPANK plugin of our own with pyxis's user interface, compiled when
 * the lab mirror is built against the Slurm headers of that machine (libslurm-dev), so Slurm loads it as it loads
 * the real one (plugin_version is the SLURM_VERSION_NUMBER of those headers; Slurm refuses another major.minor).
 *
 *   srun --container-image=/shared/images/x.sqsh [--container-mounts=SRC:DST[:ro],...]
 *        [--container-workdir=DIR] [--container-name=NAME] COMMAND
 *
 * In slurmstepd (remote context), for a step with an image:
 *   user_init (once per node and step, as the user): `enroot create --name NAME IMAGE` (the enroot stand-in
 *     unsquashes the image into $ENROOT_DATA_PATH/NAME), then `enroot rootfs NAME` (a stand-in extension) for
 *     its directory. A --container-name container that exists is reused.
 *   task_init (each task, as the user, before exec): a new user and mount namespace (the user mapped to itself, as
 *     unprivileged enroot does), mounts made private, /dev, /proc, /sys, /tmp and the --container-mounts bound
 *     into the root, /etc/hosts, /etc/resolv.conf, /etc/passwd and /etc/group bound over the image's, the
 *     variables of /etc/enroot/environ.d/\*.env added to the job's environment (a job's own value wins), chroot,
 *     chdir to --container-workdir (default /). The job's environment (SLURM_*, ...) passes through.
 *   exit (as root): `enroot remove -f NAME` as the user, unless the container is named. Every error there is logged
 *     and never returned: a failing cleanup must not fail the step or drain the node (pyxis #123).
 * No job_prolog/job_epilog callbacks: nothing of this plugin runs in slurmd's prolog or epilog.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(pyxis, 1)

#define ENROOT "/usr/bin/enroot"
#define ENVIRON_DIR "/etc/enroot/environ.d"
#define PATH_LEN 4096
#ifndef PYXIS_VERSION
#define PYXIS_VERSION "@VERSION@"
#endif

static char *opt_image;
static char *opt_mounts;
static char *opt_workdir;
static char *opt_name;
static char container[256];
static char rootfs[PATH_LEN];
static int created;

static int set_opt(char **slot, const char *value)
{
	free(*slot);
	*slot = value ? strdup(value) : NULL;
	return (value && !*slot) ? -1 : 0;
}

static int cb_image(int val, const char *optarg, int remote)
{
	(void)val;
	(void)remote;
	return set_opt(&opt_image, optarg);
}

static int cb_mounts(int val, const char *optarg, int remote)
{
	(void)val;
	(void)remote;
	return set_opt(&opt_mounts, optarg);
}

static int cb_workdir(int val, const char *optarg, int remote)
{
	(void)val;
	(void)remote;
	if (optarg && optarg[0] != '/') {
		slurm_error("pyxis: --container-workdir must be an absolute path: %s", optarg);
		return -1;
	}
	return set_opt(&opt_workdir, optarg);
}

static int cb_name(int val, const char *optarg, int remote)
{
	const char *c;

	(void)val;
	(void)remote;
	for (c = optarg; c && *c; c++)
		if (!(*c == '-' || *c == '_' || *c == '.' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
		      (*c >= 'A' && *c <= 'Z'))) {
			slurm_error("pyxis: --container-name may hold only letters, digits, '-', '_' and '.': %s", optarg);
			return -1;
		}
	return set_opt(&opt_name, optarg);
}

static struct spank_option options[] = {
	{ "container-image", "[PATH]", "[pyxis] the squashfs image (.sqsh) to run the tasks in", 1, 0, cb_image },
	{ "container-mounts", "SRC:DST[:ro][,...]", "[pyxis] bind mount host paths into the container", 1, 0,
	  cb_mounts },
	{ "container-workdir", "PATH", "[pyxis] working directory inside the container", 1, 0, cb_workdir },
	{ "container-name", "NAME", "[pyxis] name the container; a named container is kept and reused", 1, 0,
	  cb_name },
	SPANK_OPTIONS_TABLE_END
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	struct spank_option *opt;

	(void)ac;
	(void)av;
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
		return 0;
	slurm_debug("pyxis: lab stand-in %s", PYXIS_VERSION);
	for (opt = options; opt->name; opt++)
		if (spank_option_register(sp, opt) != ESPANK_SUCCESS) {
			slurm_error("pyxis: cannot register --%s", opt->name);
			return -1;
		}
	return 0;
}

/* Run enroot as the job's user with the job's environment; its stdout (when out) is read into out. */
static int run_enroot(spank_t sp, char *const argv[], char *out, size_t outlen, int become_user)
{
	uid_t uid;
	gid_t gid;
	char **env = NULL;
	int fds[2], status = 0;
	pid_t pid;
	size_t got = 0;
	ssize_t n;

	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS
	    || spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS)
		return -1;
	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		/* slurmstepd keeps root as its real and saved uid while running as the user: drop all of it here. */
		if (become_user && getuid() == 0 && setgroups(1, &gid) < 0 && errno != EPERM)
			_exit(126);
		if (setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
			_exit(126);
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execve(ENROOT, argv, env);
		_exit(127);
	}
	close(fds[1]);
	while (out && got + 1 < outlen && (n = read(fds[0], out + got, outlen - got - 1)) > 0)
		got += (size_t)n;
	if (out)
		out[got] = '\0';
	while (read(fds[0], &status, sizeof(status)) > 0)
		;
	close(fds[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	if (out)
		while (got > 0 && (out[got - 1] == '\n' || out[got - 1] == ' '))
			out[--got] = '\0';
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	uint32_t jobid = 0, stepid = 0;
	char *create[] = { "enroot", "create", "--name", container, opt_image, NULL };
	char *where[] = { "enroot", "rootfs", container, NULL };
	int rc;

	(void)ac;
	(void)av;
	if (!spank_remote(sp) || !opt_image)
		return 0;
	if (opt_name) {
		snprintf(container, sizeof(container), "pyxis_%s", opt_name);
	} else {
		spank_get_item(sp, S_JOB_ID, &jobid);
		spank_get_item(sp, S_JOB_STEPID, &stepid);
		snprintf(container, sizeof(container), "pyxis_%u_%u", jobid, stepid);
	}
	if (opt_name && run_enroot(sp, where, rootfs, sizeof(rootfs), 0) == 0 && rootfs[0] == '/') {
		slurm_verbose("pyxis: reusing container %s", container);
		return 0;
	}
	rc = run_enroot(sp, create, NULL, 0, 0);
	if (rc != 0) {
		slurm_error("pyxis: enroot create --name %s %s failed (exit %d)", container, opt_image, rc);
		return -1;
	}
	created = !opt_name;
	if (run_enroot(sp, where, rootfs, sizeof(rootfs), 0) != 0 || rootfs[0] != '/') {
		slurm_error("pyxis: enroot rootfs %s gave no directory", container);
		return -1;
	}
	return 0;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t len = (ssize_t)strlen(text);

	if (fd < 0)
		return -1;
	if (write(fd, text, (size_t)len) != len) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int make_dirs(const char *path)
{
	char buf[PATH_LEN];
	char *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -1;
	for (p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				return -1;
			*p = '/';
		}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* Bind src onto rootfs/dst (made as a directory or an empty file, like src); read-only when asked. */
static int bind(const char *src, const char *dst, int recursive, int readonly)
{
	char target[PATH_LEN];
	struct stat st;
	struct statvfs vfs;
	unsigned long flags;
	int fd;

	if (snprintf(target, sizeof(target), "%s%s", rootfs, dst) >= (int)sizeof(target) || stat(src, &st) < 0)
		return -1;
	if (S_ISDIR(st.st_mode)) {
		if (make_dirs(target) < 0)
			return -1;
	} else if (access(target, F_OK) < 0) {
		char parent[PATH_LEN];

		snprintf(parent, sizeof(parent), "%s", target);
		*strrchr(parent, '/') = '\0';
		if (make_dirs(parent) < 0)
			return -1;
		fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return -1;
		close(fd);
	}
	if (mount(src, target, NULL, MS_BIND | (recursive ? MS_REC : 0), NULL) < 0)
		return -1;
	if (!readonly)
		return 0;
	/* A remount in a user namespace must keep the flags the mount is locked with. */
	if (statvfs(target, &vfs) < 0)
		return -1;
	flags = MS_BIND | MS_REMOUNT | MS_RDONLY;
	if (vfs.f_flag & ST_NOSUID)
		flags |= MS_NOSUID;
	if (vfs.f_flag & ST_NODEV)
		flags |= MS_NODEV;
	if (vfs.f_flag & ST_NOEXEC)
		flags |= MS_NOEXEC;
	return mount(NULL, target, NULL, flags, NULL);
}

static int user_mounts(void)
{
	char *list, *item, *save = NULL;
	int rc = 0;

	if (!opt_mounts)
		return 0;
	list = strdup(opt_mounts);
	if (!list)
		return -1;
	for (item = strtok_r(list, ",", &save); item && rc == 0; item = strtok_r(NULL, ",", &save)) {
		char *src = item, *dst = strchr(item, ':'), *mode = NULL;

		if (dst) {
			*dst++ = '\0';
			mode = strchr(dst, ':');
			if (mode)
				*mode++ = '\0';
		} else {
			dst = src;
		}
		if (src[0] != '/' || dst[0] != '/' || (mode && strcmp(mode, "ro") && strcmp(mode, "rw"))) {
			slurm_error("pyxis: --container-mounts entry must be SRC:DST[:ro|rw] with absolute paths");
			rc = -1;
		} else if (bind(src, dst, 1, mode && !strcmp(mode, "ro")) < 0) {
			slurm_error("pyxis: cannot mount %s on %s: %s", src, dst, strerror(errno));
			rc = -1;
		}
	}
	free(list);
	return rc;
}

static int env_name_ok(const char *name)
{
	const char *c;

	if (!name[0] || (name[0] >= '0' && name[0] <= '9'))
		return 0;
	for (c = name; *c; c++)
		if (!(*c == '_' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
			return 0;
	return 1;
}

static int filter_env(const struct dirent *entry)
{
	size_t len = strlen(entry->d_name);

	return entry->d_name[0] != '.' && len > 4 && !strcmp(entry->d_name + len - 4, ".env");
}

/* KEY=VALUE lines of environ.d/\*.env (sorted by name); comments, blank lines and bare names are skipped. */
static void environ_files(spank_t sp)
{
	struct dirent **names = NULL;
	char path[PATH_LEN], line[PATH_LEN];
	int count, i;

	count = scandir(ENVIRON_DIR, &names, filter_env, alphasort);
	for (i = 0; i < count; i++) {
		FILE *fp;

		snprintf(path, sizeof(path), "%s/%s", ENVIRON_DIR, names[i]->d_name);
		fp = fopen(path, "re");
		while (fp && fgets(line, sizeof(line), fp)) {
			char *eq, *end = line + strlen(line);

			while (end > line && (end[-1] == '\n' || end[-1] == '\r'))
				*--end = '\0';
			eq = strchr(line, '=');
			if (line[0] == '#' || !eq)
				continue;
			*eq = '\0';
			if (env_name_ok(line))
				spank_setenv(sp, line, eq + 1, 0);
		}
		if (fp)
			fclose(fp);
		free(names[i]);
	}
	free(names);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	static const char *const files[] = { "/etc/hosts", "/etc/resolv.conf", "/etc/passwd", "/etc/group" };
	static const char *const trees[] = { "/dev", "/proc", "/sys", "/tmp" };
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	size_t i;

	(void)ac;
	(void)av;
	if (!spank_remote(sp) || !opt_image)
		return 0;
	if (!rootfs[0]) {
		slurm_error("pyxis: no container for this step");
		return -1;
	}
	/* The credential change to the user cleared the dumpable flag, which makes /proc/self/uid_map root's. */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		slurm_error("pyxis: cannot create user and mount namespaces: %s (user.max_user_namespaces?)",
			    strerror(errno));
		return -1;
	}
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) < 0 || write_file("/proc/self/setgroups", "deny\n") < 0) {
		slurm_error("pyxis: cannot map the user into the namespace: %s", strerror(errno));
		return -1;
	}
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) < 0) {
		slurm_error("pyxis: cannot map the group into the namespace: %s", strerror(errno));
		return -1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		slurm_error("pyxis: cannot make the mounts private: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < sizeof(trees) / sizeof(trees[0]); i++)
		if (bind(trees[i], trees[i], 1, 0) < 0) {
			slurm_error("pyxis: cannot mount %s into the container: %s", trees[i], strerror(errno));
			return -1;
		}
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (access(files[i], R_OK) == 0 && bind(files[i], files[i], 0, 0) < 0) {
			slurm_error("pyxis: cannot mount %s into the container: %s", files[i], strerror(errno));
			return -1;
		}
	if (user_mounts() < 0)
		return -1;
	environ_files(sp);
	if (chdir(rootfs) < 0 || chroot(".") < 0) {
		slurm_error("pyxis: cannot enter %s: %s", rootfs, strerror(errno));
		return -1;
	}
	if (chdir(opt_workdir ? opt_workdir : "/") < 0) {
		slurm_error("pyxis: --container-workdir %s: %s", opt_workdir ? opt_workdir : "/", strerror(errno));
		return -1;
	}
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	char *remove[] = { "enroot", "remove", "-f", container, NULL };
	int rc;

	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE || !created)
		return 0;
	rc = run_enroot(sp, remove, NULL, 0, 1);
	if (rc != 0)
		slurm_error("pyxis: enroot remove -f %s failed (exit %d); left in place", container, rc);
	created = 0;
	return 0;
}
