"""The figure check: is every figure of an answer the right figure of the right line, period
and company, in a source it cites?

No model call. Each figure (:func:`~dexter.evidence.numbers.extract_claims`) is read for
what its words say it is (:mod:`~dexter.evidence.reading`), then looked up by value among
every number the sources hold (:mod:`~dexter.evidence.index`), in absolute units: a scale
binds (``$32.6 million`` is never 32.6 billion), a source's number is rescaled only where
the source states its unit, and a percentage matches percentages and ratios. Then:

- ``supported``: a table cell (or a filing table's row) holds the value and agrees with
  the words (field, period, company, sign), or it occurs in the text and nothing
  contradicts it; or a grounded calculation gave it;
- ``derived``: a growth rate, margin, share, CAGR or difference recomputed from the cells
  the sentence ties it to agrees at the precision written (:mod:`~dexter.evidence.derive`);
- ``weak``: one or two significant digits, found only in free text: counted, not marked;
- ``misattributed``: the value is in the sources, but as another line, period or company,
  or with the other sign ("$60.9 billion is FY2024 revenue [S2], not FY2025"), or a table
  says the named line and period is another value;
- ``miscited``: the figure is supported, but only by a source its line does not cite;
- ``unsupported``: no source holds it.

A figure on a line that cites sources must be supported by a cited source (or by a
grounded calculation on their figures). Figures the user wrote in the question are not
checked. The rules are in docs/verification.md.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal
from weakref import WeakKeyDictionary

from dexter import metrics
from dexter.evidence.citations import find_citations, mask_citations
from dexter.evidence.derive import Derivation, derive
from dexter.evidence.index import Evidence, EvidenceIndex, reader_label
from dexter.evidence.ledger import Source, SourceLedger
from dexter.evidence.numbers import Claim, extract_claims
from dexter.evidence.periods import compare
from dexter.evidence.reading import Reading, read_answer

Status = Literal["verified", "unverified", "no_evidence"]
FigureStatus = Literal["supported", "derived", "weak", "unsupported", "misattributed",
                       "miscited"]
STATUSES: tuple[FigureStatus, ...] = ("supported", "derived", "weak", "unsupported",
                                      "misattributed", "miscited")
FAILED: frozenset[str] = frozenset({"unsupported", "misattributed", "miscited"})
"""The statuses that are marked ⚠ and named in the repair note."""
CONSTANTS = frozenset({100.0, 1_000.0, 1e6, 1e9, 1e12, 365.0, 360.0, 52.0, 12.0, 4.0, 1.0})
"""Numbers a calculation may use without a source (percent, scale, days, weeks, months)."""
LIMIT = 400
"""Candidates looked at per figure (more only for the line the figure names)."""
LOW_PRECISION = 2
"""Figures of at most this many significant digits are easy to find by chance."""
_CHANGE_COLUMN = re.compile(r"change|growth|%|increase|decrease", re.IGNORECASE)
_SHARE_ROW = re.compile(r"percent|% of|share", re.IGNORECASE)
_INPUT_SCALES = (1e3, 1e6, 1e9)
"""The scales a calculation's input may be read at: a source's dollars in thousands,
millions or billions."""
_RESCALED_DIGITS = 4
"""The significant digits a calculation's input needs to be matched at another scale."""
_CALC_SCALES = tuple(10.0 ** (3 * k) for k in (0, 1, 2, 3, 4, -1, -2, -3, -4))


@dataclass(slots=True)
class Figure:
    """The outcome for one figure of an answer."""

    claim: Claim
    status: FigureStatus
    reason: str
    source: str = ""
    cited: tuple[str, ...] = ()
    evidence: Evidence | None = None
    reading: Reading | None = field(default=None, repr=False)

    @property
    def claimed(self) -> dict[str, str]:
        """What the words around the figure name: field, period, company ('' where they
        name none)."""
        return _claimed(self.reading) if self.reading is not None else \
            {"field": "", "period": "", "company": ""}

    @property
    def failed(self) -> bool:
        """Whether the figure is marked (unsupported, misattributed or miscited)."""
        return self.status in FAILED

    def to_dict(self) -> dict[str, Any]:
        """One entry of ``done.verification.figures`` (docs/verification.md)."""
        e = self.evidence
        structured = e is not None and e.where in ("table", "row")
        return {
            "text": self.claim.text, "start": self.claim.start, "end": self.claim.end,
            "value": self.claim.value, "status": self.status, "reason": self.reason,
            "source": self.source, "cited": list(self.cited),
            "field": e.fields[0] if structured and e is not None and e.fields else "",
            "label": e.label if structured and e is not None else "",
            "period": e.period.label if structured and e is not None and e.period else "",
            "company": e.entity if e is not None else "",
            "cell": e.cell() if structured and e is not None else None,
            "claimed": self.claimed,
        }


