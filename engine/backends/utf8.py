"""Byte tokens that must form UTF-8: the denoising loop's guard.

A byte-level BPE (the embedded model's) spells a character it has no token for in byte tokens: ``é`` is ``Ã`` ``©``
(0xC3 0xA9), an emoji four of them. Alone each decodes as U+FFFD, and a fill whose byte tokens do not line up (a
lead byte with no continuation, a continuation after ASCII) decodes with U+FFFD the user never wrote, so the engine
refuses it (``model_text.invents_replacement``): the hole gets no fill. The model, filling slots in any order,
writes such runs after accents and emoji often (benchmarks/nonascii_fills.py: 24 of 68 holes next to non-ASCII text
had no fill for it).

The guard keeps every hole's tokens a prefix-free path through the UTF-8 automaton: a token the loop accepts must
leave the hole's tokens completable to valid UTF-8, with the still-masked slots free to be anything (and a
terminator, or a newline ending a one-line hole, closing the hole: what follows it is dead). The loop's own choice
stands wherever it is possible; an accepted slot whose token is not is put back (masked again) for a later step, or,
where the slot must be decided now (the last step, or nothing else was accepted), takes the likeliest token that is
possible. Each token is checked against the ones decided before it, in order of confidence, so two slots accepted
in one step cannot together break a character. A hole whose tokens and predictions hold no byte token (every
ASCII fill) is not looked at: the loop runs as without the guard, bit for bit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

_END = 8                      # the hole has ended (a terminator): what follows is dead, anything goes
_HEX_BYTE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _byte_step(state: int, b: int) -> int:
    """The UTF-8 automaton (RFC 3629: no overlongs, surrogates or code points past U+10FFFF); -1 rejects.
    States: 0 between characters; 1, 2, 3 continuation bytes still wanted; 4 after E0, 5 after ED, 6 after F0,
    7 after F4 (their second byte is narrower)."""
    if state == 0:
        if b < 0x80:
            return 0
        if 0xC2 <= b <= 0xDF:
            return 1
        if b == 0xE0:
            return 4
        if b == 0xED:
            return 5
        if 0xE1 <= b <= 0xEF:
            return 2
        if b == 0xF0:
            return 6
        if 0xF1 <= b <= 0xF3:
            return 3
        if b == 0xF4:
            return 7
        return -1
    lo, hi, then = {1: (0x80, 0xBF, 0), 2: (0x80, 0xBF, 1), 3: (0x80, 0xBF, 2), 4: (0xA0, 0xBF, 1),
                    5: (0x80, 0x9F, 1), 6: (0x90, 0xBF, 2), 7: (0x80, 0x8F, 2)}[state]
    return then if lo <= b <= hi else -1


def _bytes_step(state: int, data: bytes) -> int:
    for b in data:
        state = _byte_step(state, b)
        if state < 0:
            return -1
    return state


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, reversed: each printable stand-in character to its byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def token_bytes(token: str, decoder: dict[str, int]) -> bytes | None:
    """A vocabulary entry's bytes: a byte-level BPE's (GPT-2 alphabet) or a byte-fallback ``<0xHH>``; None when the
    entry is neither."""
    m = _HEX_BYTE.fullmatch(token)
    if m:
        return bytes([int(m.group(1), 16)])
    if token and all(ch in decoder for ch in token):
        return bytes(decoder[ch] for ch in token)
    return None


def byte_tokens(tokenizer, pieces: list[str] | None = None) -> dict[int, bytes]:
    """The vocabulary's byte tokens that are no whole character, id to bytes: a byte-level BPE's (GPT-2 alphabet,
    the embedded model's) or byte-fallback ``<0xHH>`` entries (sentencepiece, Gemma's). A token counts only where it
    decodes alone as U+FFFD (``pieces``: each id decoded alone; None: only the candidates are decoded, for a large
    vocabulary): an entry such as Gemma's ``é`` reads as bytes in the GPT-2 alphabet but is the character itself."""
    decoder = _byte_decoder()
    partial: dict[int, bytes] = {}
    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    for i, token in enumerate(tokens):
        if pieces is not None and "\ufffd" not in pieces[i]:
            continue
        data = token_bytes(token or "", decoder)
        if data is None or _bytes_step(0, data) == 0:   # no bytes, or whole characters (a real U+FFFD token too)
            continue
        piece = pieces[i] if pieces is not None else tokenizer.decode([i], clean_up_tokenization_spaces=False)
        if "\ufffd" in piece:
            partial[i] = data
    return partial


