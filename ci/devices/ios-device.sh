#!/bin/sh
# iPad / iPhone through a Mac with ios-deploy: the command-transport contract of docs/command-transport.md.
#
#   ios-device.sh push LOCAL REMOTE
#   ios-device.sh pull REMOTE_DIR LOCAL_DIR
#   ios-device.sh exec --run-id ID [--env NAME]... -- ARGV...
#   ios-device.sh kill ID
#
# Runs on macOS with Xcode and ios-deploy (`brew install ios-deploy`); the device is paired and in developer
# mode. The runner is an app, already built and signed:
#   ZBENCH_IOS_APP        path of the .app bundle on this Mac (launched with --noinstall)
#   ZBENCH_IOS_BUNDLE_ID  its bundle id (files live in its container: /Documents/...)
#   ZBENCH_IOS_UDID       the device (optional when only one is connected)
# ARGV[0] (the inventory's runner, e.g. zinc-bench) names the app and is not passed; ARGV[1:] become the
# app's launch arguments. ios-deploy joins them with spaces, so arguments containing whitespace or quotes are
# refused (exit 125) rather than split wrongly. Paths are inside the app container.
# `xcrun devicectl` needs iOS 17+ devices (CoreDevice), so it cannot drive an iOS 16 iPad: ios-deploy it is.
# `kill` stops the local ios-deploy, whose debugger then ends the app (check on your device that it does).
set -u

TOOLING_FAILED=125
STATE_DIR="${TMPDIR:-/tmp}/zbench-ios"

die() { echo "ios-device.sh: $*" >&2; exit $TOOLING_FAILED; }

[ "$(uname -s)" = Darwin ] || die "needs macOS with Xcode (this host is $(uname -s))"
command -v ios-deploy >/dev/null 2>&1 || die "ios-deploy is not installed or not on PATH (brew install ios-deploy)"
command -v xcrun >/dev/null 2>&1 || die "Xcode command line tools are missing (xcode-select --install)"
[ -n "${ZBENCH_IOS_BUNDLE_ID:-}" ] || die "set ZBENCH_IOS_BUNDLE_ID to the runner app's bundle id"

dev() {
  if [ -n "${ZBENCH_IOS_UDID:-}" ]; then
    ios-deploy --id "$ZBENCH_IOS_UDID" --bundle_id "$ZBENCH_IOS_BUNDLE_ID" "$@"
  else
    ios-deploy --bundle_id "$ZBENCH_IOS_BUNDLE_ID" "$@"
  fi
}

valid_id() { case "$1" in ''|*[!A-Za-z0-9-]*) die "bad run id: $1";; esac; }
# `--env NAME`: the value is NAME's in this script's environment (the host never puts values on a command
# line); sets pair=NAME=VALUE.
env_pair() {
  case "$1" in ''|[0-9]*|*[!A-Za-z0-9_]*) die "--env: $1 is not a variable name";; esac
  printenv "$1" >/dev/null || die "--env $1: not set in the environment"
  pair="$1=$(printenv "$1")"
}
plain() { case "$1" in *[[:space:]\'\"\\]*) die "argument '$1' contains whitespace or quotes, which ios-deploy --args cannot pass";; esac; }

[ $# -ge 1 ] || die "usage: $0 push|pull|exec|kill ..."
verb=$1; shift
mkdir -p "$STATE_DIR" || die "cannot create $STATE_DIR"

case "$verb" in
  push)
    [ $# -eq 2 ] || die "usage: push LOCAL REMOTE"
    [ -f "$1" ] || die "no such file: $1"
    dev --upload "$1" --to "$2" >/dev/null || die "ios-deploy --upload $2 failed"
    ;;
  pull)
    [ $# -eq 2 ] || die "usage: pull REMOTE_DIR LOCAL_DIR"
    remote=${1%/}; local_dir=$2
    staging=$(mktemp -d "$STATE_DIR/pull.XXXXXX") || die "mktemp failed"
    # ios-deploy recreates the device path under --to; the files are then moved up, flat
    dev --download="$remote" --to "$staging" >/dev/null || { rm -rf "$staging"; die "$remote: cannot download (no such folder?)"; }
    [ -d "$staging$remote" ] || { rm -rf "$staging"; die "$remote: no such folder on the device"; }
    for f in "$staging$remote"/*; do
      [ -f "$f" ] && mv "$f" "$local_dir/"
    done
    rm -rf "$staging"
    ;;
  exec)
    run_id=""; envs=""
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
      case "$1" in
        --run-id) [ $# -ge 2 ] || die "--run-id needs a value"; run_id=$2; shift 2 ;;
        --env) [ $# -ge 2 ] || die "--env needs NAME"; env_pair "$2"; plain "$pair"; envs="${envs:+$envs }$pair"; shift 2 ;;
        *) die "exec: unknown option $1" ;;
      esac
    done
    [ "${1:-}" = "--" ] && [ $# -ge 2 ] || die "usage: exec --run-id ID [--env NAME]... -- ARGV..."
    shift
    # housekeeping the host sends through exec (there is no shell on the device)
    if [ "$1" = mkdir ] && [ "${2:-}" = -p ] && [ $# -eq 3 ]; then
      dev --mkdir "$3" >/dev/null || die "ios-deploy --mkdir $3 failed"; exit 0
    fi
    if [ "$1" = rm ] && [ "${2:-}" = -rf ] && [ $# -eq 3 ]; then
      dev --rmtree "$3" >/dev/null 2>&1; exit 0   # a missing folder is fine
    fi
    [ -n "${ZBENCH_IOS_APP:-}" ] && [ -d "$ZBENCH_IOS_APP" ] || die "set ZBENCH_IOS_APP to the runner's .app bundle"
    shift  # ARGV[0] names the app
    args=""
    for a in "$@"; do plain "$a"; args="${args:+$args }$a"; done
    set -- --bundle "$ZBENCH_IOS_APP" --noinstall --noninteractive --args "$args"
    [ -n "$envs" ] && set -- "$@" --envs "$envs"
    if [ -n "${ZBENCH_IOS_UDID:-}" ]; then set -- --id "$ZBENCH_IOS_UDID" "$@"; fi
    # ios-deploy streams the app's stdout and exits with its exit code
    ios-deploy "$@" &
    child=$!
    if [ -n "$run_id" ]; then valid_id "$run_id"; echo "$child" > "$STATE_DIR/$run_id.pid"; fi
    trap 'kill -TERM "$child" 2>/dev/null' TERM INT
    wait "$child"; code=$?
    [ -n "$run_id" ] && rm -f "$STATE_DIR/$run_id.pid"
    exit $code
    ;;
  kill)
    [ $# -eq 1 ] || die "usage: kill ID"
    valid_id "$1"
    pidfile="$STATE_DIR/$1.pid"
    [ -f "$pidfile" ] || exit 0
    p=$(cat "$pidfile")
    kill -TERM "$p" 2>/dev/null
    i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done
    kill -KILL "$p" 2>/dev/null
    rm -f "$pidfile"
    ;;
  *)
    die "unknown verb $verb (push, pull, exec, kill)"
    ;;
esac
