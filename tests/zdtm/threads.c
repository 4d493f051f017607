/* A second thread: the dump must refuse, saying why. */
#include <pthread.h>

#include "zdtm.h"

static void *
idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

int
main(void)
{
	pthread_t	t;

	pthread_create(&t, NULL, idle, NULL);
	zdtm_ready();
	for (;;)
		pause();
}
