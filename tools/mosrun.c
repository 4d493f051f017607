/*
 * mosrun: run a program as a migratable process whose home is this node.
 *
 * mosrun becomes the program (it execs it, so the process keeps mosrun's
 * pid, parent, session, terminal and files), but first it starts the
 * process's deputy: a process of the same user, not a child of ours, that
 * seizes us with ptrace and registers with mosd. The deputy holds the
 * process for its whole life (agent/deputy.c).
 */
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "lib/osm.h"
#include "migrate/migrate.h"
#include "proto/ctl.pb-c.h"

static void __attribute__((noreturn))
usage(int status)
{
	fprintf(status == 0 ? stdout : stderr,
	    "usage: mosrun [-h | -r node | -b] [-L | -l] [-s] [-m MB]\n"
	    "              [-n nodes] [-C file [-A minutes] [-N max]]\n"
	    "              [--checkpoint-on sig] [--checkpoint-exec prog]\n"
	    "              [--stop-copy | --post-copy] program [args]\n"
	    "       mosrun -R file [--fd N=path]... [-L | -l] [-n nodes]\n"
	    "              [-C file ...]\n"
	    "Run program as a migratable process whose home is this node: it\n"
	    "may run on other nodes while it keeps its pid, files, terminal\n"
	    "and parent here.\n\n"
	    "  -h          start it here, at home (the default)\n"
	    "  -r node     start it and move it to node at once\n"
	    "  -b          start it on the node where it would run fastest\n"
	    "  -L          never migrate it automatically (mosmigrate still "
	    "can)\n"
	    "  -l          let the balancer migrate it (the default)\n"
	    "  -s          strict: away, every read and write of a regular\n"
	    "              file goes home and waits for its answer (no read\n"
	    "              ahead, no write behind, no file of a shared path\n"
	    "              opened where it runs, no stat answered again)\n"
	    "  -m MB       it needs MB MiB of memory: only nodes with that\n"
	    "              much free are considered\n"
	    "  -n nodes    it may run only on these nodes (1,3,5-7) and home\n"
	    "  -C file     checkpoints go to file.1, file.2, ... (mosmigrate\n"
	    "              pid checkpoint, or every -A minutes)\n"
	    "  -A minutes  checkpoint this often (fractions allowed)\n"
	    "  -N max      keep only the last max checkpoints\n"
	    "  --checkpoint-on sig\n"
	    "              signal sig sent to it is not delivered: it is\n"
	    "              checkpointed instead\n"
	    "  --checkpoint-exec prog\n"
	    "              after each checkpoint, run prog FILE REASON PID\n"
	    "  -R file     go on from checkpoint file, here, as its home (a\n"
	    "              process of several threads keeps its ids in a PID\n"
	    "              namespace of its own, a child of mosrun's, and\n"
	    "              runs only here)\n"
	    "  --fd N=path with -R: open path as descriptor N instead of what\n"
	    "              the checkpoint recorded (a pipe or socket it held\n"
	    "              is /dev/null otherwise, with a warning)\n"
	    "  --stop-copy its moves stop it for the whole copy of its memory\n"
	    "              (by default it runs on while its memory goes)\n"
	    "  --post-copy its moves, out and home, run it on the target at\n"
	    "              once, its pages following on fault and pushed;\n"
	    "              losing either node meanwhile loses the process\n"
	    "              (it goes on from its last checkpoint, if any)\n"
	    "  -S socket   mosd's control socket (default %s)\n"
	    "  --help      this help\n\n"
	    "mosrun exits as program exits, with its status or its signal. If\n"
	    "the node it runs on dies, it goes on here from its last\n"
	    "checkpoint, or without one is killed (SIGKILL), after a message\n"
	    "on its standard error; killed there by the out-of-memory killer\n"
	    "without a checkpoint, it exits 137. mosrun's own errors exit 1,\n"
	    "usage 2.\n",
	    OSM_SOCKET_PATH);
	exit(status);
}

/* Is this process already held by a deputy (a nested mosrun)? */
static int
mosrun_held(const char *sock)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*r;
	char		*cause;
	size_t		 i;
	int		 held = 0;

	req.type = OSM__CTL_TYPE__CTL_PS;
	if ((r = ctl_call(sock, &req, &cause)) == NULL) {
		free(cause);
		return 0;
	}
	for (i = 0; i < r->n_procs; i++)
		held |= r->procs[i]->pid == (uint32_t)getpid();
	ctl_reply_free(r);
	return held;
}

/*
 * Under LeakSanitizer (make asan): the process mosrun becomes is traced by
 * its deputy, and LeakSanitizer cannot work under ptrace; should mosrun
 * exit here (its program not found, a recovery refused), it is not ours
 * to check. Unused without the sanitizer.
 */
int	__lsan_is_turned_off(void);

int
__lsan_is_turned_off(void)
{
	char	tracer[32];

	return proc_status(0, "TracerPid", tracer, sizeof tracer) == 0 &&
	    strcmp(tracer, "0") != 0;
}

