#!/usr/bin/env bash
# Starts a one-node Slurm cluster on this machine for the sweep tests (Debian 12's
# slurm-wlm 22.05 and munge, as root or through sudo, without cgroups):
#   1. installs slurm-wlm and munge with apt when sbatch or munged is missing;
#   2. starts munged (as the munge user) and checks a credential round trip;
#   3. writes /etc/slurm/slurm.conf for this host: 1 node with $(nproc) CPUs, one
#      partition "debug", no accounting storage (so sacct has no data), state and
#      logs under $SLURM_LOCAL_DIR (default /var/tmp/dpfil-slurm);
#   4. starts slurmctld and slurmd and waits (at most $SLURM_LOCAL_TIMEOUT seconds,
#      default 60) until sinfo shows the node idle.
# It is idempotent: daemons that already answer are left running. Exit status 0 means
# sbatch, squeue, scancel and scontrol work. Used by .ci/run before 'make test'
# (which then runs TestSlurmSweepPreemptAndMerge with DPFIL_SLURM=1).
set -euo pipefail

dir="${SLURM_LOCAL_DIR:-/var/tmp/dpfil-slurm}"
timeout="${SLURM_LOCAL_TIMEOUT:-60}"
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
say() { echo "slurm-local: $*"; }
die() { echo "slurm-local: error: $*" >&2; exit 1; }

if ! command -v sbatch >/dev/null 2>&1 || [ ! -x /usr/sbin/munged ] || [ ! -x /usr/sbin/slurmctld ]; then
  say "installing slurm-wlm and munge (apt)"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi

# munge: the package made /etc/munge/munge.key; the daemon runs as user munge.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  say "starting munged"
  if [ ! -f /etc/munge/munge.key ]; then
    $SUDO /usr/sbin/mungekey --create >/dev/null 2>&1 || $SUDO sh -c 'dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null'
    $SUDO chown munge:munge /etc/munge/munge.key
    $SUDO chmod 400 /etc/munge/munge.key
  fi
  $SUDO mkdir -p /run/munge
  $SUDO chown munge:munge /run/munge
  $SUDO su -s /bin/sh munge -c /usr/sbin/munged
  for _ in $(seq 1 20); do
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
    sleep 0.25
  done
  munge -n | unmunge >/dev/null || die "munged does not answer (munge -n | unmunge failed)"
fi

host="$(hostname -s)"
cpus="$(nproc)"
if ! sinfo -h >/dev/null 2>&1; then
  say "writing /etc/slurm/slurm.conf (node $host, $cpus CPUs, state in $dir)"
  $SUDO mkdir -p /etc/slurm "$dir/state" "$dir/spool" "$dir/log"
  $SUDO tee /etc/slurm/slurm.conf >/dev/null <<EOF
# One-node test cluster written by dpfil's scripts/slurm-local.sh.
ClusterName=dpfil-local
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  say "starting slurmctld and slurmd"
  $SUDO /usr/sbin/slurmctld
  $SUDO /usr/sbin/slurmd
fi

start=$SECONDS
while :; do
  state="$(sinfo -h -n "$host" -o %T 2>/dev/null || true)"
  case "$state" in
    idle|mixed|allocated) break ;;
  esac
  if [ $((SECONDS - start)) -ge "$timeout" ]; then
    echo "slurm-local: error: node $host is not idle after $timeout s (sinfo says '${state:-nothing}')" >&2
    for f in "$dir/log/slurmctld.log" "$dir/log/slurmd.log"; do
      [ -f "$f" ] && { echo "--- last lines of $f" >&2; tail -n 20 "$f" >&2; }
    done
    exit 1
  fi
  sleep 1
done
say "node $host is $state ($cpus CPUs, partition debug): $(sinfo --version)"
