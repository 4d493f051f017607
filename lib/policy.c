/*
 * policy.conf: who may migrate where, one directive per line, '#' to end
 * of line is a comment.
 *
 *	default [nodes LIST] [away N] [auto yes|no]
 *	user NAME [nodes LIST] [away N] [auto yes|no]
 *	group NAME [nodes LIST] [away N] [auto yes|no]
 *	node LIST [accept WHO,...] [refuse WHO,...] [guests N]
 *
 * LIST is "all" or node ids and ranges such as 1-4,7; WHO is user:NAME,
 * group:NAME or anyone; N is a number or "unlimited". What a user or
 * group line leaves out comes from the default line, wherever in the file
 * that is, so the rules are completed only once the whole file is read.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osm.h"

#define POLICY_GROUPS_MAX	256	/* of one user, for policy */

#define POLICY_MAX_WORDS	32
#define POLICY_NAME_MAX		32
#define POLICY_MAX_ID		(UINT32_MAX - 1)

/* The keys a line gave, to catch repeats and to inherit the others. */
#define POLICY_KEY_NODES	0x01
#define POLICY_KEY_AWAY		0x02
#define POLICY_KEY_AUTO		0x04
#define POLICY_KEY_ACCEPT	0x08
#define POLICY_KEY_REFUSE	0x10
#define POLICY_KEY_GUESTS	0x20
#define POLICY_KEY_FILES	0x40
#define POLICY_KEY_MOVES	0x80

struct policy_mark {			/* where a user or group line was */
	unsigned	 line;
	unsigned	 keys;
};

struct policy_parse {
	struct policy		*pol;
	struct cfg_file		 in;
	char			**cause;
	unsigned		 default_line;	/* 0: none yet */
	struct policy_mark	*umarks;	/* one per pol->users */
	struct policy_mark	*gmarks;	/* one per pol->groups */
};

static int
policy_error(struct policy_parse *p, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	cfg_verror(&p->in, p->cause, fmt, ap);
	va_end(ap);
	return -1;
}

static void
policy_nodes_all(struct policy_nodes *n)
{
	n->all = 1;
	n->r = NULL;
	n->n = 0;
}

static void
policy_nodes_copy(struct policy_nodes *dst, const struct policy_nodes *src)
{
	dst->all = src->all;
	dst->n = src->n;
	dst->r = NULL;
	if (src->n != 0) {
		dst->r = xreallocarray(NULL, src->n, sizeof *dst->r);
		memcpy(dst->r, src->r, src->n * sizeof *dst->r);
	}
}

static void
policy_rule_init(struct policy_rule *r)
{
	policy_nodes_all(&r->nodes);
	r->max_away = POLICY_NO_LIMIT;
	r->automatic = 1;
	r->strict_files = 0;
	r->move = 0;
}

