/* What the files of the check_lib binary share. */
#ifndef CHECK_LIB_H
#define CHECK_LIB_H

#include <sys/types.h>

#include <check.h>

/* check_lib.c: a fresh directory for each test of a case with the fixture */
extern char	 tmpdir[];
void	 tmp_setup(void);
void	 tmp_teardown(void);
char	*tmp_file(const char *name, const char *content, mode_t mode);

/* check_lib-conf.c, check_lib-crypto.c, check_lib-json.c, check_lib-log.c:
 * their test cases, added to s */
void	 check_lib_conf(Suite *s);
void	 check_lib_crypto(Suite *s);
void	 check_lib_json(Suite *s);
void	 check_lib_log(Suite *s);

#endif
