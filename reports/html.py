"""The page: one self-contained HTML file with plotly.js inlined once, plain CSS and system fonts.

Nothing in it is fetched: no `src`/`href` points at a network address, styles have no `@import` or
`url()`, fonts are the system's. plotly.js itself contains URL strings (map tile servers, MathJax,
a chart-studio link) as data in its code; they are used only by features the report never turns on
(maps, LaTeX, "edit in chart studio"), and the report hides the plotly logo link. The headless-browser
test runs the page with networking off and checks that no request leaves the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from reports.fmt import esc
from reports.style import FONT, PLOTLY_CONFIG

CSS = f"""
:root {{ --fg: #1f2933; --muted: #616e7c; --line: #d9e2ec; --bg: #f5f7fa; --accent: #0072B2;
         --win: #1b7f3b; --warn: #b44d12; }}
* {{ box-sizing: border-box; }}
html {{ scroll-behavior: smooth; scroll-padding-top: 56px; }}
body {{ margin: 0; font-family: {FONT}; color: var(--fg); background: var(--bg); font-size: 14px;
        line-height: 1.45; }}
header.top {{ background: #102a43; color: #f0f4f8; padding: 22px 32px 18px; }}
header.top h1 {{ margin: 0 0 4px; font-size: 22px; font-weight: 600; }}
header.top .sub {{ margin: 0 0 12px; color: #bcccdc; font-size: 13px; }}
.verdict {{ background: #f0f4f8; color: var(--fg); border-left: 5px solid var(--accent); border-radius: 4px;
            padding: 10px 16px; max-width: 1200px; }}
.verdict p {{ margin: 4px 0; }}
.verdict p.lead {{ font-size: 16px; font-weight: 600; }}
.verdict p.warn {{ color: var(--warn); font-weight: 600; }}
.simulated {{ margin-top: 8px; padding: 6px 12px; background: #fff4e5; border-left: 5px solid var(--warn);
              border-radius: 4px; font-size: 13px; }}
.simulated p {{ margin: 3px 0; }}
nav {{ position: sticky; top: 0; z-index: 10; background: #fff; border-bottom: 1px solid var(--line);
       padding: 8px 32px; display: flex; flex-wrap: wrap; gap: 4px 18px; font-size: 13px; }}
nav a {{ color: var(--accent); text-decoration: none; }}
nav a:hover {{ text-decoration: underline; }}
main {{ padding: 8px 32px 40px; max-width: 1400px; }}
section {{ background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 14px 20px 18px;
           margin: 18px 0; }}
section h2 {{ margin: 0 0 6px; font-size: 18px; }}
section h3 {{ margin: 18px 0 6px; font-size: 15px; }}
p.how {{ color: var(--muted); margin: 0 0 10px; max-width: 1000px; }}
.muted {{ color: var(--muted); }}
.ok {{ color: var(--win); font-weight: 600; }}
.ci {{ color: var(--muted); font-size: 12px; white-space: nowrap; }}
.val.win {{ color: var(--win); font-weight: 600; }}
.val.lead {{ font-weight: 600; }}
.scroll {{ overflow-x: auto; }}
table {{ border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }}
th, td {{ border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top; }}
thead th {{ background: #f0f4f8; position: sticky; top: 0; }}
td:not(:first-child) {{ font-variant-numeric: tabular-nums; }}
table.metric-table td:first-child, table.headline-table td:first-child {{ white-space: nowrap; }}
table.kv th {{ font-weight: 500; color: var(--muted); white-space: nowrap; background: none; }}
table.kv table.kv {{ margin: 0; }}
code {{ font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px;
        word-break: break-all; }}
table.flags-table code {{ white-space: nowrap; word-break: normal; }}
details > summary {{ cursor: pointer; color: var(--accent); margin: 6px 0; }}
.figure {{ margin: 4px 0 8px; }}
.note {{ color: var(--muted); font-size: 12px; margin: 2px 0 8px; }}
footer {{ color: var(--muted); font-size: 12px; padding: 0 32px 24px; }}
"""


@dataclass
class Section:
    """One section of the HTML report: its title, how to read it, and its figures and tables."""

    id: str
    title: str
    how: str = ""  # one paragraph: what is shown and how to read it
    parts: list[str] = field(default_factory=list)  # HTML fragments in order

    def figure(self, fig: go.Figure | None, note: str = "", missing: str = "") -> None:
        if fig is None:
            if missing:
                self.parts.append(f'<p class="note">{esc(missing)}</p>')
            return
        div = fig.to_html(
            full_html=False,
            include_plotlyjs=False,
            config=PLOTLY_CONFIG,
            div_id=f"fig-{self.id}-{len(self.parts)}",
            default_width="100%",
        )
        self.parts.append(f'<div class="figure">{div}</div>')
        if note:
            self.parts.append(f'<p class="note">{esc(note)}</p>')

    def html(self, fragment: str) -> None:
        self.parts.append(fragment)

    def table(self, fragment: str, heading: str = "") -> None:
        if heading:
            self.parts.append(f"<h3>{esc(heading)}</h3>")
        self.parts.append(f'<div class="scroll">{fragment}</div>')


def _plotly_script() -> str:
    js = get_plotlyjs().replace("</script", "<\\/script")
    return f"<script>/* plotly.js, embedded so the report needs no network */\n{js}\n</script>"


def page(
    title: str, subtitle: str, verdict_lines: list[str], sections: list[Section], footer: str, notices: list[str] = ()
) -> str:  # type: ignore[assignment]
    lead, *rest = verdict_lines or [""]
    verdict = f'<p class="lead">{esc(lead)}</p>' + "".join(
        f'<p class="{"warn" if "flag" in line else ""}">{esc(line)}</p>' for line in rest
    )
    if notices:  # simulated numbers: said before any number is shown
        verdict += '<div class="simulated" id="simulated-notice">' + "".join(f"<p>{esc(n)}</p>" for n in notices)
        verdict += "</div>"
    nav = "".join(f'<a href="#{s.id}">{esc(s.title)}</a>' for s in sections)
    body = "".join(
        f'<section id="{s.id}"><h2>{esc(s.title)}</h2>'
        + (f'<p class="how">{esc(s.how)}</p>' if s.how else "")
        + "".join(s.parts)
        + "</section>"
        for s in sections
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style>{_plotly_script()}</head><body>"
        f'<header class="top"><h1>{esc(title)}</h1><p class="sub">{esc(subtitle)}</p>'
        f'<div class="verdict" id="verdict-summary">{verdict}</div></header>'
        f"<nav>{nav}</nav><main>{body}</main><footer>{esc(footer)}</footer></body></html>\n"
    )
