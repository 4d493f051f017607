/*
 * The names of the states a tool shows: a process's (ProcState,
 * proto/ctl.proto), a node's as this node sees it, and a node's flags
 * (NodeFlag). One table each, so that mosctl, mosps, mosmon, the JSON
 * documents and the web monitor all say the same, and mosd knows which
 * process states an agent may send.
 */
#include <stdlib.h>

#include "osm.h"
#include "proto/ctl.pb-c.h"

static const char *const ctl_states[] = {
	[OSM__PROC_STATE__PROC_RUNNING] = "running",
	[OSM__PROC_STATE__PROC_MOVING] = "moving",
	[OSM__PROC_STATE__PROC_ARRIVING] = "arriving",
	[OSM__PROC_STATE__PROC_STOPPED] = "stopped",
	[OSM__PROC_STATE__PROC_LEAVING] = "leaving",
};

static const char *const ctl_node_states[] = {
	[CTL_NODE_UNKNOWN] = "unknown",
	[CTL_NODE_UP] = "up",
	[CTL_NODE_DOWN] = "down",
};

static const struct {
	uint32_t	 bit;
	const char	*name;
} ctl_flags[] = {
	{ OSM__NODE_FLAG__NODE_BLOCK, "block" },
	{ OSM__NODE_FLAG__NODE_STAY, "stay" },
	{ OSM__NODE_FLAG__NODE_LSTAY, "lstay" },
};

/* The name of a ProcState value, or NULL if it is none. */
const char *
ctl_state_name(int state)
{
	if (state < 0 || (size_t)state >= nitems(ctl_states))
		return NULL;
	return ctl_states[state];
}

/*
 * A node as a CtlNode describes it: never heard of since this mosd
 * started (whatever up says), heard of and up, or heard of and silent.
 */
enum ctl_node_state
ctl_node_state(int up, int known)
{
	if (!known)
		return CTL_NODE_UNKNOWN;
	return up ? CTL_NODE_UP : CTL_NODE_DOWN;
}

const char *
ctl_node_state_name(enum ctl_node_state state)
{
	if ((size_t)state >= nitems(ctl_node_states))
		return "?";
	return ctl_node_states[state];
}

/* The i-th flag a node can have and its bit, or NULL past the last. */
const char *
ctl_flag_name(size_t i, uint32_t *bit)
{
	if (i >= nitems(ctl_flags))
		return NULL;
	*bit = ctl_flags[i].bit;
	return ctl_flags[i].name;
}

/*
 * A node's flags as words joined by sep, or none when there are none; bits
 * no table names show as a number. The caller frees it.
 */
char *
ctl_flags_text(uint32_t flags, const char *sep, const char *none)
{
	char	*s = NULL, *t;
	size_t	 i;

	for (i = 0; i < nitems(ctl_flags); i++) {
		if ((flags & ctl_flags[i].bit) == 0)
			continue;
		flags &= ~ctl_flags[i].bit;
		t = s;
		xasprintf(&s, "%s%s%s", t != NULL ? t : "", t != NULL ? sep : "",
		    ctl_flags[i].name);
		free(t);
	}
	if (flags != 0) {
		t = s;
		xasprintf(&s, "%s%s%#x", t != NULL ? t : "", t != NULL ? sep : "",
		    (unsigned)flags);
		free(t);
	}
	return s != NULL ? s : xstrdup(none);
}