/* Is node one of -n's (or is there no -n)? */
static int
mosrun_listed(const struct deputy_opts *o, uint32_t node)
{
	size_t	i;

	for (i = 0; i < o->nnodes; i++)
		if (o->nodes[i] == node)
			return 1;
	return o->nnodes == 0;
}

static void __attribute__((noreturn))
mosrun_exec(char **argv)
{
	execvp(argv[0], argv);
	fprintf(stderr, "mosrun: %s: %s\n", argv[0], strerror(errno));
	exit(errno == ENOENT ? 127 : 126);
}

/*
 * The pid a checkpoint must be restored as, if its thread ids must be kept
 * (docs/IMAGE.md, "Thread ids are kept"); 0 if not, or if it cannot be
 * read (the deputy then says why, as for any bad file).
 */
static pid_t
mosrun_kept_pid(const char *path)
{
	struct mig_image mi;
	char		*cause = NULL;
	pid_t		 pid = 0;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	if (mig_image_load(fd, &mi, &cause) == 0) {
		if (mig_image_keeps_ids(&mi))
			pid = mi.header->pid;
		mig_image_free(&mi);
	}
	free(cause);
	close(fd);
	return pid;
}

/*
 * mosrun -R of a checkpoint of several threads: they must come back with
 * their ids, so the process the deputy restores into is not us but a
 * child with the checkpoint's pid in a PID namespace of its own
 * (mig_fork_pid). The deputy stays outside it, as do we: the parent the
 * shell waits for, passing on what is sent to us, exiting as it exits.
 * It runs only here: elsewhere it would have that node's ids.
 */
