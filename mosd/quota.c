/*
 * What the local users may make mosd hold, per uid (see quota.h). An
 * entry lives while its uid holds a connection; the list is short (the
 * uids with a connection open), so a walk finds one.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lib/osm.h"
#include "quota.h"

static struct quota_user *
quota_find(struct quota *q, uid_t uid)
{
	struct quota_user	*u;

	for (u = q->users; u != NULL; u = u->next)
		if (u->uid == uid)
			return u;
	return NULL;
}

static enum quota_kind
quota_kind(const struct quota *q, uid_t uid)
{
	if (uid == 0)
		return QUOTA_ROOT;
	if (uid >= q->lim.guest_first && uid <= q->lim.guest_last)
		return QUOTA_GUEST;
	return QUOTA_USER;
}

/* Would one more tool connection of uid (entry u, or none yet) fit? */
static int
quota_fits(const struct quota *q, uid_t uid, const struct quota_user *u,
    char **why)
{
	uint32_t	mine = u != NULL ? u->clients : 0;

	switch (quota_kind(q, uid)) {
	case QUOTA_ROOT:
		if (q->conns >= q->lim.total || q->root_clients >=
		    q->lim.clients) {
			xasprintf(why, "mosd is busy: root has %u connections "
			    "open", q->root_clients);
			return -1;
		}
		return 0;
	case QUOTA_GUEST:
		if (mine >= QUOTA_GUEST_CLIENTS) {
			xasprintf(why, "too many connections for guest uid %u "
			    "(%u at most)", (unsigned)uid,
			    QUOTA_GUEST_CLIENTS);
			return -1;
		}
		break;
	case QUOTA_USER:
		if (mine >= q->lim.clients_per_user) {
			xasprintf(why, "too many connections for uid %u "
			    "(%u at most)", (unsigned)uid,
			    q->lim.clients_per_user);
			return -1;
		}
		if (q->user_clients >= q->lim.clients) {
			xasprintf(why, "mosd is busy: users have %u "
			    "connections open", q->user_clients);
			return -1;
		}
		break;
	}
	if (q->conns + QUOTA_ROOT_SPARE >= q->lim.total) {
		xasprintf(why, "mosd is busy: %u connections open", q->conns);
		return -1;
	}
	return 0;
}

struct quota_user *
quota_connect(struct quota *q, uid_t uid, char **why)
{
	struct quota_user	*u = quota_find(q, uid);

	if (quota_fits(q, uid, u, why) == -1)
		return NULL;
	if (u == NULL) {
		u = xcalloc(1, sizeof *u);
		u->uid = uid;
		u->kind = quota_kind(q, uid);
		u->next = q->users;
		q->users = u;
	}
	u->clients++;
	q->conns++;
	if (u->kind == QUOTA_USER)
		q->user_clients++;
	else if (u->kind == QUOTA_ROOT)
		q->root_clients++;
	return u;
}

int
quota_may_register(struct quota *q, const struct quota_user *u, char **why)
{
	if (u->kind == QUOTA_USER && u->agents >= q->lim.agents_per_user) {
		xasprintf(why, "uid %u has %u processes registered already "
		    "(the most mosd takes)", (unsigned)u->uid, u->agents);
		return -1;
	}
	return 0;
}

/* One tool connection less of u; it registered, or it closed. */
static void
quota_drop_client(struct quota *q, struct quota_user *u)
{
	u->clients--;
	if (u->kind == QUOTA_USER)
		q->user_clients--;
	else if (u->kind == QUOTA_ROOT)
		q->root_clients--;
}

void
quota_registered(struct quota *q, struct quota_user *u)
{
	quota_drop_client(q, u);
	u->agents++;
}

int
quota_charge(struct quota *q, struct quota_user *u, uint64_t queued,
    size_t len, char **why)
{
	if (u->kind != QUOTA_ROOT && queued > 0 &&
	    queued + len > q->lim.client_output) {
		xasprintf(why, "it is not reading its replies (%llu bytes "
		    "unread)", (unsigned long long)queued);
		return -1;
	}
	if (u->kind != QUOTA_ROOT && u->output > 0 &&
	    u->output + len > q->lim.user_output) {
		xasprintf(why, "uid %u leaves %llu bytes of replies unread",
		    (unsigned)u->uid, (unsigned long long)u->output);
		return -1;
	}
	u->output += len;
	return 0;
}

int
quota_request(struct quota *q, struct quota_user *u, uint64_t now_ms,
    uint64_t *wait_ms)
{
	uint64_t	rate = q->lim.requests_per_user;
	uint64_t	cap = rate * 250 > 1000 ? rate * 250 : 1000;

	if (u->kind != QUOTA_USER || rate == 0)
		return 1;
	if (u->tokens_ms == 0)
		u->tokens = cap;	/* a new uid: its burst */
	else if (now_ms > u->tokens_ms) {
		u->tokens += (now_ms - u->tokens_ms) * rate;
		if (u->tokens > cap)
			u->tokens = cap;
	}
	u->tokens_ms = now_ms > 0 ? now_ms : 1;
	if (u->tokens >= 1000) {
		u->tokens -= 1000;
		return 1;
	}
	*wait_ms = (1000 - u->tokens + rate - 1) / rate;
	return 0;
}

void
quota_uncharge(struct quota *q, struct quota_user *u, uint64_t len)
{
	u->output -= len < u->output ? len : u->output;
}

void
quota_disconnect(struct quota *q, struct quota_user *u, int agent)
{
	struct quota_user	**pp;

	if (agent)
		u->agents--;
	else
		quota_drop_client(q, u);
	q->conns--;
	if (u->clients > 0 || u->agents > 0)
		return;
	for (pp = &q->users; *pp != NULL; pp = &(*pp)->next)
		if (*pp == u) {
			*pp = u->next;
			break;
		}
	free(u);
}

void
quota_free(struct quota *q)
{
	struct quota_user	*u, *next;

	for (u = q->users; u != NULL; u = next) {
		next = u->next;
		free(u);
	}
	q->users = NULL;
}
