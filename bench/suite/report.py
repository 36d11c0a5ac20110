"""RESULTS.md from the suite's results document (the same dict `--json` writes).

The document: {"machine": {...}, "peak": {"gflops": ...}, "workloads": [workload dicts with
"flops" and "reference_loss"], "results": [rows from the workers], "command", "elapsed_s"}.
"""

from __future__ import annotations

LOSS_RTOL = 1e-4
TFC = ("tfc", "tfc native")


def tfc_label(w: dict) -> str:
    return "tfc native" if w.get("native") else "tfc"


def rows_for(doc: dict, w: dict, threads: int | None = None) -> list[dict]:
    return [
        r
        for r in doc["results"]
        if r["workload"] == w["name"] and (threads is None or r["threads"] == threads)
    ]


def ok_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r.get("status") == "ok"]


def best_peer(rows: list[dict]) -> dict | None:
    peers = [r for r in ok_rows(rows) if r["framework"] != "tfc"]
    return min(peers, key=lambda r: r["ms"]) if peers else None


def reference(doc: dict, w: dict, threads: int) -> dict | None:
    """The row tfc's target compares against: the best peer, or the named one."""
    rows = rows_for(doc, w, threads)
    ref = w["target"]["ref"]
    if ref == "best":
        return best_peer(rows)
    named = [r for r in ok_rows(rows) if r["label"] == ref]
    return named[0] if named else None


def tfc_row(doc: dict, w: dict, threads: int) -> dict | None:
    found = [r for r in ok_rows(rows_for(doc, w, threads)) if r["label"] == tfc_label(w)]
    return found[0] if found else None


def loss_check(row: dict, w: dict) -> str:
    ref = w.get("reference_loss")
    if ref is None or row.get("loss1") is None:
        return ""
    rel = abs(row["loss1"] - ref) / max(abs(ref), 1e-12)
    return "ok" if rel <= LOSS_RTOL else f"MISMATCH ({rel:.1e})"


def loss_mismatches(doc: dict) -> list[str]:
    out = []
    for w in doc["workloads"]:
        for r in ok_rows(rows_for(doc, w)):
            if loss_check(r, w).startswith("MISMATCH"):
                out.append(
                    f"{w['name']} {r['label']} {r['threads']}t: step-1 loss "
                    f"{r['loss1']:.7g}, NumPy {w['reference_loss']:.7g}"
                )
    return out


