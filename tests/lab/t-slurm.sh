#!/bin/sh
# Slurm with osmosis (osmosis-slurm(8)), for real: munged, slurmctld and
# one slurmd in each of 3 lab nodes, a slurm.conf made here, the jobs of
# an ordinary user (nobody), submitted from a shell holding an extra
# descriptor.
#  1. sbatch --signal=USR1@55 --time=1 --requeue --migratable-signal=USR1:
#     the warning signal checkpoints the two tasks of the script's srun
#     step, and the job is requeued; in its second run
#     (SLURM_RESTART_COUNT 1) each task goes on from its checkpoint, and
#     the script never went on after the first run's step; the batch
#     script itself was never migratable; the checkpoints are gone after;
#  2. salloc --migratable, a job on nodes 1 and 2 (slurm-task -l says so):
#     a Python task, at home on the slow node 1, moves to node 2 (its CPU
#     charged to node 2's cgroup, its copy there) and never to node 3,
#     faster still but not the job's; its output and exit status are
#     srun's; a bad --migratable-signal is refused;
#  3. srun --migratable: scancel ends a Perl task away from home, there
#     too;
#  4. an exclusive job's node refuses guests and sends its guest home
#     (slurm-prolog), and takes guests again after (slurm-epilog);
#  5. a node whose mosd is down is drained (slurm-healthcheck), and
#     resumed once it is back;
#  6. preemption: a job of a higher partition takes node 3 from a
#     --migratable-signal job without a time limit; Slurm sends the job's
#     --signal (SlurmctldParameters=preempt_send_user_signal, GraceTime),
#     which checkpoints the task, the job is requeued and its second run,
#     after the other job, goes on from the checkpoint;
#  then scontrol shutdown stops slurmctld and the slurmds, and munged is
#  stopped, before the lab goes down.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}
SL=${OSM_SLURM:-$OSM_BIN/../build/slurm}

for p in munged slurmctld slurmd srun sbatch scontrol; do
	command -v "$p" > /dev/null || {
		echo "SKIP: $p is not installed (make deps installs Slurm)"
		exit 0
	}
done
[ -e "$SL/spank_osmosis.so" ] || fail "no $SL/spank_osmosis.so: make slurm"

# Node 1 is slow, node 2 faster, node 3 the fastest.
lab_up 3 --cpus 0.25,0.5,1 --mem 512
S=$(lab_dir)/slurm	# on the host: every node sees it
J=$S/job		# the user's directory, where jobs are submitted
mkdir -p "$S/ctld" "$J" && chmod 755 "$S" && chown nobody "$J" ||
    fail "set-up"
export SLURM_CONF=$S/slurm.conf

# munged in node 1, its socket where every node sees it.
dd if=/dev/urandom of="$S/munge.key" bs=1024 count=1 2>/dev/null
chmod 600 "$S/munge.key"
lab_exec 1 munged --origin=10.77.0.1 --socket="$S/munge.sock" \
    --key-file="$S/munge.key" --pid-file="$S/munged.pid" \
    --log-file="$S/munged.log" --seed-file="$S/munged.seed" ||
    fail "munged did not start"

cp "$SL/plugstack.conf" "$S/plugstack.conf"
# slurmd gives HealthCheckProgram no SLURM_CONF: a site's wrapper would.
printf '#!/bin/sh\nSLURM_CONF=%s exec %s\n' "$SLURM_CONF" \
    "$SL/slurm-healthcheck" > "$S/healthcheck"
