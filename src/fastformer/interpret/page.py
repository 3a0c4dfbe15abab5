"""The explanation as one self-contained HTML page: no network, no CDN, the data inline, a few lines of plain script.

Layout: the prediction; controls (weight kind, layer, head or mean of heads; a link may open a view:
`page.html#kind=beta&layer=2&head=3`); a legend; the text with every word in its own element (`span.w`; a read
word's `data-i` is its place among the words read), shaded by the chosen weights, in pages of `page_words` words; a
small-multiples strip per head; the faithfulness check; and what the weights are. The page is shaded on the server
side too (inline styles for the first view), so it reads the same with scripts off.
"""

from __future__ import annotations

import html
import json

import numpy as np

from fastformer.interpret.explanation import WHAT_THE_WEIGHTS_ARE, Explanation, View

SHADE = (33, 102, 172)  # the colour of weight = the largest weight of the view

STYLE = """
body { font: 15px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 980px;
       color: #1b1b1b; padding: 0 16px; }
h1 { font-size: 20px; margin: 0 0 8px; } h2 { font-size: 16px; margin: 22px 0 6px; }
.prediction { background: #f4f6f8; border-radius: 6px; padding: 10px 14px; }
.bar { display: inline-block; height: 10px; background: rgb(33,102,172); vertical-align: middle; }
table { border-collapse: collapse; } td, th { padding: 2px 10px 2px 0; text-align: left; vertical-align: top; }
.controls { margin: 14px 0 6px; display: flex; gap: 16px; flex-wrap: wrap; align-items: center; }
.legend { display: flex; align-items: center; gap: 8px; font-size: 13px; color: #555; }
.legend .ramp { width: 180px; height: 12px; border: 1px solid #ccc;
                background: linear-gradient(to right, rgba(33,102,172,0), rgba(33,102,172,1)); }
#text { white-space: pre-wrap; border: 1px solid #ddd; border-radius: 6px; padding: 14px; margin-top: 8px;
        font-size: 16px; line-height: 1.9; }
.w { border-radius: 3px; padding: 1px 1px; cursor: default; }
.w.unread { color: #9a9a9a; text-decoration: line-through; text-decoration-color: #ccc; }
.pager { margin: 8px 0; font-size: 13px; } .pager button { margin: 0 6px; }
.heads .row { display: flex; align-items: center; gap: 8px; font-size: 12px; cursor: pointer; }
.heads .row span { min-width: 64px; }
.heads canvas { border: 1px solid #eee; image-rendering: pixelated; height: 14px; }
.note { font-size: 13px; color: #444; background: #fbfbf3; border-left: 3px solid #d9d28a; padding: 8px 12px; }
.muted { color: #777; font-size: 13px; }
"""

