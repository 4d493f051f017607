/* mosctl: one file per subcommand, registered in mosctl.c's table. */
#ifndef MOSCTL_H
#define MOSCTL_H

#include "lib/osm.h"

struct mosctl_cmd {
	const char	*name;
	const char	*usage;		/* arguments, for the help */
	const char	*help;
	int		 root;		/* mosd takes it from root only */
	int		 (*exec)(const char *sock, int argc, char **argv);
};

extern const struct mosctl_cmd mosctl_status_cmd;
extern const struct mosctl_cmd mosctl_stats_cmd;
extern const struct mosctl_cmd mosctl_block_cmd, mosctl_noblock_cmd,
	    mosctl_stay_cmd, mosctl_nostay_cmd, mosctl_lstay_cmd,
	    mosctl_nolstay_cmd, mosctl_expel_cmd, mosctl_bring_cmd;

/* mosctl.c */
struct Osm__CtlReply *mosctl_request(const char *sock,
	    struct Osm__CtlRequest *req);
struct Osm__CtlReply *mosctl_call(const char *sock, int type);
int	 mosctl_json_arg(int argc, char **argv);

#endif
