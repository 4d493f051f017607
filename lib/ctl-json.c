/*
 * The JSON documents of control replies: what `mosctl status --json`,
 * `mosctl stats --json` and `mosps --json` print, and what mosd's web API
 * (/api/v1/nodes, /api/v1/stats, /api/v1/procs) returns, built here once
 * so that they cannot drift apart. The field names are a stable interface
 * (mosctl(1), mosps(1)): add fields, never rename or drop one.
 *
 * Every object has all its fields; a figure that is not known is null
 * rather than missing, so that a script can index without checking.
 * Names of states and flags come from ctl-state.c's tables.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "osm.h"
#include "proto/ctl.pb-c.h"

/* Two decimals is what mosd measures; ten digits keeps them exact. */
#define CTL_JSON_FLAGS	(JSON_INDENT(2) | JSON_REAL_PRECISION(10))

static json_t *
ctl_json_uint(protobuf_c_boolean has, uint64_t v)
{
	return has ? json_integer((json_int_t)v) : json_null();
}

/* A figure sent in hundredths (load, CPUs) as a real. */
static json_t *
ctl_json_hundredths(protobuf_c_boolean has, uint32_t v)
{
	return has ? json_real(v / 100.0) : json_null();
}

static json_t *
ctl_json_flags(uint32_t flags)
{
	json_t		*a = json_array();
	const char	*name;
	uint32_t	 bit;
	size_t		 i;

	for (i = 0; (name = ctl_flag_name(i, &bit)) != NULL; i++) {
		if (flags & bit) {
			json_array_append_new(a, json_string(name));
			flags &= ~bit;
		}
	}
	/* A bit this build does not know still shows, as a number. */
	for (bit = 1; flags != 0 && bit != 0; bit <<= 1) {
		if (flags & bit) {
			json_array_append_new(a, json_integer(bit));
			flags &= ~bit;
		}
	}
	return a;
}

static json_t *
ctl_json_node(const Osm__CtlNode *n)
{
	enum ctl_node_state	 st = ctl_node_state(n->up, n->known);
	json_t			*o;
	int			 fresh = st == CTL_NODE_UP;

	o = json_object();
	json_object_set_new(o, "node", json_integer(n->node));
	json_object_set_new(o, "address", json_string(n->address));
	json_object_set_new(o, "state", json_string(ctl_node_state_name(st)));
	/* What a down node last said is stale: only its age is news. */
	json_object_set_new(o, "load",
	    ctl_json_hundredths(fresh && n->has_load, n->load));
	json_object_set_new(o, "cpus",
	    ctl_json_hundredths(fresh && n->has_cpus, n->cpus));
	json_object_set_new(o, "speed",
	    ctl_json_uint(fresh && n->has_speed, n->speed));
	json_object_set_new(o, "mem_total_mib",
	    ctl_json_uint(fresh && n->has_mem_total, n->mem_total));
	json_object_set_new(o, "mem_free_mib",
	    ctl_json_uint(fresh && n->has_mem_free, n->mem_free));
	json_object_set_new(o, "swap_total_mib",
	    ctl_json_uint(fresh && n->has_swap_total, n->swap_total));
	json_object_set_new(o, "swap_free_mib",
	    ctl_json_uint(fresh && n->has_swap_free, n->swap_free));
	json_object_set_new(o, "guests",
	    ctl_json_uint(fresh && n->has_guests, n->guests));
	json_object_set_new(o, "flags", fresh && n->has_flags ?
	    ctl_json_flags(n->flags) : json_null());
	json_object_set_new(o, "age_ms",
	    ctl_json_uint(st != CTL_NODE_UNKNOWN && n->has_age_ms, n->age_ms));
	return o;
}

/*
 * CTL_STATUS: {"self", "flags", "active", "nodes": [...]}, active being
 * the number of nodes up, this one included.
 */
json_t *
ctl_json_status(const Osm__CtlReply *r)
{
	json_t	*doc, *nodes;
	size_t	 i, active = 0;

	nodes = json_array();
	for (i = 0; i < r->n_nodes; i++) {
		if (ctl_node_state(r->nodes[i]->up, r->nodes[i]->known) ==
		    CTL_NODE_UP)
			active++;
		json_array_append_new(nodes, ctl_json_node(r->nodes[i]));
	}
	doc = json_object();
	json_object_set_new(doc, "self", ctl_json_uint(r->has_self, r->self));
	json_object_set_new(doc, "flags", r->has_flags ?
	    ctl_json_flags(r->flags) : json_null());
	json_object_set_new(doc, "active", json_integer(active));
	json_object_set_new(doc, "nodes", nodes);
	return doc;
}

/* CTL_STATS: {"self", "counters": {name: value, ...}} in mosd's order. */
json_t *
ctl_json_stats(const Osm__CtlReply *r)
{
	json_t	*doc, *counters;
	size_t	 i;

	counters = json_object();
	for (i = 0; i < r->n_counters; i++)
		json_object_set_new(counters, r->counters[i]->name,
		    json_integer((json_int_t)r->counters[i]->value));
	doc = json_object();
	json_object_set_new(doc, "self", ctl_json_uint(r->has_self, r->self));
	json_object_set_new(doc, "counters", counters);
	return doc;
}

