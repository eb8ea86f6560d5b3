#!/usr/bin/env bash
# The OpenTelemetry instrumentation's cost per agent turn, in one run: the agent overhead bench
# built without the `otel` feature (the baseline) and with it, each timed by criterion against
# its in-run direct baseline, then the instructions of a turn of each case counted with
# `valgrind --tool=callgrind` (repeatable where wall time is not).
#
#     tool-core/benches/agent_overhead_otel.sh            # criterion and callgrind
#     tool-core/benches/agent_overhead_otel.sh callgrind  # callgrind only
set -euo pipefail
cd "$(dirname "$0")/../.."

binary() { # the bench binary built with the given cargo arguments
    cargo bench -p tool-core --bench agent_overhead "$@" --no-run 2>&1 |
        sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -n 1
}
off=$(binary)
on=$(binary --features otel)
if [ -z "$off" ] || [ -z "$on" ]; then
    echo "cannot build the agent overhead bench" >&2
    exit 1
fi

if [ "${1:-}" != callgrind ]; then
    "$off" --bench
    "$on" --bench
fi

# Instructions of one turn: (the count for FEW + 1000 turns - the count for FEW) / 1000, so the
# set-up and the first turns' one-time work cancel out.
few=100
instructions() { # binary case turns
    local out
    out=$(AGENT_OVERHEAD_CASE="$2" AGENT_OVERHEAD_TURNS="$3" \
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" 2>&1)
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' <<<"$out"
}
per_turn() { # binary case
    local a b
    a=$(instructions "$1" "$2" "$few")
    b=$(instructions "$1" "$2" $((few + 1000)))
    echo $(((b - a) / 1000))
}
echo
echo "== instructions per turn (callgrind; 4 tool calls, 2 model steps, 7 spans with otel) =="
direct=$(per_turn "$off" direct)
base=$(per_turn "$off" agent)
quiet=$(per_turn "$on" agent)
traced=$(per_turn "$on" otel_in_memory)
ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }
echo "direct tool calls (otel off):   $direct"
echo "agent turn, otel off:           $base ($(ratio "$base" "$direct")x direct)"
echo "agent turn, otel on, no subscriber: $quiet ($(ratio "$quiet" "$base")x off, +$(((quiet - base) / 7)) a span)"
echo "agent turn, otel on, in-memory exporter: $traced ($(ratio "$traced" "$base")x off, +$(((traced - base) / 7)) a span)"
