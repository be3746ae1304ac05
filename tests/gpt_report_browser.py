#!/usr/bin/env python3
"""train_gpt's report in a real browser (headless Chromium).

    gpt_report_browser.py <train_gpt> <work folder>

Trains a small GPT on a short text, opens its report.html from disk and
fails on a console error, a request for anything but the file, a missing
section (settings, the loss curve with both splits, a sample per
evaluation and the final one), or an attention explorer that does not
show the picked block and head alone, or whose map is not causal (every
cell above the diagonal the colour of weight 0, the first query's own cell
the colour of weight 1). Saves a screenshot of the page.
"""
import os
import shutil
import sys

from report_browser import browser, errors_in, fail, open_page, page_screenshot, run


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    exe, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    text = os.path.join(work, "text.txt")
    with open(text, "w") as f:
        for i in range(80):
            f.write(f"And it came to pass, on day {i}, that the word was spoken.\n")
    out = run([exe, "--text", text, "--block-size", "24", "--batch-size", "4", "--n-layer", "2", "--n-head", "2",
               "--n-embd", "16", "--max-iters", "30", "--warmup-iters", "5", "--eval-interval", "10",
               "--eval-iters", "2", "--sample-tokens", "60", "--threads", "1", "--out", os.path.join(work, "run")])
    if "report: " not in out:
        fail("train_gpt did not print its report's path")
    report = os.path.join(work, "run", "report.html")
    with browser() as dt:
        open_page(dt, report, "report")
        if dt.eval("document.querySelectorAll('table tr').length") < 3:
            fail("no settings table")
        legend = dt.eval("[...document.querySelectorAll('svg text')].map(t => t.textContent).join('|')")
        if "train" not in legend or "validation" not in legend:
            fail("the loss curve lacks the train or validation series: " + legend[:200])
        samples = dt.eval("document.querySelectorAll('pre').length")
        if samples != 5:  # evaluations at 0, 10, 20, 30 and the final sample
            fail(f"{samples} samples shown, expected 5")

        def shown():
            return dt.eval("[...document.querySelectorAll('.head')].filter(d => getComputedStyle(d).display !== 'none')"
                           ".map(d => d.id)")

        def pick(block, head):
            dt.eval(f"(() => {{ blk.value = '{block}'; hd.value = '{head}';"
                    " blk.dispatchEvent(new Event('change')); })()")

        for block, head in [(0, 0), (1, 1), (0, 1), (1, 0)]:
            pick(block, head)
            if shown() != [f"b{block}h{head}"]:
                fail(f"picked block {block}, head {head}; shown: {shown()}")
            # The map's cells, row by row: (T, T) fills, then the colour bar's.
            fills = dt.eval(f"[...document.querySelectorAll('#b{block}h{head} svg > rect')]"
                            ".map(r => r.getAttribute('fill')).filter(f => f && f.startsWith('#'))")
            T = int(round((len(fills) - 50) ** 0.5)) if len(fills) > 50 else 0
            if T < 2:
                fail(f"block {block}, head {head}: no heatmap cells")
            cells = [fills[i * T:(i + 1) * T] for i in range(T)]
            zero = cells[0][1]
            above = {cells[i][j] for i in range(T) for j in range(i + 1, T)}
            if above != {zero}:
                fail(f"block {block}, head {head}: cells above the diagonal differ: {sorted(above)[:4]}")
            if cells[0][0] == zero:
                fail(f"block {block}, head {head}: the first query's weight on itself looks like 0")
        dt.call("Runtime.evaluate", expression="1")
        errs = errors_in(dt.events)
        if errs:
            fail("using the explorer: " + "; ".join(errs))
        page_screenshot(dt, os.path.join(work, "report.png"), 1200)
    print("gpt_report_in_browser: passed", flush=True)


if __name__ == "__main__":
    main()