@dataclass(frozen=True, slots=True)
class AnswerCheck:
    """The outcome of checking one answer."""

    checked: int
    supported: int
    unsupported: tuple[Claim, ...]
    """The figures that failed (unsupported, misattributed or miscited), in order."""
    unknown_citations: tuple[str, ...]
    status: Status
    cited: tuple[str, ...] = ()
    support: dict[str, str] = field(default_factory=dict)
    """Claim text → the id of the source that supports it."""
    figures: tuple[Figure, ...] = ()

    @property
    def failed(self) -> tuple[Figure, ...]:
        """The figures that are marked, in order."""
        return tuple(f for f in self.figures if f.failed)

    def counts(self) -> dict[str, int]:
        """How many figures have each status (every status, zeros included)."""
        out: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for f in self.figures:
            out[f.status] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        """The ``verification`` event's and ``done.verification``'s fields."""
        return {
            "checked": self.checked, "supported": self.supported,
            "unsupported": [{"text": f.claim.text, "value": f.claim.value,
                             "start": f.claim.start, "end": f.claim.end, "status": f.status,
                             "reason": f.reason} for f in self.failed],
            "unknown_citations": list(self.unknown_citations), "status": self.status,
            "counts": self.counts(), "figures": [f.to_dict() for f in self.figures],
        }


def verify_answer(answer: str, ledger: SourceLedger, question: str = "") -> AnswerCheck:
    """Check every figure of ``answer`` against ``ledger`` (see the module docstring)."""
    collecting = gc.isenabled()
    if collecting:
        # the check makes tens of thousands of small objects that refcounting frees; a
        # cycle collection in the middle would walk them (and the whole session's heap)
        # for nothing, a tenth of the check's time. Cycles it leaves are collected after.
        gc.disable()
    try:
        return _verify_answer(answer, ledger, question)
    finally:
        if collecting:
            gc.enable()


def _verify_answer(answer: str, ledger: SourceLedger, question: str) -> AnswerCheck:
    masked = mask_citations(answer)
    given = extract_claims(question)
    claims = [c for c in extract_claims(masked) if not any(_same(c, g) for g in given)]
    citations = find_citations(answer)
    cited = tuple(dict.fromkeys(c.id for c in citations))
    unknown = tuple(i for i in cited if ledger.get(i) is None)
    checker = _checker(ledger, given)
    readings = read_answer(answer, claims, checker.resolve, citations, masked)
    figures: list[Figure] = []
    for reading in readings:
        figures.append(checker.judge(reading, figures))
    failed = [f for f in figures if f.failed]
    if ledger.evidence_count() == 0:
        status: Status = "no_evidence"
    elif failed or unknown:
        status = "unverified"
    else:
        status = "verified"
    support = {f.claim.text: f.source for f in figures if not f.failed and f.source}
    return AnswerCheck(checked=len(figures), supported=len(figures) - len(failed),
                       unsupported=tuple(f.claim for f in failed), unknown_citations=unknown,
                       status=status, cited=cited, support=support, figures=tuple(figures))


def repair_note(result: AnswerCheck) -> str:
    """The message the model gets once before its answer is final, naming what failed and
    why."""
    parts = []
    failed = result.failed or tuple(Figure(c, "unsupported", "in no source")
                                    for c in result.unsupported)
    if failed:
        named = "; ".join(f'"{f.claim.text}": {f.reason}' for f in failed[:20])
        more = len(failed) - 20
        parts.append(
            f"These figures in your answer do not check out: {named}"
            + (f" (and {more} more)" if more > 0 else "")
            + ". Use the figure of the right line, period and company, cite the source that "
            "holds it, compute it with the calculator from fetched figures, or remove it.")
    if result.unknown_citations:
        parts.append("These citations name no source: "
                     + ", ".join(f"[{i}]" for i in result.unknown_citations)
                     + ". Cite only the ids shown at the head of tool results.")
    parts.append("Then write the whole answer again, citing [S#] after each figure.")
    return "Before your answer is final: " + " ".join(parts)


# -- the checker ------------------------------------------------------------------------------

@dataclass(slots=True)
class _Verdict:
    status: FigureStatus
    reason: str
    evidence: Evidence | None = None
    source: str = ""


_CHECKERS: WeakKeyDictionary[SourceLedger, tuple[tuple[Any, ...], _Checker]] = \
    WeakKeyDictionary()


def _checker(ledger: SourceLedger, given: Sequence[Claim]) -> _Checker:
    """The checker of ``ledger`` as it is now (remembered until a source joins it, or the
    question changes: a session checks each of its answers against the same sources)."""
    key = (len(ledger), tuple((g.value, g.tolerance) for g in given))
    known = _CHECKERS.get(ledger)
    if known is not None and known[0] == key:
        return known[1]
    checker = _Checker(ledger, given, known[1] if known is not None else None)
    _CHECKERS[ledger] = (key, checker)
    return checker


