/*
 * mosctl block, stay, lstay and their no- forms, expel and bring: root's
 * commands that change this node's part in the cluster.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosctl.h"
#include "proto/ctl.pb-c.h"

static const struct {
	const char	*name;
	uint32_t	 set;
	uint32_t	 clear;
} mosctl_admin_flag_cmds[] = {
	{ "block", OSM__NODE_FLAG__NODE_BLOCK, 0 },
	{ "noblock", 0, OSM__NODE_FLAG__NODE_BLOCK },
	{ "stay", OSM__NODE_FLAG__NODE_STAY, 0 },
	{ "nostay", 0, OSM__NODE_FLAG__NODE_STAY },
	{ "lstay", OSM__NODE_FLAG__NODE_LSTAY, 0 },
	{ "nolstay", 0, OSM__NODE_FLAG__NODE_LSTAY },
};

static int
mosctl_admin_flags(const char *sock, int argc, char **argv)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*r;
	char		*words;
	size_t		 i;
	int		 rc = 1;

	if (argc != 1) {
		fprintf(stderr, "usage: mosctl %s\n", argv[0]);
		return 2;
	}
	for (i = 0; i < nitems(mosctl_admin_flag_cmds); i++)
		if (strcmp(argv[0], mosctl_admin_flag_cmds[i].name) == 0)
			break;
	if (i == nitems(mosctl_admin_flag_cmds))
		fatalx("no flag for command %s", argv[0]);
	req.type = OSM__CTL_TYPE__CTL_FLAGS;
	if (mosctl_admin_flag_cmds[i].set != 0) {
		req.has_set_flags = 1;
		req.set_flags = mosctl_admin_flag_cmds[i].set;
	}
	if (mosctl_admin_flag_cmds[i].clear != 0) {
		req.has_clear_flags = 1;
		req.clear_flags = mosctl_admin_flag_cmds[i].clear;
	}
	if ((r = mosctl_request(sock, &req)) == NULL)
		return 1;
	/* The change is made; a reply without the flags is mosd's fault. */
	if (!r->has_flags) {
		fprintf(stderr, "mosctl: mosd did not say the node's flags\n");
		goto out;
	}
	words = ctl_flags_text(r->flags, " ", "none");
	printf("node flags: %s\n", words);
	free(words);
	rc = 0;
out:
	ctl_reply_free(r);
	return rc;
}

/* expel and bring: one request, how many processes were told to move. */
static int
mosctl_admin_move(const char *sock, int argc, char **argv, int type,
    const char *one, const char *many)
{
	Osm__CtlReply	*r;
	int		 rc = 1;

	if (argc != 1) {
		fprintf(stderr, "usage: mosctl %s\n", argv[0]);
		return 2;
	}
	if ((r = mosctl_call(sock, type)) == NULL)
		return 1;
	if (!r->has_count) {
		fprintf(stderr, "mosctl: mosd did not say how many processes "
		    "it told to move\n");
		goto out;
	}
	printf("%u %s\n", r->count, r->count == 1 ? one : many);
	rc = 0;
out:
	ctl_reply_free(r);
	return rc;
}

static int
mosctl_admin_expel(const char *sock, int argc, char **argv)
{
	return mosctl_admin_move(sock, argc, argv, OSM__CTL_TYPE__CTL_EXPEL,
	    "guest sent home", "guests sent home");
}

static int
mosctl_admin_bring(const char *sock, int argc, char **argv)
{
	return mosctl_admin_move(sock, argc, argv, OSM__CTL_TYPE__CTL_BRING,
	    "process called home", "processes called home");
}

const struct mosctl_cmd mosctl_block_cmd = {
	.name = "block",
	.usage = "",
	.help = "take no new guests",
	.root = 1,
	.exec = mosctl_admin_flags,
};

const struct mosctl_cmd mosctl_noblock_cmd = {
	.name = "noblock",
	.usage = "",
	.help = "take new guests again",
	.root = 1,
	.exec = mosctl_admin_flags,
};

const struct mosctl_cmd mosctl_stay_cmd = {
	.name = "stay",
	.usage = "",
	.help = "no automatic migration away from this node",
	.root = 1,
	.exec = mosctl_admin_flags,
};

const struct mosctl_cmd mosctl_nostay_cmd = {
	.name = "nostay",
	.usage = "",
	.help = "automatic migration away from this node again",
	.root = 1,
	.exec = mosctl_admin_flags,
};

const struct mosctl_cmd mosctl_lstay_cmd = {
	.name = "lstay",
	.usage = "",
	.help = "this node's own processes stay; guests may move",
	.root = 1,
	.exec = mosctl_admin_flags,
};

const struct mosctl_cmd mosctl_nolstay_cmd = {
	.name = "nolstay",
	.usage = "",
	.help = "this node's own processes may move again",
	.root = 1,
	.exec = mosctl_admin_flags,
};

const struct mosctl_cmd mosctl_expel_cmd = {
	.name = "expel",
	.usage = "",
	.help = "send every guest on this node home",
	.root = 1,
	.exec = mosctl_admin_expel,
};

const struct mosctl_cmd mosctl_bring_cmd = {
	.name = "bring",
	.usage = "",
	.help = "bring every process homed here back home",
	.root = 1,
	.exec = mosctl_admin_bring,
};
