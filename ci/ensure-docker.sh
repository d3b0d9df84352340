#!/usr/bin/env bash
# Make sure a Docker engine answers, for the kind provider and its suite.
#   ci/ensure-docker.sh         print the DOCKER_HOST to export on stdout
#                               (empty when the default engine answers)
#   ci/ensure-docker.sh stop    stop the private engine this script started
#
# 1. An engine that answers (DOCKER_HOST, or the default socket) is used as
#    it is.
# 2. Otherwise, as root on Debian: install docker.io with apt-get when
#    dockerd is missing, then start a private dockerd whose state lives
#    under the harness cache (<cache>/docker: data root, socket, logs) and
#    whose exec root is /run/harness-docker. It leaves the host alone:
#    --iptables=false --ip-masq=false --ip-forward=false --ip6tables=false,
#    its own bridge subnet, a root-only socket. Its default runtime is a
#    wrapper around runc that removes, from every container's OCI spec, the
#    capabilities the host's bounding set lacks (this machine has no
#    CAP_SYS_RESOURCE: a --privileged container fails "unable to apply
#    caps" without it).
# 3. Anything else: one line on stderr saying why, exit 3.
# Messages go to stderr, one line saying what was done.
set -euo pipefail
cache="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness}"
dir="$cache/docker"
exec_root="${HARNESS_DOCKER_EXEC_ROOT:-/run/harness-docker}"
sock="$dir/docker.sock"
pidfile="$exec_root/dockerd.pid"

say() { echo "ensure-docker: $*" >&2; }

# Put back what a start changed, from the record it wrote before changing
# anything ($exec_root/*-before): the bridges the engine made (docker0,
# br-<network id>) that the host did not have, the inotify limits it
# raised, ip_forward (the engine runs with --ip-forward=false; this only
# guards that). Each record goes once it is restored, so a second call
# does nothing. Run by `stop` whether or not the engine's pidfile is
# there, and by a start that failed, at once.
restore() {
  if [ -f "$exec_root/links-before" ]; then
    for link in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//'); do
      case "$link" in docker0 | br-*) ;; *) continue ;; esac
      grep -qx "$link" "$exec_root/links-before" || ip link delete "$link" 2>/dev/null || true
    done
    rm -f "$exec_root/links-before"
  fi
  for k in max_user_instances max_user_watches; do
    if [ -f "$exec_root/inotify-$k-before" ]; then
      cat "$exec_root/inotify-$k-before" >"/proc/sys/fs/inotify/$k" || true
      say "put fs.inotify.$k back to $(cat "$exec_root/inotify-$k-before")"
      rm -f "$exec_root/inotify-$k-before"
    fi
  done
  if [ -f "$exec_root/ip_forward-before" ]; then
    was=$(cat "$exec_root/ip_forward-before")
    [ "$(cat /proc/sys/net/ipv4/ip_forward)" = "$was" ] || echo "$was" >/proc/sys/net/ipv4/ip_forward
    rm -f "$exec_root/ip_forward-before"
  fi
}

# Stop the private dockerd of the pidfile, if it runs.
stop_engine() {
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      # dockerd stops its containers (kind nodes) and its containerd.
      kill -TERM "$pid"
      for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
      if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
      fi
      say "stopped the private dockerd (pid $pid)"
    fi
    rm -f "$pidfile"
  fi
}

if [ "${1:-}" = stop ]; then
  stop_engine
  restore
  exit 0
fi

# kind node images are built here from a Debian root filesystem
# (tools/kindnode/rootfs.rs), as root.
if [ "$(id -u)" = 0 ] && ! command -v debootstrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  say "installing Debian's debootstrap (kind node images are built from a Debian root filesystem)"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

answers() { timeout 20 docker ${1:+--host "$1"} info --format '{{.ServerVersion}}' >/dev/null 2>&1; }

if ! command -v docker >/dev/null 2>&1 && ! command -v dockerd >/dev/null 2>&1; then
  :
elif [ -n "${DOCKER_HOST:-}" ] && answers "$DOCKER_HOST"; then
  say "using the engine at DOCKER_HOST=$DOCKER_HOST"
  echo "$DOCKER_HOST"
  exit 0
elif [ -S "$sock" ] && answers "unix://$sock"; then
  say "using the private engine already running at unix://$sock"
  echo "unix://$sock"
  exit 0
elif [ -z "${DOCKER_HOST:-}" ] && answers ""; then
  say "using the default engine ($(docker info --format '{{.ServerVersion}}' 2>/dev/null))"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  say "no Docker engine answers and this is not root: start one (Docker Engine or Docker Desktop) or run as root to have a private one started"
  exit 3
fi
if ! command -v dockerd >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    say "no Docker engine answers and no apt-get to install docker.io: install Docker Engine"
    exit 3
  fi
  say "installing Debian's docker.io"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
command -v docker >/dev/null 2>&1 || { say "docker.io installed no docker client"; exit 3; }
runc=$(command -v runc || true)
[ -n "$runc" ] || { say "no runc next to dockerd"; exit 3; }
python=$(command -v python3 || true)
[ -n "$python" ] || { say "the runtime wrapper needs python3"; exit 3; }