class _Checker:
    """Judges each figure against one ledger."""

    def __init__(self, ledger: SourceLedger, given: Sequence[Claim],
                 before: _Checker | None = None) -> None:
        """``before``: the ledger's checker before a source joined (the names it resolved
        are kept when the companies and their names are the same)."""
        self.ledger = ledger
        self.index: EvidenceIndex = ledger.evidence
        self.grounded = _grounded_calculations(ledger, given)
        self.calc_inputs = _calc_inputs(ledger, self.grounded)
        self.calc_evidence = [Evidence(s.id, v, abs(v), "number", "calc")
                              for s in self.grounded for v in (q.value for q in s.quantities)]
        self.calc_forms = {s.id: change_form(str(s.args.get("expression", "")))
                           for s in self.grounded}
        self._sources: list[Source] = ledger.sources
        self.names: dict[str, str]
        seen = before._sources if before is not None else []
        if before is not None and len(seen) <= len(self._sources) and all(
                a is b for a, b in zip(seen, self._sources[:len(seen)], strict=True)):
            # the sources the checker before read are the same: only the new sources'
            # names are read (a ledger only grows)
            self.names = _entity_names(self._sources[len(seen):], dict(before.names))
        else:
            self.names = _entity_names(self._sources)
        self.entities = set(self.index.entities) | set(self.names.values())
        self._resolved: dict[str, str | None] = {}
        if before is not None and before.entities == self.entities and \
                before.names == self.names:
            self._resolved = dict(before._resolved)  # a name resolves as it did
        self._by_initial: dict[str, list[tuple[str, str]]] = {}
        for ticker in sorted(self.entities):
            letters = _ticker_letters(ticker)
            if len(letters) >= 2:
                self._by_initial.setdefault(letters[0], []).append((ticker, letters))
        self._usable_ids = {s.id for s in ledger.sources if s.kind in ("data", "user")}
        self._pools: dict[tuple[str, ...], frozenset[str]] = {}
        self._known_ids = {s.id for s in ledger.sources}

    # -- companies ---------------------------------------------------------------------

    def resolve(self, text: str) -> str | None:
        """The ticker in the ledger a name or ticker as written stands for."""
        if text not in self._resolved:
            self._resolved[text] = self._resolve(text)
        return self._resolved[text]

    def _resolve(self, text: str) -> str | None:
        if not self.entities:
            return None
        word = text.strip().removesuffix("'s").removesuffix("’s").strip()
        upper = word.upper().lstrip("$")
        if upper in self.entities and (word.isupper() or word.startswith("$")):
            return upper
        key = _name_key(word)
        if not key or len(key) < 3:
            return None
        if key in self.names:
            return self.names[key]
        for ticker, letters in self._by_initial.get(key[0], ()):
            if _letters_fit(letters, key):
                return ticker
        return None

    # -- one figure --------------------------------------------------------------------

    def judge(self, r: Reading, done: Sequence[Figure]) -> Figure:
        """The figure's status; ``done``: the figures before it, judged (a growth rate is
        tied to the cells its sentence's other figures matched)."""
        claimed = r
        known = self._known_ids
        cited = (r.cited if r.cited[0] in known else ()) if len(r.cited) == 1 else \
            tuple(i for i in r.cited if i in known)
        if r.company_inherited and cited:
            # the sentence names no company: the company its citation is about, when that
            # is not the one an earlier sentence named, is the figure's
            owners = {self._entity_of(i) for i in cited} - {""}
            if owners and not owners & set(r.companies):
                r.companies = tuple(sorted(owners)) if len(owners) == 1 else ()
                r.company_text = ""
        candidates = self._candidates(r.claim, r.fields)
        if r.period_inherited and not self._holds_period(r, candidates):
            # the paragraph's period is not one the sources hold for this line: the
            # sentence may be about another period, so it binds nothing
            r.periods, r.base, r.period_text = (), (), ""
        tied = [e for i in r.siblings if i < len(done) and not done[i].failed
                and (e := done[i].evidence) is not None and e.where in ("table", "row")]
        if cited:
            pool = self._pool(cited)
            inside = [e for e in candidates if e.source in pool]
            verdict = self._evaluate(r, inside, pool, tied)
            if verdict.status not in FAILED:
                return self._figure(r, verdict, cited, claimed)
            if len(inside) == len(candidates):
                # every match is in a cited source already: nowhere else to look
                return self._figure(r, self._uncited(r, verdict, cited), cited, claimed)
            outside = self._evaluate(r, candidates, None, tied, compute=False)
            if outside.status not in FAILED:
                found = outside.source or (outside.evidence.source if outside.evidence else "")
                where = _describe(outside.evidence, r) if outside.evidence is not None and \
                    outside.evidence.where != "text" else ""
                reason = (f"{r.claim.text} is {where + ' ' if where else ''}in [{found}], "
                          f"not in the cited {_ids(cited)}")
                return self._figure(r, _Verdict("miscited", reason, outside.evidence,
                                                outside.source), cited, claimed)
            if verdict.status != "misattributed" and outside.status == "misattributed":
                return self._figure(r, outside, cited, claimed)
            return self._figure(r, self._uncited(r, verdict, cited), cited, claimed)
        return self._figure(r, self._evaluate(r, candidates, None, tied), cited, claimed)

    @staticmethod
    def _uncited(r: Reading, verdict: _Verdict, cited: tuple[str, ...]) -> _Verdict:
        """A cited figure's failed verdict, saying so when no source holds it at all."""
        if verdict.status == "unsupported" and verdict.reason.endswith("is in no source"):
            return _Verdict("unsupported", f"{r.claim.text} is in none of the cited sources "
                            f"{_ids(cited)} nor any other")
        return verdict

    def _figure(self, r: Reading, verdict: _Verdict, cited: tuple[str, ...],
                claimed: Reading) -> Figure:
        source = verdict.source or (verdict.evidence.source if verdict.evidence else "")
        return Figure(r.claim, verdict.status, verdict.reason, source, cited,
                      verdict.evidence, claimed)

    def _pool(self, cited: tuple[str, ...]) -> frozenset[str]:
        """The cited sources, and the grounded calculations made only from their figures
        (worked out once per citation)."""
        known = self._pools.get(cited)
        if known is not None:
            return known
        ids = set(cited)
        for calc in self.grounded:
            if calc.id in ids:
                continue
            inputs = self.calc_inputs.get(calc.id, set())
            if inputs and inputs <= ids:
                ids.add(calc.id)
        self._pools[cited] = found = frozenset(ids)
        return found

    def _candidates(self, claim: Claim, fields: Sequence[str] = ()) -> list[Evidence]:
        """Every number of a data source (and of a grounded calculation) the claim's value
        matches in absolute units."""
        tolerance = claim.tolerance * (1 + 1e-9) + 1e-12
        low, high = claim.value - tolerance, claim.value + tolerance
        near = self.index.around(low, high, LIMIT)
        kinds = _MATCHING_KINDS[claim.kind]
        usable = self._usable_ids
        found = [e for e in near if e.kind in kinds and e.source in usable]
        if len(near) >= LIMIT:
            # a figure of low precision matches many numbers: make sure the cells of the
            # line it names are among them
            seen = {id(e) for e in found}
            found.extend(e for name in fields for e in self.index.by_field.get(name, ())
                         if low <= e.magnitude <= high and id(e) not in seen
                         and e.kind in kinds and e.source in usable)
        if claim.bare:
            found.extend(e for e in self.index.written_around(claim.written - claim.tolerance,
                                                              claim.written + claim.tolerance)
                         if e.kind != "percent" and e.source in usable)
        for e in self.calc_evidence:
            if _calc_matches(claim, e.value, tolerance):
                found.append(e)
        return found

    def _entity_of(self, source_id: str) -> str:
        source = self.ledger.get(source_id)
        return source.entity if source is not None else ""

    def _usable(self, source_id: str) -> bool:
        return source_id in self._usable_ids

    def _evaluate(self, r: Reading, candidates: Sequence[Evidence],
                  pool: Collection[str] | None, tied: Sequence[Evidence],
                  compute: bool = True) -> _Verdict:
        """The verdict from ``candidates`` (and, with ``compute``, from figures derived
        from the cells of ``pool``, every source when None)."""
        claim = r.claim
        change = r.role in ("growth", "cagr", "difference", "share")
        calcs: list[Evidence] = []
        structured: list[Evidence] = []
        tabled: set[str] = set()
        plain: list[Evidence] = []
        for e in candidates:
            where = e.where
            if where == "table":
                structured.append(e)
                tabled.add(e.source)
            elif where == "row":
                structured.append(e)
            elif where == "calc":
                calcs.append(e)
            else:
                plain.append(e)
        if tabled:
            # a source's own data table says more than the same numbers in its text
            structured = [e for e in structured if e.where == "table" or e.source not in tabled]
        if change:
            structured = [e for e in structured if _is_change_cell(e, r)]
        if r.qualifier:
            # "Mac net sales": the rows that name Mac, when some do
            words = r.qualifier.lower().split()
            named = [e for e in structured
                     if all(w in f"{e.row} {e.label}".lower() for w in words)]
            if named:
                structured = named
        with_cells = {e.source for e in structured}
        texts = [e for e in plain if e.source not in with_cells] if with_cells else plain
        judged = [(e, self._agreement(r, e)) for e in structured]
        agreeing = [e for e, problem in judged if problem is None]
        if agreeing:
            best = min(agreeing, key=lambda e: (e.where != "table", not e.fields,
                                                abs(abs(e.value) - claim.value)))
            return _Verdict("supported", _supported_reason(best, r), best)
        wrong_way: Evidence | None = None
        if calcs and r.role in ("growth", "difference", "cagr"):
            # a change said to rise is not a result that says it fell, nor the reverse
            said = -1 if claim.negative else r.direction
            kept = [e for e in calcs if not said or
                    _calc_direction(e, self.calc_forms.get(e.source, 0)) in (0, said)]
            if len(kept) < len(calcs):
                wrong_way = next(e for e in calcs if e not in kept)
            calcs = kept
        if calcs:
            return _Verdict("supported", f"from the calculation [{calcs[0].source}]",
                            calcs[0])
        if wrong_way is not None:
            verdict = self._judged_apart(r, structured, judged, texts, pool, tied, compute)
            if verdict.status in FAILED:
                fell = _calc_direction(wrong_way, self.calc_forms.get(wrong_way.source, 0)) < 0
                return _Verdict("misattributed", f"{claim.text} is a "
                                f"{'decline' if fell else 'rise'} in the calculation "
                                f"[{wrong_way.source}], not a {'rise' if fell else 'decline'}",
                                wrong_way)
            return verdict
        return self._judged_apart(r, structured, judged, texts, pool, tied, compute)

    def _judged_apart(self, r: Reading, structured: list[Evidence],
                      judged: list[tuple[Evidence, str | None]], texts: list[Evidence],
                      pool: Collection[str] | None, tied: Sequence[Evidence],
                      compute: bool) -> _Verdict:
        """The verdict when no cell agrees and no calculation gave the figure: derived
        from cells, contradicted by a table, found in text, or in no source."""
        claim = r.claim
        change = r.role in ("growth", "cagr", "difference", "share")
        derivation = self._derive(r, pool, tied) if compute else None
        if derivation is not None and derivation.ok:
            return _Verdict("derived", f"{derivation.reason}; recomputed from the cells",
                            derivation.cells[0] if derivation.cells else None,
                            derivation.source)
        precise = claim.digits > LOW_PRECISION
        if derivation is not None and derivation.other:
            return _Verdict("misattributed", f"{claim.text} is the sum of "
                            f"{derivation.reason}", derivation.cells[0], derivation.source)
        if change:
            if derivation is not None:
                return _Verdict("unsupported", f"{claim.text} does not check out: "
                                f"{derivation.reason}", None, derivation.source)
            if texts:
                return self._occurrence(r, texts[0], precise)
            return _Verdict("unsupported", f"{claim.text} is in no source")
        contradiction = self._contradiction(r)
        disagreeing = [(e, problem) for e, problem in judged if problem is not None]
        if precise and disagreeing:
            e, problem = min(disagreeing, key=lambda x: (x[0].where != "table",
                                                         not x[0].fields))
            return _Verdict("misattributed", f"{claim.text} is {_describe(e, r)} "
                            f"[{e.source}], not {problem}", e)
        if contradiction is not None:
            # a table says the named line and period is another value: the figure is
            # another line's number if the text has it, else a number of no source
            e, what = contradiction
            status: FigureStatus = "misattributed" if texts else "unsupported"
            return _Verdict(status, f"{what} is {_value_text(e, claim)} [{e.source}], "
                            f"not {claim.text}", e)
        if texts:
            return self._occurrence(r, texts[0], precise)
        if disagreeing:
            e, problem = disagreeing[0]
            return _Verdict("unsupported", f"{claim.text} is in no source as {problem} "
                            f"(the nearest is {_describe(e, r)} [{e.source}])")
        if derivation is not None:
            return _Verdict("unsupported", f"{claim.text} does not check out: "
                            f"{derivation.reason}", None, derivation.source)
        return _Verdict("unsupported", f"{claim.text} is in no source")

    def _occurrence(self, r: Reading, e: Evidence, precise: bool) -> _Verdict:
        if precise:
            return _Verdict("supported", f"in the text of [{e.source}]", e)
        return _Verdict("weak", f"{r.claim.text} has only {r.claim.digits} significant "
                        f"digit{'s' if r.claim.digits != 1 else ''} and is found only in the "
                        f"text of [{e.source}], not in a table", e)

    def _derive(self, r: Reading, pool: Collection[str] | None,
                tied: Sequence[Evidence]) -> Derivation | None:
        if r.claim.kind not in ("percent", "multiple") and r.role != "difference" and not (
                r.periods and any(p.kind == "ttm" or (p.kind == "partial" and p.span)
                                  for p in r.periods)):
            return None
        return derive(r, self.index, pool, tied)

    def _holds_period(self, r: Reading, candidates: Sequence[Evidence]) -> bool:
        """Whether some table holds the figure's line (or, with none named, a line its
        value matched) at one of the periods its words name."""
        names = set(r.fields or [f for e in candidates for f in e.fields])
        for name in list(names):
            m = metrics.metric(name)
            if m is not None:
                names.update(f for f in (m.growth_of, *(m.parts or ())) if f)
        for name in names:
            for period in self.index.periods_of(name):
                if any(compare(ref, period) is True for ref in r.periods):
                    return True
        return False

    def _agreement(self, r: Reading, e: Evidence) -> str | None:
        """None when the cell agrees with what the words say; else what the words say
        that it is not ("FY2025", "operating income", "Tesla's", "a profit")."""
        if r.fields:
            if e.fields:
                if not any(f in e.fields for f in r.fields) and not _kin(r.fields, e.fields):
                    return reader_label(r.metric or metrics.label(r.fields[0]))
            elif e.label and e.where in ("table", "row"):
                return reader_label(r.metric or metrics.label(r.fields[0]))
        period = e.period
        if r.periods and period is not None:
            for ref in r.periods:
                if compare(ref, period) is not False:
                    break
            else:  # every period the words name is another
                return r.period_text or r.periods[0].describe()
        if r.companies and e.entity and e.entity not in r.companies:
            named = r.company_text or r.companies[0]
            return named if named.endswith(("'s", "’s")) else f"{named}'s"
        return _sign_problem(r, e)

    def _contradiction(self, r: Reading) -> tuple[Evidence, str] | None:
        """A table cell of the very line, period and company the words name, holding
        another value."""
        if not r.fields or not r.periods or r.qualified or r.claim.bare:
            return None  # a bare number states no unit to compare with a table's
        claim = r.claim
        found: list[Evidence] = []
        for name in r.fields:
            for period, by_entity in self.index.periods_of(name).items():
                for ref in r.periods:
                    if compare(ref, period) is True:
                        break
                else:
                    continue
                if not r.companies:
                    if len(by_entity) > 1:
                        return None  # several companies' lines, and the words name none
                    groups = list(by_entity.values())
                else:
                    groups = [by_entity.get(c, []) for c in r.companies] + \
                        [by_entity.get("", [])]
                found.extend(e for cells in groups for e in cells if _compatible(claim, e))
        if not found:
            return None
        if not r.companies and len({e.entity for e in found}) > 1:
            return None  # several companies' lines, and the words name none
        tolerance = claim.tolerance * (1 + 1e-9)
        if any(abs(abs(e.value) - claim.value) <= tolerance for e in found):
            return None
        best = min(found, key=lambda e: (e.where != "table", abs(abs(e.value) - claim.value)))
        named = best.period.label if best.period is not None else ""
        return best, f"{named} {best.label}".strip()


