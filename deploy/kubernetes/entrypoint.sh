#!/bin/sh
# The container's command: `entrypoint.sh segment` runs one segment of a run (a pod of the Indexed Job),
# `entrypoint.sh merge` merges the segments' folders (the merge Job). Everything comes from the environment, so the
# same lines run as N local processes in Tests/FleetCLITests/KubernetesDeployTests.swift.
#
#   JOB_COMPLETION_INDEX  this pod's index, 0 to SEGMENTS-1 (set by Kubernetes in an Indexed Job) -> --segment K/N
#   SEGMENTS              N: the Job's completions (and parallelism)
#   RUN_ID, START_AT      the run's identity and common start, the same in every pod (the fleetbench-run ConfigMap)
#   BROKER                broker URL(s), comma-separated; empty: the scenario's own brokers
#   SCENARIO              the scenario file (default /etc/fleetbench/scenario.json, the fleetbench-scenario ConfigMap)
#   RESULTS               the shared volume (default /results): segments write RESULTS/RUN_ID/segment-K-of-N,
#                         merge writes RESULTS/RUN_ID/merged
#   FLEETBENCH_ARGS       more options for `run`, split at spaces (e.g. "--segment-grace 10s --metrics-listen 0.0.0.0:9464")
#   FLEETBENCH            the executable (default fleetbench on PATH)
set -eu

fail() { printf 'entrypoint.sh: %s\n' "$*" >&2; exit 2; }

mode=${1:-}
: "${SEGMENTS:?entrypoint.sh: SEGMENTS (the number of segments) is not set}"
: "${RUN_ID:?entrypoint.sh: RUN_ID is not set (the fleetbench-run ConfigMap)}"
results=${RESULTS:-/results}
fleetbench=${FLEETBENCH:-fleetbench}
run_dir="$results/$RUN_ID"

case "$mode" in
segment)
    : "${JOB_COMPLETION_INDEX:?entrypoint.sh: JOB_COMPLETION_INDEX is not set (run as a pod of an Indexed Job)}"
    : "${START_AT:?entrypoint.sh: START_AT is not set (the fleetbench-run ConfigMap)}"
    scenario=${SCENARIO:-/etc/fleetbench/scenario.json}
    mkdir -p "$run_dir"
    set -- run "$scenario" --segment "$JOB_COMPLETION_INDEX/$SEGMENTS" --run-id "$RUN_ID" --start-at "$START_AT" \
        --out "$run_dir/segment-$JOB_COMPLETION_INDEX-of-$SEGMENTS" --quiet
    if [ -n "${BROKER:-}" ]; then set -- "$@" --broker "$BROKER"; fi
    # FLEETBENCH_ARGS is a list of options: splitting it at spaces is the point.
    # shellcheck disable=SC2086
    exec "$fleetbench" "$@" ${FLEETBENCH_ARGS:-}
    ;;
merge)
    # Every segment's folder, by index: a missing one is named here rather than left to a glob that skips it.
    set --
    k=0
    missing=""
    while [ "$k" -lt "$SEGMENTS" ]; do
        folder="$run_dir/segment-$k-of-$SEGMENTS"
        if [ -f "$folder/segment.json" ]; then set -- "$@" "$folder"; else missing="$missing $folder"; fi
        k=$((k + 1))
    done
    if [ -n "$missing" ]; then
        fail "segments without results (segment.json):$missing; see those pods' logs (kubectl logs job/fleetbench-run)"
    fi
    exec "$fleetbench" merge "$@" --out "$run_dir/merged"
    ;;
*)
    fail "usage: entrypoint.sh segment|merge (got '${mode}')"
    ;;
esac
