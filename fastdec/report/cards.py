"""The report's first screen: one card per paper, built by fastdec.claims.summary and rendered here -- the headline
figures (the paper's beside ours), the claims (failed ones spelled out), the lossless audit and the hardware."""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import List

import pandas as pd

FAILS = "fails"
DRAFTING = "Cost-aware draft lengths (beyond the paper)"
AUDIT = "Lossless audit"
AUDIT_WHAT = "identical to the greedy output of its own verifier, per exact method"


@dataclass
class Card:
    title: str
    headline: pd.DataFrame                 # figure, row, paper, ours, source
    claims: pd.DataFrame                   # claim, paper, ours, status
    audit: List[str] = field(default_factory=list)   # "method: 100.0% identical" per exact method
    hardware: str = ""
    drafting: str = ""  # cost-aware draft lengths against greedy and fixed k (beyond the paper; "": none in the run)

    def counts(self) -> str:
        c = self.claims["status"].value_counts() if len(self.claims) else {}
        parts = [f"{c[s]} {s}" for s in ("holds", "fails", "not run", "not checkable") if s in c]
        return f"{len(self.claims)} claims: " + ", ".join(parts) if parts else "no claims checked in this run"


_CSS = """
.cards { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 10px; }
.card { border: 1px solid #bbb; border-radius: 4px; padding: 4px 10px; font-size: 13px; }
.card h3 { margin: 4px 0; font-size: 15px; } .card table { margin: 2px 0; font-size: 12px; }
.card td { white-space: nowrap; } .card th:last-child { text-align: left; } .card td.muted, .card td:first-child { white-space: normal; text-align: left; }
.card p, .card ul { margin: 3px 0; } .card li { margin: 1px 0; }
.fail { color: #a00; } .hold { color: #060; } .muted { color: #666; }
"""


def _figure_table(df: pd.DataFrame) -> str:
    from .html import _cell

    rows = "".join(f"<tr><td>{html.escape(str(r.figure))} <span class='muted'>{html.escape(str(r.row))}</span></td>"
                   f"<td class='paper'>{_cell(r.paper)}</td><td>{_cell(r.ours)}</td>"
                   f"<td class='muted'>{html.escape(str(r.source))}</td></tr>" for r in df.itertuples())
    return ("<table><thead><tr><th>headline</th><th class='paper'>paper</th><th>ours</th><th>from</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def card_html(card: Card) -> str:
    failed = card.claims[card.claims["status"] == FAILS] if len(card.claims) else card.claims
    others = card.claims[card.claims["status"] != FAILS] if len(card.claims) else card.claims
    parts = [f"<div class='card'><h3>{html.escape(card.title)}</h3>", _figure_table(card.headline),
             f"<p><b>Claims</b> ({html.escape(card.counts())})</p>"]
    if len(failed):
        parts.append("<ul>" + "".join(
            f"<li class='fail'>✗ {html.escape(r.claim)}. <i>Paper:</i> {html.escape(r.paper)}. "
            f"<i>Ours:</i> {html.escape(str(r.ours))}</li>" for r in failed.itertuples()) + "</ul>")
    if len(others):
        mark = {"holds": "<span class='hold'>✓</span>"}
        parts.append("<details><summary>the other claims</summary><ul>" + "".join(
            f"<li>{mark.get(r.status, '–')} {html.escape(r.claim)} <span class='muted'>({html.escape(r.status)}: "
            f"{html.escape(str(r.ours))})</span></li>" for r in others.itertuples()) + "</ul></details>")
    audit = "; ".join(card.audit) if card.audit else "no exact method in this run"
    parts.append(f"<p><b>{AUDIT}</b> ({AUDIT_WHAT}): {html.escape(audit)}</p>")
    if card.drafting:
        parts.append(f"<p><b>{DRAFTING}</b>: {html.escape(card.drafting)}</p>")
    parts.append(f"<p><b>Hardware</b>: {html.escape(card.hardware)}</p></div>")
    return "".join(parts)


def cards_html(cards: List[Card]) -> str:
    return f"<style>{_CSS}</style><div class='cards'>" + "".join(card_html(c) for c in cards) + "</div>"


def cards_markdown(cards: List[Card]) -> str:
    from .markdown import df_to_markdown

    out = []
    for card in cards:
        out += [f"### {card.title}", "", df_to_markdown(card.headline), "", f"**Claims** ({card.counts()}).", ""]
        out += [f"- FAILS: {r.claim}. Paper: {r.paper}. Ours: {r.ours}" for r in card.claims.itertuples()
                if r.status == FAILS]
        out += [f"- {r.status}: {r.claim} ({r.ours})" for r in card.claims.itertuples() if r.status != FAILS]
        audit = "; ".join(card.audit) if card.audit else "no exact method in this run"
        out += ["", f"**{AUDIT}** ({AUDIT_WHAT}): {audit}", ""]
        if card.drafting:
            out += [f"**{DRAFTING}**: {card.drafting}", ""]
        out += [f"**Hardware**: {card.hardware}", ""]
    return "\n".join(out)