/*
 * A command line is whatever bytes the process had, and JSON strings are
 * UTF-8: a string that is not valid UTF-8 goes out with '?' for every
 * byte outside ASCII, rather than as no string at all.
 */
static json_t *
ctl_json_bytes(const char *s)
{
	json_t	*j;
	char	*copy, *c;

	if ((j = json_string(s)) != NULL)
		return j;
	copy = xstrdup(s);
	for (c = copy; *c != '\0'; c++)
		if ((unsigned char)*c >= 0x80)
			*c = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

/* A deputy's checkpoints: null when none was asked for. */
static json_t *
ctl_json_ckpt(const Osm__CtlCheckpoints *c)
{
	json_t	*o;

	if (c == NULL)
		return json_null();
	o = json_object();
	json_object_set_new(o, "last_ms", ctl_json_uint(c->has_last_ms,
	    c->last_ms));
	json_object_set_new(o, "last_path", c->last_path != NULL ?
	    ctl_json_bytes(c->last_path) : json_null());
	json_object_set_new(o, "written", json_integer(c->written));
	json_object_set_new(o, "failed_ms", ctl_json_uint(c->has_failed_ms,
	    c->failed_ms));
	json_object_set_new(o, "failed_why", c->failed_why != NULL ?
	    ctl_json_bytes(c->failed_why) : json_null());
	json_object_set_new(o, "failed", json_integer(c->failed));
	return o;
}

static json_t *
ctl_json_proc(const Osm__CtlProc *p)
{
	const char	*state = ctl_state_name(p->state);
	json_t		*o, *history;
	size_t		 i;

	o = json_object();
	json_object_set_new(o, "pid", json_integer(p->pid));
	json_object_set_new(o, "uid", json_integer(p->uid));
	json_object_set_new(o, "user", ctl_json_bytes(p->user));
	json_object_set_new(o, "where", json_integer(p->where));
	json_object_set_new(o, "state", state != NULL ? json_string(state) :
	    json_null());
	json_object_set_new(o, "cpu_percent", json_real(p->cpu_permille /
	    10.0));
	json_object_set_new(o, "rss_bytes", json_integer((json_int_t)
	    p->rss_bytes));
	json_object_set_new(o, "threads", json_integer(p->has_threads ?
	    p->threads : 1));
	json_object_set_new(o, "command", ctl_json_bytes(p->command));
	json_object_set_new(o, "why", p->why != NULL ?
	    ctl_json_bytes(p->why) : json_null());
	history = json_array();
	for (i = 0; i < p->n_history; i++)
		json_array_append_new(history, ctl_json_bytes(p->history[i]));
	json_object_set_new(o, "history", history);
	json_object_set_new(o, "checkpoints", ctl_json_ckpt(p->checkpoints));
	return o;
}

/* CTL_PS: {"self", "procs": [...]}, only process pid unless it is 0. */
json_t *
ctl_json_ps(const Osm__CtlReply *r, uint32_t pid)
{
	json_t	*doc, *procs;
	size_t	 i;

	procs = json_array();
	for (i = 0; i < r->n_procs; i++)
		if (pid == 0 || r->procs[i]->pid == pid)
			json_array_append_new(procs,
			    ctl_json_proc(r->procs[i]));
	doc = json_object();
	json_object_set_new(doc, "self", ctl_json_uint(r->has_self, r->self));
	json_object_set_new(doc, "procs", procs);
	return doc;
}

/* The document as text ending in a newline; frees doc. */
char *
ctl_json_text(json_t *doc)
{
	char	*s, *out;

	if ((s = json_dumps(doc, CTL_JSON_FLAGS)) == NULL)
		fatalx("%s: out of memory", __func__);
	json_decref(doc);
	xasprintf(&out, "%s\n", s);
	free(s);
	return out;
}

/* Print the document to f and free it; -1 if f failed. */
int
ctl_json_print(FILE *f, json_t *doc)
{
	char	*s = ctl_json_text(doc);
	int	 rc = 0;

	if (fputs(s, f) == EOF || fflush(f) == EOF || ferror(f))
		rc = -1;
	free(s);
	return rc;
}

/*
 * Any other reply, for the web monitor's actions: {"ok", "error", "flags",
 * "count", "path"}, each null where the reply has none.
 */
json_t *
ctl_json_reply(const Osm__CtlReply *r)
{
	json_t	*doc;

	doc = json_object();
	json_object_set_new(doc, "ok", json_boolean(r->ok));
	json_object_set_new(doc, "error", r->error != NULL ?
	    ctl_json_bytes(r->error) : json_null());
	json_object_set_new(doc, "flags", r->has_flags ?
	    ctl_json_flags(r->flags) : json_null());
	json_object_set_new(doc, "count", ctl_json_uint(r->has_count,
	    r->count));
	json_object_set_new(doc, "path", r->path != NULL ?
	    ctl_json_bytes(r->path) : json_null());
	return doc;
}
