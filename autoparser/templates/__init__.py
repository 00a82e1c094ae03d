"""Chat-template sources and sandboxed rendering.

``load_source`` reads a template (and its special tokens) from a ``.jinja`` file, a Hugging Face model
directory, a ``tokenizer_config.json``, a GGUF file or an OpenVINO IR directory; ``TemplateRenderer``
renders it byte-identically to transformers, within resource limits. Heavy dependencies (jinja2,
gguf, openvino) are imported only when used.
"""

from __future__ import annotations

from autoparser.templates.render import (
    Rendering,
    RenderLimits,
    TemplateBlocked,
    TemplateLimitExceeded,
    TemplateRaised,
    TemplateRenderer,
    render,
)
from autoparser.templates.sources import TemplateSource, load_source

__all__ = [
    "RenderLimits",
    "Rendering",
    "TemplateBlocked",
    "TemplateLimitExceeded",
    "TemplateRaised",
    "TemplateRenderer",
    "TemplateSource",
    "load_source",
    "render",
]
