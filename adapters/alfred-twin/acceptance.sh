#!/usr/bin/env bash
# The drain-plan acceptance table (EVALUATION.md): the whole trace cluster, churn, 14 days,
# seed 1, the default mix and multigpu50, under spread and binpack placement; caretakers
# none, descheduler, crude, alfred (default configuration: drain plans with nomination),
# alfred with taint, with no protection, and with drain plans disabled, all on the same
# arrivals (one twin process per mix and placement).
#
#   adapters/alfred-twin/acceptance.sh [OUT_DIR] [DAYS]
#
# Needs a release build (`cargo build --release -p alfred-twin`). Data from
# ../shared/data/alibaba-gpu-v2023 (relative to the repository) or $TWIN_DATA. Each
# process runs its caretakers one after the other on one core; alfred takes about a minute
# per 14 simulated days, the baselines less. Prints one table row per caretaker.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-/tmp/twin-acceptance}
days=${2:-14}
data=${TWIN_DATA:-$root/../shared/data/alibaba-gpu-v2023}
twin=$root/target/release/alfred-twin
[ -x "$twin" ] || { echo "build it first: cargo build --release -p alfred-twin" >&2; exit 1; }
mkdir -p "$out"
for mix in default multigpu50; do
  for placement in spread binpack; do
    dir=$out/$mix-$placement
    echo "== $mix, $placement -> $dir" >&2
    "$twin" --nodes "$data/openb_node_list_gpu_node.csv" \
      --pods "$data/openb_pod_list_$mix.csv" \
      --mode churn --placement "$placement" --days "$days" --seed 1 --quiet \
      --caretaker none --caretaker descheduler --caretaker crude \
      --caretaker alfred --caretaker alfred-taint --caretaker alfred-none \
      --caretaker alfred-noplans \
      --out "$dir" > /dev/null
  done
done
# The table: 8-GPU p95 wait, moves, max moves in an hour, failed requests, plans.
python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
print("| mix | placement | caretaker | 8-GPU p95 wait (min) | moves | max/hour | failed | plans started/completed/abandoned | plan pods' wait p50/p95 (min) | wall (s) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for d in sorted(out.iterdir()):
    if not (d / "summary.json").exists():
        continue
    mix, placement = d.name.rsplit("-", 1)
    for s in json.loads((d / "summary.json").read_text()):
        w8 = s.get("waitMinutes", {}).get("8", {})
        p = s.get("drainPlans")
        plans = f"{p['started']}/{p['completed']}/{p['abandoned']} {p['abandonedByReason']}" if p else "-"
        pw = p["podWaitMinutes"] if p else None
        pwait = f"{pw['p50']}/{pw['p95']}" if pw and pw["count"] else "-"
        failed = s.get("movesFailed", 0)
        req = s.get("movesRequested", 0)
        share = f"{failed} ({100*failed/req:.1f}%)" if req else str(failed)
        print(f"| {mix} | {placement} | {s['caretaker']} | {w8.get('p95')} | {s.get('moves')} | "
              f"{s.get('maxMovesPerHour')} | {share} | {plans} | {pwait} | {s.get('wallSeconds')} |")
PY
