#!/bin/bash
# slurm_one_node.sh WORKDIR COMMAND...
#
# Starts a one-node Slurm cluster on this machine (munged, slurmctld and slurmd, every file of
# theirs in WORKDIR: key, socket, slurm.conf, state, spool, logs; free ports), runs COMMAND with
# SLURM_CONF pointing at it, and stops the daemons when it exits, however it exits. Used by
# tests/sim/cli/sweep_cli_test.cpp to run a `commbound sweep --emit slurm` job array for real.
#
# Exit status: COMMAND's; 77 (ctest's skip) when Slurm cannot be started here (not installed, a
# daemon does not come up), with the reason on stderr. Every wait has a time limit.
set -u
work=$1
shift
skip() {
  echo "SKIP: $*" >&2
  exit 77
}
for tool in munged slurmctld slurmd sbatch scontrol sinfo timeout; do
  command -v "$tool" > /dev/null || skip "$tool not found (Debian: apt-get install slurm-wlm munge)"
done
[ "$(id -u)" = 0 ] || skip "not root: this one-node cluster runs its daemons as root (SlurmUser=root)"

mkdir -p "$work"/munge "$work"/state "$work"/spool "$work"/log || skip "cannot create $work"
chmod 700 "$work"/munge
head -c 1024 /dev/urandom > "$work"/munge/munge.key && chmod 600 "$work"/munge/munge.key

# A process that is running (a zombie has exited: only its parent can reap it).
alive() { [ -e "/proc/$1" ] && ! grep -qE '^[0-9]+ \(.*\) Z' "/proc/$1/stat" 2> /dev/null; }
stop() {
  if [ -f "$work"/slurm.conf ]; then
    SLURM_CONF="$work"/slurm.conf timeout 10 scontrol shutdown > /dev/null 2>&1
  fi
  [ -f "$work"/munge/munged.pid ] && kill "$(cat "$work"/munge/munged.pid)" 2> /dev/null
  for pidfile in "$work"/slurmctld.pid "$work"/slurmd.pid "$work"/munge/munged.pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && kill -9 "$pid" 2> /dev/null
  done
}
trap stop EXIT

timeout 10 munged --force --socket="$work"/munge/munge.socket --key-file="$work"/munge/munge.key \
  --log-file="$work"/munge/munged.log --pid-file="$work"/munge/munged.pid --seed-file="$work"/munge/munged.seed \
  || skip "munged did not start: $(tail -n 3 "$work"/munge/munged.log 2> /dev/null)"

# Two ports nobody listens on (ss lists the listening ones; without ss, a random pair).
port=$((20000 + RANDOM % 20000))
if command -v ss > /dev/null; then
  while ss -ltn | grep -qE ":($port|$((port + 1)))\b"; do port=$((20000 + RANDOM % 20000)); done
fi

cat > "$work"/slurm.conf << CONF
ClusterName=commbound-test
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work"/slurm.conf

timeout 20 slurmctld -i || skip "slurmctld did not start: $(tail -n 3 "$work"/log/slurmctld.log 2> /dev/null)"
timeout 20 slurmd -N localhost || skip "slurmd did not start: $(tail -n 3 "$work"/log/slurmd.log 2> /dev/null)"
state=""
for _ in $(seq 60); do
  state=$(timeout 5 sinfo -h -n localhost -o %t 2> /dev/null)
  [ "$state" = idle ] && break
  sleep 0.5
done
[ "$state" = idle ] || skip "the node did not come up (state \"$state\"): $(tail -n 3 "$work"/log/slurmd.log 2> /dev/null)"
echo "slurm: one-node cluster up (slurmctld port $port, $(nproc) CPUs), running: $*" >&2

"$@"
