#!/bin/sh
# slurm-epilog: Slurm's Epilog (osmosis-slurm(8)): a node that slurm-prolog
# blocked for an exclusive job takes guests again.
PATH=@BINDIR@:/usr/sbin:/usr/bin:/sbin:/bin
mark=/run/osmosis/slurm-block.$SLURM_JOB_ID
[ -e "$mark" ] || exit 0
mosctl noblock || exit 0
rm -f "$mark"
exit 0
