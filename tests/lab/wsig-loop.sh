#!/bin/sh
# t-wstub's signal case only (tests/mosrun/writer ... signal away),
# looped: WSIG_RUNS runs (default 60), each failure's output, the count.
# Not a t-*.sh: run it by name (tests/lab/run wsig-loop.sh), it fails
# until the lost answer (docs/REMOTE.md, "Regular files", an answer the
# kernel takes and R still never has) is closed: 3 of 40 and 1 of 40
# here, 2026-12-02 (19 in the first 300 s), each a main-flow block twice.
. "$(dirname "$0")/lib.sh"
lab_up 2
wait_cluster 2
D=$(lab_dir)/wstub
mkdir -p "$D" && chmod 755 "$(lab_dir)" "$D" || fail "mkdir $D"
W=$OSM_MOSRUN/writer
bad=0
i=0
while [ $i -lt "${WSIG_RUNS:-60}" ]; do
	i=$((i + 1))
	lab_exec 1 sh -c 'cd "$1" && mosrun -L -r 2 "$2" wsig.dat 8000 signal' \
	    sh "$D" "$W" > "$D/wsig.away" 2>&1
	grep -qx 'ok 8000 blocks, [1-9][0-9]* by the handler' "$D/wsig.away" ||
	    { bad=$((bad + 1)); echo "run $i: $(cat "$D/wsig.away")"; }
done
echo "wsig: $bad of $i runs failed"
