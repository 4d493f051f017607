/*
 * The balancer's model of a node, apart from the balancer so that it can be
 * tested alone: what a CPU-bound process can expect of it.
 */
#include "mosd.h"

/*
 * The speed (1000: a reference CPU to itself) a CPU-bound process can
 * expect on node v, among the tasks there, joining them if join.
 */
double
balance_speed(const struct node_view *v, int join)
{
	double	n = v->runnable + v->pending + (join ? 1 : 0);

	if (n < 1)
		n = 1;
	return v->speed * (v->cpus < n ? v->cpus / n : 1.0);
}
