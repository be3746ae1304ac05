#!/usr/bin/env bash
# The edit-build loop, measured: for each header named, append one line to
# it (a real edit of the file), rebuild with ninja on 2 jobs and ccache off,
# and print how many units were compiled, the wall time and the CPU time;
# then undo the edit and rebuild back (not timed). From the top of a checkout:
#   bench/rebuild.sh [HEADER ...]     (default: the op headers, a layer's and core's)
# Uses its own build folder, build/rebuild (Ninja, the release preset's
# flags). The measured rebuilds run with ccache off (CCACHE_DISABLE=1); the
# first build may use it where it is installed. Needs ninja (Debian: ninja-build).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/rebuild
headers=("$@")
if ((${#headers[@]} == 0)); then
  headers=(autograd/ops/softmax.hpp autograd/ops/layer_norm.hpp autograd/ops/gelu.hpp autograd/ops/rope.hpp
           autograd/ops/embedding.hpp autograd/ops/cross_entropy.hpp autograd/ops/dropout.hpp
           autograd/ops/linear.hpp autograd/ops/arithmetic.hpp autograd/ops/reduce.hpp autograd/ops/shape.hpp
           nn/attention.hpp nn/module.hpp autograd/engine.hpp core/tensor.hpp)
fi
command -v ninja >/dev/null || { echo "rebuild.sh: needs ninja (apt-get install ninja-build)" >&2; exit 2; }
for h in "${headers[@]}"; do [ -f "$h" ] || { echo "rebuild.sh: no file $h" >&2; exit 2; }; done
launcher=$(command -v ccache || true)
[ -f $build/build.ninja ] || cmake --preset release -B $build -G Ninja -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" >/dev/null
ninja -C $build -j2 >/dev/null
export CCACHE_DISABLE=1
restore() { [ -f "$1.rebuild-orig" ] && mv "$1.rebuild-orig" "$1"; }
printf '| header edited | units compiled | wall time (s) | CPU time (s) |\n|---|---|---|---|\n'
for h in "${headers[@]}"; do
  cp -p "$h" "$h.rebuild-orig"
  trap 'restore "$h"' EXIT
  echo "// an edit" >> "$h"
  /usr/bin/time -f '%e %U %S' -o $build/rebuild-time ninja -C $build -j2 > $build/rebuild-log
  units=$(grep -c 'Building CXX object' $build/rebuild-log || true)
  read -r wall user sys < $build/rebuild-time
  restore "$h"
  trap - EXIT
  printf '| `%s` | %s | %.0f | %.0f |\n' "$h" "$units" "$wall" "$(echo "$user + $sys" | awk '{print $1 + $3}')"
  touch "$h"
  ninja -C $build -j2 >/dev/null   # back to the unedited state (not timed)
done
