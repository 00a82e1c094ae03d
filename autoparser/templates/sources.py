"""Find a model's chat template, and the tokens around it, wherever the model is stored.

One entry point, :func:`load_source`, for the five ways models are shipped: a bare ``.jinja`` file,
a Hugging Face model directory, a ``tokenizer_config.json`` on its own, a GGUF file, and an OpenVINO
IR directory. They all produce the same :class:`TemplateSource`, so the analyzer never cares where
a template came from. Anything missing, unreadable or malformed is a
:class:`~autoparser.errors.SourceError` that names the file and the problem, never a traceback
from deep inside a JSON or GGUF reader.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from autoparser.errors import SourceError
from autoparser.templates import _hf

__all__ = ["TemplateSource", "load_source"]

_GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class TemplateSource:
    """A chat template with what is known about its model.

    ``chat_template`` is the default template; ``templates`` has every named one (``"default"``,
    and for example ``"tool_use"`` or ``"rag"``). ``special_tokens`` lists added and special token
    strings (useful to recognise markers). ``kind`` is ``"jinja"``, ``"hf-dir"``,
    ``"tokenizer-config"``, ``"gguf"`` or ``"openvino-ir"``.
    """

    chat_template: str
    templates: dict[str, str] = field(default_factory=dict)
    bos_token: str | None = None
    eos_token: str | None = None
    special_tokens: tuple[str, ...] = ()
    model_id: str | None = None
    path: str = ""
    kind: str = "jinja"

    def template_for(self, tools: bool) -> str:
        """The template to analyse: ``tool_use`` when analysing tools and the model has one.

        This mirrors transformers, which picks ``tool_use`` when ``tools`` are passed.
        """
        if tools and "tool_use" in self.templates:
            return self.templates["tool_use"]
        return self.chat_template


def _source(kind: str, path: Path, templates: dict[str, str], bos: str | None = None, eos: str | None = None,
            specials: tuple[str, ...] = (), model_id: str | None = None) -> TemplateSource:
    """The default template is ``default`` if named, else the first (transformers would refuse to choose)."""
    default = templates.get("default") or next(iter(templates.values()))
    return TemplateSource(default, templates, bos, eos, specials, model_id, str(path), kind)


def load_source(path: str | os.PathLike[str]) -> TemplateSource:
    """Read a template source; see the module docstring for what is accepted.

    A directory is read as a Hugging Face model directory if it has a template in Hugging Face
    files, else as an OpenVINO IR directory, else through the single ``.gguf`` file it holds.
    """
    p = Path(path)
    if not p.exists():
        raise SourceError(str(p), "no such file or directory")
    if p.is_dir():
        return _load_directory(p)
    suffix = p.suffix.lower()
    if suffix == ".gguf" or _has_gguf_magic(p):
        return _load_gguf(p)
    if suffix == ".xml":
        return _load_openvino(p.parent, p)
    if suffix == ".json":
        return _load_config_file(p)
    return _load_jinja(p)


def _has_gguf_magic(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) == _GGUF_MAGIC
    except OSError as exc:
        raise SourceError(str(path), f"cannot read: {exc.strerror or exc}") from None


def _load_jinja(path: Path) -> TemplateSource:
    text = _hf.read_text(path)
    if not text.strip():
        raise SourceError(str(path), "file is empty, expected a Jinja chat template")
    return _source("jinja", path, {"default": text})


def _load_config_file(path: Path) -> TemplateSource:
    """``tokenizer_config.json`` (or the processor's ``chat_template.json``) on its own."""
    config = _hf.read_object(path)
    templates = _hf.templates_from_value(config.get("chat_template"), path)
    if not templates:
        raise SourceError(str(path), "has no chat_template entry")
    bos, eos, specials = _hf.tokens_from_config(config)
    name = config.get("name_or_path")
    return _source("tokenizer-config", path, templates, bos, eos, tuple(dict.fromkeys(specials)),
                   name if isinstance(name, str) and name else None)


def _load_directory(directory: Path) -> TemplateSource:
    from autoparser.templates._openvino import IR_FILES

    templates, origin = _hf.dir_templates(directory)
    if templates:
        return _source("hf-dir", origin or directory, templates, *_hf.dir_tokens(directory),
                       _hf.dir_model_id(directory))
    for name in IR_FILES:
        if (directory / name).is_file():
            return _load_openvino(directory, directory / name)
    ggufs = sorted(directory.glob("*.gguf"))
    if len(ggufs) == 1:
        return _load_gguf(ggufs[0])
    looked_for = ", ".join((*_hf.TEMPLATE_FILES, *IR_FILES, "a single *.gguf"))
    found = f"{len(ggufs)} .gguf files (pass one of them)" if ggufs else "none of them"
    raise SourceError(str(directory), f"no chat template found; looked for {looked_for}; found {found}")


def _load_gguf(path: Path) -> TemplateSource:
    from autoparser.templates._gguf import read_gguf

    c = read_gguf(path)
    return _source("gguf", path, c.templates, c.bos_token, c.eos_token, c.special_tokens, c.model_id)


def _load_openvino(directory: Path, xml: Path) -> TemplateSource:
    """An IR tokenizer: the template from rt_info, token strings from wherever they can be had."""
    from autoparser.templates._openvino import IR_FILES, ir_token_strings, read_rt_info

    files = [xml, *(directory / name for name in IR_FILES if directory / name != xml)]
    info: dict[str, str] = {}
    for file in files:
        if file.is_file():
            for key, value in read_rt_info(file).items():
                info.setdefault(key, value)
    template = info.get("chat_template", "")
    if not template.strip():
        raise SourceError(str(xml), "OpenVINO IR has no chat_template in its rt_info")
    bos, eos, specials = _hf.dir_tokens(directory)  # optimum exports keep the HF tokenizer files
    bos = info.get("bos_token") or bos
    eos = info.get("eos_token") or eos
    if bos is None and eos is None and ("bos_token_id" in info or "eos_token_id" in info):
        bos, eos = ir_token_strings(directory)
    return _source("openvino-ir", xml, {"default": template}, bos, eos,
                   tuple(dict.fromkeys((*specials, *(t for t in (bos, eos) if t)))), _hf.dir_model_id(directory, {}))
