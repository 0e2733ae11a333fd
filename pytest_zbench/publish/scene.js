// A scene page of the published site (docs/report.md, "Published site"): the series drawn with plotly.js from the
// scene's data file (window.ZBENCH_SCENE), and its runs as a table. Written once into assets/, shared by every page.
"use strict";

function zbenchRunLabel(d, i) {
  const r = d.runs;
  return "run #" + i + "<br>build " + r.build[i].slice(0, 12) + (r.dirty[i] ? " (dirty)" : "") + "<br>" +
    r.started[i].replace("T", " ").slice(0, 19) + " UTC<br>" + r.launches[i] + " launch(es)" +
    (r.env_changed[i] ? "<br>environment changed" : "");
}

function zbenchDraw(d, colours) {
  const r = d.runs;
  const x = r.median.map((_, i) => i);
  const text = x.map(i => zbenchRunLabel(d, i));
  const up = r.median.map((m, i) => (m === null || r.high[i] === null) ? 0 : r.high[i] - m);
  const down = r.median.map((m, i) => (m === null || r.low[i] === null) ? 0 : m - r.low[i]);
  const traces = [{
    name: "median over launches (bar: their range)", x: x, y: r.median, text: text, type: "scatter",
    mode: "lines+markers", line: {color: colours.series, width: 2}, marker: {color: colours.series, size: 5},
    error_y: {type: "data", symmetric: false, array: up, arrayminus: down, color: colours.interval, thickness: 1,
              width: 2},
    hovertemplate: "%{y:.4g} " + d.unit + "<br>%{text}<extra></extra>",
  }];
  const byWord = {};
  for (const v of d.verdicts) {
    (byWord[v.verdict] = byWord[v.verdict] || []).push(v);
  }
  for (const word of Object.keys(byWord)) {
    const marks = byWord[word];
    traces.push({
      name: "verdict: " + word, x: marks.map(v => v.index), y: marks.map(v => r.median[v.index]),
      text: marks.map(v => zbenchRunLabel(d, v.index) + "<br>" + v.describe + (v.report ? "<br>click: its report" : "")),
      customdata: marks.map(v => v.report), type: "scatter", mode: "markers",
      marker: {symbol: "diamond", size: 12, color: colours.verdicts[word] || colours.neutral,
               line: {color: "#fff", width: 1}},
      hovertemplate: word + "<br>%{text}<extra></extra>",
    });
  }
  const shapes = [], annotations = [];
  for (const c of d.change_points) {
    shapes.push({type: "line", xref: "x", yref: "paper", x0: c.index - 0.5, x1: c.index - 0.5, y0: 0, y1: 1,
                 line: {color: colours.change, width: 3, dash: "dash"}});
    annotations.push({x: c.index - 0.5, y: 1, xref: "x", yref: "paper", yanchor: "bottom", showarrow: false,
                      text: "x" + c.magnitude.toFixed(3) + (c.build ? " @ " + c.build.slice(0, 10) : ""),
                      font: {color: colours.change, size: 12}});
  }
  for (const s of d.segments) {
    shapes.push({type: "line", xref: "x", yref: "y", x0: s.start - 0.5, x1: s.end - 0.5, y0: s.median,
                 y1: s.median, line: {color: colours.segment, width: 1, dash: "dot"}});
  }
  const layout = {
    title: {text: d.title, font: {size: 15}}, height: 460, margin: {l: 70, r: 20, t: 60, b: 50},
    xaxis: {title: {text: "run (oldest first)"}, zeroline: false},
    yaxis: {title: {text: d.metric + (d.unit ? " (" + d.unit + ")" : "")}, rangemode: "tozero"},
    shapes: shapes, annotations: annotations, legend: {orientation: "h", y: -0.18}, hovermode: "closest",
  };
  return Plotly.newPlot("chart", traces, layout, {responsive: true, displaylogo: false}).then(chart => {
    // A verdict's diamond opens the report of its run, where the run's folder is still in the archive.
    chart.on("plotly_click", event => {
      const report = event.points.length ? event.points[0].customdata : null;
      if (report) window.location.href = report;
    });
    return chart;
  });
}

function zbenchTable(d) {
  const r = d.runs, verdictAt = {};
  for (const v of d.verdicts) verdictAt[v.index] = v;
  const changeAt = {};
  for (const c of d.change_points) changeAt[c.index] = c;
  const body = document.getElementById("runs");
  for (let i = r.median.length - 1; i >= 0; i--) {
    const row = body.insertRow();
    const v = verdictAt[i], c = changeAt[i];
    const cells = [String(i), r.started[i].replace("T", " ").slice(0, 19), r.build[i].slice(0, 12) +
                   (r.dirty[i] ? " (dirty)" : ""), String(r.launches[i]),
                   r.median[i] === null ? "-" : r.median[i].toPrecision(4),
                   r.low[i] === null ? "-" : r.low[i].toPrecision(4) + " .. " + r.high[i].toPrecision(4)];
    for (const t of cells) row.insertCell().textContent = t;
    const verdict = row.insertCell();
    if (v) {
      verdict.className = v.verdict;
      if (v.report) {
        const a = document.createElement("a");
        a.href = v.report; a.textContent = v.describe;
        verdict.appendChild(a);
      } else {
        verdict.textContent = v.describe;
      }
    }
    const notes = [];
    if (c) notes.push("change point x" + c.magnitude.toFixed(3) + " (p=" + c.p.toPrecision(2) + ")");
    if (r.env_changed[i]) notes.push("environment changed");
    const note = row.insertCell();
    note.textContent = notes.join("; ");
    if (c) note.className = "change";
  }
}

function zbenchScenePage(colours) {
  const d = window.ZBENCH_SCENE;
  zbenchTable(d);
  zbenchDraw(d, colours).then(() => { document.body.dataset.plotted = "yes"; });
}
