/*
 * moscr — checkpoint a process to an image and restore it, on this node
 * or another. A thin command over libmigrate, one file per subcommand.
 *
 * Exit status: 0 success, 1 failure, 2 usage error; restore without
 * --detach exits as the restored process did.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "moscr.h"

static const struct moscr_cmd *moscr_cmds[] = {
	&moscr_dump_cmd,
	&moscr_restore_cmd,
	&moscr_info_cmd,
};

static void __attribute__((noreturn))
moscr_main_usage(FILE *f, int status)
{
	size_t	i;

	fprintf(f, "usage: moscr command [arguments]\n\n");
	for (i = 0; i < nitems(moscr_cmds); i++)
		fprintf(f, "  moscr %s %s\n      %s\n", moscr_cmds[i]->name,
		    moscr_cmds[i]->usage, moscr_cmds[i]->help);
	fprintf(f, "\n'moscr COMMAND --help' for one command; see moscr(1).\n");
	exit(status);
}

void
moscr_usage(const struct moscr_cmd *c)
{
	fprintf(stderr, "usage: moscr %s %s\n", c->name, c->usage);
	exit(2);
}

/* -h or --help anywhere among a command's arguments. */
int
moscr_help_wanted(int argc, char **argv, const struct moscr_cmd *c)
{
	int	i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			printf("usage: moscr %s %s\n\n%s\n", c->name, c->usage,
			    c->help);
			return 1;
		}
	}
	return 0;
}

void
moscr_err(const char *fmt, ...)
{
	va_list	ap;

	fprintf(stderr, "moscr: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

int
main(int argc, char **argv)
{
	size_t	i;

	log_init(1, "moscr");
	if (argc < 2)
		moscr_main_usage(stderr, 2);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
		moscr_main_usage(stdout, 0);
	for (i = 0; i < nitems(moscr_cmds); i++) {
		if (strcmp(argv[1], moscr_cmds[i]->name) == 0)
			return moscr_cmds[i]->exec(argc - 1, argv + 1);
	}
	moscr_err("unknown command: %s", argv[1]);
	moscr_main_usage(stderr, 2);
}