def _claimed(r: Reading) -> dict[str, str]:
    """What the words around a figure name (``claimed`` of ``done.verification.figures``)."""
    return {"field": r.fields[0] if r.fields else "",
            "period": r.periods[0].describe() if r.periods else "",
            "company": r.companies[0] if r.companies else ""}


def _ids(ids: Iterable[str]) -> str:
    return "".join(f"[{i}]" for i in ids)


_MATCHING_KINDS: dict[str, frozenset[str]] = {
    "percent": frozenset({"percent"}),
    "multiple": frozenset({"multiple", "number"}),
    "money": frozenset({"money", "per_share", "number"}),
    "number": frozenset({"money", "per_share", "shares", "multiple", "number"}),
}
"""The kinds of source number each kind of figure may match (:func:`_compatible`)."""


def _compatible(claim: Claim, e: Evidence) -> bool:
    if claim.kind == "percent":
        return e.kind == "percent"
    if e.kind == "percent":
        return False
    if claim.kind == "multiple":
        return e.kind in ("multiple", "number")
    if claim.kind == "money":
        return e.kind in ("money", "per_share", "number")
    return True


def _calc_matches(claim: Claim, value: float, tolerance: float) -> bool:
    magnitude = abs(value)
    if claim.kind == "percent":
        return abs(magnitude - claim.value) <= tolerance or \
            abs(magnitude * 100 - claim.value) <= tolerance
    if claim.scaled:
        return any(abs(magnitude * s - claim.value) <= tolerance for s in _CALC_SCALES)
    return abs(magnitude - claim.value) <= tolerance


_NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
_FROM_BASE = re.compile(rf"\({_NUMBER}-{_NUMBER}\)/{_NUMBER}")
_OVER_BASE = re.compile(rf"\(?{_NUMBER}/{_NUMBER}\)?-1")
_UNDER_BASE = re.compile(rf"1-\(?{_NUMBER}/{_NUMBER}\)?")


def change_form(expression: str) -> int:
    """How a calculation's result reads as a change: +1 when it is the change itself
    (``(new - old) / old``, ``new / old - 1``: a negative result is a decline), -1 when it
    is a decline's size (``(old - new) / old``, ``1 - new / old``: a positive result is a
    decline), 0 when the expression says neither."""
    text = "".join(expression.split())
    for _ in range(3):
        text = text.removesuffix("*100").removeprefix("100*")
        if text.startswith("(") and text.endswith(")") and _encloses(text):
            text = text[1:-1]
    found = _FROM_BASE.fullmatch(text)
    if found is not None:
        a, b, base = (float(g.replace(",", "")) for g in found.groups())
        return 1 if base == b and base != a else -1 if base == a and base != b else 0
    if _OVER_BASE.fullmatch(text):
        return 1
    if _UNDER_BASE.fullmatch(text):
        return -1
    return 0


def _encloses(text: str) -> bool:
    """Whether the parenthesis that opens ``text`` is the one that closes it."""
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return i == len(text) - 1
    return False


