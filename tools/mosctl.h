/* mosctl: one file per subcommand, registered in mosctl.c's table. */
#ifndef MOSCTL_H
#define MOSCTL_H

#include "lib/osm.h"

struct mosctl_cmd {
	const char	*name;
	const char	*usage;		/* arguments, for the help */
	const char	*help;
	int		 (*exec)(const char *, int, char **);
};

extern const struct mosctl_cmd mosctl_status_cmd;
extern const struct mosctl_cmd mosctl_stats_cmd;

/* mosctl.c */
struct Osm__CtlReply *mosctl_call(const char *, int);

#endif