def _union(table: list[int], states: int) -> int:
    """Where the states of the set ``states`` lead, each by ``table``."""
    out = 0
    for s in range(9):
        if states >> s & 1:
            out |= table[s]
    return out


def _preimage(table: list[int], into: int) -> int:
    """The states whose ``table`` entry meets the set ``into``."""
    return sum(1 << s for s in range(9) if table[s] & into)


class Utf8Guard:
    """The automaton's view of a vocabulary: which tokens are byte runs that are no whole characters (``partial``),
    each with its step from every state, as bit sets of states."""

    def __init__(self, partial: dict[int, bytes], terminators: torch.Tensor, newlines: torch.Tensor):
        self.ids = torch.tensor(sorted(partial), dtype=torch.long)               # (P,)
        # next[s, k]: the state set partial token k leads to from state s (one bit, or none)
        nxt = [[0] * len(self.ids) for _ in range(9)]
        for k, tok in enumerate(self.ids.tolist()):
            for s in range(8):
                t = _bytes_step(s, partial[tok])
                nxt[s][k] = 0 if t < 0 else 1 << t
            nxt[_END][k] = 1 << _END
        self.next = torch.tensor(nxt, dtype=torch.long)                         # (9, P)
        self._next = {tok: [nxt[s][k] for s in range(9)] for k, tok in enumerate(self.ids.tolist())}
        self._partial = set(self._next)
        self._term = set(terminators.tolist())
        self._newline = set(newlines.tolist())
        # any one token from state s: a whole character (0), any partial token, a terminator (not at a hole's
        # first slot: the loop never ends a hole there)
        wild, wild_first = [0] * 9, [0] * 9
        for s in range(9):
            partials = 0
            for k in range(len(self.ids)):
                partials |= nxt[s][k]
            wild_first[s] = partials | (1 if s == 0 else 0) | (1 << _END if s == _END else 0)
            wild[s] = partials | ((1 | 1 << _END) if s == 0 else (1 << _END if s == _END else 0))
        # per set of states (9 bits): where one token of any kind leads (``_img``), and which states lead into
        # the set (``_pre``); ``[first]`` at a hole's first slot
        self._img = [[_union(table, m) for m in range(1 << 9)] for table in (wild, wild_first)]
        self._pre = [[_preimage(table, m) for m in range(1 << 9)] for table in (wild, wild_first)]
        self._tok_pre = {tok: [_preimage(self._next[tok], m) for m in range(1 << 9)] for tok in self._next}
        self._is_partial: torch.Tensor | None = None
        self._is_ending: torch.Tensor | None = None

    @classmethod
    def for_tokenizer(cls, tokenizer, pieces: list[str] | None, terminators: torch.Tensor,
                      newlines: torch.Tensor) -> Utf8Guard | None:
        """The guard for ``tokenizer`` (``pieces``: each id decoded alone, or None to decode only the candidates), or
        None where no token is a byte run that is no whole character (a WordPiece vocabulary, say): nothing to
        guard."""
        partial = byte_tokens(tokenizer, pieces)
        return cls(partial, terminators, newlines) if partial else None

    # -- the automaton over one hole --------------------------------------------------------------------------
    def _step(self, states: int, token: int, ends_line: bool) -> int:
        """The state set after ``token`` from ``states``."""
        out = 1 << _END if states & (1 << _END) else 0
        if token in self._partial:
            nxt = self._next[token]
            for s in range(8):
                if states >> s & 1:
                    out |= nxt[s]
            return out
        if states & 1:  # a whole character (or a hole's end) only between characters
            out |= 1 << _END if token in self._term or (ends_line and token in self._newline) else 1
        return out

    def _back(self, token: int | None, after: int, first: bool, ends_line: bool) -> int:
        """The states from which ``token`` (None: a masked slot, any token) leads into ``after``."""
        if token is None:
            return self._pre[first][after]
        if token in self._tok_pre:
            return self._tok_pre[token][after]
        end = after & 1 << _END
        if token in self._term or (ends_line and token in self._newline):
            return (1 | end) if end else 0
        return (after & 1) | end

    def _passes(self, toks: list[int], free: list[bool], ends_line: bool) -> tuple[list[int], list[int]]:
        """Forward (the states each slot can be reached in) and backward (the states from which the rest of the
        hole can still end well) over one hole; a masked slot may be any token."""
        n = len(toks)
        fwd = [0] * (n + 1)
        fwd[0] = 1
        for p in range(n):
            fwd[p + 1] = self._img[p == 0][fwd[p]] if free[p] else self._step(fwd[p], toks[p], ends_line)
        bwd = [0] * (n + 1)
        bwd[n] = 1 | 1 << _END
        for p in range(n - 1, -1, -1):
            bwd[p] = self._back(None if free[p] else toks[p], bwd[p + 1], p == 0, ends_line)
        return fwd, bwd

    def _partial_table(self, vocab: int) -> torch.Tensor:
        """(vocab,) which ids are partial tokens (and, kept beside it, which end a hole)."""
        if self._is_partial is None or len(self._is_partial) != vocab:
            self._is_partial = torch.zeros(vocab, dtype=torch.bool)
            self._is_partial[self.ids[self.ids < vocab]] = True
            self._is_ending = torch.zeros(vocab, dtype=torch.bool)
            self._is_ending[[t for t in self._term if t < vocab]] = True
        return self._is_partial

    def _possible(self, vocab: int, before: int, after: int, may_end: bool, ends_line: bool) -> torch.Tensor:
        """(vocab,) which tokens may go in a slot reached in states ``before`` whose rest needs ``after`` (a
        terminator only where ``may_end``)."""
        is_partial = self._partial_table(vocab)
        assert self._is_ending is not None
        ending = self._is_ending.clone()
        if ends_line:
            ending[[t for t in self._newline if t < vocab]] = True
        whole_ok = bool((before & 1 and after & 1) or (before & 1 << _END and after & 1 << _END))
        end_ok = bool(before & (1 | 1 << _END) and after & 1 << _END) and may_end
        ok = torch.where(ending, torch.tensor(end_ok), torch.tensor(whole_ok)) & ~is_partial
        reach = torch.zeros(len(self.ids), dtype=torch.long)
        for s in range(9):
            if before >> s & 1:
                reach |= self.next[s]
        keep = self.ids < vocab
        ok[self.ids[keep]] = (reach[keep] & after) != 0
        return ok

    # -- the loop's hook ------------------------------------------------------------------------------------------
    def settle(self, ids: torch.Tensor, free: torch.Tensor, holes, ends: list[int], positions: torch.Tensor,
               logits: torch.Tensor, probs: torch.Tensor, pred: torch.Tensor, conf: torch.Tensor,
               accept: torch.Tensor, must_decide: bool) -> None:
        """Check the step's accepted slots (``positions[accept]``, tokens ``pred``) hole by hole, most confident
        first, against the tokens decided before them; one that would leave its hole no way to valid UTF-8 is put
        back (``accept`` False) or, when ``must_decide`` (every slot is decided this step), replaced by the likeliest
        possible token (``pred`` and ``conf`` updated, ``conf`` its probability). If that leaves no slot accepted,
        the most confident one is replaced instead, so the step still decides one. Alters its arguments in place."""
        is_partial = self._partial_table(probs.shape[1])
        spare: list[tuple[float, int, int, list[int], list[bool], bool]] = []   # put back: (conf, k, lo, ...)
        kept = False
        pos_list = positions.tolist()
        for h, end in zip(holes, ends):
            inside = [k for k, p in enumerate(pos_list) if h.lo <= p < end]
            chosen = [k for k in inside if accept[k]]
            if not chosen:
                continue
            hole_ids = ids[h.lo:end]
            decided_partial = bool((is_partial[hole_ids] & ~free[h.lo:end]).any())
            if not decided_partial and not bool(is_partial[pred[chosen]].any()):
                kept = True
                continue   # no byte token in sight: the loop's choice stands
            toks = hole_ids.tolist()
            open_ = free[h.lo:end].tolist()
            for k in sorted(chosen, key=lambda k: -float(conf[k])):
                p = pos_list[k] - h.lo
                fwd, bwd = self._passes(toks, open_, h.newline_ends)
                tok = int(pred[k])
                if self._step(fwd[p], tok, h.newline_ends) & bwd[p + 1] and not (p == 0 and tok in self._term):
                    toks[p], open_[p] = tok, False
                    kept = True
                    continue
                if must_decide:
                    self._replace(k, fwd[p], bwd[p + 1], p > 0, logits, probs, pred, conf, h.newline_ends)
                    toks[p], open_[p] = int(pred[k]), False
                    kept = True
                else:
                    accept[k] = False
                    spare.append((float(conf[k]), k, h.lo, toks, open_, h.newline_ends))
        if not kept and spare:   # the step must decide something: the most confident slot, with a possible token
            _, k, lo, toks, open_, ends_line = max(spare, key=lambda s: s[0])
            p = pos_list[k] - lo
            fwd, bwd = self._passes(toks, open_, ends_line)
            # (a terminator only at the hole's frontier, as the loop accepts one before its last step)
            self._replace(k, fwd[p], bwd[p + 1], p > 0 and not any(open_[:p]), logits, probs, pred, conf, ends_line)
            accept[k] = True

    def _replace(self, k: int, before: int, after: int, may_end: bool, logits: torch.Tensor, probs: torch.Tensor,
                 pred: torch.Tensor, conf: torch.Tensor, ends_line: bool) -> None:
        """Slot ``k`` (reached in states ``before``, its rest needing ``after``) takes the likeliest token that is
        possible there (``logits`` are the loop's: its suppressed tokens are -inf, never taken while a possible
        token is not)."""
        ok = self._possible(probs.shape[1], before, after, may_end, ends_line)
        if not may_end and not bool(ok.any()):   # only ending the hole here keeps it valid UTF-8
            ok = self._possible(probs.shape[1], before, after, True, ends_line)
        best = int(torch.where(ok, logits[k], torch.tensor(-torch.inf, dtype=logits.dtype)).argmax())
        pred[k] = best
        conf[k] = probs[k, best]