SCRIPT = """
(function () {
  const data = JSON.parse(document.getElementById('explanation-data').textContent);
  const kind = document.getElementById('kind'), layer = document.getElementById('layer'),
        head = document.getElementById('head');
  const words = Array.from(document.querySelectorAll('#text .w'));
  const pages = Array.from(document.querySelectorAll('#text .page'));
  let page = 0;
  function table(k, l) { return k === 'pooling' ? null : data.layers[l][k]; }
  function current() {
    const k = kind.value, l = +layer.value, h = head.value;
    if (k === 'pooling') return data.pooling;
    const t = table(k, l);
    if (h !== 'mean') return t[+h];
    return t[0].map((_, i) => t.reduce((s, row) => s + row[i], 0) / t.length);
  }
  function shade(el, w, top) {
    const a = top > 0 ? w / top : 0;
    el.style.backgroundColor = 'rgba(33,102,172,' + a.toFixed(3) + ')';
    el.style.color = a > 0.55 ? '#fff' : '';
    el.title = 'weight ' + w.toFixed(4) + ' (' + (100 * w).toFixed(1) + '% of the pooled vector)';
  }
  function drawHeads() {
    const k = kind.value === 'pooling' ? 'alpha' : kind.value, l = +layer.value, t = table(k, l);
    document.getElementById('heads-title').textContent = k + ', layer ' + (l + 1) + ': each head';
    const top = Math.max(...t.map((row) => Math.max(...row)), 1e-12);  // one scale for every head: comparable
    t.forEach((row, h) => {
      const c = document.getElementById('head-canvas-' + h), ctx = c.getContext('2d');
      ctx.clearRect(0, 0, c.width, c.height);
      row.forEach((w, i) => {
        ctx.fillStyle = 'rgba(33,102,172,' + (w / top).toFixed(3) + ')';
        ctx.fillRect(i, 0, 1, 1);
      });
    });
  }
  function update() {
    const pooled = kind.value === 'pooling';
    layer.disabled = pooled; head.disabled = pooled;
    const w = current(), top = Math.max(...w, 1e-12);
    words.forEach((el) => { if (el.dataset.i !== undefined) shade(el, w[+el.dataset.i], top); });
    document.getElementById('legend-max').textContent = top.toFixed(4);
    document.getElementById('view-what').textContent = data.what[kind.value];
    drawHeads();
  }
  function show(p) {
    page = Math.max(0, Math.min(pages.length - 1, p));
    pages.forEach((el, i) => { el.hidden = i !== page; });
    const no = document.getElementById('page-no'); if (no) no.textContent = page + 1;
  }
  [kind, layer, head].forEach((el) => el && el.addEventListener('change', update));
  const prev = document.getElementById('prev'), next = document.getElementById('next');
  if (prev) prev.addEventListener('click', () => show(page - 1));
  if (next) next.addEventListener('click', () => show(page + 1));
  document.querySelectorAll('.heads .row').forEach((row) => row.addEventListener('click', () => {
    if (kind.value === 'pooling') kind.value = 'alpha';
    head.value = row.dataset.head; update();
  }));
  // a link can open a view: page.html#kind=beta&layer=2&head=3 (layer and head 1-based; head=mean for the mean)
  const asked = new URLSearchParams(location.hash.slice(1));
  if (asked.has('kind') && Array.from(kind.options).some((o) => o.value === asked.get('kind'))) {
    kind.value = asked.get('kind');
  }
  if (asked.has('layer')) layer.value = String(+asked.get('layer') - 1);
  if (asked.has('head')) head.value = asked.get('head') === 'mean' ? 'mean' : String(+asked.get('head') - 1);
  show(0); update();
})();
"""


def shade_style(weight: float, top: float) -> str:
    """The inline style of a word of weight `weight` when `top` is the largest weight shown (the darkest)."""
    share = weight / top if top > 0 else 0.0
    text = "color:#fff;" if share > 0.55 else ""
    return f"background-color:rgba({SHADE[0]},{SHADE[1]},{SHADE[2]},{share:.3f});{text}"


def _prediction(explanation: Explanation) -> str:
    p = explanation.prediction
    if "probabilities" in p:
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td><span class='bar' style='width:{160 * prob:.0f}px'></span></td>"
            f"<td>{prob:.3f}</td></tr>"
            for name, prob in sorted(p["probabilities"].items(), key=lambda item: -item[1])
        )
        return f"<div>Predicted label: <b>{html.escape(p['label'])}</b></div><table>{rows}</table>"
    if "next_tokens" in p:
        rows = "".join(
            f"<tr><td><code>{html.escape(repr(t['token']))}</code></td>"
            f"<td><span class='bar' style='width:{160 * t['probability']:.0f}px'></span></td>"
            f"<td>{t['probability']:.3f}</td></tr>"
            for t in p["next_tokens"]
        )
        return f"<div>The next token the model expects after the text:</div><table>{rows}</table>"
    return f"<div>Summary the model generated:</div><blockquote>{html.escape(p.get('summary', ''))}</blockquote>"


