#!/usr/bin/env bash
# Installs the Debian packages named on the command line that are missing, with apt-get (through
# sudo when not root). Used by the Makefile and the test scripts, so a fresh machine needs nothing
# installed by hand.
#
#   tools/apt-install.sh COMMAND=PACKAGE ...   # installs PACKAGE unless COMMAND is on the PATH
#   tools/apt-install.sh --no-install-recommends COMMAND=PACKAGE ...   # without its Recommends
set -euo pipefail

options=()
if [[ ${1:-} == --no-install-recommends ]]; then
    options=(--no-install-recommends)
    shift
fi

say() { echo "apt-install: $*" >&2; }

install_packages() {
    local sudo=()
    if [[ $(id -u) != 0 ]]; then
        if ! command -v sudo >/dev/null; then
            say "$* not installed, and installing needs root: apt-get install $*"
            exit 1
        fi
        sudo=(sudo)
    fi
    say "installing Debian's $*"
    # docker-registry's init script would start a registry on :5000 for good. A policy-rc.d that
    # exits 101 is Debian's way of saying "do not start services" (container images ship one).
    local own_policy=
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
        "${sudo[@]}" chmod 755 /usr/sbin/policy-rc.d
        own_policy=1
    fi
    # A fresh machine's `make test` installs three times (binaryen, the registry, chromium): one
    # `apt-get update` within the hour serves them all, and a failed install updates and retries.
    local stamp=${TMPDIR:-/tmp}/apt-install.updated
    update() { "${sudo[@]}" apt-get update -qq && touch "$stamp"; }
    install() { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${options[@]}" "$@"; }
    local status=0
    if [[ -n $(find "$stamp" -mmin -60 2>/dev/null) ]]; then
        { install "$@" || { update && install "$@"; }; } >&2 || status=$?
    else
        { update && install "$@"; } >&2 || status=$?
    fi
    if [[ -n $own_policy ]]; then
        "${sudo[@]}" rm -f /usr/sbin/policy-rc.d
    fi
    if [[ $status != 0 ]]; then
        say "apt-get install $* failed"
        exit "$status"
    fi
}

missing=()
for wanted in "$@"; do
    command=${wanted%%=*}
    package=${wanted#*=}
    command -v "$command" >/dev/null || missing+=("$package")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    install_packages "${missing[@]}"
fi