def _calc_direction(e: Evidence, form: int) -> int:
    """Which way a change a calculation's result ``e`` gives went: -1 down, +1 up, 0 it does
    not say (a positive result of an expression of no known form: a decline's size is
    often computed as a positive number)."""
    if form:
        return form if e.value > 0 else -form if e.value < 0 else 0
    return -1 if e.value < 0 else 0


def _is_change_cell(e: Evidence, r: Reading) -> bool:
    """For a growth rate, a change or a share: only a cell that is one (a growth field, a
    filing table's "Change" column, a segment's share of the total) can hold it as it is."""
    if any(name.endswith("_growth") for name in e.fields):
        return True
    if r.role == "share" and "share_of_total" in e.fields:
        return True  # "Services ..., 24.6% of net sales": the segment's share of the total
    if e.where == "row" and _CHANGE_COLUMN.search(e.column):
        return True
    return r.role == "share" and e.where == "row" and bool(
        _SHARE_ROW.search(e.row))


def _kin(named: Sequence[str], cell: Sequence[str]) -> bool:
    """Fields a writer uses for one another: a growth rate and its base field named by
    the same phrase."""
    for name in cell:
        m = metrics.metric(name)
        if m is not None and (m.growth_of in named or (m.parts and m.parts[0] in named)):
            return True
    return False