# how the model read a text -> (what it read of the text's tokens, the words it did not, where the words cut out of a
# long text were, what an unread word's title says)
READINGS = {
    "head": (
        "the first {n} of the text's {total} tokens",
        "the last {u} words",
        "after them",
        "after the first {n} tokens",
    ),
    "tail": (
        "the last {n} of the text's {total} tokens",
        "the first {u} words",
        "before them",
        "before the last {n} tokens",
    ),
    "head+tail": (
        "{n} of the text's {total} tokens, from its head and its tail",
        "the {u} words between them",
        "in their middle",
        "between the head and the tail the model reads ({n} tokens)",
    ),
}


def _reading(explanation: Explanation) -> str:
    return "head+tail" if explanation.skips_middle else "tail" if explanation.skips_start else "head"


def _text(explanation: Explanation, weights: np.ndarray, page_words: int) -> tuple[str, int]:
    """The text as pages of word spans (the characters between words kept as they are). Returns (html, pages)."""
    top = float(weights.max()) if len(weights) else 0.0
    unread_title = "not read: " + READINGS[_reading(explanation)][3].format(n=explanation.tokens_read)
    cut = f"<span class='muted'> [&hellip; {explanation.words_not_shown} words not shown &hellip;] </span>"
    pages, current, cursor, read = [], [], 0, 0
    if explanation.words_not_shown and explanation.not_shown_after == -1:  # words cut out of the start
        current.append(cut)
    for i, word in enumerate(explanation.words):
        if i and i % page_words == 0:
            pages.append("".join(current))
            current = []
        current.append(html.escape(explanation.text[cursor : word.start]))
        if word.read:  # data-i: the word's place among the read words, where the weight arrays index it
            style = shade_style(float(weights[read]), top)
            current.append(f"<span class='w' data-i='{read}' style='{style}'>{html.escape(word.text)}</span>")
            read += 1
        else:
            current.append(f"<span class='w unread' title='{unread_title}'>{html.escape(word.text)}</span>")
        if i == explanation.not_shown_after and i < len(explanation.words) - 1:  # words cut out of the middle
            current.append(cut)
        cursor = word.end
    current.append(html.escape(explanation.text[cursor:]))
    pages.append("".join(current))
    body = "".join(
        f"<div class='page' data-page='{n}'{' hidden' if n else ''}>{content}</div>" for n, content in enumerate(pages)
    )
    return body, len(pages)


def _faithfulness(explanation: Explanation) -> str:
    f = explanation.faithfulness
    if not f:
        return "<p class='muted'>Not measured (the text has fewer than two words, or the check was turned off).</p>"
    rows = "".join(
        f"<tr><td>{html.escape(t['view'])}</td><td>{t['drop']:+.4f}</td>"
        f"<td class='muted'>{html.escape(', '.join(t['words']))}</td></tr>"
        for t in f["top_weighted"]
    )
    r = f["random"]
    return (
        f"<p>Cutting the {f['k']} words with the highest weight from the text, the {html.escape(f['score'])} "
        f"(now {f['original']:.4f}) falls by:</p><table><tr><th>words ranked by</th><th>fall</th><th>words cut</th>"
        f"</tr>{rows}<tr><td>{f['k']} random words</td><td>{r['mean_drop']:+.4f} &plusmn; {r['std_drop']:.4f}</td>"
        f"<td class='muted'>mean &plusmn; standard deviation over {r['trials']} draws</td></tr></table>"
        "<p class='muted'>Weights that matter for this prediction cost more than random words; a fall no larger "
        "than the random one means the weights do not single out what the prediction rests on.</p>"
    )


def _reading_notes(explanation: Explanation, pages: int, page_words: int) -> tuple[str, str]:
    """(the pager of a long text, the notes on what the model did not read or does not know) as HTML."""
    pager = (
        f"<nav class='pager'><button id='prev'>&#9664; previous</button> page <span id='page-no'>1</span> of {pages}"
        f" ({len(explanation.words)} words, {page_words} a page)<button id='next'>next &#9654;</button></nav>"
        if pages > 1
        else ""
    )
    unread = len(explanation.words) - explanation.read_words
    reads, unread_words, cut_where, _ = READINGS[_reading(explanation)]
    truncated = (
        f"<p class='muted'>The model reads {reads.format(n=explanation.tokens_read, total=explanation.tokens_total)}: "
        f"{unread_words.format(u=unread)} (struck through) were not read"
        + (f", nor the {cut} words {cut_where} (not shown)" if (cut := explanation.words_not_shown) else "")
        + ".</p>"
        if unread
        else ""
    )
    unknown = explanation.unknown_words
    if unknown:  # the model sees these as one and the same token: their weights cannot tell them apart
        truncated += (
            f"<p class='muted'>{unknown} of the {explanation.read_words} words read are unknown to the model's "
            "vocabulary: it reads each of them as the same unknown token, so they get alike weights.</p>"
        )
    return pager, truncated


