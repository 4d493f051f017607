/*
 * check_lib's JSON documents (lib/ctl-json.c): fixed control replies and
 * the text the tools and the web API must print for them, golden files in
 * tests/json; and the tables of state and flag names. Part of the
 * check_lib binary (check_lib.c runs it).
 */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "proto/ctl.pb-c.h"
#include "check_lib.h"

#define JSON_DIR	"tests/json"

static char *
golden(const char *name)
{
	char	 path[256], *buf;
	FILE	*f;
	size_t	 n;

	snprintf(path, sizeof path, "%s/%s", JSON_DIR, name);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	buf = xcalloc(1, 65536);
	n = fread(buf, 1, 65535, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* OSM_GOLDEN_WRITE=1 rewrites the golden files (then read the diff). */
static void
check_golden(const char *name, json_t *doc)
{
	char	*got = ctl_json_text(doc), *want, path[256];
	FILE	*f;

	if (getenv("OSM_GOLDEN_WRITE") != NULL) {
		snprintf(path, sizeof path, "%s/%s", JSON_DIR, name);
		ck_assert_ptr_nonnull(f = fopen(path, "w"));
		fputs(got, f);
		fclose(f);
	}
	want = golden(name);

	ck_assert_msg(strcmp(got, want) == 0, "%s:\n--- got\n%s--- expected\n%s",
	    name, got, want);
	free(got);
	free(want);
}

/*
 * Three nodes: 1 up and blocked (and a flag bit no table names), 2 heard
 * of but silent (its last figures must not show), 3 never heard of.
 */
START_TEST(test_json_status)
{
	Osm__CtlReply	 r = OSM__CTL_REPLY__INIT;
	Osm__CtlNode	 n[3], *np[3];
	size_t		 i;

	for (i = 0; i < 3; i++) {
		osm__ctl_node__init(&n[i]);
		np[i] = &n[i];
		n[i].node = i + 1;
	}
	n[0].address = "10.77.0.1";
	n[0].up = n[0].known = 1;
	n[0].has_load = n[0].has_cpus = n[0].has_speed = 1;
	n[0].has_mem_total = n[0].has_mem_free = n[0].has_guests = 1;
	n[0].has_swap_total = n[0].has_swap_free = 1;
	n[0].has_age_ms = n[0].has_flags = 1;
	n[0].load = 129;
	n[0].cpus = 50;
	n[0].speed = 1500;
	n[0].mem_total = 512;
	n[0].mem_free = 400;
	n[0].swap_total = 1024;
	n[0].swap_free = 1000;
	n[0].guests = 2;
	n[0].age_ms = 0;
	n[0].flags = OSM__NODE_FLAG__NODE_BLOCK | 0x100;
	n[1] = n[0];
	n[1].node = 2;
	n[1].address = "10.77.0.2";
	n[1].up = 0;
	n[1].age_ms = 7250;
	n[2].address = "10.77.0.3";
	r.ok = 1;
	r.has_self = r.has_flags = 1;
	r.self = 1;
	r.flags = OSM__NODE_FLAG__NODE_BLOCK | OSM__NODE_FLAG__NODE_LSTAY;
	r.nodes = np;
	r.n_nodes = 3;
	check_golden("status.json", ctl_json_status(&r));
}
END_TEST

START_TEST(test_json_stats)
{
	Osm__CtlReply	 r = OSM__CTL_REPLY__INIT;
	Osm__CtlCounter	 c[2], *cp[2] = { &c[0], &c[1] };

	osm__ctl_counter__init(&c[0]);
	osm__ctl_counter__init(&c[1]);
	c[0].name = "gossip_received";
	c[0].value = 12345678901ULL;
	c[1].name = "dropped_bad_mac";
	c[1].value = 0;
	r.ok = 1;
	r.has_self = 1;
	r.self = 4;
	r.counters = cp;
	r.n_counters = 2;
	check_golden("stats.json", ctl_json_stats(&r));
}
END_TEST

/* Two processes, one away, one with a state and a name JSON cannot hold. */
START_TEST(test_json_ps)
{
	Osm__CtlReply	 r = OSM__CTL_REPLY__INIT;
	Osm__CtlProc	 p[2], *pp[2] = { &p[0], &p[1] };
	Osm__CtlCheckpoints c = OSM__CTL_CHECKPOINTS__INIT;
	char		*history[2] = {
		"moved to node 2",
		"came home from node 2: writable shared file mapping" };

	osm__ctl_proc__init(&p[0]);
	osm__ctl_proc__init(&p[1]);
	p[0].pid = 4242;
	p[0].uid = 1000;
	p[0].user = "ann";
	p[0].where = 2;
	p[0].state = OSM__PROC_STATE__PROC_RUNNING;
	p[0].cpu_permille = 995;
	p[0].rss_bytes = 5ULL << 30;
	p[0].command = "gzip -9 \"big file\"";
	p[0].why = history[1];
	p[0].history = history;
	p[0].n_history = 2;
	/* checkpoints failing since the last good one */
	c.has_last_ms = 1;
	c.last_ms = 1796000000123ULL;
	c.last_path = "/home/ann/ck.3";
	c.written = 3;
	c.has_failed_ms = 1;
	c.failed_ms = 1796000060456ULL;
	c.failed_why = "process 4242 has child processes (4250): they would "
	    "be lost";
	c.failed = 2;
	p[0].checkpoints = &c;
	p[1].pid = 7;
	p[1].uid = 0;
	p[1].user = "root";
	p[1].where = 1;
	p[1].state = 99;
	p[1].cpu_permille = 0;
	p[1].rss_bytes = 4096;
	p[1].command = "caf\xe9\xff";
	r.ok = 1;
	r.has_self = 1;
	r.self = 1;
	r.procs = pp;
	r.n_procs = 2;
	check_golden("ps.json", ctl_json_ps(&r, 0));
	check_golden("ps-pid.json", ctl_json_ps(&r, 4242));
	/* an empty reply is an empty list, not a missing one */
	r.n_procs = 0;
	r.has_self = 0;
	check_golden("ps-empty.json", ctl_json_ps(&r, 0));
}
END_TEST

/* An action's reply, as the web monitor answers it. */
START_TEST(test_json_reply)
{
	Osm__CtlReply	 r = OSM__CTL_REPLY__INIT;

	r.ok = 1;
	r.has_flags = 1;
	r.flags = OSM__NODE_FLAG__NODE_BLOCK;
	check_golden("reply-flags.json", ctl_json_reply(&r));
	osm__ctl_reply__init(&r);
	r.ok = 0;
	r.error = "node 3 is down";
	check_golden("reply-error.json", ctl_json_reply(&r));
	osm__ctl_reply__init(&r);
	r.ok = 1;
	r.has_count = 1;
	r.count = 2;
	check_golden("reply-count.json", ctl_json_reply(&r));
}
END_TEST

START_TEST(test_state_names)
{
	uint32_t	 bit;
	char		*s;

	ck_assert_str_eq(ctl_node_state_name(ctl_node_state(1, 1)), "up");
	ck_assert_str_eq(ctl_node_state_name(ctl_node_state(0, 1)), "down");
	ck_assert_str_eq(ctl_node_state_name(ctl_node_state(0, 0)),
	    "unknown");
	ck_assert_str_eq(ctl_node_state_name(ctl_node_state(1, 0)),
	    "unknown");
	ck_assert_str_eq(ctl_flag_name(0, &bit), "block");
	ck_assert_uint_eq(bit, OSM__NODE_FLAG__NODE_BLOCK);
	ck_assert_ptr_null(ctl_flag_name(3, &bit));
	s = ctl_flags_text(OSM__NODE_FLAG__NODE_STAY | 0x40, ",", "-");
	ck_assert_str_eq(s, "stay,0x40");
	free(s);
	s = ctl_flags_text(0, ",", "-");
	ck_assert_str_eq(s, "-");
	free(s);
	ck_assert_str_eq(ctl_state_name(OSM__PROC_STATE__PROC_MOVING),
	    "moving");
	ck_assert_ptr_null(ctl_state_name(0));
}
END_TEST

void
check_lib_json(Suite *s)
{
	TCase	*tc;

	tc = tcase_create("json");
	tcase_add_test(tc, test_json_status);
	tcase_add_test(tc, test_json_stats);
	tcase_add_test(tc, test_json_ps);
	tcase_add_test(tc, test_json_reply);
	tcase_add_test(tc, test_state_names);
	suite_add_tcase(s, tc);
}