/* Account names as useradd(8) takes them, without its odd corners. */
static int
policy_name_ok(const char *s)
{
	size_t	i;

	if (s[0] == '\0' || s[0] == '-' || strlen(s) > POLICY_NAME_MAX)
		return 0;
	for (i = 0; s[i] != '\0'; i++) {
		if ((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '_' || s[i] == '-' || s[i] == '.')
			continue;
		return 0;
	}
	return 1;
}

static int
policy_name(struct policy_parse *p, const char *what, const char *s)
{
	if (policy_name_ok(s))
		return 0;
	return policy_error(p, "'%s' is not a valid %s name (expected "
	    "letters, digits, '_', '-' or '.', not starting with '-', at "
	    "most %d characters)", s, what, POLICY_NAME_MAX);
}

static int
policy_limit(struct policy_parse *p, const char *key, const char *s,
    uint32_t *out)
{
	uint64_t	v;

	if (strcmp(s, "unlimited") == 0) {
		*out = POLICY_NO_LIMIT;
		return 0;
	}
	if (parse_uint(s, 0, POLICY_MAX_ID, &v) == -1)
		return policy_error(p, "expected a number from 0 to %u or "
		    "'unlimited' after '%s', found '%s'", POLICY_MAX_ID, key, s);
	*out = v;
	return 0;
}

/* "all", or node ids and ranges separated by commas: 1-2,5. */
static int
policy_parse_nodes(struct policy_parse *p, const char *s,
    struct policy_nodes *out)
{
	struct policy_range	 r;
	char			*copy, *item, *next, *dash;
	uint64_t		 first = 0, last = 0;
	int			 ok, rc = -1;

	if (strcmp(s, "all") == 0) {
		policy_nodes_all(out);
		return 0;
	}
	out->all = 0;
	out->r = NULL;
	out->n = 0;
	copy = xstrdup(s);
	for (item = copy; item != NULL; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		if (*item == '\0') {
			policy_error(p, "empty item in node list '%s'", s);
			goto out;
		}
		if (strcmp(item, "all") == 0) {
			policy_error(p, "'all' cannot be mixed with other "
			    "nodes in '%s'", s);
			goto out;
		}
		if ((dash = strchr(item, '-')) != NULL)
			*dash = '\0';
		ok = parse_uint(item, 1, POLICY_MAX_ID, &first) == 0;
		last = first;
		if (ok && dash != NULL)
			ok = parse_uint(dash + 1, 1, POLICY_MAX_ID, &last) == 0;
		if (dash != NULL)
			*dash = '-';
		if (!ok) {
			policy_error(p, "expected a node number from 1 to %u or "
			    "a range like 1-4, found '%s' in '%s'",
			    POLICY_MAX_ID, item, s);
			goto out;
		}
		if (last < first) {
			policy_error(p, "bad node range '%s' in '%s' (the "
			    "first node is above the last)", item, s);
			goto out;
		}
		r.first = first;
		r.last = last;
		out->r = xreallocarray(out->r, out->n + 1, sizeof *out->r);
		out->r[out->n++] = r;
	}
	rc = 0;
out:
	free(copy);
	return rc;
}

/* WHO[,WHO...], added to what is in *list (nothing, on a good file). */
static int
policy_parse_who(struct policy_parse *p, const char *key, const char *s,
    struct policy_who **list, size_t *n)
{
	struct policy_who	 w;
	char			*copy, *item, *next, *name;
	int			 rc = -1;

	copy = xstrdup(s);
	for (item = copy; item != NULL; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		if (*item == '\0') {
			policy_error(p, "empty item in '%s' after '%s'", s,
			    key);
			goto out;
		}
		if (strcmp(item, "anyone") == 0) {
			w.kind = POLICY_ANYONE;
			name = NULL;
		} else if (strncmp(item, "user:", 5) == 0) {
			w.kind = POLICY_USER;
			name = item + 5;
		} else if (strncmp(item, "group:", 6) == 0) {
			w.kind = POLICY_GROUP;
			name = item + 6;
		} else {
			policy_error(p, "expected user:NAME, group:NAME or "
			    "anyone after '%s', found '%s'", key, item);
			goto out;
		}
		if (name != NULL && *name == '\0') {
			policy_error(p, "empty name in '%s' after '%s'", item,
			    key);
			goto out;
		}
		if (name != NULL && policy_name(p, w.kind == POLICY_USER ?
		    "user" : "group", name) == -1)
			goto out;
		w.name = name == NULL ? NULL : xstrdup(name);
		*list = xreallocarray(*list, *n + 1, sizeof **list);
		(*list)[(*n)++] = w;
	}
	rc = 0;
out:
	free(copy);
	return rc;
}

/*
 * Check a key against those the line allows and those it already gave;
 * returns its POLICY_KEY_ bit.
 */
static int
policy_key(struct policy_parse *p, char **w, int nw, int i,
    const char *const *names, const unsigned *bits, size_t nnames,
    unsigned *seen, const char *expected)
{
	size_t	j;

	for (j = 0; j < nnames; j++)
		if (strcmp(w[i], names[j]) == 0)
			break;
	if (j == nnames)
		return policy_error(p, "unknown key '%s' on a %s line "
		    "(expected %s)", w[i], w[0], expected);
	if (*seen & bits[j])
		return policy_error(p, "key '%s' given twice", w[i]);
	if (i + 1 == nw)
		return policy_error(p, "expected a value after '%s'", w[i]);
	*seen |= bits[j];
	return bits[j];
}

/* The keys of a default, user or group line, from w[first] on. */
static int
policy_rule_keys(struct policy_parse *p, char **w, int nw, int first,
    struct policy_rule *r, unsigned *seen)
{
	static const char *const names[] = { "nodes", "away", "auto",
				    "files", "moves" };
	static const unsigned	 bits[] = { POLICY_KEY_NODES, POLICY_KEY_AWAY,
				    POLICY_KEY_AUTO, POLICY_KEY_FILES,
				    POLICY_KEY_MOVES };
	/* the MoveMode numbers of ctl.proto, 1 to 3 */
	static const char *const moves[] = { "live", "stop", "post" };
	int			 i, j, key;

	for (i = first; i < nw; i += 2) {
		key = policy_key(p, w, nw, i, names, bits, nitems(names), seen,
		    "nodes, away, auto, files or moves");
		if (key == -1)
			return -1;
		if (key == POLICY_KEY_MOVES) {
			for (j = 0; j < (int)nitems(moves); j++)
				if (strcmp(w[i + 1], moves[j]) == 0)
					break;
			if (j == (int)nitems(moves))
				return policy_error(p, "expected 'live', "
				    "'stop' or 'post' after 'moves', found "
				    "'%s'", w[i + 1]);
			r->move = j + 1;
			continue;
		}
		if (key == POLICY_KEY_NODES) {
			free(r->nodes.r);
			if (policy_parse_nodes(p, w[i + 1], &r->nodes) == -1)
				return -1;
		} else if (key == POLICY_KEY_AWAY) {
			if (policy_limit(p, w[i], w[i + 1], &r->max_away) == -1)
				return -1;
		} else if (key == POLICY_KEY_FILES) {
			if (strcmp(w[i + 1], "strict") == 0)
				r->strict_files = 1;
			else if (strcmp(w[i + 1], "fast") == 0)
				r->strict_files = 0;
			else
				return policy_error(p, "expected 'fast' or "
				    "'strict' after 'files', found '%s'",
				    w[i + 1]);
		} else if (strcmp(w[i + 1], "yes") == 0)
			r->automatic = 1;
		else if (strcmp(w[i + 1], "no") == 0)
			r->automatic = 0;
		else
			return policy_error(p, "expected 'yes' or 'no' after "
			    "'auto', found '%s'", w[i + 1]);
	}
	return 0;
}

static int
policy_default_line(struct policy_parse *p, char **w, int nw)
{
	unsigned	seen = 0;

	if (p->default_line != 0)
		return policy_error(p, "a second default line (the first is "
		    "line %u)", p->default_line);
	p->default_line = p->in.line;
	return policy_rule_keys(p, w, nw, 1, &p->pol->def, &seen);
}

/* A user or group line: one per name, each kept in file order. */
static int
policy_named_line(struct policy_parse *p, char **w, int nw)
{
	struct policy		*pol = p->pol;
	struct policy_named	**list, *named;
	struct policy_mark	**marks, *mark;
	size_t			*n, i;
	const char		*what = w[0];

	if (strcmp(what, "user") == 0) {
		list = &pol->users;
		n = &pol->nusers;
		marks = &p->umarks;
	} else {
		list = &pol->groups;
		n = &pol->ngroups;
		marks = &p->gmarks;
	}
	if (nw < 2)
		return policy_error(p, "expected '%s NAME [nodes LIST] "
		    "[away N] [auto yes|no]'", what);
	if (policy_name(p, what, w[1]) == -1)
		return -1;
	for (i = 0; i < *n; i++)
		if (strcmp((*list)[i].name, w[1]) == 0)
			return policy_error(p, "a second line for %s %s (the "
			    "first is line %u)", what, w[1], (*marks)[i].line);
	*list = xreallocarray(*list, *n + 1, sizeof **list);
	*marks = xreallocarray(*marks, *n + 1, sizeof **marks);
	named = &(*list)[*n];
	mark = &(*marks)[*n];
	(*n)++;
	named->name = xstrdup(w[1]);
	policy_rule_init(&named->rule);
	mark->line = p->in.line;
	mark->keys = 0;
	return policy_rule_keys(p, w, nw, 2, &named->rule, &mark->keys);
}

static int
policy_node_line(struct policy_parse *p, char **w, int nw)
{
	static const char *const names[] = { "accept", "refuse", "guests" };
	static const unsigned	 bits[] = { POLICY_KEY_ACCEPT,
				    POLICY_KEY_REFUSE, POLICY_KEY_GUESTS };
	struct policy		*pol = p->pol;
	struct policy_host	*h;
	unsigned		 seen = 0;
	int			 i, key;

	if (nw < 2)
		return policy_error(p, "expected 'node LIST [accept WHO,...] "
		    "[refuse WHO,...] [guests N]'");
	pol->hosts = xreallocarray(pol->hosts, pol->nhosts + 1,
	    sizeof *pol->hosts);
	h = &pol->hosts[pol->nhosts++];
	memset(h, 0, sizeof *h);
	h->max_guests = POLICY_NO_LIMIT;
	if (policy_parse_nodes(p, w[1], &h->nodes) == -1)
		return -1;
	for (i = 2; i < nw; i += 2) {
		key = policy_key(p, w, nw, i, names, bits, nitems(names), &seen,
		    "accept, refuse or guests");
		if (key == -1)
			return -1;
		if (key == POLICY_KEY_ACCEPT) {
			if (policy_parse_who(p, w[i], w[i + 1], &h->accept,
			    &h->naccept) == -1)
				return -1;
		} else if (key == POLICY_KEY_REFUSE) {
			if (policy_parse_who(p, w[i], w[i + 1], &h->refuse,
			    &h->nrefuse) == -1)
				return -1;
		} else if (policy_limit(p, w[i], w[i + 1], &h->max_guests) == -1)
			return -1;
	}
	return 0;
}

static int
policy_line(struct policy_parse *p, char **w, int nw)
{
	if (strcmp(w[0], "default") == 0)
		return policy_default_line(p, w, nw);
	if (strcmp(w[0], "user") == 0 || strcmp(w[0], "group") == 0)
		return policy_named_line(p, w, nw);
	if (strcmp(w[0], "node") == 0)
		return policy_node_line(p, w, nw);
	return policy_error(p, "unknown directive '%s' (expected default, "
	    "user, group or node)", w[0]);
}

static void
policy_inherit(const struct policy_rule *def, struct policy_named *named,
    const struct policy_mark *marks, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (!(marks[i].keys & POLICY_KEY_NODES)) {
			free(named[i].rule.nodes.r);
			policy_nodes_copy(&named[i].rule.nodes, &def->nodes);
		}
		if (!(marks[i].keys & POLICY_KEY_AWAY))
			named[i].rule.max_away = def->max_away;
		if (!(marks[i].keys & POLICY_KEY_AUTO))
			named[i].rule.automatic = def->automatic;
		if (!(marks[i].keys & POLICY_KEY_FILES))
			named[i].rule.strict_files = def->strict_files;
		if (!(marks[i].keys & POLICY_KEY_MOVES))
			named[i].rule.move = def->move;
	}
}

