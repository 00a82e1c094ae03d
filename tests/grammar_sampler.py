"""A random sampler for the GBNF grammars autoparser exports (not a test module).

``GbnfSampler(text).sample(rng)`` derives one random string from the grammar's ``root``: an
alternative is chosen at random, a repetition repeats 0-2 times, a character class yields one
character of a small alphabet (letters, digits, a few punctuation marks and whitespace) that the
class admits. Past a depth budget every choice takes the shortest way out (minimum derivation
lengths are computed once, by fixpoint), so every sample is finite. The tests check each sample
with llguidance too, so a sampler bug cannot pass for a grammar property.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["GbnfSampler"]

_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<cls>\[(?:[^\]\\]|\\.)*\])'
                    r"|(?P<name>[a-zA-Z0-9-]+)|(?P<op>[()|*+?]))")
_ESC = {"n": "\n", "r": "\r", "t": "\t"}
#: what a character class may produce (whitespace included: the grammars allow it in places)
_ALPHABET = string.ascii_letters + string.digits + " _-+.:,\n\té"


@dataclass(frozen=True)
class _Lit:
    text: str


@dataclass(frozen=True)
class _Cls:
    chars: str  # the alphabet characters the class admits


@dataclass(frozen=True)
class _Ref:
    name: str


@dataclass(frozen=True)
class _Seq:
    items: tuple[object, ...]


@dataclass(frozen=True)
class _Alt:
    items: tuple[object, ...]


@dataclass(frozen=True)
class _Rep:
    item: object
    lo: int
    hi: int | None


def _unescape(lit: str) -> str:
    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        return chr(int(e[1:], 16)) if e[0] == "x" and len(e) == 3 else _ESC.get(e, e)

    return re.sub(r"\\(x[0-9A-Fa-f]{2}|.)", one, lit[1:-1])


@lru_cache(maxsize=4096)
def _admitted(cls: str) -> str:
    rx = re.compile(cls)
    return "".join(c for c in _ALPHABET if rx.fullmatch(c))


class GbnfSampler:
    def __init__(self, grammar: str, depth: int = 12) -> None:
        self.rules: dict[str, object] = {}
        for line in grammar.splitlines():
            if line and not line.startswith("#"):
                name, body = line.split(" ::= ", 1)
                self.rules[name] = self._parse(body)
        self.depth = depth
        self.min = self._min_lengths()

    # -- parsing -----------------------------------------------------------------------------------
    def _parse(self, body: str) -> object:
        toks: list[tuple[str, str]] = []
        pos = 0
        while pos < len(body):
            m = _TOKEN.match(body, pos)
            if not m:
                assert not body[pos:].strip(), body[pos:]
                break
            pos = m.end()
            kind = next(k for k in ("str", "cls", "name", "op") if m.group(k) is not None)
            toks.append((kind, m.group(kind)))
        node, rest = self._alt(toks)
        assert not rest, rest
        return node

    def _alt(self, toks: list[tuple[str, str]]) -> tuple[object, list[tuple[str, str]]]:
        items = []
        seq, toks = self._seq(toks)
        items.append(seq)
        while toks and toks[0] == ("op", "|"):
            seq, toks = self._seq(toks[1:])
            items.append(seq)
        return (items[0] if len(items) == 1 else _Alt(tuple(items))), toks

    def _seq(self, toks: list[tuple[str, str]]) -> tuple[object, list[tuple[str, str]]]:
        items: list[object] = []
        while toks and toks[0] not in (("op", "|"), ("op", ")")):
            kind, text = toks[0]
            toks = toks[1:]
            if (kind, text) == ("op", "("):
                node, toks = self._alt(toks)
                assert toks and toks[0] == ("op", ")")
                toks = toks[1:]
            elif kind == "str":
                node = _Lit(_unescape(text))
            elif kind == "cls":
                node = _Cls(_admitted(text))
            elif kind == "name":
                node = _Ref(text)
            else:
                raise AssertionError(text)
            while toks and toks[0][0] == "op" and toks[0][1] in "*+?":
                op = toks[0][1]
                node = _Rep(node, 1 if op == "+" else 0, 1 if op == "?" else None)
                toks = toks[1:]
            items.append(node)
        return (items[0] if len(items) == 1 else _Seq(tuple(items))), toks

    # -- shortest derivations ------------------------------------------------------------------------
    def _min_lengths(self) -> dict[str, float]:
        best = dict.fromkeys(self.rules, float("inf"))
        changed = True
        while changed:
            changed = False
            for name, node in self.rules.items():
                n = self._len(node, best)
                if n < best[name]:
                    best[name], changed = n, True
        return best

    def _len(self, node: object, best: dict[str, float]) -> float:
        if isinstance(node, _Lit):
            return len(node.text)
        if isinstance(node, _Cls):
            return 1 if node.chars else float("inf")
        if isinstance(node, _Ref):
            return best[node.name]
        if isinstance(node, _Seq):
            return sum(self._len(i, best) for i in node.items)
        if isinstance(node, _Alt):
            return min(self._len(i, best) for i in node.items)
        assert isinstance(node, _Rep)
        return node.lo * self._len(node.item, best)

    # -- sampling --------------------------------------------------------------------------------------
    def sample(self, rng: random.Random) -> str:
        out: list[str] = []
        self._gen(_Ref("root"), 0, rng, out)
        return "".join(out)

    def _gen(self, node: object, depth: int, rng: random.Random, out: list[str]) -> None:
        deep = depth > self.depth
        if isinstance(node, _Lit):
            out.append(node.text)
        elif isinstance(node, _Cls):
            out.append(rng.choice(node.chars))
        elif isinstance(node, _Ref):
            self._gen(self.rules[node.name], depth + 1, rng, out)
        elif isinstance(node, _Seq):
            for item in node.items:
                self._gen(item, depth, rng, out)
        elif isinstance(node, _Alt):
            lengths = [self._len(i, self.min) for i in node.items]
            best = min(lengths) if deep else float("inf")
            options = [i for i, n in zip(node.items, lengths, strict=True)
                       if n < float("inf") and (not deep or n == best)]
            self._gen(rng.choice(options), depth, rng, out)
        else:
            assert isinstance(node, _Rep)
            hi = node.lo + 2 if node.hi is None else node.hi
            times = node.lo if deep else rng.randint(node.lo, hi)
            for _ in range(times):
                self._gen(node.item, depth, rng, out)
