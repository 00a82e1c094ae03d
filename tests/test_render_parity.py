"""Our renderer against transformers' on every template of the shared corpus.

Each template renders four conversations (plain chat; tools with a call and its result; the same
with ``content=None`` on the call, which transformers drops; reasoning with ``enable_thinking``).
Both renderers must produce the same bytes, or both must fail with the same kind of error (a
template's own ``raise_exception``, an undefined value, a sandbox refusal, a TypeError...).

Inputs are normalised the way transformers' ``apply_chat_template`` does before it calls
``render_jinja_template`` (keys whose value is ``None`` dropped).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "templates"

if not (CORPUS / "SOURCES.tsv").is_file():
    pytest.skip(f"template corpus not found at {CORPUS}", allow_module_level=True)
pytest.importorskip("jinja2")
chat_template_utils = pytest.importorskip(
    "transformers.utils.chat_template_utils", reason="transformers is not installed"
)
if not hasattr(chat_template_utils, "render_jinja_template"):
    pytest.skip("this transformers version has no render_jinja_template", allow_module_level=True)

import jinja2  # noqa: E402

from autoparser.errors import TemplateError  # noqa: E402
from autoparser.templates import TemplateRaised, TemplateRenderer  # noqa: E402

pytestmark = pytest.mark.shared

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "days": {"type": "integer", "description": "Days ahead"},
                },
                "required": ["city"],
            },
        },
    }
]
CALL_ID = "call0A1b2"  # nine alphanumerics: Mistral templates insist


def _tool_turns(content: str | None) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "What's the weather in Paris?"},
        {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {
                    "id": CALL_ID,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": CALL_ID, "name": "get_weather", "content": '{"temp": 21}'},
        {"role": "user", "content": "Thanks!"},
    ]


CONVERSATIONS: dict[str, dict[str, Any]] = {
    "chat": {
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Hi there"},
            {"role": "assistant", "content": "Hello! How can I help?"},
            {"role": "user", "content": "Tell me a joke ✓ <b>&</b>"},
        ],
        "add_generation_prompt": True,
    },
    "tools": {"messages": _tool_turns(""), "tools": TOOLS, "add_generation_prompt": True},
    "tools-content-none": {"messages": _tool_turns(None), "tools": TOOLS, "add_generation_prompt": True},
    "thinking": {
        "messages": [
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4", "reasoning_content": "Simple addition."},
            {"role": "user", "content": "And 3+3?"},
        ],
        "add_generation_prompt": True,
        "enable_thinking": True,
    },
}


def _rows() -> dict[str, dict[str, str]]:
    with (CORPUS / "SOURCES.tsv").open(encoding="utf-8", newline="") as handle:
        return {row["file"]: row for row in csv.DictReader(handle, delimiter="\t")}


ROWS = _rows()
TEMPLATES = sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.jinja"))


def _drop_none(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What apply_chat_template does before render_jinja_template (older versions lack the helper)."""
    normalize: Callable[[Any], list[dict[str, Any]]] | None = getattr(
        chat_template_utils, "_normalize_chat_messages", None
    )
    if normalize is not None:
        return normalize(messages)
    return [{k: v for k, v in m.items() if v is not None} for m in messages]


def _theirs(source: str, bos: str, eos: str, case: dict[str, Any]) -> str:
    kwargs = dict(case)
    messages = _drop_none(kwargs.pop("messages"))
    rendered, _ = chat_template_utils.render_jinja_template(
        conversations=[messages], chat_template=source, bos_token=bos, eos_token=eos, **kwargs
    )
    return str(rendered[0])


def _category(error: BaseException) -> str:
    """The kind of failure, comparable across the two renderers."""
    if isinstance(error, TemplateRaised) or type(error) is jinja2.exceptions.TemplateError:
        return "raise_exception"
    if isinstance(error, TemplateError) and error.__cause__ is not None:
        error = error.__cause__
    if isinstance(error, jinja2.exceptions.TemplateSyntaxError):
        return "syntax"
    return type(error).__name__


@pytest.mark.parametrize("name", TEMPLATES)
def test_renders_like_transformers(name: str) -> None:
    source = (CORPUS / name).read_text(encoding="utf-8")
    row = ROWS.get(name, {})
    bos, eos = row.get("bos", ""), row.get("eos", "")
    try:
        renderer: TemplateRenderer | None = TemplateRenderer(source)
        compile_error: TemplateError | None = None
    except TemplateError as exc:
        renderer, compile_error = None, exc
    for label, case in CONVERSATIONS.items():
        ours: str | BaseException
        theirs: str | BaseException
        try:
            if renderer is None:
                assert compile_error is not None
                raise compile_error
            kwargs = dict(case)
            ours = renderer.render(kwargs.pop("messages"), bos_token=bos, eos_token=eos, **kwargs)
        except TemplateError as exc:
            ours = exc
        try:
            theirs = _theirs(source, bos, eos, case)
        except Exception as exc:  # transformers lets any template error through
            theirs = exc
        if isinstance(ours, str) and isinstance(theirs, str):
            assert ours == theirs, f"{label}: renders differ"
        elif isinstance(ours, BaseException) and isinstance(theirs, BaseException):
            assert _category(ours) == _category(theirs), f"{label}: {ours!r} vs {theirs!r}"
        else:
            pytest.fail(f"{label}: ours {ours!r:.300} / transformers {theirs!r:.300}")