def explanation_page(explanation: Explanation, view: View, page_words: int = 400) -> str:
    """The HTML page (a str) of one explanation, opened on `view`."""
    weights = explanation.weights(view)
    body, pages = _text(explanation, weights, page_words)
    layers = len(explanation.layers)
    kinds = [k for k in ("pooling", "alpha", "beta") if k != "pooling" or explanation.pooling is not None]
    option = lambda value, label, chosen: (  # noqa: E731
        f"<option value='{value}'{' selected' if chosen else ''}>{html.escape(label)}</option>"
    )
    kind_options = "".join(option(k, k, k == view.kind) for k in kinds)
    chosen_layer = layers - 1 if view.layer is None else view.layer
    layer_options = "".join(option(i, f"layer {i + 1}", i == chosen_layer) for i in range(layers))
    head_options = option("mean", "mean of heads", view.head is None) + "".join(
        option(h, f"head {h + 1}", h == view.head) for h in range(explanation.num_heads)
    )
    width = max(explanation.read_words, 1)
    heads = "".join(
        f"<div class='row' data-head='{h}'><span>head {h + 1}</span>"
        f"<canvas id='head-canvas-{h}' width='{width}' height='1' style='width:{min(760, max(200, 4 * width))}px'>"
        "</canvas></div>"
        for h in range(explanation.num_heads)
    )
    pager, truncated = _reading_notes(explanation, pages, page_words)
    data = dict(explanation.to_dict(), what={k: WHAT_THE_WEIGHTS_ARE[k] for k in kinds})
    data.pop("text")
    # inside <script>, "</script", "<!--" and "<script" all change how the browser reads on (a label named
    # "<!--<script" left the page's data unread); JSON may spell <, > and & as \u escapes, so none of them appears
    payload = (
        json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )
    title = explanation.prediction.get("label") or explanation.task
    largest = float(weights.max(initial=0))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>fastformer explain: {html.escape(str(title))}</title><style>{STYLE}</style></head>
<body>
<h1>What the model read</h1>
<div class="prediction">{_prediction(explanation)}</div>
<div class="controls">
  <label>weights <select id="kind">{kind_options}</select></label>
  <label><select id="layer">{layer_options}</select></label>
  <label><select id="head">{head_options}</select></label>
  <span class="legend">0 <span class="ramp"></span> <span id="legend-max">{largest:.4f}</span></span>
</div>
<div class="muted" id="view-what">{html.escape(WHAT_THE_WEIGHTS_ARE[view.kind])}</div>
<div id="text">{body}</div>
{pager}{truncated}
<section class="heads"><h2 id="heads-title">each head</h2>{heads}
<p class="muted">One strip per head, one cell per word, on one scale for all heads (darker = more weight); click a
strip to show that head.</p>
</section>
<h2>Do the weights matter?</h2>
{_faithfulness(explanation)}
<h2>What these weights are</h2>
<div class="note">Fastformer pools each layer's tokens twice with additive attention: alpha_i is word i's share of the
global query, beta_i its share (mixed with the global query) of the global key; a classifier then pools the last
layer once more (its pooling weight). Each is one number per word per head, summing to 1 over the text: a
contribution to a pooled vector, not pairwise attention between words, and not by itself a proof of why the model
decided. A word's weight is the sum over its word pieces. Hover a word for its weight.</div>
<script id="explanation-data" type="application/json">{payload}</script>
<script>{SCRIPT}</script>
</body></html>
"""
