#!/bin/bash
# same.sh A B: the outputs of two run directories (same basename) compared byte for byte; report.html with the
# tree and run-directory paths masked; manifest.json without what differs run to run (times, load, argv, paths)
a=$(realpath $1); b=$(realpath $2); rc=0
for f in metrics.json records.jsonl requests.jsonl summary.md $(cd $a && ls steps/*); do
  if cmp -s $a/$f $b/$f; then echo "same  $f sha256 $(sha256sum < $a/$f | cut -c1-16)"; else echo "DIFF  $f"; rc=1; fi
done
report() { python3 - "$1" "$2" <<'PY'
import json, re, sys
out = sys.argv[1]
text = open(out + "/report.html").read()
# the run-to-run values of both runs' manifests, as the report's manifest table shows them, masked in both
# reports alike (a load of 0.9 masks gpu_memory_utilization's 0.9 too, in both)
volatile = []
for run in sys.argv[1:]:
    m = json.load(open(run + "/manifest.json"))
    volatile += [m["started_at"], m["finished_at_unix"], m["git"]["commit"], m["git"]["dirty"]]
    for o in m["outcomes"]:
        volatile += [o.get("simulation_wall_s"), *(o.get("machine") or {}).values()]
import html
for v in volatile:
    for item in (v or [""]) if isinstance(v, list) else [v]:  # an empty list: an empty cell
        if item is not None and not isinstance(item, dict):
            text = text.replace(f"td>{html.escape(str(item))}<", "td>X<")
text = re.sub(r"generated [^<]*? in [0-9.]+ s", "generated X", text)
print(re.sub(r"/work/wt/[a-z0-9-]+|/work/main|/tmp/simsteps_base|/tmp/speed6_(?:base|new2|new)|/tmp/speed7_(?:base|new)|/tmp/speed8_base|/tmp/speed9_base|/tmp/f35seg_base|/tmp/f35bulk_base", "TREE", text).replace(out, "OUT"))
PY
}
if cmp -s <(report $a $b) <(report $b $a); then echo "same  report.html (paths and the manifest's times, load, commit masked)"; else echo "DIFF  report.html"; rc=1; fi
stable() { python3 - "$1" <<'PY'
import json, re, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
for k in ("started_at", "finished_at_unix", "command", "git"):
    m.pop(k, None)
for r in m.get("outcomes", []):
    for k in ("machine", "simulation_wall_s", "wall_s"):
        r.pop(k, None)
print(re.sub(r"/work/wt/[a-z0-9-]+|/work/main|/tmp/simsteps_base|/tmp/speed6_(?:base|new2|new)|/tmp/speed7_(?:base|new)|/tmp/speed8_base|/tmp/speed9_base|/tmp/f35seg_base|/tmp/f35bulk_base", "TREE", json.dumps(m, indent=1, sort_keys=True)).replace(sys.argv[1], "OUT"))
PY
}
if cmp -s <(stable $a) <(stable $b); then echo "same  manifest.json (start, finish, command, git commit, machine load and simulation wall time left out)"; else echo "DIFF  manifest.json"; diff <(stable $a) <(stable $b) | head; rc=1; fi
exit $rc
