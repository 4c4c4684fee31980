#!/usr/bin/env bash
# A class arriving at once, interleaved in rounds (bench/RESULTS-class-load.md "A class arriving at once"):
#   A = the code before (a worktree of it: BASE), served as its launcher did (one process);
#   B = this code on one process;  C = this code as the launcher now serves it (nginx, two processes).
#   bash bench/arrive_rounds.sh BASE_WORKTREE [ROUNDS] [STUDENTS] [OUT_DIR]
# e.g. git worktree add --detach /tmp/before be66a92 && bash bench/arrive_rounds.sh /tmp/before 3 30
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
base="$(cd "$1" && pwd)"; rounds="${2:-3}"; students="${3:-30}"; out="${4:-$here/bench/arrive-rounds}"
py="${PYTHON:-$here/.venv/bin/python}"; [ -x "$py" ] || py=/work/main/.venv/bin/python
mkdir -p "$out"
common=(arrive --students "$students" --window 10 --expect "$students")
for r in $(seq 1 "$rounds"); do
  # the code before has no wait for its pool: give it a minute to build its pages
  (cd "$base" && "$py" bench/class_load.py "${common[@]}" --settle 60 --json "$out/A-$r.json" > /dev/null)
  (cd "$here" && "$py" bench/class_load.py "${common[@]}" --json "$out/B-$r.json" > /dev/null)
  (cd "$here" && "$py" bench/class_load.py "${common[@]}" --through-nginx --processes 2 --json "$out/C-$r.json" > /dev/null)
  echo "round $r done: $(cat /proc/loadavg)"
done
"$py" - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {k: [json.load(open(f"{out}/{k}-{r}.json")) for r in range(1, rounds + 1)] for k in "ABC"}
for k, runs in rows.items():
    for r, x in enumerate(runs, 1):
        print(k, r, x["load_start"], "->", x["load_end"], f"working {x['working']}/{x['students']}",
              f"p50/p95 {x['working_p50_s']:.1f}/{x['working_p95_s']:.1f} s",
              f"CPU/student {1000 * x['server_cpu_s_per_student']:.0f} ms", f"share {x['server_cpu_percent']:.0f} %")
for k in "BC":
    cpu = [b["server_cpu_s_per_student"] / a["server_cpu_s_per_student"] for a, b in zip(rows["A"], rows[k])]
    p95 = [b["working_p95_s"] / a["working_p95_s"] for a, b in zip(rows["A"], rows[k])]
    print(k, "/ A: CPU per student", [round(x, 2) for x in cpu], "median", round(statistics.median(cpu), 2),
          "| working p95", [round(x, 2) for x in p95], "median", round(statistics.median(p95), 2))
PY
