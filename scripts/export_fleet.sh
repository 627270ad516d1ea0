#!/usr/bin/env bash
# The shipped fleet table (results/fleet-h100-h200): each GPU model's default run, its repeats (the spec
# measured again, so a choice is fast in every run), and every other shipped run of the model as training
# for its performance model. Needs the CPU only.
set -euo pipefail
cd "$(dirname "$0")/.."
H=results/nvidia-h100-80gb-hbm3 G=results/nvidia-h200
args=("$H/default-20261126-052059" "$G/default-20261130-022016" -o "${FLEET_OUT:-results/fleet-h100-h200}")
for r in "$H"/default-20261128-013355 "$G"/default-20261129-225301 "$G"/default-20261129-181650 "$G"/default-20261129-152754 "$G"/default-20261126-051130 "$G"/default-20261128-184104 "$G"/default-20261128-134540 "$G"/default-20261128-102817 "$G"/default-20261128-012633 "$H"/default-20261127-230147 "$H"/default-20261126-031501 "$H"/default-20261126-014032 "$H"/default-20261125-235916 "$H"/layers-20261125-234835 \
         "$H"/layers-20261126-002543 "$H"/default-20261125-215157 "$H"/layers-20261125-215851 "$H"/layers-20261125-221439 \
         "$G"/default-20261126-032356 "$G"/default-20261126-014913; do args+=(--repeat "$r"); done
# Training only: shapes the tables do not list (never the unseen runs that check-dispatch judges them on).
for r in "$H"/conv2d-20261126-041142 "$H"/conv2d-register-tiled-20261123-161324 "$H"/conv2d-spectral-20261123-183951 \
         "$H"/conv1d-20261123-105416 "$H"/networks-20261127-132257 "$G"/conv2d-20261126-040726 \
         "$H"/conv1d-short-20261128-013244 "$G"/conv1d-short-20261128-012530 "$H"/networks-large-filters-20261128-042442 \
         "$G"/networks-20261128-043101 "$G"/networks-large-filters-20261128-042913 \
         "$G"/networks-bwd-filter-waves-20261128-101922 "$G"/networks-large-filters-bwd-filter-waves-20261128-102533 \
         "$G"/networks-rest-20261128-155709 "$G"/networks-varied-20261128-160213 "$G"/networks-more-20261128-212517 \
         "$G"/networks-extra-20261129-004546 "$G"/conv1d-parts-20261129-040308 "$G"/conv2d-batched-20261129-225206 "$G"/conv1d-grid-20261129-044319 "$G"/networks-large-filters-more-20261129-062345 \
         "$G"/networks-fill-20261129-081158 "$G"/layers-fft-20261130-012045 "$G"/networks-fft-20261130-021831; do
  args+=(--train "$r")
done
build/convtune export "${args[@]}"
