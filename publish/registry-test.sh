#!/usr/bin/env bash
# Pushes annotated-policy.wasm to a real OCI registry and pulls it back
# (publish/tests/registry.rs), and runs the rest of publish's tests (its commands: they read
# PLAIN_POLICY_WASM, policy.wasm as the build wrote it, from the environment or beside this).
#
# Installs Debian's docker-registry (and openssl) if missing, starts three registries on free
# loopback ports with temporary configs and storage — an open one and one with htpasswd
# authentication on 127.0.0.1 (plain HTTP), and one with TLS from a throwaway CA on 127.0.0.2
# (HTTPS) — waits until they answer, runs all of publish's tests, and stops the registries on
# exit, whatever happens.
#
#   publish/registry-test.sh            # what `make registry-test` runs
#   CARGO=cargo POLICY_WASM=path/to/annotated-policy.wasm publish/registry-test.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cargo=${CARGO:-cargo}
module=${POLICY_WASM:-$root/annotated-policy.wasm}

say() { echo "registry-test: $*" >&2; }

if [[ ! -f $module ]]; then
    say "$module is missing: run \`make annotated-policy.wasm\` first"
    exit 1
fi

bash "$root/tools/apt-install.sh" docker-registry=docker-registry openssl=openssl

work=$(mktemp -d "${TMPDIR:-/tmp}/registry-test.XXXXXX")
pids=()

stop_registries() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    pids=()
    rm -rf "$work"
}
trap stop_registries EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A CA and a server certificate for 127.0.0.2, for the TLS registry.
make_certificates() {
    local dir="$work/certs"
    mkdir -p "$dir"
    {
        openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=registry-test-ca \
            -keyout "$dir/ca.key" -out "$dir/ca.pem" &&
            openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.2 \
                -keyout "$dir/server.key" -out "$dir/server.csr" &&
            printf 'subjectAltName=IP:127.0.0.2\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
                >"$dir/server.ext" &&
            openssl x509 -req -days 1 -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
                -CAcreateserial -extfile "$dir/server.ext" -out "$dir/server.pem"
    } >"$dir/openssl.log" 2>&1 || {
        say "openssl could not make the test certificates:"
        cat "$dir/openssl.log" >&2
        exit 1
    }
}

# answers HOST PORT [CA]: whether the registry at HOST:PORT answers /v2/ as a registry does
# (200 open, 401 with authentication), over HTTPS when a CA is given.
answers() {
    local host=$1 port=$2 ca=${3:-} code
    if command -v curl >/dev/null; then
        if [[ -n $ca ]]; then
            code=$(curl -s -o /dev/null -m 2 --cacert "$ca" -w '%{http_code}' \
                "https://$host:$port/v2/") || return 1
        else
            code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://$host:$port/v2/") || return 1
        fi
    elif [[ -n $ca ]]; then
        return 0 # no curl to speak TLS: the "listening" log line has to do
    else
        code=$(exec 3<>"/dev/tcp/$host/$port" &&
            printf 'GET /v2/ HTTP/1.0\r\nHost: %s\r\n\r\n' "$host" >&3 &&
            head -n1 <&3 | cut -d' ' -f2) || return 1
    fi
    [[ $code == 200 || $code == 401 ]]
}

# start_registry NAME open|htpasswd|tls: starts a registry; sets $address (host:port). With
# htpasswd, the registry creates the file with a user `docker` and a generated password, which
# it logs: sets $password.
start_registry() {
    local name=$1 mode=$2 dir="$work/$1" host=127.0.0.1 ca= attempt pid port tries
    if [[ $mode == tls ]]; then
        host=127.0.0.2 ca="$work/certs/ca.pem"
    fi
    mkdir -p "$dir/storage"
    for attempt in $(seq 1 20); do
        port=$((20000 + RANDOM % 40000))
        if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
            continue
        fi
        {
            echo "version: 0.1"
            echo "log:"
            echo "  level: info"
            echo "  accesslog: {disabled: true}"
            echo "storage:"
            echo "  filesystem: {rootdirectory: $dir/storage}"
            echo "http:"
            echo "  addr: $host:$port"
            echo "  secret: registry-test-$RANDOM$RANDOM"
            if [[ $mode == tls ]]; then
                echo "  tls: {certificate: $work/certs/server.pem, key: $work/certs/server.key}"
            fi
            if [[ $mode == htpasswd ]]; then
                echo "auth:"
                echo "  htpasswd: {realm: registry-test, path: $dir/htpasswd}"
            fi
        } >"$dir/config.yml"
        # No REGISTRY_* variable of the caller's environment may override the config.
        env $(compgen -e | grep '^REGISTRY_' | sed 's/^/-u /') \
            docker-registry serve "$dir/config.yml" >"$dir/log" 2>&1 &
        pid=$!
        pids+=("$pid")
        for tries in $(seq 1 100); do
            if ! kill -0 "$pid" 2>/dev/null; then
                break # it exited: the port was taken meanwhile; try another
            fi
            if grep -qs "listening on $host:$port" "$dir/log" && answers "$host" "$port" "$ca"; then
                if [[ $mode == htpasswd ]]; then
                    password=$(sed -n 's/.*password=\([^ ]*\) user=docker.*/\1/p' "$dir/log" | head -n1)
                    if [[ -z $password ]]; then
                        say "the $name registry logged no generated password:"
                        cat "$dir/log" >&2
                        exit 1
                    fi
                fi
                address=$host:$port
                say "$name registry (pid $pid) answers on $address"
                return 0
            fi
            sleep 0.1
        done
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        say "the $name registry did not start on $host:$port (attempt $attempt):"
        tail -n 5 "$dir/log" >&2
    done
    say "could not start the $name registry"
    exit 1
}

make_certificates
start_registry open open
open_address=$address
start_registry htpasswd htpasswd
auth_address=$address
start_registry tls tls
tls_address=$address

status=0
OCI_TEST_REGISTRY=$open_address \
    OCI_TEST_AUTH_REGISTRY=$auth_address \
    OCI_TEST_AUTH_USERNAME=docker \
    OCI_TEST_AUTH_PASSWORD=$password \
    OCI_TEST_TLS_REGISTRY=$tls_address \
    OCI_TEST_TLS_CA=$work/certs/ca.pem \
    POLICY_WASM=$module \
    "$cargo" test --locked -p publish -- --include-ignored --test-threads=1 --nocapture ||
    status=$?
if [[ $status != 0 ]]; then
    for log in "$work"/*/log; do
        say "$log:"
        tail -n 20 "$log" >&2
    done
fi
exit "$status"
