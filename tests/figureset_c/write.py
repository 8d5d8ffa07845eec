"""How set C writes a figure: sell-side styles for amounts, per-share figures, share counts,
percentages, growth and changes in points, and the rule-made twins of a written number
(near miss, swapped digits, scale swap, random). No dexter import."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Written:
    """A figure as written: ``pre`` + ``digits`` + ``post``; its value is
    ``sign * digits * scale`` (``neg_style`` says how a negative shows)."""

    pre: str
    digits: str
    post: str
    scale: float
    sign: int = 1

    @property
    def text(self) -> str:
        return f"{self.pre}{self.digits}{self.post}"

    @property
    def value(self) -> float:
        return self.sign * float(self.digits.replace(",", "")) * self.scale

    @property
    def half_unit(self) -> float:
        decimals = len(self.digits.split(".")[1]) if "." in self.digits else 0
        return 0.5 * 10.0 ** -decimals * self.scale


BN_STYLES = ("${}bn", "USD {} bn", "${}B", "{}B", "${} billion", "~${} billion", "US${}bn",
             "${}bn")
M_STYLES = ("${}m", "USD {}mn", "${} million", "$ {} mm")


def money(value: float, rng: random.Random, negative: str = "") -> Written:
    """``value`` in dollars, unsigned in the text unless ``negative`` is '-' (a leading
    minus) ; the sign is the value's either way."""
    sign = -1 if value < 0 else 1
    v = abs(value)
    if v >= 10e9 or (v >= 1e9 and rng.random() < 0.5):
        style = rng.choice(BN_STYLES)
        x = v / 1e9
        decimals = 2 if x < 10 or rng.random() < 0.2 else (0 if x >= 100 and rng.random() < 0.3
                                                             else 1)
        digits, scale = f"{x:.{decimals}f}", 1e9
    else:
        style = rng.choice(M_STYLES)
        digits, scale = f"{v / 1e6:,.0f}", 1e6
    pre, post = style.split("{}")
    if negative == "-" and sign < 0:
        pre = "-" + pre
    return Written(pre, digits, post, scale, sign)


def per_share(value: float, rng: random.Random) -> Written:
    return Written(rng.choice(("$", "$", "USD ")), f"{abs(value):.2f}", "", 1.0,
                   -1 if value < 0 else 1)


def shares(value: float, rng: random.Random) -> Written:
    if rng.random() < 0.5:
        return Written("", f"{value / 1e9:.2f}", "bn", 1e9)
    return Written("", f"{value / 1e6:,.0f}", "m", 1e6)


def pct(value: float, decimals: int = 1, post: str = "%") -> Written:
    return Written("", f"{abs(value):.{decimals}f}", post, 1.0, -1 if value < 0 else 1)


def bps(value: float, rng: random.Random) -> Written:
    """A change in points as basis points (rounded to tens) or as percentage points."""
    sign = -1 if value < 0 else 1
    if rng.random() < 0.5:
        post = rng.choice(("bps", " bps", "bp", " basis points"))
        return Written("", f"{round(abs(value) * 10) * 10:d}", post, 0.01, sign)
    return Written("", f"{abs(value):.1f}", rng.choice(("pp", " ppts", " percentage points")),
                   1.0, sign)


def mutate(w: Written, how: str, rng: random.Random) -> Written | None:
    """A fabricated twin of ``w`` made by rule, or None when the rule cannot apply."""
    digits = w.digits
    idx = [i for i, ch in enumerate(digits) if ch.isdigit()]
    if how == "near":
        i = idx[-1]
        d = int(digits[i])
        choices = [x for x in range(10) if 0 < abs(x - d) <= 3]
        new = digits[:i] + str(rng.choice(choices)) + digits[i + 1:]
        return replace(w, digits=new)
    if how == "swap":
        pairs = [(a, b) for a, b in itertools.pairwise(idx)
                 if digits[a] != digits[b] and not (a == idx[0] and digits[b] == "0")]
        if not pairs:
            return None
        a, b = rng.choice(pairs)
        chars = list(digits)
        chars[a], chars[b] = chars[b], chars[a]
        return replace(w, digits="".join(chars))
    if how == "scale":
        if w.scale == 1e9:
            post = {"bn": "m", " bn": " mn", "B": "M", " billion": " million"}.get(w.post, "m")
            return replace(w, post=post, scale=1e6)
        if w.scale == 1e6:
            post = {"m": "bn", "mn": "bn", " million": " billion", " mm": "bn"}.get(w.post, "bn")
            return replace(w, post=post, scale=1e9)
        return None
    if how == "random":
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        whole = float(digits.replace(",", ""))
        x = whole * rng.uniform(0.55, 1.6)
        text = f"{x:,.{decimals}f}" if "," in digits else f"{x:.{decimals}f}"
        return replace(w, digits=text)
    raise ValueError(how)
