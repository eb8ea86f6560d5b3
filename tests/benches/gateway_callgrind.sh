#!/usr/bin/env bash
# Instructions per stateless `tools/call` (the `mcp_server` example's `add`, over loopback
# streamable HTTP) of each process in its path, counted with `valgrind --tool=callgrind`, which
# the machine's load does not blur as it does wall time:
#
# - the upstream itself, called directly;
# - the floor: the gateway bench's hand-written forwarding proxy (no MCP parsing);
# - the gateway (`mcp_gateway` example, bearer token, alice with a switch of her own, SQLite);
# - with GATEWAY_BEFORE=<program>, another build of the gateway, measured the same way.
#
# GATEWAY_EXTRA adds lines to the measured gateways' `[gateway]` table (for example
# `fast_calls = false`, the way every request takes without the short way of `tools/call`).
#
#     tests/benches/gateway_callgrind.sh
#     GATEWAY_BENCH=target/release/deps/gateway-HASH GATEWAY_BEFORE=/path/to/mcp_gateway_example \
#         CALLGRIND_ONLY=gateway_before tests/benches/gateway_callgrind.sh
#
# Each count is (instructions with FEW + 1000 calls - instructions with FEW calls) / 1000, of
# the process under callgrind alone, so its start, the first calls' one-time work and its exit
# cancel out. The calls come from one `curl` over one keep-alive connection.
set -euo pipefail
cd "$(dirname "$0")/../.."

# GATEWAY_BENCH names the bench program when it is built already.
bench=${GATEWAY_BENCH:-$(nice cargo bench -p tool-tests --bench gateway --no-run 2>&1 |
    sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -n 1)}
if [ -z "$bench" ]; then
    echo "cannot build the gateway bench" >&2
    exit 1
fi
release=$(dirname "$(dirname "$bench")")
upstream_program="$release/mcp_server_example"
gateway_program="$release/mcp_gateway_example"

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# Starts a program that prints `listening on URL` first; sets $url and $pid.
start() { # name command...
    local name=$1 fifo="$work/$1.out"
    shift
    rm -f "$fifo"
    mkfifo "$fifo"
    "$@" >"$fifo" 2>"$work/$name.err" &
    pid=$!
    pids+=("$pid")
    exec {fd}<"$fifo"
    read -r line <&$fd
    url=${line#listening on }
    # Keep reading, so the program never blocks on a full pipe.
    cat <&$fd >/dev/null &
}

body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"TOOL","arguments":{"a":2,"b":3}}}'
ALICE=alice-token-0123456789
ADMIN=admin-token-abcdef

# `count` calls of `tool` at `target`, over one connection; fails unless every answer is 5.
calls() { # target tool count
    local urls=() i answers
    for ((i = 0; i < $3; i++)); do urls+=("$1"); done
    answers=$(curl -s -H 'content-type: application/json' \
        -H 'accept: application/json, text/event-stream' \
        -H 'mcp-protocol-version: 2025-06-18' -H "authorization: Bearer $ALICE" \
        -d "${body/TOOL/$2}" "${urls[@]}" | grep -o '"text":"5"' | wc -l)
    if [ "$answers" -ne "$3" ]; then
        echo "only $answers of $3 calls of $2 at $1 answered 5" >&2
        exit 1
    fi
}

# Waits (at most a minute) until a call of `tool` at `target` answers 5: a program under
# callgrind runs slowly, and the gateway connects to its upstream after it starts listening.
ready() { # target tool
    local i
    for ((i = 0; i < 120; i++)); do
        if curl -s -H 'content-type: application/json' \
            -H 'accept: application/json, text/event-stream' \
            -H 'mcp-protocol-version: 2025-06-18' -H "authorization: Bearer $ALICE" \
            -d "${body/TOOL/$2}" "$1" | grep -q '"text":"5"'; then
            return 0
        fi
        sleep 0.5
    done
    echo "$2 at $1 never answered 5" >&2
    exit 1
}

sha256() { echo -n "$1" | sha256sum | cut -d' ' -f1; }

start upstream "$upstream_program" --http 127.0.0.1:0 --stateless
upstream_url=$url

# The instructions one run of `what` executes with `count` calls.
run() { # what count
    local out="$work/callgrind.out" target tool=up_add
    rm -f "$out"
    case $1 in
    upstream)
        # The upstream again, under callgrind.
        start measured valgrind --tool=callgrind --callgrind-out-file="$out" \
            "$upstream_program" --http 127.0.0.1:0 --stateless
        tool=add
        ;;
    floor)
        start measured env TOOL_CORE_BENCH_FORWARD_TO="$upstream_url" \
            valgrind --tool=callgrind --callgrind-out-file="$out" "$bench"
        tool=add
        ;;
    gateway | gateway_before)
        local program=$gateway_program dir="$work/$1.$2"
        [ "$1" = gateway_before ] && program=$GATEWAY_BEFORE
        mkdir -p "$dir"
        cat >"$dir/gateway.toml" <<EOF
[gateway]
store = "sqlite://$dir/switches.db"
admin_token_sha256 = "$(sha256 $ADMIN)"
stateless = true
calls_per_minute = 100000000
max_concurrent_calls = 1024
${GATEWAY_EXTRA:-}

[[users]]
name = "alice"
token_sha256 = "$(sha256 $ALICE)"

[[servers]]
name = "up"
prefix = "up"
url = "$upstream_url"
EOF
        start measured env RUST_LOG=error valgrind --tool=callgrind --callgrind-out-file="$out" \
            "$program" --config "$dir/gateway.toml" --listen 127.0.0.1:0
        ;;
    esac
    target=$url
    ready "$target" "$tool"
    if [ "$tool" = up_add ]; then
        # Alice has a switch of her own, so every call checks a stored set.
        curl -sf -X PUT -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' \
            -d '{"enabled": false}' \
            "${url%/mcp}/admin/users/alice/tools/up_divide_integers" >/dev/null ||
            { echo "the switch was refused" >&2; exit 1; }
    fi
    calls "$target" "$tool" 20
    calls "$target" "$tool" "$2"
    # SIGTERM: a script's background job ignores SIGINT. Callgrind writes its counts as the
    # program ends.
    kill -TERM "$pid"
    wait "$pid" || true
    sed -n 's/^summary: *\([0-9]*\).*/\1/p;s/^totals: *\([0-9]*\).*/\1/p' "$out" | head -n 1
}

few=200
per_call() { # what
    local a b
    a=$(run "$1" "$few")
    b=$(run "$1" $((few + 1000)))
    echo $(((b - a) / 1000))
}

# With CALLGRIND_ONLY set to one row's name (upstream, floor, gateway, gateway_before), only
# that row is counted.
row() { # what label
    if [ -z "${CALLGRIND_ONLY:-}" ] || [ "$CALLGRIND_ONLY" = "$1" ]; then
        echo "$2 $(per_call "$1")"
    fi
}

echo "== instructions per tools/call (callgrind, the named process only) =="
row upstream "upstream (a direct call):"
row floor "floor proxy:             "
row gateway "gateway:                 "
if [ -n "${GATEWAY_BEFORE:-}" ]; then
    row gateway_before "gateway before:          "
fi
