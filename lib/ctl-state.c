/*
 * The names of a process's states (ProcState, proto/ctl.proto), as mosps
 * prints them: one table, so that every tool says the same, and mosd
 * knows which values an agent may send.
 */
#include "osm.h"
#include "proto/ctl.pb-c.h"

static const char *const ctl_states[] = {
	[OSM__PROC_STATE__PROC_RUNNING] = "running",
	[OSM__PROC_STATE__PROC_MOVING] = "moving",
	[OSM__PROC_STATE__PROC_ARRIVING] = "arriving",
	[OSM__PROC_STATE__PROC_STOPPED] = "stopped",
	[OSM__PROC_STATE__PROC_LEAVING] = "leaving",
};

/* The name of a ProcState value, or NULL if it is none. */
const char *
ctl_state_name(int state)
{
	if (state < 0 || (size_t)state >= nitems(ctl_states))
		return NULL;
	return ctl_states[state];
}
