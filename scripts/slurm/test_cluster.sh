#!/usr/bin/env bash
# The Slurm plumbing, for real: installs Slurm and MUNGE from Debian if missing, starts a one-node cluster
# on this machine (munged, slurmctld, slurmd, a generated slurm.conf under a temporary folder), submits a
# sweep as a job array of shards and the merge as a job depending on it (afterok), and checks the result.
# Without a GPU the shards write their plans (--dry-run --json) and the merge checks that they cover the
# spec's plan exactly once; with one (GPU=1) they sweep for real and the merge joins their runs.
# Usage: bash scripts/slurm/test_cluster.sh [spec] [shards]   (root; from the repository root; needs build/convtune)
set -euo pipefail
spec=${1:-sweeps/default.json}
shards=${2:-3}
root_dir=$(pwd)
[ -x build/convtune ] || { echo "slurm test: build/convtune is missing (make first)"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "slurm test: skipped, it must run as root to start the Slurm daemons"; exit 0; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  install() { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm munge; }
  { install || { apt-get update -qq && install; }; } >/tmp/convtune-slurm-apt.log 2>&1 ||
    { echo "slurm test: skipped, slurm-wlm and munge cannot be installed here (/tmp/convtune-slurm-apt.log)"; exit 0; }
fi
work=$(mktemp -d /tmp/convtune-slurm.XXXXXX)
conf=$work/slurm.conf
host=$(hostname -s)
cleanup() {
  scontrol shutdown >/dev/null 2>&1 || true
  [ -f "$work/munged.pid" ] && kill "$(cat "$work/munged.pid")" 2>/dev/null || true
  sleep 1
}
trap cleanup EXIT
mkdir -p "$work"/{state,spool,munge} /run/munge
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$work/munge/munge.key"
munged --force --key-file "$work/munge/munge.key" --socket "$work/munge/socket" --pid-file "$work/munged.pid" \
  --log-file "$work/munged.log" --seed-file "$work/munge/seed"
cat >"$conf" <<CONF
ClusterName=convtune-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CryptoType=crypto/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$conf
slurmctld -f "$conf"
slurmd -f "$conf"
for _ in $(seq 60); do
  state=$(sinfo -h -o %T 2>/dev/null | head -1 || true)
  [ "$state" = idle ] && break
  sleep 1
done
[ "$state" = idle ] || { echo "slurm test: the node did not come up ($state)"; tail -5 "$work"/slurm*.log; exit 1; }
dry=1
[ "${GPU:-0}" = 1 ] && dry=0
results=$work/results
# On a GPU one shard at a time (%1): the test cluster has no GPU scheduling, and shards must not share it.
throttle=
[ "$dry" = 0 ] && throttle=%1
jid=$(sbatch --parsable --array=0-$((shards - 1))$throttle --chdir="$root_dir" --output="$work/sweep-%a.out" \
  --export=ALL,CONVTUNE_DRY_RUN=$dry,CONVTUNE_RESULTS=$results scripts/slurm/sweep.sbatch "$spec")
mid=$(sbatch --parsable --dependency=afterok:"$jid" --kill-on-invalid-dep=yes --chdir="$root_dir" --output="$work/merge.out" \
  --export=ALL,CONVTUNE_DRY_RUN=$dry,CONVTUNE_RESULTS=$results scripts/slurm/merge.sbatch "$spec" "$jid")
for _ in $(seq "${TIMEOUT_S:-600}"); do
  [ -z "$(squeue -h -j "$jid,$mid" 2>/dev/null)" ] && break
  sleep 1
done
cat "$work/merge.out" 2>/dev/null || true
if [ "$dry" = 1 ]; then
  python3 -c "import json,sys; r=json.load(open('$results/plans/merged.json')); print('slurm test:', r); sys.exit(0 if r['ok'] and r['shards']==$shards else 1)"
else
  [ -f "$results/merged/dispatch.json" ] || { echo "slurm test: no merged dispatch table (see $work/*.out)"; exit 1; }
  echo "slurm test: merged run and dispatch table in $results/merged"
fi