chmod 755 "$S/healthcheck"
cat > "$SLURM_CONF" <<EOF
ClusterName=osmlab
SlurmctldHost=node1(10.77.0.1)
AuthType=auth/munge
AuthInfo=socket=$S/munge.sock,cred_expire=5
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/ctld
SlurmdSpoolDir=$S/%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/%n.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/%n.log
PlugStackConfig=$S/plugstack.conf
PrologFlags=Alloc
Prolog=$SL/slurm-prolog
Epilog=$SL/slurm-epilog
HealthCheckProgram=$S/healthcheck
HealthCheckInterval=2
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
KillWait=2
MinJobAge=300
SlurmdParameters=config_overrides
NodeName=node[1-3] NodeAddr=10.77.0.[1-3] CPUs=4 State=UNKNOWN
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
SlurmctldParameters=preempt_send_user_signal
PartitionName=lab Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1 GraceTime=30
PartitionName=high Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2 PreemptMode=OFF
EOF
ctld_t0=$(date +%s)
lab_exec 1 slurmctld || fail "slurmctld did not start"
for k in 1 2 3; do
	lab_exec "$k" slurmd || fail "slurmd $k did not start"
done
idle() {
	[ "$(lab_exec 1 sinfo -h -o %T | sort -u)" = idle ]
}
wait_for 30 idle || fail "the Slurm nodes are not idle: $(lab_exec 1 sinfo)"

# user CMD...: run CMD in node 1 as nobody, in the job directory.
user() {
	lab_exec 1 setpriv --reuid nobody --regid nogroup --clear-groups \
	    sh -c "cd $J && $*"
}

exec 7< /dev/null

# 1. --signal before the time limit checkpoints a step of two tasks, and
# the job is requeued. slurmctld looks for jobs to warn every 30 s from
# its start, and warns a job only once it has run 5 s (USR1@55 of 1 min):
# the counters (a tick of 100 ms) run 10 s past the first look that comes
# 8 s or more after now, and parts 2 to 5 run meanwhile. The job has node
# 1 only: its tasks never move. The batch script itself is not
# migratable.
now=$(($(date +%s) - ctld_t0))
next=$(( (now + 8 + 29) / 30 * 30 ))
n=$(( (next - now + 10) * 10 ))
cat > "$J/count.sh" <<EOF
#!/bin/sh
echo "run \${SLURM_RESTART_COUNT:-0}"
mosps -p \$\$ > /dev/null 2>&1 && echo "the script is migratable"
srun -n2 -o count.%t.log --open-mode=append sh -c \\
    "exec $P/counter $n count.\\\$SLURM_PROCID 100"
echo "after the step: \$?"
EOF
chmod 755 "$J/count.sh"
t0=$(date +%s)
cjob=$(user "sbatch --parsable -N1 -n2 -w node1 --time=1 --signal=USR1@55 \
    --requeue --open-mode=append -o count.log --migratable-signal=USR1 \
    count.sh") || fail "sbatch: $cjob"

echo "slurm up: $(($(date +%s) - ctld_t0)) s after slurmctld started"
# 2. A migratable task moves within its job's nodes, and only there:
# salloc --migratable, the step's task on node 1, the job on 1 and 2.
out=$(user "salloc -N2 -n2 -w node1,node2 srun -N1 -n1 -w node1 \
    $SL/slurm-task -l" 2>/dev/null) || fail "slurm-task -l: $out"
[ "$out" = "1,2" ] || fail "slurm-task -l: the job's nodes are '$out'"
expect 255 "expected a signal a program can catch" user \
    "srun --migratable-signal=KILL true"
cat > "$J/burn.py" <<'EOF'
import sys
n = 0
for i in range(20000000):
	n += i % 7
print("sum", n)
sys.exit(3)
EOF
cpu2=$(node_cpu 2)
cpu3=$(node_cpu 3)
user "salloc --migratable -J burn -N2 -n2 -w node1,node2 srun -N1 -n1 \
    -w node1 python3 burn.py > burn.out 2> burn.err; \
    echo status \$? >> burn.out" &
job=$!
# moved COMMAND: the process COMMAND homed on node 1 runs on node 2.
moved() {
	[ "$(pid_of "$1")" != "" ] && [ "$(where "$(pid_of "$1")")" = 2 ]
}
wait_for 30 moved python3 || fail "the task did not move to node 2: \
    $(ps_list pid,where,command) $(cat "$J/burn.err")"