def _num(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def workload_table(doc: dict, w: dict) -> list[str]:
    peak = doc.get("peak", {}).get("gflops")
    lines = [
        f"### {w['title']}",
        "",
        f"{w['flops'] / 1e6:.3g} MFLOP per step; step-1 loss by NumPy (float64): "
        f"{w['reference_loss']:.7g}",
        "",
        "| framework | threads | ms/step | examples/s | GFLOP/s | of FMA peak | vs best peer "
        "| fastest round (ms) | other load (CPUs) | own CPUs | step-1 loss | loss check |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    threads = sorted({r["threads"] for r in rows_for(doc, w)})
    missing = []
    for t in threads:
        rows = rows_for(doc, w, t)
        best = best_peer(rows)
        for r in sorted(ok_rows(rows), key=lambda r: r["ms"]):
            gflops = w["flops"] / (r["ms"] * 1e-3) / 1e9
            frac = f"{gflops / (peak * t):.1%}" if peak else "-"
            vs = f"{r['ms'] / best['ms']:.2f}x" if best else "-"
            name = f"**{r['label']}**" if r["framework"] == "tfc" else r["label"]
            lines.append(
                f"| {name} | {t} | {r['ms']:.4g} | {w['batch'] / (r['ms'] * 1e-3):,.0f} | "
                f"{gflops:.3g} | {frac} | {vs} | {_num(min(r.get('round_ms') or [None]), '.4g')} | "
                f"{_num(r.get('load'), '.2f')} | "
                f"{_num(r.get('own_cpus'), '.2f')} | {r['loss1']:.7g} | {loss_check(r, w)} |"
            )
        for r in rows:
            if r.get("status") != "ok":
                missing.append(
                    f"{r['framework']} ({t} thread{'s' if t > 1 else ''}): "
                    f"{r['status']}: {r.get('reason', '')}"
                )
    if missing:
        lines += ["", "Not measured: " + "; ".join(missing)]
    return lines + [""]


def _load(*rows: dict) -> str:
    loads = [r["load"] for r in rows if r.get("load") is not None]
    return f"{max(loads):.2f}" if loads else "-"


def target_rows(doc: dict, scaling: dict | None) -> list[list[str]]:
    """[workload, target, tfc ms, reference, ratio, other load, verdict] at 1 thread, then the
    thread scaling; the load is the higher of the two measurements'."""
    out = []
    for w in doc["workloads"]:
        t = w["target"]
        ref_name = "best peer" if t["ref"] == "best" else t["ref"]
        mine, ref = tfc_row(doc, w, 1), reference(doc, w, 1)
        goal = f"<= {t['ratio']:.2f}x {ref_name}"
        if mine is None or ref is None:
            why = "tfc not measured" if mine is None else f"no {ref_name} measured"
            ms = "-" if mine is None else f"{mine['ms']:.4g} ms"
            out.append([w["title"], goal, ms, "-", "-", "-", why])
            continue
        ratio = mine["ms"] / ref["ms"]
        out.append(
            [
                w["title"],
                goal,
                f"{mine['ms']:.4g} ms",
                f"{ref['label']} {ref['ms']:.4g} ms",
                f"{ratio:.3g}x",
                _load(mine, ref),
                "met" if ratio <= t["ratio"] else "not met",
            ]
        )
    for name in (scaling or {}).get("workloads", []):
        w = next((w for w in doc["workloads"] if w["name"] == name), None)
        if w is None:
            continue
        one, two = tfc_row(doc, w, 1), tfc_row(doc, w, 2)
        goal = f">= {scaling['speedup']:.1f}x tfc at 1 thread"
        if one is None or two is None:
            out.append([f"{w['title']}, 2 threads", goal, "-", "-", "-", "-", "not measured"])
            continue
        speedup = one["ms"] / two["ms"]
        load = two.get("load")
        verdict = "met" if speedup >= scaling["speedup"] else "not met"
        if load is not None and load > 0.25:
            verdict += " (machine busy)"
        out.append(
            [
                f"{w['title']}, 2 threads",
                goal,
                f"{two['ms']:.4g} ms",
                f"tfc 1 thread {one['ms']:.4g} ms",
                f"{speedup:.2f}x speedup",
                _load(one, two),
                verdict,
            ]
        )
    return out


def _machine_lines(doc: dict) -> list[str]:
    m, peak = doc.get("machine", {}), doc.get("peak", {})
    peak_text = (
        f"{peak['gflops']:.1f} GFLOP/s per core ({peak.get('vector_bytes', '?')}-byte vectors)"
        if peak.get("gflops")
        else f"not measured ({peak.get('reason')})"
    )
    return [
        f"- Machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores; "
        f"Python {m.get('python', '?')}; {', '.join(m.get('versions', [])) or 'no peers'}",
        f"- FMA peak (measured by the suite): {peak_text}; 'of FMA peak' divides by it times "
        "the threads",
    ]


def _targets_table(doc: dict, scaling: dict | None) -> list[str]:
    lines = [
        "| workload | target | tfc | reference | ratio | other load (CPUs) | verdict |",
        "|---|---|---:|---|---:|---:|---|",
    ]
    return lines + ["| " + " | ".join(r) + " |" for r in target_rows(doc, scaling)]


def summary(doc: dict, scaling: dict | None = None) -> str:
    """docs/performance.md's block: where and how it was measured, and the targets table."""
    lines = [
        f"Measured by `{doc.get('command', 'python bench/run.py')}` "
        f"({doc.get('elapsed_s', 0):.0f} s); when, and every row and figure: "
        "[bench/RESULTS.md](../bench/RESULTS.md).",
        "",
    ]
    lines += _machine_lines(doc) + ["", *_targets_table(doc, scaling)]
    mismatches = loss_mismatches(doc)
    lines += ["", "Step-1 loss mismatches: " + ("; ".join(mismatches) if mismatches else "none")]
    return "\n".join(lines)


def render(doc: dict, scaling: dict | None = None) -> str:
    lines = [
        "# Benchmark results",
        "",
        f"Written by `{doc.get('command', 'python bench/run.py')}` in "
        f"{doc.get('elapsed_s', 0):.0f} s on {doc.get('date', '?')}.",
        "",
        *_machine_lines(doc),
        "- Times are medians over rounds after warm-up; 'other load' is how many CPUs other "
        "processes kept busy meanwhile (a figure measured while it is high is noisy); 'own "
        "CPUs' shows the thread setting took effect",
        "- 'vs best peer' is ms/step over the fastest peer's at the same thread count (< 1: "
        "tfc is faster); step-1 losses are checked against NumPy to a relative "
        f"{LOSS_RTOL:g}",
        "",
        "## Targets (issue 5; 1 thread unless said)",
        "",
        *_targets_table(doc, scaling),
    ]
    mismatches = loss_mismatches(doc)
    lines += [
        "",
        "Step-1 loss mismatches: " + ("; ".join(mismatches) if mismatches else "none"),
        "",
        "## Per workload",
        "",
    ]
    for w in doc["workloads"]:
        lines += workload_table(doc, w)
    return "\n".join(lines + profiles(doc))


def profiles(doc: dict) -> list[str]:
    """Where tfc's time goes: the per-kernel table of each workload's tfc program."""
    found = [
        (w, r) for w in doc["workloads"] for r in ok_rows(rows_for(doc, w)) if r.get("profile")
    ]
    if not found:
        return []
    lines = [
        "## Where tfc's time goes",
        "",
        "Per-kernel times of tfc's program (its profile build, `Session.profile`), slowest "
        "first; a kernel's GFLOP/s use tfc's own FLOP count.",
        "",
    ]
    for w, r in found:
        lines += [
            f"### {w['title']}, {r['threads']} thread{'s' if r['threads'] > 1 else ''}",
            "",
            "```",
            r["profile"].rstrip(),
            "```",
            "",
        ]
    return lines