def _sign_problem(r: Reading, e: Evidence) -> str | None:
    value = e.value
    if value == 0 or not e.fields:
        return None
    m = metrics.metric(e.fields[0])
    sign = m.sign if m is not None else "unsigned"
    if sign == "outflow":
        return None
    negative_words = r.claim.negative or r.polarity < 0
    if value > 0 and r.claim.negative:
        return "a negative amount"
    if sign == "flow":
        return "an inflow" if (value < 0 and r.polarity > 0 and not r.claim.negative) else None
    if sign == "signed":
        if value > 0 and negative_words:
            return "a loss" if "margin" not in e.label else "a negative margin"
        if value < 0 and not negative_words:
            return "a profit" if r.claim.kind != "percent" else "a positive margin"
    return None


_FOOTNOTE = re.compile(r"\s*\(\d\)$|\s*\[\d\]$")


def _row_name(e: Evidence) -> str:
    """A filing table row's name as a reason says it: the row's label, with its section
    only when the label alone names no line ("Gross margin: Products")."""
    name = e.row.rpartition(": ")[2] if e.fields and ": " in e.row else e.row
    return _FOOTNOTE.sub("", name)  # "Services (1)": the footnote mark is no part of it


def _describe(e: Evidence | None, r: Reading) -> str:
    """What a cell is, as a reason says it: ``FY2024 revenue``, ``Tesla's (TSLA) FY2024
    revenue``, ``an operating loss in FY2018``."""
    if e is None:
        return ""
    if e.where == "text":
        return "a number in the text"
    # a filing table's column may be its period ("2024"); a data table's names its field
    period = e.period.label if e.period is not None else e.column if e.where == "row" else ""
    label = e.label if e.where == "table" else _row_name(e) or e.label
    if period and period in label:
        period = ""  # "Revenue FY2023" names its period already
    company = f"{e.entity}'s " if e.entity and r.companies and e.entity not in r.companies \
        else ""
    if e.fields and e.value < 0:
        m = metrics.metric(e.fields[0])
        if m is not None and m.sign == "signed" and "margin" not in label:
            loss = {"net_income": "a net loss", "operating_income": "an operating loss",
                    "gross_profit": "a gross loss"}.get(m.field, f"negative {label}")
            return f"{company}{loss}{' in ' + period if period else ''}".strip()
    return f"{company}{period + ' ' if period else ''}{label}".strip()


def _value_text(e: Evidence, claim: Claim) -> str:
    value = abs(e.value)
    m = metrics.metric(e.fields[0]) if e.fields else None
    if m is not None and m.sign == "outflow":
        e = Evidence(e.source, value, value, e.kind, e.where)  # a payment, as writers say it
    if e.kind == "percent":
        return f"{e.value:.1f}%"
    for scale, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if value >= scale and claim.value >= scale / 1000:
            return f"{'-' if e.value < 0 else ''}{value / scale:,.1f} {word}"
    return f"{e.value:,.2f}"


def _supported_reason(e: Evidence, r: Reading) -> str:
    if e.where == "table":
        period = f"{e.period.label} " if e.period is not None else ""
        company = f" of {e.entity}" if e.entity and len(r.companies) else ""
        return f"{period}{e.label}{company} in [{e.source}]"
    if e.where == "row":
        column = f", {e.column}" if e.column else ""
        return f"{_row_name(e)}{column} in [{e.source}]"
    return f"in [{e.source}]"


