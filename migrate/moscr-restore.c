/*
 * moscr restore FILE [--detach] [--fd N=PATH]... [-v]: bring a process
 * back from an image, then wait for it and exit as it exits (or die of its
 * signal), or with --detach print its pid and leave it running.
 *
 * A process of one thread comes back under a new pid. One of several
 * threads (or whose main thread had ended) must keep its pid and every
 * thread id: it comes back in a PID namespace of its own, made here
 * (mig_pidns), with the image's pid there; its pid seen from outside
 * differs, and its parent is moscr.
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "migrate/migrate.h"
#include "moscr.h"

static int	moscr_restore(int, char **);

const struct moscr_cmd moscr_restore_cmd = {
	.name = "restore",
	.usage = "FILE [--detach] [--fd N=PATH]... [-v]",
	.help = "Restore the process in FILE ('-': standard input) and wait "
	    "for it; exit as\n      it exits. --detach prints its pid and "
	    "leaves it running. --fd N=PATH\n      opens PATH as descriptor N "
	    "instead of what the image recorded; a\n      descriptor no path "
	    "opens again (a pipe, a socket) is /dev/null\n      otherwise, "
	    "with a warning. A process of several threads\n      keeps its pid "
	    "and thread ids in a PID namespace of its own.",
	.exec = moscr_restore,
};

static const struct option restore_opts[] = {
	{ "detach", no_argument, NULL, 'd' },
	{ "fd", required_argument, NULL, 'f' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* What the image had that cannot be had here: one line each. */
static void
restore_warn(void *arg, const char *msg)
{
	fprintf(stderr, "moscr: restore %s: %s (--fd N=PATH opens another)\n",
	    (const char *)arg, msg);
}

/* Did this restore make a PID namespace (mig_pidns)? */
static int	restore_pidns;

static int	restore_run(int, char **);

/*
 * Once our children are born in a PID namespace of their own, we leave by
 * _exit: at exit() LeakSanitizer (make asan) stops us with a tracer child
 * of ours, which would be born there and could not find us.
 */
static int
moscr_restore(int argc, char **argv)
{
	int	rc;

	rc = restore_run(argc, argv);
	if (restore_pidns) {
		fflush(NULL);
		_exit(rc);
	}
	return rc;
}

static int
restore_run(int argc, char **argv)
{
	struct mig_fd_override	*ov = NULL;
	struct mig_restore_opts	 opts;
	struct mig_task		*t;
	struct mig_stats	 st;
	struct mig_image	 mi;
	char			*cause = NULL, *eq;
	const char		*in;
	uint64_t		 n;
	pid_t			 pid;
	int			 c, detach = 0, verbose = 0, fd, keep, rc;

	if (moscr_help_wanted(argc, argv, &moscr_restore_cmd))
		return 0;
	memset(&opts, 0, sizeof opts);
	while ((c = getopt_long(argc, argv, "df:v", restore_opts,
	    NULL)) != -1) {
		switch (c) {
		case 'd':
			detach = 1;
			break;
		case 'f':
			if ((eq = strchr(optarg, '=')) == NULL ||
			    eq[1] == '\0') {
				moscr_err("--fd wants N=PATH, not %s", optarg);
				return 2;
			}
			*eq = '\0';
			if (parse_uint(optarg, 0, 1 << 20, &n) == -1) {
				moscr_err("--fd: bad descriptor %s", optarg);
				return 2;
			}
			ov = xreallocarray(ov, opts.noverrides + 1,
			    sizeof *ov);
			ov[opts.noverrides].fd = n;
			ov[opts.noverrides].path = eq + 1;
			opts.noverrides++;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			moscr_usage(&moscr_restore_cmd);
		}
	}
	if (optind + 1 != argc)
		moscr_usage(&moscr_restore_cmd);
	opts.overrides = ov;
	in = argv[optind];
	opts.warn = restore_warn;
	opts.warn_arg = (void *)in;
	if (strcmp(in, "-") == 0)
		fd = STDIN_FILENO;
	else if ((fd = open(in, O_RDONLY | O_CLOEXEC)) == -1) {
		moscr_err("%s: %s", in, strerror(errno));
		return 1;
	}

	/*
	 * What decides the target: from a file, its last image read whole
	 * (one a live dump made, rounds before its description, too: the
	 * chain is read again into the target); from a pipe, the
	 * description, the rest read into the target as it comes.
	 */
	if ((fd == STDIN_FILENO ? mig_restore_begin(fd, &mi, &cause) :
	    mig_image_load(fd, &mi, &cause)) == -1)
		goto fail;
	keep = mig_image_keeps_ids(&mi);
	if (keep && mig_pidns(&cause) == -1)
		goto fail_image;
	restore_pidns = keep;
	if ((t = keep ? mig_spawn_pid(mi.header->pid, &cause) :
	    mig_spawn(&cause)) == NULL)
		goto fail_image;
	/* A file may end a chain of incremental images: read it again whole. */
	if ((fd == STDIN_FILENO ? mig_restore_from(t, &mi, &opts, &st,
	    &cause) : mig_restore_chain(t, in, &opts, &st, &cause)) == -1) {
		mig_kill(t);
		goto fail_image;
	}
	pid = mig_pid(t);
	if (mig_release(t, &cause) == -1)
		goto fail_image;
	if (fd != STDIN_FILENO)
		close(fd);
	free(ov);
	if (verbose) {
		fprintf(stderr, "moscr: restored %s as process %d: %llu pages, "
		    "%llu bytes in %.1f ms, pages moved in %.1f ms", in, pid,
		    (unsigned long long)st.pages,
		    (unsigned long long)st.bytes, st.frozen_us / 1000.0,
		    st.mem_us / 1000.0);
		if (keep)
			fprintf(stderr, "; %zu threads, pid %d and thread ids "
			    "kept in a PID namespace of its own", mi.nthreads,
			    mi.header->pid);
		fprintf(stderr, "\n");
	}
	mig_image_free(&mi);
	if (detach) {
		printf("%d\n", pid);
		return 0;
	}
	if ((rc = proc_wait_as(pid)) == -1) {
		moscr_err("wait for %d: %s", pid, strerror(errno));
		return 1;
	}
	return rc;

fail_image:
	mig_image_free(&mi);
fail:
	moscr_err("restore %s: %s", in, cause);
	free(cause);
	free(ov);
	return 1;
}
