#!/usr/bin/env bash
# EvoKit's "Example for Online Products", from the shell: a model warehouse,
# online sampling into logs, offline updates from the logs, until CartPole-v1
# averages >= 475 over 20 episodes.
#
#   bash demo/online_example.sh [WORKDIR] [MAX_EPOCHS]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d -t evokit-online-XXXX)}
max_epochs=${2:-100}
config=configs/cartpole.prototxt
warehouse=$work/model_warehouse
mkdir -p "$work/logs"

#------------------------ init solver ------------------------
evokit init-model --env CartPole-v1 --hidden 16 --seed 0 -o "$work/init_model.onnx"
evokit init-solver --config "$config" --model "$work/init_model.onnx" --warehouse "$warehouse"

for ((epoch = 0; epoch < max_epochs; ++epoch)); do
  #------------------------ online sampling ------------------------
  evokit sample --warehouse "$warehouse" --env CartPole-v1 --num-samples 40 \
    --log "$work/logs/sampling_log_$epoch" --workers auto --quiet
  #------------------------ offline update ------------------------
  evokit update --warehouse "$warehouse" --log "$work/logs/sampling_log_$epoch"
  if ((epoch % 3 == 2)) && evokit evaluate "$warehouse" --env CartPole-v1 --episodes 20 \
      --seed 10000 --min-return 475; then
    echo "solved after $((epoch + 1)) updates; models in $warehouse"
    exit 0
  fi
done
echo "not solved after $max_epochs updates" >&2
exit 1