mkdir -p "$dir/data" "$exec_root"
chmod 0700 "$dir" "$exec_root"

# The capabilities this host cannot grant: the full list less the
# bounding set (CapBnd of /proc/self/status, one bit per capability).
bnd=$((16#$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status)))
last=$(cat /proc/sys/kernel/cap_last_cap)
names=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP
  LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER
  SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE
  SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP
  MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF
  CHECKPOINT_RESTORE)
missing=()
for i in $(seq 0 "$last"); do
  if [ $(( (bnd >> i) & 1 )) = 0 ] && [ "$i" -lt "${#names[@]}" ]; then
    missing+=("CAP_${names[$i]}")
  fi
done

wrapper="$dir/runc-wrapper"
# A Python file of its own: the container's standard input is runc's, so
# the program cannot come on stdin.
cat >"$wrapper.tmp" <<EOF
#!$python
# Written by ci/ensure-docker.sh: runc without the capabilities this host's
# bounding set lacks (${missing[*]:-none}), removed from the OCI spec of
# "create"/"run" (the bundle's config.json) and of "exec" (--process).
import json, os, sys
RUNC = "$runc"
DROP = set("${missing[*]:-}".split())
EOF
cat >>"$wrapper.tmp" <<'EOF'
args = sys.argv[1:]


def value(flag):
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def clean(path, in_process):
    try:
        with open(path) as f:
            spec = json.load(f)
    except (OSError, ValueError):
        return
    proc = spec.get("process") if in_process else spec
    caps = proc.get("capabilities") if isinstance(proc, dict) else None
    if not isinstance(caps, dict):
        return
    changed = False
    for k, v in list(caps.items()):
        if isinstance(v, list) and DROP.intersection(v):
            caps[k] = [c for c in v if c not in DROP]
            changed = True
    if changed:
        with open(path + ".tmp", "w") as f:
            json.dump(spec, f)
        os.replace(path + ".tmp", path)


if DROP:
    # The subcommand: the first word that is not a flag or a flag's value.
    skip, cmd = False, None
    for a in args:
        if skip:
            skip = False
        elif a in ("--root", "--log", "--log-format", "--criu"):
            skip = True
        elif not a.startswith("-"):
            cmd = a
            break
    if cmd in ("create", "run"):
        clean(os.path.join(value("--bundle") or value("-b") or ".", "config.json"), True)
    elif cmd == "exec":
        p = value("--process") or value("-p")
        if p:
            clean(p, False)
os.execv(RUNC, [RUNC] + args)
EOF
chmod 0755 "$wrapper.tmp"
mv "$wrapper.tmp" "$wrapper"

say "starting a private dockerd (data $dir/data, socket $sock, runtime wrapper dropping ${missing[*]:-nothing})"
rm -f "$sock"
# What the host had before: its network links and sysctls (stop puts the
# links the engine made, docker0 and its networks' bridges, away again).
ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' >"$exec_root/links-before" || true
cat /proc/sys/net/ipv4/ip_forward >"$exec_root/ip_forward-before" 2>/dev/null || true
# A kind node is a systemd machine with a control plane or a kubelet in
# it, all running as this root: each takes inotify instances from root's
# fs.inotify.max_user_instances (128 by default), and the kind suite's
# clusters beside the local suites' run out of them ("too many open
# files": containerd without its CRI service, controllers stopping at
# start). Raised to what kind's known issues advise while the engine runs;
# stop puts the values back. `harness doctor` shows the room left. (512
# is harness/src/inotify.rs's ADVISED; a test there holds them equal.)
for k in max_user_instances:512 max_user_watches:524288; do
  f=/proc/sys/fs/inotify/${k%%:*} want=${k##*:}
  [ -w "$f" ] || continue
  was=$(cat "$f")
  if [ "$was" -lt "$want" ]; then
    if echo "$want" 2>/dev/null >"$f"; then
      echo "$was" >"$exec_root/inotify-${k%%:*}-before"
      say "raised fs.inotify.${k%%:*} from $was to $want while the engine runs"
    else
      say "could not raise fs.inotify.${k%%:*} from $was (the kind suite says what it lacks)"
    fi
  fi
done
nohup setsid dockerd \
  --host "unix://$sock" --group root \
  --data-root "$dir/data" --exec-root "$exec_root" --pidfile "$pidfile" \
  --iptables=false --ip-masq=false --ip-forward=false --ip6tables=false \
  --bip "${HARNESS_DOCKER_BIP:-172.29.250.1/24}" \
  --add-runtime "harness-runc=$wrapper" --default-runtime harness-runc \
  --storage-driver overlay2 \
  >"$dir/dockerd.log" 2>&1 </dev/null &
for _ in $(seq 1 60); do
  if [ -S "$sock" ] && answers "unix://$sock"; then
    chmod 0600 "$sock"
    say "private dockerd $(docker --host "unix://$sock" info --format '{{.ServerVersion}}') answers at unix://$sock"
    echo "unix://$sock"
    exit 0
  fi
  sleep 1
done
say "the private dockerd did not answer within 60 s; its log ($dir/dockerd.log) ends:"
tail -n 20 "$dir/dockerd.log" >&2 || true
# Nothing it changed stays behind a start that failed.
stop_engine
restore
exit 3
