#!/usr/bin/env bash
# The H200 session of 2026-12-04, as it ran on the lent machine (one short
# script: the machine's minutes are counted). Wheels of diffusers and its one
# missing requirement travel in .whl/; the machine's own torch is used.
# Rows are appended (and synced) as each run ends, so a timeout keeps them.
# What it measured (the first plan ran out of its time after 23 runs; the
# third plan ran on the warm machine) is measurements/raw/harness-h200-2026-12-04.csv.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
python3 -c "import torch, diffusers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'diffusers', diffusers.__version__)" | tee -a "$out/gpu.txt"
start=$(date +%s)
for plan in harness/plans/h200/1-allocators.toml harness/plans/h200/2-families.toml; do
  echo "== $plan at +$(( $(date +%s) - start )) s"
  python3 -m harness --plan "$plan" --out "$out/h200.csv" --timeout 120 || echo "== $plan stopped: exit $?"
done 2>&1 | tee "$out/log.txt"
echo "== done at +$(( $(date +%s) - start )) s"