[ -n "$(guest_pid python3 2)" ] || fail "no copy of the task on node 2"
seen3=0
while kill -0 "$job" 2>/dev/null; do
	[ -z "$(guest_pid python3 3)" ] || seen3=1
	sleep 0.2
done
wait "$job"
[ "$seen3" = 0 ] || fail "the task ran on node 3, outside its job"
grep -qx "sum 59999997" "$J/burn.out" || fail "burn: $(cat "$J/burn.out")"
grep -qx "status 3" "$J/burn.out" || fail "burn's status: $(cat "$J/burn.out")"
d2=$(($(node_cpu 2) - cpu2))
d3=$(($(node_cpu 3) - cpu3))
echo "burn: node 2 used $((d2 / 1000000)) ms of CPU, node 3 $((d3 / 1000000)) ms"
[ "$d2" -gt 500000000 ] || fail "node 2 ran less than 0.5 s of it"
# Node 3's own daemons and its health checks (every 2 s) cost it some
# CPU, three times as much under make asan as without: a quarter of the
# task's is more than they ever took here.
[ "$d3" -lt $((d2 / 4)) ] || fail "node 3 used $d3 ns, node 2 $d2"
grep -q "may run only on the nodes" "$(lab_dir)/node1/mosd.log" &&
    fail "mosd refused a move: the balancer tried a node outside the job"

# 3. scancel ends a migratable task away from home, there too.
cat > "$J/spin.pl" <<'EOF'
$| = 1;
print "spinning\n";
for (;;) { }
EOF
user "salloc -J spin -N2 -n2 -w node1,node2 srun -N1 -n1 -w node1 \
    --migratable perl spin.pl > spin.out 2>&1; echo status \$? >> spin.out" &
job=$!
wait_for 30 moved perl || fail "spin did not move: $(cat "$J/spin.out")"
pid=$(pid_of perl)
[ -n "$(guest_pid perl 2)" ] || fail "no copy of spin on node 2"
jid=$(lab_exec 1 squeue -h -n spin -o %i)
[ -n "$jid" ] || fail "spin: no job in squeue"
user scancel "$jid" || fail "scancel $jid"
wait "$job"
grep -q "^spinning" "$J/spin.out" || fail "spin: $(cat "$J/spin.out")"
grep -qx "status 0" "$J/spin.out" && fail "spin: srun exited 0 after scancel"
gone() {
	[ -z "$(guest_pid perl 2)" ] && ! lab_exec 1 kill -0 "$pid" 2>/dev/null
}
wait_for 10 gone || fail "spin lives on after scancel: $(ps_list pid,where)"
cancelled() {
	lab_exec 1 scontrol show job "$jid" | grep -q "JobState=CANCELLED"
}
wait_for 10 cancelled || fail "spin: $(lab_exec 1 scontrol show job "$jid")"

# 4. An exclusive job's node refuses guests and sends its guest home.
"$MOSLAB" exec 2 mosrun -r 3 perl -e 'sleep 1 while 1' > /dev/null 2>&1 &
guest=$!
on3() {
	[ "$(ps_list where,command 2)" = "3 perl" ]
}
wait_for 10 on3 || fail "exclusive: the guest is not on node 3"
user "sbatch --parsable --exclusive -N1 -w node3 -o excl.out \
    --wrap 'mosctl status | tail -n 1'" > "$S/excl.jid" ||
    fail "exclusive: sbatch"
done_excl() {
	grep -q "this node" "$J/excl.out"
}
wait_for 20 done_excl || fail "exclusive: no output"
grep -qx "this node: 3, flags: block" "$J/excl.out" ||
    fail "exclusive: the job saw $(cat "$J/excl.out")"
[ "$(ps_list where,command 2)" = "2 perl" ] ||
    fail "exclusive: the guest was not sent home: $(ps_list where 2)"