static int
mosrun_recover_kept(struct deputy_opts *o, pid_t vpid)
{
	static const char	 no[] = "mosrun: not recovered\n";
	char			*cause = NULL, ok;
	int			 sync[2], st, rc;
	pid_t			 p, pid;

	if (pipe2(sync, O_CLOEXEC) == -1) {
		fprintf(stderr, "mosrun: pipe: %s\n", strerror(errno));
		return 1;
	}
	fflush(NULL);
	/* Its ids are the namespace's, not this node's: it stays here. */
	o->ids_here = 1;
	o->locked = 1;
	if ((p = mig_fork_pid(vpid, &cause)) == -1) {
		fprintf(stderr, "mosrun: cannot recover from %s: its %d "
		    "threads keep their ids, which takes a PID namespace: "
		    "%s\n", o->recover, (int)vpid, cause);
		return 1;
	}
	if (p == 0) {
		/* Raw calls: glibc's tid is not ours (mig_fork_pid). */
		close(sync[1]);
		if (read(sync[0], &ok, 1) != 1)
			_exit(1);	/* the deputy said why */
		syscall(SYS_close_range, 3, ~0U, 0);
		syscall(SYS_kill, syscall(SYS_getpid), SIGSTOP);
		if (write(2, no, sizeof no - 1) == -1)
			_exit(1);
		_exit(1);
	}
	switch (pid = fork()) {
	case -1:
		fprintf(stderr, "mosrun: fork: %s\n", strerror(errno));
		kill(p, SIGKILL);
		return 1;
	case 0:
		close(sync[0]);
		if (fork() == 0)
			_exit(deputy_main(o, p, sync[1]));
		_exit(0);
	}
	close(sync[0]);
	close(sync[1]);
	waitpid(pid, &st, 0);
	if ((rc = proc_wait_as(p)) == -1) {
		fprintf(stderr, "mosrun: wait for %d: %s\n", (int)p,
		    strerror(errno));
		return 1;
	}
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'H' },
		{ "fd", required_argument, NULL, 'F' },
		{ "nodes", required_argument, NULL, 'n' },
		{ "checkpoint-on", required_argument, NULL, 'K' },
		{ "checkpoint-exec", required_argument, NULL, 'E' },
		{ "stop-copy", no_argument, NULL, 'P' },
		{ "post-copy", no_argument, NULL, 'O' },
		{ NULL, 0, NULL, 0 }
	};
	struct deputy_opts	 o;
	static char		*recover_argv[2];
	uint64_t		 v;
	pid_t			 pid, kept, self = getpid();
	char			 ok, tracer[32], *end, *eq;
	int			 ch, sync[2], st;

	memset(&o, 0, sizeof o);
	o.sock = OSM_SOCKET_PATH;
	while ((ch = getopt_long(argc, argv, "+A:bC:hlLm:n:N:r:R:sS:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'A':
			/* seconds; NaN fails both comparisons */
			o.ckpt_every = strtod(optarg, &end) * 60;
			if (*end != '\0' || !(o.ckpt_every > 0 &&
			    o.ckpt_every <= 1e9)) {
				fprintf(stderr, "mosrun: -A: expected minutes, "
				    "found '%s'\n", optarg);
				return 2;
			}
			break;
		case 'C':
			o.ckpt_base = optarg;
			break;
		case 'E':
			o.ckpt_exec = optarg;
			break;
		case 'K':
			if (parse_signal(optarg, &o.ckpt_signal) == -1 ||
			    o.ckpt_signal == SIGKILL ||
			    o.ckpt_signal == SIGSTOP) {
				fprintf(stderr, "mosrun: --checkpoint-on: "
				    "expected a signal that can be caught, found "
				    "'%s'\n", optarg);
				return 2;
			}
			break;
		case 'n':
			free(o.nodes);
			if (parse_nodes(optarg, &o.nodes, &o.nnodes) == -1) {
				fprintf(stderr, "mosrun: -n: expected node "
				    "numbers like 1,3,5-7, found '%s'\n",
				    optarg);
				return 2;
			}
			break;
		case 'F':
			if ((eq = strchr(optarg, '=')) != NULL)
				*eq = '\0';
			if (eq == NULL || eq[1] == '\0' ||
			    parse_uint(optarg, 0, 1 << 20, &v) == -1) {
				fprintf(stderr, "mosrun: --fd: expected N=PATH\n");
				return 2;
			}
			o.overrides = xreallocarray(o.overrides,
			    o.noverrides + 1, sizeof *o.overrides);
			o.overrides[o.noverrides].fd = v;
			o.overrides[o.noverrides++].path = eq + 1;
			break;
		case 'N':
			if (parse_uint(optarg, 1, UINT32_MAX, &v) == -1) {
				fprintf(stderr, "mosrun: -N: expected a number "
				    "of checkpoints, found '%s'\n", optarg);
				return 2;
			}
			o.ckpt_max = v;
			break;
		case 'R':
			o.recover = optarg;
			break;
		case 'b':
			o.best = 1;
			o.start_node = 0;
			break;
		case 'h':
			o.best = 0;
			o.start_node = 0;
			break;
		case 'l':
			o.locked = 0;
			break;
		case 's':
			o.strict_io = 1;
			break;
		case 'L':
			o.locked = 1;
			break;
		case 'm':
			if (parse_uint(optarg, 1, 1ULL << 30, &v) == -1) {
				fprintf(stderr, "mosrun: -m: expected MiB of "
				    "memory, found '%s'\n", optarg);
				return 2;
			}
			o.mem_need = v << 20;
			break;
		case 'r':
			if (parse_uint(optarg, 1, OSM_MAX_NODES, &v) == -1) {
				fprintf(stderr, "mosrun: -r: expected a node "
				    "number, found '%s'\n", optarg);
				return 2;
			}
			o.best = 0;
			o.start_node = v;
			break;
		case 'S':
			o.sock = optarg;
			break;
		case 'P':
			o.move_mode = DEPUTY_MOVE_STOP;
			break;
		case 'O':
			o.move_mode = DEPUTY_MOVE_POST;
			break;
		case 'H':
			usage(0);
		default:
			usage(2);
		}
	}
	argv += optind;
	if ((o.recover == NULL) == (argv[0] == NULL) ||
	    (o.noverrides > 0 && o.recover == NULL) ||
	    ((o.ckpt_every > 0 || o.ckpt_max > 0) && o.ckpt_base == NULL))
		usage(2);
	if (o.start_node != 0 && !mosrun_listed(&o, o.start_node)) {
		fprintf(stderr, "mosrun: -r %u: not one of the nodes -n lists\n",
		    o.start_node);
		return 2;
	}
	o.argv = o.recover != NULL ? recover_argv : argv;
	recover_argv[0] = (char *)o.recover;

	/*
	 * Already migratable (mosrun run by a migratable process that execs
	 * it): the deputy we have goes on holding the new program.
	 */
	if (proc_status(0, "TracerPid", tracer, sizeof tracer) == 0 &&
	    strcmp(tracer, "0") != 0) {
		if (!mosrun_held(o.sock))
			fprintf(stderr, "mosrun: this process is traced by "
			    "another program; %s runs here, not migratable\n",
			    argv[0]);
		mosrun_exec(argv);
	}

	if (o.recover != NULL && (kept = mosrun_kept_pid(o.recover)) > 0)
		return mosrun_recover_kept(&o, kept);
	if (pipe2(sync, O_CLOEXEC) == -1) {
		fprintf(stderr, "mosrun: pipe: %s\n", strerror(errno));
		return 1;
	}
	/* Twice, so that the deputy is no child of the program's. */
	switch (pid = fork()) {
	case -1:
		fprintf(stderr, "mosrun: fork: %s\n", strerror(errno));
		return 1;
	case 0:
		close(sync[0]);
		if (fork() == 0)
			_exit(deputy_main(&o, self, sync[1]));
		_exit(0);
	}
	close(sync[1]);
	waitpid(pid, &st, 0);
	/* The deputy writes one byte once it holds us and mosd knows. */
	if (read(sync[0], &ok, 1) != 1) {
		fprintf(stderr, "mosrun: the deputy failed to start (see its "
		    "message above); not running %s\n", argv[0]);
		return 1;
	}
	close(sync[0]);
	if (o.recover != NULL) {
		/* The deputy makes us the checkpoint's process while stopped. */
		close_range(3, ~0U, 0);
		raise(SIGSTOP);
		fprintf(stderr, "mosrun: not recovered from %s\n", o.recover);
		return 1;
	}
	mosrun_exec(argv);
}