struct policy *
policy_load(const char *path, char **cause)
{
	return policy_load_fd(path, -1, cause);
}

/* The policy open on fd (taken), named path; path itself if fd is -1. */
struct policy *
policy_load_fd(const char *path, int fd, char **cause)
{
	struct policy_parse	 p;
	struct policy		*pol;
	char			*w[POLICY_MAX_WORDS];
	int			 nw;

	memset(&p, 0, sizeof p);
	if (cfg_open_fd(&p.in, path, fd, cause) == -1)
		return NULL;
	pol = policy_default();
	pol->path = xstrdup(path);
	p.pol = pol;
	p.cause = cause;

	while ((nw = cfg_words(&p.in, w, POLICY_MAX_WORDS, cause)) > 0)
		if (policy_line(&p, w, nw) == -1)
			goto fail;
	if (nw == -1)
		goto fail;
	policy_inherit(&pol->def, pol->users, p.umarks, pol->nusers);
	policy_inherit(&pol->def, pol->groups, p.gmarks, pol->ngroups);
	free(p.umarks);
	free(p.gmarks);
	cfg_close(&p.in);
	return pol;

fail:
	free(p.umarks);
	free(p.gmarks);
	cfg_close(&p.in);
	policy_free(pol);
	return NULL;
}

/* Without a file, anyone's processes may go anywhere. */
struct policy *
policy_default(void)
{
	struct policy	*pol;

	pol = xcalloc(1, sizeof *pol);
	policy_rule_init(&pol->def);
	return pol;
}

