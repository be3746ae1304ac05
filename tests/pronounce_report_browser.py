#!/usr/bin/env python3
"""pronounce's report in a real browser (headless Chromium).

    pronounce_report_browser.py <pronounce's output folder> <work folder>

Opens the report.html a short pronounce run wrote (the test
example_pronounce) from disk and fails on a console error, a request for
anything but the file, the results table before the words' tables or
missing, or cross-attention figures that are not shown open under
"Attention" with a heatmap per block and head whose rows are the phones
written (the greedy pronunciation and <eos>) and whose columns are the
word's letters and <eos>. Saves a screenshot of the page.
"""
import os
import re
import shutil
import sys

from report_browser import browser, errors_in, fail, open_page, page_screenshot


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    folder, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with browser() as dt:
        open_page(dt, os.path.join(folder, "report.html"), "report")
        headings = dt.eval("[...document.querySelectorAll('h3')].map(h => h.textContent)")
        if headings[:2] != ["results.md", "words.md"]:
            fail(f"the tables' order is {headings[:2]}, expected results.md, then words.md")
        text = dt.eval("document.body.innerText")
        for needed in ["word error rate", "phone error rate", "greedy", "beam 4"]:
            if needed not in text:
                fail(f"'{needed}' is not on the page")
        figures = dt.eval("[...document.querySelectorAll('#attention ~ details[open] figure')]"
                          ".map(f => f.id)")
        if not figures or not all(re.match(r"fig-attention_cross_[a-z0-9_]+\.svg$", f) for f in figures):
            fail(f"no open cross-attention figures under Attention: {figures}")
        for fig in figures:
            word = fig[len("fig-attention_cross_"):-len(".svg")]
            title = dt.eval(f"document.getElementById('{fig}').querySelector('svg > text').textContent")
            m = re.match(r"Cross-attention while pronouncing '([a-z]+)' \((.*)\): blocks in rows", title)
            if not m or m.group(1) != word:
                fail(f"{fig}: its title is '{title}'")
            phones = m.group(2).split() if m.group(2) != "(nothing)" else []
            labels = dt.eval(f"[...document.getElementById('{fig}').querySelectorAll('text')].map(t => t.textContent)")
            # Each map's ticks: the letters and <eos> on x, the phones and <eos> on y.
            for token in list(word) + phones + ["<eos>"]:
                if token not in labels:
                    fail(f"{fig}: no tick label '{token}'")
            maps = sum(1 for t in labels if re.match(r"block \d+, head \d+$", t))
            if maps != 4:  # the test's run: 1 block, 4 heads
                fail(f"{fig}: {maps} maps, expected 4 (1 block x 4 heads)")
        dt.call("Runtime.evaluate", expression="1")
        errs = errors_in(dt.events)
        if errs:
            fail("; ".join(errs))
        page_screenshot(dt, os.path.join(work, "report.png"), 1200)
    print("pronounce_report_in_browser: passed", flush=True)


if __name__ == "__main__":
    main()
