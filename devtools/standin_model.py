"""A deterministic stand-in model server on loopback speaking the OpenAI chat-completions API, for the tests and
benchmarks of the ``llm`` solver and ``predict`` (never the Internet).

``POST <base>/chat/completions`` (any base path, e.g. ``/v1``) answers by *behaviour*: a script of behaviours is
consumed one per request, then the default one applies:

- ``gold``: the right calls for the TurkingBench page in the prompt, from an answer book (``gold_book``): each
  entry has ``match`` strings (the task's name and some of the instance's input values as the page shows them) and
  the ``answer``; the entry of the prompt's task that matches most of them answers (the calls the oracle makes);
- ``nonsense``: prose that is no call; ``malformed``: call-like text that does not parse or names unknown calls;
- ``429`` (with ``Retry-After: <retry_after>``), ``500``, ``401`` (its message echoes the key it got), ``403``:
  that HTTP status, an OpenAI-style error;
- ``non-json``: an HTML page with status 200; ``not-chat``: JSON without ``choices``;
- ``hang``: no answer until the server stops (or ``hang_seconds``);
- ``echo``: the last user message back (to see what the model was given);
- ``text:<anything>``: that text; ``key:<anything>``: that text with ``{key}`` replaced by the key it got (a
  model echoing its key, which the client must mask).

Every answer reports ``usage`` (prompt tokens: characters / 4; completion tokens likewise, at least 1). The server
counts requests by behaviour and keeps the bodies and headers it got (``requests``); ``GET <any>/stats`` answers
``{"requests": n, "by_behaviour": {...}, "cpu_seconds": ...}`` (its own process CPU, for benchmarks that run it in
another process: ``python -m devtools.standin_model --book book.json --default gold`` prints ``port N``).
``delay``: seconds each answer takes (a model's latency; waited, not computed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import lxml.html

from agents import scoring
from agents.actions import call_string
from agents.harness import oracle_gold
from agents.solvers import TEXT_LIKE, Oracle
from agents.turkle import TaskDir

NONSENSE = "I think the weather is lovely today, and the answer is probably blue."
MALFORMED = "```python\nself.actions.modify_text('q', 'unterminated\nlaunch_rocket(3)\nmodify_radio(name=)\n```"


def _normal(text: str) -> str:
    return " ".join(text.split())


def shown_text(value: str) -> str:
    """An input value as the page's text shows it (markup removed, whitespace collapsed)."""
    if "<" in value:
        with contextlib.suppress(Exception):  # not HTML after all: the value as it is
            value = lxml.html.fragment_fromstring(value, create_parent="div").text_content()
    return _normal(value)


FIELD_LINE = re.compile(r"^- (?P<name>.+?): (?P<type>[\w-]+)(?: \(not shown yet\))?(?:;|$)", re.MULTILINE)


def prompt_fields(prompt: str) -> dict[str, str]:
    """Field name → type from the prompt's field list (lines ``- name: type; values ...``, as the llm solver's
    prompt lists them)."""
    return {m.group("name"): m.group("type") for m in FIELD_LINE.finditer(prompt)}


def gold_calls(gold: dict[str, list], types: dict[str, str], seed: int = 0) -> list[str]:
    """The calls the oracle makes (``agents.solvers.Oracle``) for fields of these ``types`` (name → type, in page
    order) given the gold answers (None for an empty cell), worked out without a browser."""
    oracle, calls = Oracle(seed), []
    for name, kind in types.items():
        if name in scoring.EXCLUDED_NAMES or name not in gold:
            continue
        raw = [float("nan") if answer is None else answer for answer in gold[name]]
        answers = [a for a in oracle_gold(kind, raw) if a is not None and a != "{}"]
        if not answers:
            continue
        if kind in TEXT_LIKE:
            calls.append(call_string("modify_text", name, str(oracle._text_answer(answers))))
        elif kind == "checkbox":
            calls.append(call_string("modify_checkbox", name, str(oracle.rng.choice(answers))))
        elif kind == "radio":
            calls.append(call_string("modify_radio", name, str(scoring.majority(answers))))
        elif kind == "select":
            calls.append(call_string("modify_select", name, str(scoring.majority(answers))))
        elif kind == "range":
            values = [float(a) for a in answers]
            calls.append(call_string("modify_range", name, str(sum(values) / len(values))))
    return calls


def _json_gold(values: list) -> list:
    return [None if scoring.is_nan(value) else value for value in values]


def gold_book(tasks: list[TaskDir], sampled: dict[str, list[int]], seed: int = 0, snippets: int = 40) -> list[dict]:
    """The answer book for ``gold`` (JSON): per sampled instance, what identifies it in a prompt (its task's name,
    some of its input values as the page shows them) and its gold answers."""
    by_name = {task.name: task for task in tasks}
    book = []
    for name, indices in sampled.items():
        task = by_name[name]
        placeholders = set(re.findall(r"\$\{(\w+)\}", task.template))
        for index in indices:
            values = [shown_text(v) for k, v in task.inputs(index).items() if k in placeholders and v]
            values = sorted({v[:60] for v in values if len(v) >= 2}, key=len, reverse=True)[:snippets]
            gold = {field: _json_gold(answers) for field, answers in task.gold(index).items()}
            book.append({"task": name, "match": values, "gold": gold, "seed": seed})
    return book


def prompt_text(body: dict) -> str:
    """The text of every message (list contents: their text parts)."""
    parts = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


