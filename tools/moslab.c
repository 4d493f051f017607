/*
 * moslab: build a lab cluster of N nodes on this machine and drive it.
 * Each subcommand lives in its own moslab-*.c file and registers a
 * struct lab_cmd; this file parses the global options and dispatches.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/osm.h"
#include "moslab.h"

static const struct lab_cmd *lab_cmds[] = {
	&cmd_up,
	&cmd_down,
	&cmd_exec,
	&cmd_start,
	&cmd_stop,
	&cmd_kill,
	&cmd_status,
};

/* moslab's argument bytes, where a node init writes its name for ps. */
static char	*lab_argv;
static size_t	 lab_argv_len;

static void
lab_usage(FILE *f)
{
	size_t	i;

	fprintf(f, "usage: moslab [-n NAME] COMMAND [ARGS]\n\n"
	    "Build a lab cluster on this machine: nodes made of namespaces "
	    "and cgroups,\neach running mosd. Run as root.\n\ncommands:\n");
	for (i = 0; i < nitems(lab_cmds); i++)
		fprintf(f, "  %s%s%s\n\t%s\n", lab_cmds[i]->name,
		    *lab_cmds[i]->args != '\0' ? " " : "", lab_cmds[i]->args,
		    lab_cmds[i]->help);
	fprintf(f, "  help [COMMAND]\n\tshow this text, or a command's\n\n"
	    "options:\n"
	    "  -n NAME\tthe lab (1-6 of a-z, 0-9; default $MOSLAB_NAME "
	    "or 'osm')\n"
	    "  -h, --help\tshow this text\n\n"
	    "environment:\n"
	    "  MOSLAB_NAME\tthe lab's name when -n is not given\n"
	    "  MOSLAB_DIR\twhere labs keep their state (%s)\n"
	    "  MOSLAB_MOSD\tthe mosd to run (mosd beside moslab)\n\n"
	    "See moslab(1).\n", LAB_BASE_DIR);
}

void
lab_usage_cmd(const struct lab_cmd *cmd)
{
	printf("usage: moslab [-n NAME] %s%s%s\n%s\n", cmd->name,
	    *cmd->args != '\0' ? " " : "", cmd->args, cmd->help);
}

/* Print a user-facing error and free it; the value is the exit code. */
int
lab_fail(char *cause)
{
	fprintf(stderr, "moslab: %s\n", cause);
	free(cause);
	return 1;
}

void
lab_set_title(const char *title)
{
	size_t	len = strlen(title);

	if (lab_argv_len == 0)
		return;
	if (len > lab_argv_len - 1)
		len = lab_argv_len - 1;
	memset(lab_argv, 0, lab_argv_len);
	memcpy(lab_argv, title, len);
}

static const struct lab_cmd *
lab_find_cmd(const char *name)
{
	size_t	i;

	for (i = 0; i < nitems(lab_cmds); i++)
		if (strcmp(lab_cmds[i]->name, name) == 0)
			return lab_cmds[i];
	return NULL;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const struct lab_cmd	*cmd;
	struct lab		 lab;
	const char		*name = NULL;
	char			*cause;
	int			 ch, rc;

	log_init(1, "moslab");
	lab_argv = argv[0];
	lab_argv_len = argv[argc - 1] + strlen(argv[argc - 1]) + 1 - argv[0];
	while ((ch = getopt_long(argc, argv, "+hn:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			lab_usage(stdout);
			return 0;
		case 'n':
			name = optarg;
			break;
		default:
			lab_usage(stderr);
			return 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0) {
		lab_usage(stderr);
		return 2;
	}
	if (strcmp(argv[0], "help") == 0) {
		if (argc == 1) {
			lab_usage(stdout);
			return 0;
		}
		if ((cmd = lab_find_cmd(argv[1])) == NULL) {
			fprintf(stderr, "moslab: unknown command '%s'\n",
			    argv[1]);
			return 2;
		}
		lab_usage_cmd(cmd);
		return 0;
	}
	if ((cmd = lab_find_cmd(argv[0])) == NULL) {
		fprintf(stderr, "moslab: unknown command '%s' (try 'moslab "
		    "help')\n", argv[0]);
		return 2;
	}
	/* For exec, argv[1] is K: its command's own --help passes through. */
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)) {
		lab_usage_cmd(cmd);
		return 0;
	}
	if (argc - 1 < cmd->argc_min ||
	    (cmd->argc_max != -1 && argc - 1 > cmd->argc_max)) {
		lab_usage_cmd(cmd);
		return 2;
	}

	if (geteuid() != 0) {
		fprintf(stderr, "moslab: must run as root (a lab is made of "
		    "namespaces, links and cgroups)\n");
		return 1;
	}
	if (lab_init(&lab, name, &cause) == -1) {
		fprintf(stderr, "moslab: %s\n", cause);
		free(cause);
		rc = 2;
		goto out;
	}
	if (cgroup_init(&cause) == -1 ||
	    ((cmd->flags & CMD_LOCK) && lab_lock(&lab, &cause) == -1)) {
		rc = lab_fail(cause);
		goto out;
	}
	if (cmd->flags & CMD_LAB) {
		if (lab_load(&lab, &cause) == -1) {
			rc = lab_fail(cause);
			goto out;
		}
		if (lab.nnodes == 0) {
			fprintf(stderr, "moslab: no lab '%s' is up (try "
			    "'moslab up N')\n", lab.name);
			rc = 1;
			goto out;
		}
	}
	rc = cmd->exec(&lab, argc, argv);
out:
	lab_free(&lab);
	return rc;
}
