#!/bin/sh
# Starts one segmented run on Kubernetes: draws the run id, sets the common start a lead time ahead (time for the
# pods to be scheduled and their image pulled), writes both into the fleetbench-run ConfigMap, applies the scenario,
# the results volume and the Indexed Job with N segments, waits for it, then runs the merge Job and prints its
# summary. Exits with merge's code (0 passed, 99 thresholds failed, ...). See README.md.
#
# --print renders the manifests to standard output instead (no kubectl): for review, for `kubectl apply -f -` by
# hand, and for the tests.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
segments=4
broker=""
scenario=""
image=""
lead=120
run_id=""
extra_args=""
namespace=""
print_only=false
timeout=""

usage() {
    cat <<'EOF'
Usage: launch.sh [options]
  --segments N        pods (segments) of the run; parallelism = completions = N (default 4)
  --broker URL[,URL]  the brokers every segment uses (default: the scenario's own)
  --scenario FILE     run this scenario file (default: the one in scenario-configmap.yaml)
  --image IMAGE       the fleetbench image (default: the manifests' fleetbench:0.1.0)
  --lead SECONDS      the common start is this far ahead of now (default 120): longer than the slowest pod takes
                      to be scheduled and pull the image, since a pod more than 5 s late is refused
  --run-id HEX        the run id (default: 16 random hex digits)
  --args "OPTIONS"    more options for every segment's fleetbench run, e.g. "--metrics-listen 0.0.0.0:9464"
  --namespace NS      the namespace (default: kubectl's current one)
  --timeout SECONDS   how long to wait for the segments (default: lead + 3600)
  --print             print the manifests instead of applying them
EOF
}

fail() { printf 'launch.sh: %s\n' "$*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --segments) [ $# -ge 2 ] || fail "--segments needs a value"; segments=$2; shift 2 ;;
        --broker) [ $# -ge 2 ] || fail "--broker needs a value"; broker=$2; shift 2 ;;
        --scenario) [ $# -ge 2 ] || fail "--scenario needs a value"; scenario=$2; shift 2 ;;
        --image) [ $# -ge 2 ] || fail "--image needs a value"; image=$2; shift 2 ;;
        --lead) [ $# -ge 2 ] || fail "--lead needs a value"; lead=$2; shift 2 ;;
        --run-id) [ $# -ge 2 ] || fail "--run-id needs a value"; run_id=$2; shift 2 ;;
        --args) [ $# -ge 2 ] || fail "--args needs a value"; extra_args=$2; shift 2 ;;
        --namespace) [ $# -ge 2 ] || fail "--namespace needs a value"; namespace=$2; shift 2 ;;
        --timeout) [ $# -ge 2 ] || fail "--timeout needs a value"; timeout=$2; shift 2 ;;
        --print) print_only=true; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; fail "unknown option '$1'" ;;
    esac
done

case "$segments" in ''|*[!0-9]*) fail "--segments needs a whole number from 1, got '$segments'" ;; esac
[ "$segments" -ge 1 ] || fail "--segments needs a whole number from 1, got '$segments'"
case "$lead" in ''|*[!0-9]*) fail "--lead needs whole seconds, got '$lead'" ;; esac
[ -z "$timeout" ] && timeout=$((lead + 3600))
case "$timeout" in *[!0-9]*) fail "--timeout needs whole seconds, got '$timeout'" ;; esac
if [ -z "$run_id" ]; then
    run_id=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
fi
case "$run_id" in *[!0-9a-fA-F]*|'') fail "--run-id needs 1 to 16 hex digits, got '$run_id'" ;; esac
[ "${#run_id}" -le 16 ] || fail "--run-id needs 1 to 16 hex digits, got '$run_id'"
# Values go into double-quoted YAML strings.
for value in "$broker" "$extra_args" "$image"; do
    case "$value" in *'"'*|*\\*) fail "quotes and backslashes are not allowed in '$value'" ;; esac
done
[ -z "$scenario" ] || [ -r "$scenario" ] || fail "cannot read the scenario file '$scenario'"

# The common start, lead seconds from now (GNU date, else BSD date).
set_start() {
    start=$(($(date -u +%s) + lead))
    start_at=$(date -u -d "@$start" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "$start" +%Y-%m-%dT%H:%M:%SZ)
}

# A manifest with every image set to --image; `job FILE segments` also sets parallelism and completions to N.
job() {
    if [ -n "$image" ]; then set -- "$1" "${2:-}" "s#^\( *\)image: .*\$#\1image: $image#"; else set -- "$1" "${2:-}" "p;d"; fi
    if [ "$2" = segments ]; then
        sed -e "s/^\( *\)parallelism: [0-9]*\$/\1parallelism: $segments/" \
            -e "s/^\( *\)completions: [0-9]*\$/\1completions: $segments/" -e "$3" "$1"
    else
        sed -e "$3" "$1"
    fi
}

render() {
    if [ -n "$scenario" ]; then
        printf '%s\n' "apiVersion: v1" "kind: ConfigMap" "metadata:" "  name: fleetbench-scenario" "  labels:" \
            "    app.kubernetes.io/name: fleetbench" "data:" "  scenario.json: |"
        sed 's/^/    /' "$scenario"
        echo
    else
        cat "$here/scenario-configmap.yaml"
    fi
    echo "---"
    cat <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: fleetbench-run
  labels:
    app.kubernetes.io/name: fleetbench
data:
  SEGMENTS: "$segments"
  RUN_ID: "$run_id"
  START_AT: "$start_at"
  BROKER: "$broker"
  FLEETBENCH_ARGS: "$extra_args"
EOF
    echo "---"
    cat "$here/results-pvc.yaml"
    echo "---"
    job "$here/run-job.yaml" segments
}

if $print_only; then
    set_start
    render
    echo "---"
    job "$here/merge-job.yaml"
    exit 0
fi

command -v kubectl >/dev/null 2>&1 || fail "kubectl is not on PATH"
kube() { if [ -n "$namespace" ]; then kubectl --namespace "$namespace" "$@"; else kubectl "$@"; fi; }

# A Job's pod template cannot be changed: the previous run's Jobs go first (their results stay on the volume).
kube delete job fleetbench-run fleetbench-merge --ignore-not-found --wait=true >/dev/null
# After the deletion, which may wait for pods to end: the lead is all the new pods' own.
set_start
render | kube apply -f -
echo "launch.sh: run $run_id, $segments segments, starting at $start_at (results: /results/$run_id on fleetbench-results)"

# Complete or Failed, whichever comes first.
wait_job() {
    deadline=$(($(date -u +%s) + $2))
    while :; do
        conditions=$(kube get job "$1" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type} {end}')
        case " $conditions " in
            *" Complete "*) return 0 ;;
            *" Failed "*) return 1 ;;
        esac
        [ "$(date -u +%s)" -lt "$deadline" ] || fail "job/$1 has not finished after $2 s"
        sleep 5
    done
}

if ! wait_job fleetbench-run "$timeout"; then
    echo "launch.sh: a segment failed; merging what there is (merge names the missing segments)" >&2
fi
job "$here/merge-job.yaml" | kube apply -f -
status=0
wait_job fleetbench-merge 3600 || status=1
kube logs job/fleetbench-merge || true
if [ "$status" -ne 0 ]; then
    code=$(kube get pods -l job-name=fleetbench-merge \
        -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.exitCode}' 2>/dev/null || true)
    case "$code" in ''|*[!0-9]*) code=1 ;; esac
    exit "$code"
fi
echo "launch.sh: merged results in /results/$run_id/merged (copy them out with results-pod.yaml)"