def book_entry(book: list[dict], prompt: str) -> dict | None:
    """The book entry whose task is named in the prompt and that matches most of its strings (None when no entry
    or two entries match best)."""
    text = _normal(prompt)
    scored = []
    for entry in book:
        if entry["task"] not in text:
            continue
        hits = sum(1 for snippet in entry["match"] if snippet in text)
        scored.append((hits, len(entry["task"]), entry))
    if not scored:
        return None
    scored.sort(key=lambda item: (item[0], item[1]), reverse=True)
    if len(scored) > 1 and scored[0][:2] == scored[1][:2] and scored[0][2]["gold"] != scored[1][2]["gold"]:
        return None
    return scored[0][2]


class StandInModel(ThreadingHTTPServer):
    """The server (see the module docstring). ``script``: behaviours for the next requests, in order."""

    daemon_threads = True

    def __init__(self, port=0, *, default="gold", book=None, retry_after=1, hang_seconds=120.0, delay=0.0):
        super().__init__(("127.0.0.1", port), _Handler)
        self.default, self.book, self.retry_after = default, list(book or []), retry_after
        self.hang_seconds, self.delay = hang_seconds, delay
        self.script: list[str] = []
        self.requests: list[dict] = []  # {"path", "authorization", "body", "behaviour"}
        self.counts: Counter = Counter()
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_behaviour(self) -> str:
        with self.lock:
            behaviour = self.script.pop(0) if self.script else self.default
            self.counts[behaviour] += 1
            return behaviour

    def answered(self) -> int:
        """Chat-completion requests received so far (any behaviour)."""
        return sum(self.counts.values())


class _Handler(BaseHTTPRequestHandler):
    server: StandInModel
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 - the http.server hook name
        if self.path.rstrip("/").endswith("/stats"):
            server = self.server
            stats = {
                "requests": server.answered(),
                "by_behaviour": dict(server.counts),
                "cpu_seconds": time.process_time(),
            }
            return self._json(200, stats)
        return self._json(404, {"error": {"message": "not found"}})

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._json(404, {"error": {"message": f"no route {self.path}"}})
        try:
            body = json.loads(raw)
        except ValueError:
            return self._json(400, {"error": {"message": "the body is not JSON"}})
        server = self.server
        behaviour = server.next_behaviour()
        with server.lock:
            server.requests.append(
                {
                    "path": self.path,
                    "authorization": self.headers.get("Authorization"),
                    "body": body,
                    "behaviour": behaviour,
                }
            )
        if server.delay:
            server.stopping.wait(server.delay)
        return self._answer(behaviour, body)

    def _answer(self, behaviour: str, body: dict):
        server = self.server
        if behaviour in ("429", "500", "401", "403", "400"):
            status = int(behaviour)
            headers = {"Retry-After": str(server.retry_after)} if status == 429 else {}
            # A 401 echoes the key it got, as some servers do: the client must mask it.
            given = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            refused = f"Incorrect API key provided: {given}"
            message = {429: "rate limited", 500: "internal error", 401: refused, 403: "forbidden"}.get(status, "bad")
            return self._json(status, {"error": {"message": message, "type": "stand_in"}}, headers)
        if behaviour == "hang":
            server.stopping.wait(server.hang_seconds)
            return self._json(503, {"error": {"message": "hung"}})
        if behaviour == "non-json":
            return self._send(200, b"<html><body>Welcome to the proxy</body></html>", "text/html")
        if behaviour == "not-chat":
            return self._json(200, {"object": "list", "data": []})
        prompt = prompt_text(body)
        if behaviour == "gold":
            entry = book_entry(server.book, prompt)
            if entry is None:
                text = "I cannot tell which page this is."
            else:
                text = "\n".join(gold_calls(entry["gold"], prompt_fields(prompt), entry.get("seed", 0)))
        elif behaviour == "nonsense":
            text = NONSENSE
        elif behaviour == "malformed":
            text = MALFORMED
        elif behaviour == "echo":
            messages = body.get("messages") or [{}]
            text = prompt_text({"messages": messages[-1:]})
        elif behaviour.startswith("text:"):
            text = behaviour[5:]
        elif behaviour.startswith("key:"):
            given = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            text = behaviour[4:].replace("{key}", given)
        else:
            text = f"unknown behaviour {behaviour}"
        answer = {
            "id": f"standin-{server.answered()}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stand-in"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": max(1, len(prompt) // 4),
                "completion_tokens": max(1, len(text) // 4),
                "total_tokens": max(1, len(prompt) // 4) + max(1, len(text) // 4),
            },
        }
        return self._json(200, answer)

    def _json(self, status: int, body, headers=None):
        return self._send(status, json.dumps(body).encode(), "application/json", headers)

    def _send(self, status: int, data: bytes, media: str, headers=None):
        try:
            self.send_response(status)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
            pass


@contextlib.contextmanager
def standin_model(**options) -> Iterator[StandInModel]:
    """A stand-in on a free loopback port in a thread, for the duration of the block (see ``StandInModel``)."""
    with serving(StandInModel(**options), "standin-model") as server:
        yield server


@contextlib.contextmanager
def serving(server, name: str):
    """``server`` (an http.server with a ``stopping`` event) served from a thread for the block, then shut down."""
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.standin_model", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--default", default="gold")
    parser.add_argument("--book", help="A JSON file: the answer book (gold_book).")
    parser.add_argument("--delay", type=float, default=0.0, help="Seconds each answer takes.")
    args = parser.parse_args(argv)
    book = json.loads(Path(args.book).read_text(encoding="utf-8")) if args.book else []
    server = StandInModel(args.port, default=args.default, book=book, delay=args.delay)
    print(f"port {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
