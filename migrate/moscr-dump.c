/*
 * moscr dump PID -o FILE [--leave-running] [--live] [-v]: checkpoint a
 * process; --live copies its memory in rounds while it runs first
 * (migrate/precopy.c), so that it is frozen only for the last pages.
 * A file is written under a temporary name and renamed when complete
 * (lib/atomic.c), so a failed dump never leaves a truncated image under
 * the final name. The process is killed once the image is safe, unless
 * --leave-running.
 */
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "migrate/migrate.h"
#include "moscr.h"

static int	moscr_dump(int, char **);

static struct mig_task *
dump_freeze(void *arg, char **cause)
{
	return mig_seize(*(pid_t *)arg, cause);
}

/*
 * A live dump of t, seized: its writes tracked from here on, it runs
 * while its memory goes, and is seized again for the last pages (lv->t).
 * On failure it goes on as if nothing happened.
 */
static int
dump_live(struct mig_task *t, struct mig_live *lv, int rounds, int fd,
    struct mig_stats *st, char **cause)
{
	static pid_t	 pid;
	int		 rc;

	memset(lv, 0, sizeof *lv);
	if (rounds > 0) {
		lv->rounds_min = lv->rounds_max = rounds;
		lv->freeze_bytes = 1;
	}
	pid = mig_pid(t);
	if ((lv->track = mig_track_new(t, cause)) == NULL) {
		mig_release(t, NULL);
		return -1;
	}
	if (mig_release(t, cause) == -1) {
		mig_track_free(lv->track);
		return -1;
	}
	lv->freeze = dump_freeze;
	lv->arg = &pid;
	rc = mig_dump_live(lv, fd, 0, st, cause);
	mig_track_free(lv->track);
	if (rc == -1 && lv->t != NULL) {
		mig_release(lv->t, NULL);
		lv->t = NULL;
	}
	return rc;
}

/* What the rounds of a live dump did, on stderr. */
static void
moscr_live_report(const struct mig_live *lv)
{
	uint32_t	i;

	for (i = 0; i < lv->rounds; i++)
		fprintf(stderr, "moscr: round %u: %llu pages in %.1f ms\n",
		    i + 1, (unsigned long long)lv->round_pages[i],
		    lv->round_us[i] / 1000.0);
	fprintf(stderr, "moscr: then frozen for %llu pages, %.1f ms (%s); "
	    "%llu bytes in %.1f ms in all\n",
	    (unsigned long long)lv->final_pages, lv->freeze_us / 1000.0,
	    lv->stop_why, (unsigned long long)lv->bytes,
	    lv->total_us / 1000.0);
}

const struct moscr_cmd moscr_dump_cmd = {
	.name = "dump",
	.usage = "PID -o FILE [--leave-running] [--live] [--rounds N] [-v]",
	.help = "Checkpoint process PID into FILE ('-': standard output). "
	    "The process is\n      killed once the image is complete, unless "
	    "--leave-running.\n      --live: copy its memory while it runs, "
	    "in rounds, and freeze it only\n      for the last pages; "
	    "--rounds N: exactly N rounds (a test).",
	.exec = moscr_dump,
};

static const struct option dump_opts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "leave-running", no_argument, NULL, 'l' },
	{ "live", no_argument, NULL, 'L' },
	{ "rounds", required_argument, NULL, 'r' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
moscr_dump(int argc, char **argv)
{
	struct mig_task		*t;
	struct mig_stats	 st;
	struct atomic_file	 af = { .fd = -1 };
	struct stat		 sb;
	const char		*out = NULL;
	char			*cause = NULL;
	uint64_t		 pid;
	int			 c, leave = 0, verbose = 0, fd = -1, live = 0;
	int			 rounds = 0;
	uint64_t		 v;
	struct mig_live		 lv;

	if (moscr_help_wanted(argc, argv, &moscr_dump_cmd))
		return 0;
	while ((c = getopt_long(argc, argv, "o:lLv", dump_opts, NULL)) != -1) {
		switch (c) {
		case 'L':
			live = 1;
			break;
		case 'r':
			if (parse_uint(optarg, 1, MIG_ROUNDS_MAX, &v) == -1) {
				moscr_err("--rounds: expected 1 to %d, found "
				    "'%s'", MIG_ROUNDS_MAX, optarg);
				return 2;
			}
			rounds = v;
			live = 1;
			break;
		case 'o':
			out = optarg;
			break;
		case 'l':
			leave = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			moscr_usage(&moscr_dump_cmd);
		}
	}
	if (optind + 1 != argc || out == NULL)
		moscr_usage(&moscr_dump_cmd);
	if (parse_uint(argv[optind], 1, INT_MAX, &pid) == -1) {
		moscr_err("bad process id: %s", argv[optind]);
		return 2;
	}
	if ((pid_t)pid == getpid()) {
		moscr_err("cannot checkpoint moscr itself");
		return 1;
	}

	if (strcmp(out, "-") == 0) {
		if (isatty(STDOUT_FILENO)) {
			moscr_err("not writing an image to a terminal");
			return 1;
		}
		fd = STDOUT_FILENO;
	} else if (stat(out, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		/*
		 * A device or a FIFO (/dev/null, say) is written as it is:
		 * renamed over, it would be replaced by a file.
		 */
		if (S_ISDIR(sb.st_mode) ||
		    (fd = open(out, O_WRONLY | O_CLOEXEC)) == -1) {
			moscr_err("%s: %s", out, S_ISDIR(sb.st_mode) ?
			    "a directory" : strerror(errno));
			return 1;
		}
	} else if ((fd = atomic_create(&af, out, &cause)) == -1) {
		moscr_err("%s", cause);
		free(cause);
		return 1;
	}

	if ((t = mig_seize(pid, &cause)) == NULL)
		goto fail;
	if (live) {
		if (dump_live(t, &lv, rounds, fd, &st, &cause) == -1)
			goto fail;
		t = lv.t;
	} else if (mig_dump(t, fd, 0, &st, &cause) == -1) {
		char *c2 = NULL;

		/* The process goes on as if nothing happened. */
		if (mig_release(t, &c2) == -1) {
			moscr_err("%s", c2);
			free(c2);
		}
		goto fail;
	}
	if (af.path != NULL && atomic_commit(&af, 1, &cause) == -1) {
		mig_release(t, NULL);
		goto fail;
	}
	if (leave) {
		if (mig_release(t, &cause) == -1)
			goto fail;
	} else
		mig_kill(t);
	if (verbose)
		fprintf(stderr, "moscr: dumped process %llu: %llu pages, "
		    "%llu bytes; frozen %.1f ms, pages moved in %.1f ms\n",
		    (unsigned long long)pid, (unsigned long long)st.pages,
		    (unsigned long long)st.bytes, st.frozen_us / 1000.0,
		    st.mem_us / 1000.0);
	if (verbose && live)
		moscr_live_report(&lv);
	return 0;

fail:
	moscr_err("dump %llu: %s", (unsigned long long)pid, cause);
	free(cause);
	if (af.path != NULL)
		atomic_commit(&af, 0, NULL);
	return 1;
}
