#!/bin/sh
# slurm-prolog: Slurm's Prolog (osmosis-slurm(8)). A node given to an
# exclusive job takes no more guests (mosctl block), and the guests it has
# are sent home (mosctl expel); slurm-epilog undoes it at the job's end.
# A node its owner had blocked already is left as it is, then too. Never
# fails a job: what went wrong is said on stderr, in slurmd's log.
PATH=@BINDIR@:/usr/sbin:/usr/bin:/sbin:/bin
mark=/run/osmosis/slurm-block.$SLURM_JOB_ID

job=$(scontrol show job -o "$SLURM_JOB_ID" 2>&1) || {
	echo "slurm-prolog: job $SLURM_JOB_ID: $job" >&2
	exit 0
}
case " $job " in
*" OverSubscribe=NO "*) ;;
*) exit 0 ;;
esac
flags=$(mosctl status | sed -n 's/^this node: .*, flags: //p')
case ",$flags," in
*,block,*) exit 0 ;;
esac
mosctl block || exit 0
: > "$mark"
mosctl expel > /dev/null || exit 0
# Give the guests a moment to leave before the job starts.
i=0
while [ "$i" -lt 100 ]; do
	self=$(mosctl status | sed -n 's/^this node: \([0-9]*\),.*/\1/p')
	guests=$(mosctl status | awk -v n="$self" '$1 == n { print $9 }')
	[ "${guests:-0}" -eq 0 ] && exit 0
	sleep 0.1
	i=$((i + 1))
done
echo "slurm-prolog: job $SLURM_JOB_ID: $guests guests still here" >&2
exit 0
