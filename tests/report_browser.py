#!/usr/bin/env python3
"""The reports of train_encoder in a real browser (headless Chromium).

    report_browser.py <train_encoder> <work folder> [screenshot folder]

Writes a short single run and a short --compare, opens each report.html from
disk in headless Chromium (driven over the DevTools protocol, standard
library only) and fails on:
  * any console error or uncaught exception while the page loads or is used,
  * a request for anything but the file itself (the page must work offline),
  * an explorer whose shown matrix is not the recorded weights of the picked
    run, step, sequence, block and head (read from the run's attention.json),
    or does not change when another head or block is picked,
  * missing sections (settings, every results table, curves, positions).
Saves a screenshot of each report (whole page) and of the explorer.
"""
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


class DevTools:
    """A minimal WebSocket client (RFC 6455, text frames) for one page target."""

    def __init__(self, ws_url):
        rest = ws_url[len("ws://"):]
        hostport, path = rest.split("/", 1)
        host, port = hostport.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                fail("DevTools closed the connection during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            fail("DevTools refused the WebSocket: " + head.decode(errors="replace"))
        self.next_id = 0
        self.events = []

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                fail("DevTools connection closed")
            buf += chunk
        return buf

    def _recv_message(self):
        data = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            payload = self._recv_exact(n)
            opcode = b0 & 0x0F
            if opcode == 8:
                fail("DevTools closed the WebSocket")
            if opcode in (0, 1, 2):
                data += payload
                if b0 & 0x80:
                    return json.loads(data.decode())

    def _send(self, text):
        payload = text.encode()
        header = bytes([0x81])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def call(self, method, **params):
        self.next_id += 1
        my_id = self.next_id
        self._send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = self._recv_message()
            if msg.get("id") == my_id:
                if "error" in msg:
                    fail(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, name, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            for i, e in enumerate(self.events):
                if e.get("method") == name:
                    return self.events.pop(i)
            self.events.append(self._recv_message())
        fail(f"no {name} within {timeout} s")

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            fail(f"evaluating {expr[:80]!r}: {r['exceptionDetails']}")
        return r["result"].get("value")


def errors_in(events):
    """Console errors, uncaught exceptions and failed or outside requests among DevTools events."""
    found = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            found.append("console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            found.append("uncaught exception: " + str(d.get("exception", {}).get("description", d.get("text"))))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            found.append("log error: " + p["entry"].get("text", ""))
        elif m == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            if not url.startswith("file://") and not url.startswith("data:"):
                found.append("request for " + url + " (the report must work offline)")
        elif m == "Network.loadingFailed":
            found.append("failed to load: " + str(p))
    return found


def run(cmd):
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    if r.returncode != 0:
        fail(f"exit status {r.returncode}:\n{r.stdout}")
    return r.stdout


def expected(data, run_i, step, seq, block, head):
    r = data["runs"][run_i]
    T, flat = r["T"], r["snapshots"][step]["weights"][block]
    base = (seq * r["heads"] + head) * T * T
    return [flat[base + i] / data["scale"] for i in range(T * T)]


def open_page(dt, path, name):
    """Opens the file at path and fails on any error while it loads."""
    if not os.path.exists(path):
        fail("no " + path)
    dt.events.clear()
    dt.call("Page.navigate", url="file://" + os.path.abspath(path))
    dt.wait_event("Page.loadEventFired")
    time.sleep(0.3)
    dt.call("Runtime.evaluate", expression="1")  # collects the events sent so far
    errs = errors_in(dt.events)
    if errs:
        fail(name + ": " + "; ".join(errs))


def page_screenshot(dt, path, width):
    """The whole page (up to 16,000 pixels high), `width` wide, as a PNG at path."""
    h = dt.eval("Math.ceil(document.documentElement.scrollHeight)")
    dt.call("Emulation.setDeviceMetricsOverride", width=width, height=min(h, 16000), deviceScaleFactor=1, mobile=False)
    png = dt.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
    open(path, "wb").write(base64.b64decode(png))


def check_report(dt, folder, shots, name):
    open_page(dt, os.path.join(folder, "report.html"), name)

    # The sections, read from the folder's files.
    for md in sorted(f for f in os.listdir(folder) if f.endswith(".md") and not f.startswith("settings")):
        if not dt.eval(f"[...document.querySelectorAll('h3')].some(h => h.textContent === {json.dumps(md)})"):
            fail(f"{name}: the table {md} of the folder is not in the report")
    n_svg = len([f for f in os.listdir(folder) if f.endswith(".svg")])
    shown = dt.eval("document.querySelectorAll('figure > svg').length")
    if shown != n_svg:
        fail(f"{name}: {shown} figures shown, the folder has {n_svg} SVG files")
    if dt.eval("document.querySelectorAll('#settings + table tr').length") < 5:
        fail(name + ": no settings table")
    bands = dt.eval("document.querySelectorAll('polygon.band').length")
    print(f"{name}: {shown} figures, {bands} seed bands", flush=True)

    # The explorer against attention.json.
    data = json.load(open(os.path.join(folder, "attention.json")))

    def state():
        s = dt.eval("({task: document.getElementById('x-task').value, encoding: document.getElementById('x-encoding').value,"
                    " seed: document.getElementById('x-seed').value, step: +document.getElementById('x-step').value,"
                    " sequence: +document.getElementById('x-sequence').value, block: +document.getElementById('x-block').value,"
                    " head: +document.getElementById('x-head').value,"
                    " cells: [...document.querySelectorAll('#x-map rect.cell')].map(r => +r.dataset.v),"
                    " pads: document.querySelectorAll('#x-map rect.cell[data-pad]').length,"
                    " labels: [...document.querySelectorAll('#x-map text')].map(t => t.textContent)})")
        run_i = next(i for i, r in enumerate(data["runs"])
                     if r["task"] == s["task"] and r["encoding"] == s["encoding"] and str(r["seed"]) == s["seed"])
        want = expected(data, run_i, s["step"], s["sequence"], s["block"], s["head"])
        if len(s["cells"]) != len(want) or any(abs(a - b) > 1e-9 for a, b in zip(s["cells"], want)):
            fail(f"{name}: the shown matrix is not the recorded weights of {s}")
        r = data["runs"][run_i]
        sq = r["sequences"][s["sequence"]]
        T, L = r["T"], sq["valid_len"]
        if s["pads"] != T * T - L * L:
            fail(f"{name}: {s['pads']} cells marked as padding, expected {T * T - L * L}")
        toks = [str(t) if t else "pad" for t in sq["tokens"]]
        for t in toks:
            if t not in s["labels"]:
                fail(f"{name}: token {t} is not on the explorer's axes")
        return s

    def pick(control, value):
        dt.eval(f"(() => {{ const s = document.getElementById('x-{control}'); s.value = '{value}';"
                f" s.dispatchEvent(new Event('change')); }})()")

    first = state()
    r0 = data["runs"][0]
    if r0["heads"] < 2 or r0["blocks"] < 2:
        fail("the test needs a model with at least 2 blocks and 2 heads")
    pick("head", 1)
    after_head = state()
    if after_head["head"] != 1 or after_head["cells"] == first["cells"]:
        fail(f"{name}: picking head 1 did not change the shown matrix")
    pick("block", 1)
    after_block = state()
    if after_block["block"] != 1 or after_block["cells"] == after_head["cells"]:
        fail(f"{name}: picking block 1 did not change the shown matrix")
    pick("step", 0)
    state()
    pick("step", len(r0["snapshots"]) - 1)
    pick("sequence", 1)
    state()
    # The picked head at every recorded step, one map each; a click picks the step.
    n_steps = dt.eval("document.querySelectorAll('#x-steps td[data-step]').length")
    if n_steps != len(r0["snapshots"]):
        fail(f"{name}: {n_steps} maps of the head through training, {len(r0['snapshots'])} steps recorded")
    dt.eval("document.querySelector('#x-steps td[data-step=\"0\"]').click()")
    if state()["step"] != 0:
        fail(f"{name}: clicking the first step's map did not pick step 0")
    # A click on the grid picks that block and head.
    dt.eval("document.querySelector('#x-grid td[data-block=\"0\"][data-head=\"0\"]').click()")
    s = state()
    if s["block"] != 0 or s["head"] != 0:
        fail(f"{name}: clicking the grid's block 0, head 0 picked block {s['block']}, head {s['head']}")
    if len(data["runs"]) > 1:  # another run
        other = data["runs"][-1]
        pick("task", other["task"])
        pick("encoding", other["encoding"])
        pick("seed", other["seed"])
        state()
    dt.call("Runtime.evaluate", expression="1")
    errs = errors_in(dt.events)
    if errs:
        fail(name + " (using the explorer): " + "; ".join(errs))

    # Screenshots: the whole page, and the explorer.
    page_screenshot(dt, os.path.join(shots, name + "_page.png"), 1300)
    box = dt.eval("(() => { const a = document.getElementById('attention').getBoundingClientRect();"
                  " const g = Math.max(document.getElementById('x-steps').getBoundingClientRect().bottom,"
                  "                    document.getElementById('x-map').getBoundingClientRect().bottom);"
                  " return {x: 0, y: a.top + scrollY - 10, w: 1300, h: g - a.top + 20}; })()")
    png = dt.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                  clip={"x": box["x"], "y": box["y"], "width": box["w"], "height": box["h"], "scale": 1})["data"]
    open(os.path.join(shots, name + "_explorer.png"), "wb").write(base64.b64decode(png))
    dt.call("Emulation.clearDeviceMetricsOverride")
    print(f"{name}: explorer checked against attention.json; screenshots in {shots}", flush=True)


@contextlib.contextmanager
def browser():
    """Headless Chromium with a DevTools connection to its page (Page,
    Runtime, Log and Network events on); closed when the block ends."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        fail("chromium is not installed (scripts/setup.sh installs Debian's chromium)")
    profile = tempfile.mkdtemp(prefix="report-browser-")
    args = [chromium, "--headless", "--remote-debugging-port=0", "--user-data-dir=" + profile, "--no-first-run",
            "--disable-gpu", "--disable-extensions", "--no-default-browser-check", "--allow-file-access-from-files",
            "about:blank"]
    if os.geteuid() == 0:
        args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        end = time.time() + 60
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if process.poll() is not None:
                fail("chromium exited: " + process.stderr.read().decode(errors="replace")[-2000:])
            if time.time() > end:
                fail("chromium did not open its DevTools port within 60 s")
            time.sleep(0.1)
        port = int(open(port_file).read().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30))
        page = next(t for t in targets if t.get("type") == "page")
        dt = DevTools(page["webSocketDebuggerUrl"])
        for domain in ("Page", "Runtime", "Log", "Network"):
            dt.call(domain + ".enable")
        yield dt
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=10)
        except Exception:
            os.killpg(process.pid, signal.SIGKILL)
        shutil.rmtree(profile, ignore_errors=True)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    exe, work = sys.argv[1], sys.argv[2]
    shots = sys.argv[3] if len(sys.argv) > 3 else os.path.join(work, "screenshots")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(shots, exist_ok=True)
    small = ["--steps", "16", "--eval-every", "8", "--hidden", "16", "--heads", "2", "--blocks", "2", "--ffn", "32",
             "--batch", "16", "--threads", "1", "--out", work]
    out = run([exe, "--task", "sort", "--positional", "learned"] + small)
    if "report: " not in out:
        fail("the single run did not print its report's path")
    out = run([exe, "--compare", "--tasks", "shift,sort", "--positionals", "sinusoidal,rotary", "--seeds", "2"] + small)
    if "compare/report.html" not in out:
        fail("--compare did not print its report's path")

    with browser() as dt:
        check_report(dt, os.path.join(work, "sort_learned_seed0"), shots, "run")
        check_report(dt, os.path.join(work, "compare"), shots, "compare")
    print("report_in_browser: passed", flush=True)


if __name__ == "__main__":
    main()