static void
policy_who_free(struct policy_who *list, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(list[i].name);
	free(list);
}

static void
policy_named_free(struct policy_named *list, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		free(list[i].name);
		free(list[i].rule.nodes.r);
	}
	free(list);
}

void
policy_free(struct policy *pol)
{
	size_t	i;

	if (pol == NULL)
		return;
	free(pol->path);
	free(pol->def.nodes.r);
	policy_named_free(pol->users, pol->nusers);
	policy_named_free(pol->groups, pol->ngroups);
	for (i = 0; i < pol->nhosts; i++) {
		free(pol->hosts[i].nodes.r);
		policy_who_free(pol->hosts[i].accept, pol->hosts[i].naccept);
		policy_who_free(pol->hosts[i].refuse, pol->hosts[i].nrefuse);
	}
	free(pol->hosts);
	free(pol);
}

int
policy_has_node(const struct policy_nodes *nodes, uint32_t id)
{
	size_t	i;

	if (nodes->all)
		return 1;
	for (i = 0; i < nodes->n; i++)
		if (id >= nodes->r[i].first && id <= nodes->r[i].last)
			return 1;
	return 0;
}

static int
policy_in_groups(const char *name, const char *const *groups,
    size_t ngroups)
{
	size_t	i;

	for (i = 0; i < ngroups; i++)
		if (strcmp(groups[i], name) == 0)
			return 1;
	return 0;
}

