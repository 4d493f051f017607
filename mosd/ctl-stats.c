/* CTL_STATS: the daemon's message counters, drops by reason included. */
#include <stdlib.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

const char *const mosd_counter_names[C_NCOUNTERS] = {
	[C_RX_OK] = "gossip_received",
	[C_RX_TRUNCATED] = "dropped_truncated",
	[C_RX_OVERSIZED] = "dropped_oversized",
	[C_RX_BAD_MAGIC] = "dropped_bad_magic",
	[C_RX_BAD_VERSION] = "dropped_wrong_version",
	[C_RX_BAD_LENGTH] = "dropped_bad_length",
	[C_RX_BAD_MAC] = "dropped_bad_mac",
	[C_RX_BAD_KIND] = "dropped_unknown_kind",
	[C_RX_MALFORMED] = "dropped_malformed",
	[C_RX_BAD_FIELD] = "dropped_bad_field",
	[C_RX_UNKNOWN_NODE] = "dropped_unknown_node",
	[C_RX_FROM_SELF] = "dropped_from_self",
	[C_RX_REPLAY] = "dropped_replay",
	[C_RX_WRONG_SOURCE] = "dropped_wrong_source",
	[C_TX_OK] = "gossip_sent",
	[C_TX_ERROR] = "send_errors",
	[C_CTL_REQUESTS] = "control_requests",
	[C_CTL_REFUSED] = "control_refused",
	[C_OFFERS_ACCEPTED] = "offers_accepted",
	[C_OFFERS_REFUSED] = "offers_refused",
	[C_CTL_TURNED_AWAY] = "control_turned_away",
	[C_CTL_DROPPED] = "control_clients_dropped",
	[C_HS_TAKEN] = "handshakes_taken",
	[C_HS_REFUSED] = "handshakes_refused",
	[C_GUARD_SENT] = "guests_sent_home_for_memory",
	[C_OOM_KILLS] = "oom_kills",
	[C_CTL_THROTTLED] = "control_requests_delayed",
	[C_LOOP_ITERATIONS] = "loop_iterations",
	[C_LOOP_SLOW] = "loop_slow_iterations",
	[C_LOOP_LONGEST_MS] = "loop_longest_ms",
	[C_LOOP_SLOW_WAITED] = "loop_slow_waited",
	[C_LOOP_SLOW_BUSY] = "loop_slow_busy",
	[C_LOOP_CORE_WAITS] = "loop_core_waits",
	[C_LOOP_CORE_LONGEST_MS] = "loop_core_wait_longest_ms",
	[C_FILE_HASHES_KNOWN] = "file_hashes_known",
	[C_FILE_HASHES_MADE] = "file_hashes_made",
};

static int
ctl_stats(struct mosd *m, struct peer *p, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	Osm__CtlCounter	*c;
	size_t		 i;

	size_t		 n = C_NCOUNTERS + m->nhomes;

	c = xcalloc(n, sizeof *c);
	reply->counters = xcalloc(n, sizeof *reply->counters);
	reply->n_counters = n;
	reply->has_self = 1;
	reply->self = m->gossip->self;
	for (i = 0; i < n; i++) {
		osm__ctl_counter__init(&c[i]);
		if (i < C_NCOUNTERS) {
			c[i].name = (char *)mosd_counter_names[i];
			c[i].value = m->counters[i];
		} else {
			/* returns home of processes homed here, by reason */
			c[i].name = m->homes[i - C_NCOUNTERS].name;
			c[i].value = m->homes[i - C_NCOUNTERS].n;
		}
		reply->counters[i] = &c[i];
	}
	return 0;
}

const struct ctl_cmd ctl_stats_cmd = {
	.type = OSM__CTL_TYPE__CTL_STATS,
	.name = "stats",
	.root_only = 0,
	.exec = ctl_stats,
};
