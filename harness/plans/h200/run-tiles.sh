#!/usr/bin/env bash
# The second H200 session: plan 4 (tiled runs), then plan 5 (PLANS=harness/plans/h200/5-encodes.toml), as run on the lent machine.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
start=$(date +%s)
for plan in ${PLANS:-harness/plans/h200/4-tiles.toml}; do
  python3 -m harness --plan "$plan" --out "$out/h200-tiles.csv" --timeout 120
done 2>&1 | tee "$out/log.txt"
echo "== done at +$(( $(date +%s) - start )) s"