unblocked() {
	lab_exec 3 mosctl status | grep -qx "this node: 3, flags: none"
}
wait_for 10 unblocked || fail "exclusive: node 3 stays blocked"
kill "$guest"
wait "$guest" 2>/dev/null

# 5. A node whose mosd is down is drained, and resumed once it is back.
state3() {
	[ "$(lab_exec 1 sinfo -h -n node3 -o %T)" = "$1" ]
}
"$MOSLAB" stop 3 || fail "moslab stop 3"
wait_for 20 state3 drained || fail "node 3 not drained: $(lab_exec 1 \
    sinfo -h -n node3 -o '%T %E')"
lab_exec 1 sinfo -h -n node3 -o %E | grep -q "osmosis: mosd does not answer" ||
    fail "node 3 drained for $(lab_exec 1 sinfo -h -n node3 -o %E)"
"$MOSLAB" start 3 || fail "moslab start 3"
wait_for 20 state3 idle || fail "node 3 not resumed: $(lab_exec 1 \
    sinfo -h -n node3 -o '%T %E')"

# 6. Preemption. The job has no time limit: only preemption sends its
# signal. Its task counts at home on node 3, the fastest; the job that
# takes the node is exclusive and of a higher partition.
cat > "$J/pre.sh" <<EOF
#!/bin/sh
echo "run \${SLURM_RESTART_COUNT:-0}"
srun -n1 -o pre.%t.log --open-mode=append $P/counter 60 pre.0 100
EOF
chmod 755 "$J/pre.sh"
pjob=$(user "sbatch --parsable -N1 -n1 -w node3 --signal=USR1@5 --requeue \
    --open-mode=append -o pre.log --migratable-signal=USR1 pre.sh") ||
    fail "preempt: sbatch: $pjob"
counting() {
	[ "$(grep -c '^[0-9]*$' "$J/pre.0.log" 2>/dev/null)" -ge 15 ]
}
wait_for 30 counting || fail "preempt: the task does not count: \
    $(cat "$J/pre.log" "$J/pre.0.log")"
hjob=$(user "sbatch --parsable -p high --exclusive -N1 -w node3 \
    -o high.out --wrap 'squeue -h -j $pjob -o %T'") ||
    fail "preempt: sbatch -p high: $hjob"
pjob_done() {
	lab_exec 1 scontrol show job "$pjob" | grep -q "JobState=COMPLETED"
}
wait_for 60 pjob_done ||
    fail "preempt: $(lab_exec 1 scontrol show job "$pjob"; cat "$J/pre.0.log")"
lab_exec 1 scontrol show job "$pjob" | grep -q "Restarts=1 " ||
    fail "preempt: $(lab_exec 1 scontrol show job "$pjob")"
# The other job ran while this one was back in the queue.
grep -qx "PENDING" "$J/high.out" || fail "preempt: high saw $(cat "$J/high.out")"
{ seq 60; echo done; } | cmp -s - "$J/pre.0" ||
    fail "preempt: pre.0: $(cat "$J/pre.0")"
grep -q "osmosis: task 0 checkpointed to $J/osmosis-$pjob.0.0-r0.1" \
    "$J/pre.0.log" && grep -q "going on from $J/osmosis-$pjob.0.0-r0.1" \
    "$J/pre.0.log" || fail "preempt: $(cat "$J/pre.0.log")"
first=$(sed -n '/going on from/,$p' "$J/pre.0.log" | grep -m 1 -x '[0-9]*')
[ "${first:-1}" -gt 1 ] || fail "preempt: the second run started over"
echo "preempt: the second run went on from $first"