const struct policy_rule *
policy_rule(const struct policy *pol, const char *user,
    const char *const *groups, size_t ngroups)
{
	size_t	i;

	for (i = 0; user != NULL && i < pol->nusers; i++)
		if (strcmp(pol->users[i].name, user) == 0)
			return &pol->users[i].rule;
	for (i = 0; i < pol->ngroups; i++)
		if (policy_in_groups(pol->groups[i].name, groups, ngroups))
			return &pol->groups[i].rule;
	return &pol->def;
}

static const struct policy_who *
policy_who_find(const struct policy_who *list, size_t n, const char *user,
    const char *const *groups, size_t ngroups)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		switch (list[i].kind) {
		case POLICY_ANYONE:
			return &list[i];
		case POLICY_USER:
			if (user != NULL && strcmp(list[i].name, user) == 0)
				return &list[i];
			break;
		case POLICY_GROUP:
			if (policy_in_groups(list[i].name, groups, ngroups))
				return &list[i];
			break;
		}
	}
	return NULL;
}

/*
 * May node self take one more guest of this user? The first node line
 * about self decides; a refusal beats an acceptance, and the guest limit
 * holds for everyone.
 */
int
policy_accepts(const struct policy *pol, uint32_t self, const char *user,
    const char *const *groups, size_t ngroups, uint32_t guests_now,
    char **why)
{
	const struct policy_host	*h = NULL;
	const struct policy_who		*w;
	size_t				 i;

	if (why != NULL)
		*why = NULL;
	for (i = 0; i < pol->nhosts && h == NULL; i++)
		if (policy_has_node(&pol->hosts[i].nodes, self))
			h = &pol->hosts[i];
	if (h == NULL)
		return 1;
	w = policy_who_find(h->refuse, h->nrefuse, user, groups, ngroups);
	if (w != NULL) {
		if (why == NULL)
			return 0;
		if (w->kind == POLICY_ANYONE)
			xasprintf(why, "node %u refuses anyone", self);
		else
			xasprintf(why, "node %u refuses %s %s", self,
			    w->kind == POLICY_USER ? "user" : "group", w->name);
		return 0;
	}
	if (h->naccept != 0 && policy_who_find(h->accept, h->naccept, user,
	    groups, ngroups) == NULL) {
		if (why != NULL)
			xasprintf(why, "node %u accepts only listed users and "
			    "groups", self);
		return 0;
	}
	if (h->max_guests != POLICY_NO_LIMIT && guests_now >= h->max_guests) {
		if (why != NULL)
			xasprintf(why, "node %u takes at most %u guest%s", self,
			    h->max_guests, h->max_guests == 1 ? "" : "s");
		return 0;
	}
	return 1;
}

/* The names of the groups of the user pw, primary first. */
char **
policy_groups(const struct passwd *pw, size_t *n)
{
	struct group	*gr;
	gid_t		 gids[POLICY_GROUPS_MAX];
	char		**names;
	int		 ngids = POLICY_GROUPS_MAX, i;

	*n = 0;
	if (getgrouplist(pw->pw_name, pw->pw_gid, gids, &ngids) == -1)
		return NULL;
	names = xcalloc(ngids, sizeof *names);
	for (i = 0; i < ngids; i++)
		if ((gr = getgrgid(gids[i])) != NULL)
			names[(*n)++] = xstrdup(gr->gr_name);
	return names;
}

void
policy_groups_free(char **names, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}
