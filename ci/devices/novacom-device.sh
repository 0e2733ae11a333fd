#!/bin/sh
# webOS (HP TouchPad) through novacom: the command-transport contract of docs/command-transport.md.
#
#   novacom-device.sh push LOCAL REMOTE
#   novacom-device.sh pull REMOTE_DIR LOCAL_DIR
#   novacom-device.sh exec --run-id ID [--env NAME]... -- ARGV...
#   novacom-device.sh kill ID
#
# Needs `novacom` (Palm/HP webOS SDK) on PATH and the device in developer mode, connected by USB.
# ZBENCH_NOVACOM_DEVICE selects a device (novacom -d) when several are attached.
set -u

TOOLING_FAILED=125

die() { echo "novacom-device.sh: $*" >&2; exit $TOOLING_FAILED; }

command -v novacom >/dev/null 2>&1 || die "novacom is not installed or not on PATH; install the webOS SDK (novacom + novacomd) on this host"

nova() {
  if [ -n "${ZBENCH_NOVACOM_DEVICE:-}" ]; then novacom -d "$ZBENCH_NOVACOM_DEVICE" "$@"; else novacom "$@"; fi
}

# POSIX single-quote one argument for the device shell.
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# Run a command string with the device's /bin/sh.
dev_sh() { nova run file:///bin/sh -- -c "$1"; }

valid_id() { case "$1" in ''|*[!A-Za-z0-9-]*) die "bad run id: $1";; esac; }
# `--env NAME`: the value is NAME's in this script's environment (the host never puts values on a command
# line); sets pair=NAME=VALUE.
env_pair() {
  case "$1" in ''|[0-9]*|*[!A-Za-z0-9_]*) die "--env: $1 is not a variable name";; esac
  printenv "$1" >/dev/null || die "--env $1: not set in the environment"
  pair="$1=$(printenv "$1")"
}

[ $# -ge 1 ] || die "usage: $0 push|pull|exec|kill ..."
verb=$1; shift

case "$verb" in
  push)
    [ $# -eq 2 ] || die "usage: push LOCAL REMOTE"
    [ -f "$1" ] || die "no such file: $1"
    nova put "file://$2" < "$1" || die "novacom put $2 failed"
    ;;
  pull)
    [ $# -eq 2 ] || die "usage: pull REMOTE_DIR LOCAL_DIR"
    remote=$1; local_dir=$2
    dev_sh "test -d $(q "$remote")" || die "$remote: no such folder on the device"
    # regular files only, one name per line (names with newlines are not supported)
    names=$(dev_sh "cd $(q "$remote") && for f in *; do [ -f \"\$f\" ] && echo \"\$f\"; done; true") \
      || die "cannot list $remote on the device"
    printf '%s\n' "$names" | while IFS= read -r name; do
      [ -n "$name" ] || continue
      nova get "file://$remote/$name" > "$local_dir/$name" || die "novacom get $remote/$name failed"
    done
    ;;
  exec)
    run_id=""; envs=""
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
      case "$1" in
        --run-id) [ $# -ge 2 ] || die "--run-id needs a value"; run_id=$2; shift 2 ;;
        --env) [ $# -ge 2 ] || die "--env needs NAME"; env_pair "$2"; envs="$envs $(q "$pair")"; shift 2 ;;
        *) die "exec: unknown option $1" ;;
      esac
    done
    [ "${1:-}" = "--" ] && [ $# -ge 2 ] || die "usage: exec --run-id ID [--env NAME]... -- ARGV..."
    shift
    cmd=""
    for arg in "$@"; do cmd="$cmd $(q "$arg")"; done
    if [ -n "$run_id" ]; then
      valid_id "$run_id"
      pidfile="/tmp/zbench-$run_id.pid"
      # the device shell records its pid, then becomes the runner; `novacom run` exits with its status
      dev_sh "echo \$\$ > $(q "$pidfile"); exec env$envs$cmd"
      code=$?
      dev_sh "rm -f $(q "$pidfile")" >/dev/null 2>&1
      exit $code
    fi
    dev_sh "exec env$envs$cmd"
    ;;
  kill)
    [ $# -eq 1 ] || die "usage: kill ID"
    valid_id "$1"
    pidfile="/tmp/zbench-$1.pid"
    dev_sh "p=\$(cat $(q "$pidfile") 2>/dev/null) || exit 0
kill -TERM \$p 2>/dev/null
i=0; while kill -0 \$p 2>/dev/null && [ \$i -lt 20 ]; do sleep 0.1; i=\$((i+1)); done
kill -KILL \$p 2>/dev/null; rm -f $(q "$pidfile"); true"
    ;;
  *)
    die "unknown verb $verb (push, pull, exec, kill)"
    ;;
esac