def _grounded_calculations(ledger: SourceLedger, given: Sequence[Claim]) -> list[Source]:
    """Calculations whose every input is in a source, the question, or an earlier grounded
    calculation (in ledger order, so a chain of calculations grounds step by step)."""
    grounded: list[Source] = []
    index = ledger.evidence
    for source in ledger.sources:
        if source.kind != "calculation":
            continue
        ok = True
        for claim in source.inputs:
            if claim.value in CONSTANTS or any(_same(claim, g) for g in given):
                continue
            if _input_sources(claim, index, grounded):
                continue
            ok = False
            break
        if ok:
            grounded.append(source)
    return grounded


def _input_sources(claim: Claim, index: EvidenceIndex, grounded: Sequence[Source]) -> set[str]:
    """The sources a calculation's input number is found in (as written, or in absolute
    units)."""
    tolerance = claim.tolerance + abs(claim.value) * 1e-9
    found = {e.source for e in index.around(claim.value - tolerance, claim.value + tolerance)}
    found |= {e.source for e in index.written_around(claim.written - tolerance,
                                                     claim.written + tolerance)}
    if claim.bare and claim.digits >= _RESCALED_DIGITS:
        # "96995" for a statement's 96,995,000,000: the figure read in millions (or
        # thousands, billions); enough digits that a chance match is not one
        for scale in _INPUT_SCALES:
            found |= {e.source for e in index.around((claim.value - tolerance) * scale,
                                                     (claim.value + tolerance) * scale)
                      if e.kind != "percent"}
    for source in grounded:
        if source.has_number(claim.value - tolerance, claim.value + tolerance):
            found.add(source.id)
    return found


def _calc_inputs(ledger: SourceLedger, grounded: Sequence[Source]) -> dict[str, set[str]]:
    """For each grounded calculation: the data sources its inputs came from (through
    earlier calculations)."""
    out: dict[str, set[str]] = {}
    index = ledger.evidence
    for source in grounded:
        ids: set[str] = set()
        for claim in source.inputs:
            if claim.value in CONSTANTS:
                continue
            for sid in _input_sources(claim, index, grounded):
                ids |= out.get(sid, {sid})
        out[source.id] = ids
    return out


def _same(claim: Claim, given: Claim) -> bool:
    """Whether ``claim`` restates a figure of the question (the question's ``$130.5B`` is
    the calculator's ``130.5``)."""
    if abs(claim.value - given.value) <= max(claim.tolerance, given.tolerance) + 1e-9:
        return True
    return claim.written == given.written and claim.written >= 1 and claim.digits >= 2


def _name_key(text: str) -> str:
    words = re.sub(r"\b(?:inc|corp|corporation|co|company|ltd|plc|llc|holdings|group|the|"
                   r"class [a-c])\b\.?", " ", text.lower())
    return re.sub(r"[^a-z0-9]", "", words)


@lru_cache(maxsize=4096)
def _ticker_letters(ticker: str) -> str:
    """A ticker's letters, lower case, repeats collapsed (``AAPL``: ``apl``)."""
    return re.sub(r"(.)\1+", r"\1", re.sub(r"[^a-z]", "", ticker.lower()))


def _letters_fit(letters: str, key: str) -> bool:
    """Whether a company name (``key``: lower-case letters) plausibly stands for a ticker
    of these letters: the name starts with the first and holds them all in order (NVIDIA:
    NVDA, Tesla: TSLA, Apple: AAPL read as APL)."""
    if not key.startswith(letters[0]):
        return False
    position = 0
    for ch in letters:
        position = key.find(ch, position)
        if position == -1:
            return False
        position += 1
    return True


def _entity_names(sources: Iterable[Source], out: dict[str, str] | None = None
                  ) -> dict[str, str]:
    """Company names the sources state, to their tickers (a company-facts table's
    ``name``); ``out``: the names of the sources before them."""
    out = {} if out is None else out
    for source in sources:
        for table in source.tables:
            if table.ticker and table.entity and table.entity.upper() != table.ticker:
                _add_name(out, table.entity, table.ticker)  # "Apple Inc." of AAPL
            names = next((c for c in table.columns if c.name in ("name", "company_name",
                                                                 "entity_name")), None)
            if names is None:
                continue
            for i, value in enumerate(names.values):
                ticker = table.index[i] if table.index_name in ("ticker", "symbol") else \
                    table.ticker or source.entity
                if isinstance(value, str) and ticker:
                    _add_name(out, value, ticker)
    return out


def _add_name(out: dict[str, str], name: str, ticker: str) -> None:
    """``name`` (and its first word, when long enough) as a name of ``ticker``."""
    key = _name_key(name)
    if key:
        out[key] = ticker.upper()
        first = _name_key(name.split()[0]) if name.split() else ""
        if len(first) >= 3:
            out.setdefault(first, ticker.upper())