@dataclass
class _Span:
    """A hole as ``Utf8Guard.settle`` reads it: its first slot (the line rule is the reader's: no newline ends it)."""

    lo: int
    newline_ends: bool = False


class CanvasGuard:
    """The guard for a loop whose fill is each slot's argmax of one step, every slot at once (DiffusionGemma: the
    committed canvas). The loop keeps, per slot, a summary of its last step's log-probabilities (``summary``, on the
    device, no read-back): each byte token's, the likeliest other token's and the likeliest terminator's, so a
    vocabulary of ``P + 2`` stand-ins. ``settle`` then checks the argmax canvas hole by hole, as ``Utf8Guard.settle``
    does the masked loop's last step (most confident first, a token that leaves its hole no way to valid UTF-8
    replaced by the likeliest one that keeps one, with its own log-probability); a hole (cut at its first terminator)
    whose argmax holds no byte token is not looked at, so an ASCII fill is the loop's, bit for bit."""

    def __init__(self, partial: dict[int, bytes], terminators: torch.Tensor):
        """``partial``: the byte tokens that are no whole character (``byte_tokens``); ``terminators``: (V,) bool,
        the ids that end a fill (EOS, pad, ids outside the tokenizer)."""
        self.ids = torch.tensor(sorted(partial), dtype=torch.long)                  # (P,)
        self.size = P = len(self.ids)
        self.guard = Utf8Guard({k: partial[t] for k, t in enumerate(self.ids.tolist())},
                               torch.tensor([P + 1]), torch.zeros(0, dtype=torch.long))
        self.index = {t: k for k, t in enumerate(self.ids.tolist())}               # byte token -> stand-in
        self.is_term = terminators.tolist()
        other = ~terminators.clone()
        other[self.ids] = False
        self.term_ids = terminators.nonzero().squeeze(1)
        self.other_bias = torch.zeros(len(terminators)).masked_fill_(~other, -torch.inf)  # (V,) 0 or -inf
        self._on: dict[torch.device, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    @classmethod
    def for_tokenizer(cls, tokenizer, terminators: torch.Tensor) -> CanvasGuard | None:
        """None where the vocabulary has no byte token that is no whole character: nothing to guard."""
        partial = {i: b for i, b in byte_tokens(tokenizer).items() if i < len(terminators) and not terminators[i]}
        return cls(partial, terminators) if partial else None

    def summary(self, raw: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """From one step's untempered logits ``raw`` (B, C, V) and their ``logsumexp`` (B, C): the stand-ins'
        log-probabilities (B, C, P + 2) and the ids of the last two (B, C, 2). Tensor operations only."""
        if raw.device not in self._on:
            self._on[raw.device] = (self.ids.to(raw.device), self.other_bias.to(raw.device),
                                    self.term_ids.to(raw.device))
        ids, bias, term_ids = self._on[raw.device]
        other, other_id = (raw + bias).max(-1)                                     # (B, C)
        if len(term_ids):
            term, at = raw.index_select(-1, term_ids).max(-1)
            term_id = term_ids[at]
        else:
            term, term_id = torch.full_like(other, -torch.inf), torch.zeros_like(other_id)
        logits = torch.cat([raw.index_select(-1, ids), other[..., None], term[..., None]], -1)
        return logits - lse[..., None], torch.stack([other_id, term_id], -1)

    def settle(self, argmax: torch.Tensor, logp: torch.Tensor, summary: tuple[torch.Tensor, torch.Tensor],
               holes: list[list[tuple[int, int]]]) -> tuple[torch.Tensor, torch.Tensor]:
        """The argmax canvas (B, C) and its log-probabilities with every hole's tokens valid UTF-8 (``holes``: per
        row, each hole's ``[lo, hi)``); the tensors themselves where nothing changes. Reads the canvas back."""
        rows = argmax.tolist()
        out_ids: torch.Tensor | None = None
        out_logp = logp
        P = self.size
        for b, spans in enumerate(holes):
            for lo, hi in spans:
                toks = rows[b][lo:hi]
                n = next((j for j, t in enumerate(toks) if t >= len(self.is_term) or self.is_term[t]), len(toks))
                toks = toks[:n]
                if not any(t in self.index for t in toks):
                    continue   # no byte token: the loop's fill stands
                stand_in = summary[0][b, lo:lo + n].float().cpu()                  # (n, P + 2)
                which = summary[1][b, lo:lo + n].cpu()                             # (n, 2)
                was = [self.index.get(t, P) for t in toks]
                pred = torch.tensor(was)
                conf = logp[b, lo:lo + n].float().cpu().exp()
                self.guard.settle(pred.clone(), torch.ones(n, dtype=torch.bool), [_Span(0)], [n],
                                  torch.arange(n), stand_in, stand_in.exp(), pred, conf,
                                  torch.ones(n, dtype=torch.bool), True)
                for p, k in enumerate(pred.tolist()):
                    if k == was[p]:
                        continue
                    if out_ids is None:
                        out_ids, out_logp = argmax.clone(), logp.clone()
                    out_ids[b, lo + p] = int(self.ids[k] if k < P else which[p, k - P])
                    out_logp[b, lo + p] = float(stand_in[p, k])
        return (argmax if out_ids is None else out_ids), out_logp