# 1, its end: each task's numbers once, in its file and on its output,
# the second run going on from the first; the script went on after the
# step only once; the checkpoints are gone.
requeued() {
	grep -qx "run 1" "$J/count.log"
}
wait_for 60 requeued || fail "count: not requeued: $(cat "$J/count.log")"
t1=$(date +%s)
ended() {
	lab_exec 1 scontrol show job "$cjob" | grep -q "JobState=COMPLETED"
}
wait_for 60 ended || fail "count: $(lab_exec 1 scontrol show job "$cjob")"
echo "count: $n ticks; requeued after $((t1 - t0)) s, done after" \
    "$(($(date +%s) - t0)) s"
lab_exec 1 scontrol show job "$cjob" | grep -q "Restarts=1 " ||
    fail "count: $(lab_exec 1 scontrol show job "$cjob")"
grep -q "script is migratable" "$J/count.log" && fail "count: the script was wrapped"
{ seq "$n"; echo done; } > "$S/want"
for t in 0 1; do
	log=$J/count.$t.log
	cmp -s "$S/want" "$J/count.$t" ||
	    fail "count.$t: $(diff "$S/want" "$J/count.$t" | head)"
	# 1..a, then from the checkpoint b..n: what a task wrote between
	# its checkpoint and its end is written again.
	awk -v n="$n" '/going on from/ { second = 1; next }
	    /^[0-9]+$/ && !second { bad += $1 != a + 1; a = $1 }
	    /^[0-9]+$/ && second { if (b == 0) c = (b = $1) - 1
		bad += $1 != c + 1; c = $1 }
	    /^done$/ { d = 1 }
	    END { exit !(!bad && d && b > 1 && b <= a + 1 && c == n) }' \
	    "$log" ||
	    fail "count.$t.log: $(cat "$log")"
	grep -q "osmosis: task $t checkpointed to $J/osmosis-$cjob.0.$t-r0.1" \
	    "$log" || fail "count.$t.log: $(cat "$log")"
	first=$(sed -n '/going on from/,$p' "$log" | grep -m 1 -x '[0-9]*')
	[ "${first:-1}" -gt 1 ] || fail "count.$t: the second run started over"
	grep -q "going on from $J/osmosis-$cjob.0.$t-r0.1" "$log" ||
	    fail "count.$t.log: $(cat "$log")"
	echo "count: task $t's second run went on from $first"
done
grep -q "every task has one: requeueing job $cjob" "$J"/count.?.log ||
    fail "count: $(cat "$J"/count.?.log)"
[ "$(grep -c '^after the step' "$J/count.log")" = 1 ] ||
    fail "count: the first run's script went on: $(cat "$J/count.log")"
grep -qx "after the step: 0" "$J/count.log" || fail "count: the step failed"
[ -z "$(ls "$J" | grep '^osmosis-')" ] ||
    fail "count: checkpoints left: $(ls "$J")"

# Slurm stops as a site stops it: slurmctld and every slurmd at
# scontrol shutdown, then munged, which they talk to until the end. The
# pid files hold pids in their node's namespace.
# alive K FILE: the daemon whose pid is in FILE runs in node K.
alive() {
	_p=$(cat "$2") && lab_exec "$1" kill -0 "$_p" 2>/dev/null
}
slurm_stopped() {
	! alive 1 "$S/slurmctld.pid" && ! alive 1 "$S/node1.pid" &&
	    ! alive 2 "$S/node2.pid" && ! alive 3 "$S/node3.pid"
}
alive 1 "$S/slurmctld.pid" && alive 1 "$S/node1.pid" &&
    alive 2 "$S/node2.pid" && alive 3 "$S/node3.pid" ||
    fail "a Slurm daemon is not running: $(ls "$S")"
lab_exec 1 scontrol shutdown || fail "scontrol shutdown"
wait_for 30 slurm_stopped || fail "Slurm's daemons did not stop"
alive 1 "$S/munged.pid" || fail "munged died"
# (munged takes its pid file away as it ends.)
mpid=$(cat "$S/munged.pid")
lab_exec 1 kill "$mpid" || fail "kill munged"
wait_for 10 sh -c "! $MOSLAB exec 1 kill -0 $mpid" || fail "munged did not stop"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
