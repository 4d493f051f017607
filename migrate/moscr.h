/* moscr: the checkpoint/restart command on top of libmigrate. */
#ifndef MOSCR_H
#define MOSCR_H

struct moscr_cmd {
	const char	*name;
	const char	*usage;
	const char	*help;
	int		 (*exec)(int argc, char **argv);
};

/* moscr.c */
void	 moscr_usage(const struct moscr_cmd *c) __attribute__((noreturn));
int	 moscr_help_wanted(int argc, char **argv, const struct moscr_cmd *c);
void	 moscr_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

extern const struct moscr_cmd moscr_dump_cmd;
extern const struct moscr_cmd moscr_restore_cmd;
extern const struct moscr_cmd moscr_info_cmd;

#endif
