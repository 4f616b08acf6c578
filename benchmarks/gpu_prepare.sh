#!/usr/bin/env bash
# Copy the datasets benchmarks/gpu_check.py needs into .gpudata/ (ignored by git) so the device
# tool can carry them: MNIST from $FEDBENCH_DATA (or the first argument), Fashion-MNIST from the
# Debian package's folder (or the second argument). ~42 MB; the device tool carries 64 MiB in
# all, the checkout included. See docs/gpu.md, "The device check".
set -euo pipefail
cd "$(dirname "$0")/.."
mnist_root="${1:-${FEDBENCH_DATA:-}}"
fmnist="${2:-/usr/share/datasets/fashion-mnist}"
files="train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte"

find_idx() {  # the folder among the arguments that holds the 4 IDX files (gzipped or not)
  for d in "$@"; do
    ok=1
    for f in $files; do [ -e "$d/$f" ] || [ -e "$d/$f.gz" ] || ok=0; done
    [ "$ok" = 1 ] && { echo "$d"; return 0; }
  done
  return 1
}

[ -n "$mnist_root" ] || { echo "error: set FEDBENCH_DATA to the folder holding MNIST" >&2; exit 2; }
src=$(find_idx "$mnist_root" "$mnist_root/MNIST/raw" "$mnist_root/mnist") ||
  { echo "error: no MNIST IDX files under $mnist_root" >&2; exit 2; }
fsrc=$(find_idx "$fmnist" "$fmnist/FashionMNIST/raw") ||
  { echo "error: no Fashion-MNIST IDX files in $fmnist" >&2; exit 2; }
rm -rf .gpudata
mkdir -p .gpudata/MNIST/raw .gpudata/FashionMNIST/raw
for f in $files; do
  cp "$src/$f"* .gpudata/MNIST/raw/
  cp "$fsrc/$f"* .gpudata/FashionMNIST/raw/
done
chmod -R u+w .gpudata
du -sh .gpudata
