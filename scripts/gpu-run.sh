#!/bin/sh
# Run a dpfil GPU binary (bin/dpfil-cuda, bin/cuda.test; built here with `make cuda`)
# on a GPU host, where CUDA's user-space libraries come from pip wheels (PyTorch, JAX)
# rather than a toolkit install:
#
#   scripts/gpu-run.sh bin/cuda.test -test.v
#   scripts/gpu-run.sh bin/dpfil-cuda train --device cuda ...
#
# It puts every pip `nvidia/*/lib` folder (CUDA 13 wheels: nvidia/cu13/lib; CUDA 11/12:
# nvidia/cublas/lib, ...) on LD_LIBRARY_PATH, says which libcublas the binary will
# find, and runs the command. libcuda.so.1 itself comes with the NVIDIA driver.
# DPFIL_CUBLAS=/path/to/libcublas.so.N overrides the search (see cuda/cublas_args.go).
set -eu

if [ "$#" -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]   (e.g. $0 bin/cuda.test -test.v)" >&2
  exit 2
fi

dirs=""
add() {
  case ":$dirs:" in *":$1:"*) return ;; esac
  dirs="${dirs:+$dirs:}$1"
}
# Site-packages folders of the usual Python installs (the same patterns the driver
# globs itself), plus the active virtual environment's and python3's own.
for d in ${VIRTUAL_ENV:+"$VIRTUAL_ENV"/lib/python3*/site-packages/nvidia/*/lib} \
         /opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib \
         /usr/local/lib/python3*/dist-packages/nvidia/*/lib \
         /usr/local/lib/python3*/site-packages/nvidia/*/lib \
         /usr/lib/python3/dist-packages/nvidia/*/lib \
         /usr/lib/python3*/site-packages/nvidia/*/lib \
         "${HOME:-}"/.local/lib/python3*/site-packages/nvidia/*/lib; do
  [ -d "$d" ] && add "$d"
done
if command -v python3 >/dev/null 2>&1; then
  for d in $(python3 -c 'import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
for r in roots:
    for d in sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib"))):
        print(d)' 2>/dev/null); do
    [ -d "$d" ] && add "$d"
  done
fi

if [ -n "$dirs" ]; then
  export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# Which libcublas the driver's soname search (libcublas.so.13, .12, .11) will load.
cublas=""
if [ -n "${DPFIL_CUBLAS:-}" ]; then
  cublas="$DPFIL_CUBLAS (DPFIL_CUBLAS)"
else
  for v in 13 12 11; do
    for d in $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' '); do
      if [ -e "$d/libcublas.so.$v" ]; then cublas="$d/libcublas.so.$v"; break 2; fi
    done
    if c=$(ldconfig -p 2>/dev/null | awk -v n="libcublas.so.$v" '$1 == n {print $NF; exit}') && [ -n "$c" ]; then
      cublas="$c"; break
    fi
  done
fi
echo "gpu-run: LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" >&2
if [ -n "$cublas" ]; then
  echo "gpu-run: cuBLAS: $cublas" >&2
else
  echo "gpu-run: warning: no libcublas.so.13/.12/.11 found; pip install nvidia-cublas (CUDA 13) or nvidia-cublas-cu12, or set DPFIL_CUBLAS" >&2
fi
exec "$@"
