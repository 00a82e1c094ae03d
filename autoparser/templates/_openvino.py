"""Reading the chat template and special tokens of an OpenVINO IR tokenizer.

openvino_tokenizers writes its metadata into the ``<rt_info>`` section of ``openvino_tokenizer.xml``
and ``openvino_detokenizer.xml``: direct children such as ``<chat_template value="..."/>``,
``<bos_token_id value="1"/>``, ``<eos_token_id value="2"/>`` (ids, not strings). We read it with
``openvino.Core().read_model`` when openvino is installed (the tokenizer ops need
``openvino_tokenizers`` imported first), and otherwise parse the XML, which gives the same values
without any dependency. Token *strings* are rarely there: the caller takes them from Hugging Face
files next to the IR, or asks ``openvino_genai.Tokenizer`` when that is installed.
"""

from __future__ import annotations

import contextlib
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from autoparser.errors import SourceError

__all__ = ["IR_FILES", "ir_token_strings", "read_rt_info"]

IR_FILES = ("openvino_tokenizer.xml", "openvino_detokenizer.xml")


def _rt_info_with_openvino(xml: Path) -> dict[str, str] | None:
    """rt_info through OpenVINO itself; ``None`` when it is not installed or cannot load the model."""
    try:
        import openvino  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return None
    try:
        with contextlib.suppress(ImportError):  # registers the tokenizer ops with Cores made after it
            import openvino_tokenizers  # type: ignore[import-untyped, import-not-found, unused-ignore]  # noqa: F401
        model = openvino.Core().read_model(str(xml))
        info: dict[str, str] = {}
        for key in list(model.get_rt_info().keys()):
            try:
                info[str(key)] = str(model.get_rt_info(str(key)).astype(str))
            except Exception:  # nested sections and non-string values are not ours to read
                continue
        return info
    except Exception:  # missing .bin, unknown ops, version skew: fall back to the XML
        return None


def _rt_info_from_xml(xml: Path) -> dict[str, str]:
    try:
        root = ElementTree.parse(xml).getroot()
    except ElementTree.ParseError as exc:
        line, column = exc.position
        raise SourceError(str(xml), f"invalid XML at line {line}, column {column}") from None
    except OSError as exc:
        raise SourceError(str(xml), f"cannot read: {exc.strerror or exc}") from None
    section = root.find("rt_info")
    if section is None:
        return {}
    return {child.tag: child.attrib["value"] for child in section if "value" in child.attrib}


def read_rt_info(xml: Path) -> dict[str, str]:
    """The top-level rt_info entries of one IR XML file, as strings."""
    info = _rt_info_with_openvino(xml)
    return info if info is not None else _rt_info_from_xml(xml)


def ir_token_strings(directory: Path) -> tuple[str | None, str | None]:
    """bos/eos strings from ``openvino_genai.Tokenizer``, when it is installed and can load the IR."""
    try:
        import openvino_genai  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return None, None
    try:
        tokenizer = openvino_genai.Tokenizer(str(directory))
        return tokenizer.get_bos_token() or None, tokenizer.get_eos_token() or None
    except Exception:  # an IR GenAI cannot load is still a valid template source
        return None, None
