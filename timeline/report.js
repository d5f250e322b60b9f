// iopath report renderer: draws the page's embedded data (the
// "iopath-items" and "iopath-meta" JSON elements) on a canvas. No network,
// no library. Times are µs (CLOCK_MONOTONIC), shown relative to the first
// slice. After drawing it sets data-* attributes on <body> (bio-slices,
// slices, flows, tracks, rendered) so tests can read what the page holds.
(function () {
  "use strict";
  var items = JSON.parse(document.getElementById("iopath-items").textContent);
  var meta = JSON.parse(document.getElementById("iopath-meta").textContent);
  var LW = 230, AXIS = 22, LEVEL = 16, HEAD = 18, PAD = 3;
  var canvas = document.getElementById("tl"), tip = document.getElementById("tip");
  var ctx = canvas.getContext("2d");

  // Tracks, their slices (sorted, with nesting depth) and the flows.
  var tracks = (meta.tracks || []).map(function (t, i) {
    return { i: i, kind: t.kind, pid: t.pid, tid: t.tid, process: t.process, thread: t.thread, sort: t.sort, slices: [], depth: 1 };
  });
  var flows = [], nSlices = 0, nBios = 0, t0 = Infinity, t1 = -Infinity;
  items.forEach(function (it) {
    if (it[0] === "s") {
      var s = { track: it[1], ts: it[2], dur: it[3], name: it[4], cat: it[5], args: it[6] || {}, level: 0 };
      tracks[s.track].slices.push(s);
      nSlices++;
      if (s.cat === "bio") nBios++;
      t0 = Math.min(t0, s.ts);
      t1 = Math.max(t1, s.ts + s.dur);
    } else if (it[0] === "f") {
      flows.push(it[1]);
    }
  });
  if (!isFinite(t0)) { t0 = 0; t1 = 1; }
  if (t1 <= t0) t1 = t0 + 1;
  tracks.forEach(function (t) {
    t.slices.sort(function (a, b) { return a.ts - b.ts || b.dur - a.dur; });
    var stack = [];
    t.slices.forEach(function (s) {
      while (stack.length && stack[stack.length - 1] <= s.ts) stack.pop(); // ended before s starts
      s.level = stack.length;
      stack.push(s.ts + s.dur);
      t.depth = Math.max(t.depth, s.level + 1);
    });
  });

  // Rows: processes (groups by pid) in sort order, then their tracks.
  var groups = {}, order = [];
  tracks.forEach(function (t) {
    if (!groups[t.pid]) { groups[t.pid] = { pid: t.pid, name: t.process, sort: t.sort, first: t.i, tracks: [] }; order.push(groups[t.pid]); }
    groups[t.pid].tracks.push(t);
  });
  order.sort(function (a, b) { return a.sort - b.sort || a.first - b.first; });
  // In a process: its threads by tid, then its dirty-pages lanes.
  function rank(t) { return t.kind === "thread" ? 0 : 1; }
  order.forEach(function (g) {
    g.tracks.sort(function (a, b) { return rank(a) - rank(b) || (rank(a) === 0 ? a.tid - b.tid : a.i - b.i); });
  });
  var rows = [], y = AXIS;
  order.forEach(function (g) {
    var synthetic = g.pid >= (1 << 23);
    rows.push({ head: true, y: y, h: HEAD, name: synthetic ? g.name : g.name + " (pid " + g.pid + ")" });
    y += HEAD;
    g.tracks.forEach(function (t) {
      t.y = y;
      t.h = t.depth * LEVEL + 2 * PAD;
      rows.push({ head: false, y: y, h: t.h, track: t });
      y += t.h;
    });
  });
  var height = y + 4;

  var v0, v1;
  function reset() { var pad = (t1 - t0) * 0.02; v0 = t0 - pad; v1 = t1 + pad; }
  reset();
  function width() { return canvas.clientWidth || 1000; }
  function xOf(ts) { return LW + (ts - v0) / (v1 - v0) * (width() - LW); }
  function tOf(x) { return v0 + (x - LW) / (width() - LW) * (v1 - v0); }

  function fmtDur(us) {
    var a = Math.abs(us);
    if (a >= 1e6) return (us / 1e6).toFixed(3) + " s";
    if (a >= 1e3) return (us / 1e3).toFixed(3) + " ms";
    if (a >= 1) return us.toFixed(1) + " µs";
    return (us * 1e3).toFixed(0) + " ns";
  }
  function fmtBytes(b) {
    if (b >= 1 << 30) return (b / (1 << 30)).toFixed(1) + " GiB";
    if (b >= 1 << 20) return (b / (1 << 20)).toFixed(1) + " MiB";
    if (b >= 1 << 10) return (b / (1 << 10)).toFixed(1) + " KiB";
    return b + " B";
  }
  function color(s) {
    if (s.cat === "syscall") {
      if (/read|sendfile|splice|copy_file_range/.test(s.name)) return "#4a9a4a";
      if (/write/.test(s.name)) return "#c0504d";
      if (/sync/.test(s.name)) return "#8064a2";
      return "#4bacc6";
    }
    if (s.cat === "fault") return s.args.major ? "#b8860b" : "#9aa5ab";
    var read = s.args.rwbs ? s.args.rwbs.charAt(0) === "R" : false;
    if (s.cat === "bio") return read ? "#4f81bd" : "#f79646";
    if (s.cat === "bio.d2c") return "#2c4d76";
    if (s.cat === "writeback") return "#9b59b6";
    if (s.cat === "dirty") return "#e6c229";
    return "#888";
  }

  function resize() {
    var dpr = window.devicePixelRatio || 1, w = Math.max(600, canvas.parentNode.clientWidth - 2);
    canvas.style.width = w + "px";
    canvas.style.height = height + "px";
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(height * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  function drawAxis(w) {
    ctx.fillStyle = "#f4f4f4";
    ctx.fillRect(0, 0, w, AXIS);
    var span = v1 - v0, raw = span / Math.max(2, (w - LW) / 130), p = Math.pow(10, Math.floor(Math.log10(raw))), step = p;
    [1, 2, 5, 10].forEach(function (m) { if (p * m <= raw) step = p * m; });
    // Labels in the step's unit, with as many decimals as it needs.
    var unit = step >= 1e6 ? [1e6, " s"] : step >= 1e3 ? [1e3, " ms"] : step >= 1 ? [1, " µs"] : [1e-3, " ns"];
    var dec = Math.max(0, -Math.floor(Math.log10(step / unit[0]) + 1e-9));
    ctx.fillStyle = "#333";
    ctx.font = "11px sans-serif";
    ctx.strokeStyle = "#e4e4e4";
    for (var t = Math.ceil((v0 - t0) / step) * step + t0; t <= v1; t += step) {
      var x = xOf(t);
      if (x < LW) continue;
      ctx.beginPath(); ctx.moveTo(x, AXIS - 4); ctx.lineTo(x, height); ctx.stroke();
      ctx.fillText("+" + ((t - t0) / unit[0]).toFixed(dec) + unit[1], x + 2, 14);
    }
  }

  function drawSlices(w) {
    rows.forEach(function (r) {
      if (r.head) {
        ctx.fillStyle = "#e9eef5";
        ctx.fillRect(0, r.y, w, r.h);
        ctx.fillStyle = "#111";
        ctx.font = "bold 12px sans-serif";
        ctx.fillText(r.name, 4, r.y + 13);
        return;
      }
      var t = r.track;
      ctx.strokeStyle = "#eee";
      ctx.beginPath(); ctx.moveTo(0, r.y + r.h); ctx.lineTo(w, r.y + r.h); ctx.stroke();
      ctx.save();
      ctx.beginPath(); ctx.rect(LW, r.y, w - LW, r.h); ctx.clip();
      ctx.font = "11px sans-serif";
      for (var i = 0; i < t.slices.length; i++) {
        var s = t.slices[i];
        if (s.ts > v1) break;
        if (s.ts + s.dur < v0) continue;
        var x = xOf(s.ts), x2 = xOf(s.ts + s.dur), sw = Math.max(1, x2 - x);
        var sy = r.y + PAD + s.level * LEVEL;
        ctx.fillStyle = color(s);
        ctx.fillRect(x, sy, sw, LEVEL - 2);
        if (sw > 30) {
          ctx.fillStyle = "#fff";
          var lx = Math.max(x, LW) + 2;
          ctx.save(); ctx.beginPath(); ctx.rect(lx, sy, Math.min(x2, w) - lx - 2, LEVEL); ctx.clip();
          ctx.fillText(s.name, lx, sy + 11);
          ctx.restore();
        }
      }
      ctx.restore();
      ctx.fillStyle = "#333";
      ctx.font = "12px sans-serif";
      var label = t.kind === "thread" ? t.thread + " " + t.tid : t.thread;
      ctx.fillText(label.length > 32 ? label.slice(0, 31) + "…" : label, 14, r.y + PAD + 11);
    });
  }

  function drawFlows(w) {
    ctx.save();
    ctx.beginPath(); ctx.rect(LW, AXIS, w - LW, height - AXIS); ctx.clip();
    var segs = [];
    flows.forEach(function (pts) {
      for (var i = 0; i + 1 < pts.length; i++) {
        var xa = xOf(pts[i][1]), xb = xOf(pts[i + 1][1]);
        if ((xa < LW && xb < LW) || (xa > w && xb > w)) continue;
        segs.push([tracks[pts[i][0]], xa, tracks[pts[i + 1][0]], xb]);
      }
    });
    // Hundreds of arrows in view hide the slices: draw them fainter, the
    // more there are (zoom in to see each one).
    var alpha = segs.length > 200 ? Math.max(0.08, 0.75 * 200 / segs.length) : 0.75;
    ctx.strokeStyle = "rgba(20,20,20," + alpha + ")";
    ctx.fillStyle = "rgba(20,20,20," + alpha + ")";
    ctx.lineWidth = 1.2;
    segs.forEach(function (sg) {
      {
        var a = sg[0], xa = sg[1], b = sg[2], xb = sg[3];
        var ya = a.y + PAD + LEVEL / 2, yb = b.y + PAD + LEVEL / 2, dx = Math.max(20, Math.abs(xb - xa) / 3);
        ctx.beginPath();
        ctx.moveTo(xa, ya);
        ctx.bezierCurveTo(xa + dx, ya, xb - dx, yb, xb, yb);
        ctx.stroke();
        ctx.beginPath();
        ctx.moveTo(xb, yb); ctx.lineTo(xb - 7, yb - 4); ctx.lineTo(xb - 7, yb + 4); ctx.closePath();
        ctx.fill();
      }
    });
    ctx.restore();
  }

  function draw() {
    var w = width();
    ctx.clearRect(0, 0, w, height);
    drawAxis(w);
    drawSlices(w);
    drawFlows(w);
  }

  function sliceAt(mx, my) {
    var t = null;
    tracks.forEach(function (tr) { if (my >= tr.y && my < tr.y + tr.h) t = tr; });
    if (!t || mx < LW) return null;
    var level = Math.floor((my - t.y - PAD) / LEVEL), ts = tOf(mx), slop = 2 * (v1 - v0) / (width() - LW), best = null;
    t.slices.forEach(function (s) {
      if (s.level === level && s.ts - slop <= ts && ts <= s.ts + s.dur + slop) best = s;
    });
    return best;
  }

  function showTip(s, mx, my) {
    if (!s) { tip.style.display = "none"; return; }
    var lines = [s.name + "  (" + s.cat + ")", "start +" + fmtDur(s.ts - t0) + "  duration " + fmtDur(s.dur)];
    Object.keys(s.args).sort().forEach(function (k) { lines.push(k + ": " + s.args[k]); });
    tip.textContent = lines.join("\n");
    tip.style.display = "block";
    tip.style.left = Math.min(mx + 12, width() - 300) + "px";
    tip.style.top = (my + 12) + "px";
  }

  var drag = null;
  canvas.addEventListener("wheel", function (e) {
    var r = canvas.getBoundingClientRect(), mx = e.clientX - r.left;
    if (mx < LW) return;
    e.preventDefault();
    var f = e.deltaY > 0 ? 1.25 : 0.8, c = tOf(mx);
    v0 = c - (c - v0) * f;
    v1 = c + (v1 - c) * f;
    if (v1 - v0 < 0.01) { v1 = v0 + 0.01; }
    draw();
  }, { passive: false });
  canvas.addEventListener("mousedown", function (e) { drag = { x: e.clientX, v0: v0, v1: v1 }; canvas.style.cursor = "grabbing"; });
  window.addEventListener("mouseup", function () { drag = null; canvas.style.cursor = "grab"; });
  canvas.addEventListener("mousemove", function (e) {
    var r = canvas.getBoundingClientRect(), mx = e.clientX - r.left, my = e.clientY - r.top;
    if (drag) {
      var d = (e.clientX - drag.x) / (width() - LW) * (drag.v1 - drag.v0);
      v0 = drag.v0 - d; v1 = drag.v1 - d;
      draw();
      return;
    }
    showTip(sliceAt(mx, my), mx, my);
  });
  canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  canvas.addEventListener("dblclick", function () { reset(); draw(); });
  window.addEventListener("resize", function () { resize(); draw(); });

  // Histograms (power-of-two buckets) as SVG bars.
  var NS = "http://www.w3.org/2000/svg";
  function el(name, attrs, text) {
    var e = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function bucketLabel(h, i) {
    var lo = i === 0 ? 0 : Math.pow(2, i);
    return h.unit === "bytes" ? fmtBytes(lo) : fmtDur(lo / 1000);
  }
  function drawHists() {
    var box = document.getElementById("hists");
    (meta.histograms || []).forEach(function (h) {
      var first = -1, last = -1, peak = 0;
      h.counts.forEach(function (c, i) { if (c > 0) { if (first < 0) first = i; last = i; peak = Math.max(peak, c); } });
      if (first < 0) return;
      var div = document.createElement("div");
      div.className = "hist";
      div.dataset.name = h.name;
      div.dataset.count = h.count;
      var title = document.createElement("h3");
      var mean = h.count ? h.sum / h.count : 0;
      title.textContent = h.name + ": " + h.count + " (mean " + (h.unit === "bytes" ? fmtBytes(mean) : fmtDur(mean / 1000)) +
        ", max " + (h.unit === "bytes" ? fmtBytes(h.max) : fmtDur(h.max / 1000)) + ")";
      div.appendChild(title);
      var n = last - first + 1, W = 340, H = 130, bw = (W - 40) / n;
      var svg = el("svg", { width: W, height: H + 30, viewBox: "0 0 " + W + " " + (H + 30) });
      for (var i = first; i <= last; i++) {
        var c = h.counts[i], bh = c ? Math.max(1, c / peak * H) : 0, x = 40 + (i - first) * bw;
        var r = el("rect", { x: x + 1, y: H - bh, width: Math.max(1, bw - 2), height: bh, fill: "#4f81bd" });
        r.appendChild(el("title", {}, bucketLabel(h, i) + " – " + bucketLabel(h, i + 1) + ": " + c));
        svg.appendChild(r);
      }
      svg.appendChild(el("text", { x: 40, y: H + 14, "font-size": 10 }, bucketLabel(h, first)));
      svg.appendChild(el("text", { x: W - 4, y: H + 14, "font-size": 10, "text-anchor": "end" }, bucketLabel(h, last + 1)));
      svg.appendChild(el("text", { x: 0, y: 10, "font-size": 10 }, String(peak)));
      svg.appendChild(el("text", { x: 0, y: H, "font-size": 10 }, "0"));
      div.appendChild(svg);
      box.appendChild(div);
    });
  }

  function table(head, rowsData) {
    var t = document.createElement("table"), tr = document.createElement("tr");
    head.forEach(function (h, i) { var th = document.createElement("th"); th.textContent = h; if (i < 2) th.className = "l"; tr.appendChild(th); });
    t.appendChild(tr);
    rowsData.forEach(function (r) {
      var tr2 = document.createElement("tr");
      r.forEach(function (v, i) { var td = document.createElement("td"); td.textContent = v; if (i < 2) td.className = "l"; tr2.appendChild(td); });
      t.appendChild(tr2);
    });
    return t;
  }
  function nonZero(m) {
    return Object.keys(m || {}).filter(function (k) { return m[k]; }).map(function (k) { return k + " " + m[k]; }).join(", ") || "none";
  }
  function drawSummaries() {
    var box = document.getElementById("summary");
    (meta.summaries || []).forEach(function (s) {
      var p = document.createElement("p");
      p.textContent = "Traced " + fmtDur(s.duration_ns / 1000) + ". Lost events: " + s.lost_events + "; unattributed bios: " +
        s.unattributed_bios + "; incomplete bios: " + s.incomplete_bios + "; dirty pages pending: " + s.dirty_pages_pending +
        "; map evictions: " + nonZero(s.map_evictions) + "; truncations: " + nonZero(s.truncations) + "; missed runs: " + nonZero(s.missed_runs) + ".";
      box.appendChild(p);
      var cols = ["calls", "read calls", "write calls", "bytes requested", "pages hit", "pages missed", "disk read", "disk written", "blocked"];
      function tot(t) {
        return [t.calls, t.read_calls, t.write_calls, fmtBytes(t.bytes_requested), t.pages_hit, t.pages_missed,
          fmtBytes(t.disk_bytes_read), fmtBytes(t.disk_bytes_written), fmtDur(t.blocked_ns / 1000)];
      }
      box.appendChild(table(["pid", "comm"].concat(cols), (s.pids || []).map(function (t) { return [t.pid, t.comm].concat(tot(t)); })));
      box.appendChild(table(["file", "dev"].concat(cols), (s.files || []).map(function (t) { return [t.path || "ino " + t.ino, t.dev].concat(tot(t)); })));
    });
  }

  function drawMeta() {
    var m = document.getElementById("meta"), L = meta.layout || {};
    m.textContent = "Span " + fmtDur(t1 - t0) + ": " + L.calls + " calls, " + L.bios + " bios, " + L.writeback_slices +
      " writeback slices, " + L.dirty_spans + " dirty-page spans, " + L.flows + " arrows, " + tracks.length + " tracks.";
    var omitted = 0;
    Object.keys(meta.omitted || {}).forEach(function (k) { omitted += meta.omitted[k]; });
    var notes = [];
    if (omitted) notes.push(omitted + " slices and arrows not drawn (" + nonZero(meta.omitted) + "): the report draws at most " + meta.limit + "; the --timeline trace has them all; the histograms count every one");
    if (L.overlaps) notes.push(L.overlaps + " slices share a lane with another they overlap (more than 64 at once)");
    if (L.unplaced) notes.push(L.unplaced + " persisted records without times (pages removed before writeback) are not drawn");
    if (L.forgotten) notes.push(L.forgotten + " bios were forgotten before a later record named them");
    notes.forEach(function (n) { var s = document.createElement("div"); s.className = "warn"; s.textContent = n; m.appendChild(s); });
  }

  drawMeta();
  resize();
  draw();
  drawHists();
  drawSummaries();
  var d = document.body.dataset;
  d.bioSlices = nBios;
  d.slices = nSlices;
  d.flows = flows.length;
  d.tracks = tracks.length;
  d.rendered = "1";
})();
