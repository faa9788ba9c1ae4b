"""A real HTTP server on 127.0.0.1 speaking the chat-completions protocol, scripted per item.

It stands in for an LLM endpoint (a fake for a remote model we cannot call in tests; it says so): it
reads the item's template question and answer from the prompt and replies with a rewrite chosen by a
script: ``good`` (keeps every fact), ``fenced`` (good JSON inside prose and a code fence), ``drop``
(loses the answer's facts), ``change`` (alters numbers, colors, yes/no, states, objects),
``malformed`` (truncated JSON in the reply's content), ``429`` (rate limited, Retry-After
``retry_after``), ``500``, ``503`` (with Retry-After), ``slow`` (a good reply after ``slow_s``, longer
than the client's timeout), ``nousage`` (good, no usage field), ``close`` (the connection closed in the
middle of the body), ``invalid_json`` (a 200 whose body is not JSON), ``no_choices`` and
``no_message`` (a 200 chat completion with fields missing), ``huge`` (a 200 KB reply), the echoes of
the request's Authorization header of :data:`ECHOES`, or the name of a planted fault of
:mod:`tests.paraphrase.faults` (``flip relations``, ``more than N``, ``injected instruction``, ...),
whose rewrite is the reply. The behaviours listed for an item (keyed by its template question, or by
(question, answer)) are used one per request, in order; then ``default``.

It counts requests, responses, requests in flight (and their maximum) and each request body, answers
``GET /v1/models`` (the client's preflight) and ``GET /stats`` (the counters), and stops itself after
``lifetime_s`` even if a test forgets to.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.paraphrase import faults

# Behaviours answered below the JSON layer: (status, raw body) instead of a chat completion.
RAW_BODIES = {
    "invalid_json": b'{"id": "chatcmpl-local", "choices": [{"message": {"content": "trunc',
    "no_choices": json.dumps({"id": "chatcmpl-local", "object": "chat.completion", "created": 0}).encode(),
    "no_message": json.dumps({"id": "chatcmpl-local", "object": "chat.completion", "choices": [{"index": 0}]}).encode(),
}
CLOSE_MID_REPLY = "close"
HUGE = "huge"  # a 200 KB reply: a good rewrite padded with 20,000 words
# Behaviours that echo the request's Authorization header back, as a careless proxy or server does: in
# every field of a chat completion (its reply, id, model, fingerprint, finish reason), as an HTML proxy
# error page with status 200 or 502, and in a JSON error's message.
ECHOES = ("echo in the reply", "echo as a 200 page", "echo as a 502 page", "echo in an error")

_NUMBER_WORD = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
_SWAPS = {
    "yes": "no", "no": "yes", "open": "closed", "closed": "open", "green": "red", "red": "blue", "blue": "green",
    "white": "black", "black": "white", "yellow": "green", "mug": "cup", "mugs": "cups", "apple": "tomato",
    "fridge": "microwave", "countertop": "shelf", "after": "before", "before": "after",
}  # fmt: skip


def _lower_first(text: str) -> str:
    return text[0].lower() + text[1:] if len(text) > 1 and text[1].islower() else text


def good_rewrite(question: str, answer: str) -> tuple[str, str]:
    """A fact-preserving rewrite, as a careful model would write it."""
    bare = answer.rstrip(".")
    if bare.isdigit() and int(bare) < len(_NUMBER_WORD):
        bare = f"there are {_NUMBER_WORD[int(bare)]}"
    return f"Tell me, {_lower_first(question)}", f"I think {_lower_first(bare)}."


def changed_rewrite(question: str, answer: str) -> tuple[str, str]:
    """A rewrite that changes facts: numbers +1, colors, yes/no, states, some objects."""

    def swap(text: str) -> str:
        text = re.sub(r"\d+(\.\d+)?", lambda m: str(round(float(m.group(0)) + 1, 2)), text)
        return re.sub(r"[A-Za-z]+", lambda m: _SWAPS.get(m.group(0).lower(), m.group(0)), text)

    return f"Tell me, {_lower_first(swap(question))}", swap(answer)


def dropped_rewrite(question: str, answer: str) -> tuple[str, str]:
    """A rewrite that loses facts: the question's coordinates and everything the answer said."""
    return re.sub(r"\s*\(x=[^)]*\)", "", question), "Hard to say exactly."


def item_text(messages: list[dict]) -> tuple[str, str]:
    """The template question and answer of the item (the last user turn that describes one)."""
    for message in reversed(messages):
        q = re.search(r"^Template question: (.*)$", message["content"], re.M)
        a = re.search(r"^Template answer: (.*)$", message["content"], re.M)
        if message["role"] == "user" and q and a:
            return q.group(1), a.group(1)
    return "", ""


class ScriptedChatServer:
    def __init__(
        self,
        script: dict[str | tuple[str, str], list[str]] | None = None,
        default: str = "good",
        delay_s: float = 0.0,
        slow_s: float = 2.0,
        lifetime_s: float = 300.0,
        reject_formats: tuple[str, ...] = (),
        retry_after: str = "0",
        port: int = 0,
    ):
        self.script = {q: list(b) for q, b in (script or {}).items()}
        self.default, self.delay_s, self.slow_s, self.reject_formats = default, delay_s, slow_s, reject_formats
        self.lifetime_s, self.retry_after, self.port = lifetime_s, retry_after, port
        self.lock = threading.Lock()
        self.requests = 0
        self.responses_ok = 0  # 200 replies written
        self.in_flight = 0
        self.max_in_flight = 0
        self.behaviors: Counter = Counter()
        self.bodies: Counter = Counter()  # sha of (messages) -> times requested
        self.ok_bodies: Counter = Counter()  # sha of (messages) -> 200 replies written
        self.sent: list[tuple[str, str, str, str]] = []  # (template question, behavior, question, answer)
        self.conversations: list[list[dict]] = []  # the messages of every request
        self._httpd: ThreadingHTTPServer | None = None

    # -- lifecycle --
    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> ScriptedChatServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = _Server(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self._watchdog = threading.Timer(self.lifetime_s, self.stop)
        self._watchdog.daemon = True
        self._watchdog.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            self._watchdog.cancel()
            httpd.shutdown()
            httpd.server_close()

    def __enter__(self) -> ScriptedChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- behaviour --
    def next_behavior(self, question: str, answer: str = "") -> str:
        """The next scripted behaviour of the item: its script keyed by (question, answer), else by its
        question alone, else the default."""
        with self.lock:
            queue = self.script.get((question, answer)) or self.script.get(question)
            return queue.pop(0) if queue else self.default

    def reply(self, body: dict, auth: str = "") -> tuple[int, dict | bytes | None, dict[str, str]]:
        """(status, payload, headers): a JSON payload, raw bytes, or None to close the connection
        in the middle of the body. ``auth``: the request's Authorization header (echoed by :data:`ECHOES`)."""
        messages = body.get("messages", [])
        if not messages:
            return 400, _error("'messages' is required", "invalid_request_error"), {}
        digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
        fmt = (body.get("response_format") or {}).get("type", "none")
        with self.lock:
            self.requests += 1
            self.bodies[digest] += 1
            self.conversations.append(messages)
        if fmt in self.reject_formats:
            return 400, _error(f"response_format {fmt} is not supported", "invalid_request_error"), {}
        question, answer = item_text(messages)
        behavior = self.next_behavior(question, answer)
        with self.lock:
            self.behaviors[behavior] += 1
        if behavior == "429":
            return 429, _error("rate limited", "rate_limit_exceeded"), {"Retry-After": self.retry_after}
        if behavior in ("500", "503"):
            headers = {"Retry-After": self.retry_after} if behavior == "503" else {}
            return int(behavior), _error("unavailable", "server_error"), headers
        if behavior in RAW_BODIES:
            return 200, RAW_BODIES[behavior], {}
        if behavior == CLOSE_MID_REPLY:
            return 200, None, {}
        if behavior in ECHOES:
            return _echo(behavior, body, messages, question, answer, auth)
        time.sleep(self.slow_s if behavior == "slow" else self.delay_s)
        content, q, a = self._content(behavior, question, answer)
        with self.lock:
            self.responses_ok += 1
            self.ok_bodies[digest] += 1
            self.sent.append((question, behavior, q, a))
        return 200, _completion(body, messages, content, usage=behavior != "nousage"), {}

    @staticmethod
    def _content(behavior: str, question: str, answer: str) -> tuple[str, str, str]:
        if behavior == "drop":
            q, a = dropped_rewrite(question, answer)
        elif behavior == "change":
            q, a = changed_rewrite(question, answer)
        elif behavior in faults.PLANTED:
            q, a = faults.PLANTED[behavior](question, answer)
        else:
            q, a = good_rewrite(question, answer)
        text = json.dumps({"question": q, "answer": a})
        if behavior == HUGE:
            return json.dumps({"question": q, "answer": a + " and so on" * 20_000}), q, a
        if behavior == "malformed":
            return text[: len(text) // 2], q, a
        if behavior == "fenced":
            return f"Sure! Here is the rewrite:\n```json\n{text}\n```\nHope this helps.", q, a
        return text, q, a


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the default backlog of 5 resets connections when 32 clients connect at once
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that went away (killed, timed out) is expected here, not an error to print


def _echo(
    behavior: str, body: dict, messages: list[dict], question: str, answer: str, auth: str
) -> tuple[int, dict | bytes, dict[str, str]]:
    """The request's Authorization header (``auth``) in the reply, as :data:`ECHOES` lists."""
    page = f"<html><body><h1>Bad gateway</h1><pre>Authorization: {auth}\nHost: upstream</pre></body></html>"
    if behavior == "echo as a 200 page":
        return 200, page.encode(), {}
    if behavior == "echo as a 502 page":
        return 502, page.encode(), {}
    if behavior == "echo in an error":
        return 409, _error(f"conflict for request with Authorization: {auth}", "conflict"), {}
    q, a = good_rewrite(question, answer)
    content = json.dumps({"question": f"{q} (sent with Authorization: {auth})", "answer": f"{a} {auth}"})
    reply = _completion(body, messages, content, usage=True)
    reply |= {"id": f"chatcmpl-{auth}", "model": auth, "system_fingerprint": auth}
    reply["choices"][0]["finish_reason"] = auth
    return 200, reply, {}


def _error(message: str, code: str) -> dict:
    return {"error": {"message": message, "type": code, "param": None, "code": code}}


def _completion(body: dict, messages: list[dict], content: str, usage: bool) -> dict:
    prompt = sum(len(m.get("content", "")) for m in messages) // 4
    reply = {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }
    if usage:
        completion = max(1, len(content) // 4)
        reply["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return reply


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedChatServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: without this, delayed ACKs add 40 ms

    def do_GET(self) -> None:
        """``GET /v1/models`` (the client's preflight), or ``GET /stats``: the counters, for a server
        running in another process."""
        owner = self.owner
        if self.path.rstrip("/").endswith("/models"):
            self._write(200, {"object": "list", "data": [{"id": "local-model", "object": "model"}]}, {})
            return
        with owner.lock:
            payload = {
                "requests": owner.requests, "responses_ok": owner.responses_ok,
                "max_in_flight": owner.max_in_flight, "behaviors": dict(owner.behaviors),
            }  # fmt: skip
        self._write(200, payload, {})

    def _write(self, status: int, payload: dict | bytes | None, headers: dict[str, str]) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data) if payload is not None else 4096))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if payload is None:  # half a body, then the connection goes away
            self.wfile.write(b'{"id": "chatcmpl-local", "choi')
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        owner = self.owner
        if owner._httpd is None:  # stopped: a kept-alive connection dies with the server, as in a crash
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        with owner.lock:
            owner.in_flight += 1
            owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
        try:
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length)
            if len(raw) < length:
                return  # the client went away while sending (e.g. killed): there is no one to answer
            body = json.loads(raw or b"{}")
            path = self.path.split("?")[0]
            if path not in ("/v1/chat/completions", "/chat/completions"):
                status, payload, headers = 404, _error(f"no route {self.path}", "not_found"), {}
            else:
                status, payload, headers = owner.reply(body, self.headers.get("Authorization", ""))
            self._write(status, payload, headers)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout): nothing to answer
        finally:
            with owner.lock:
                owner.in_flight -= 1


def main(argv: list[str] | None = None) -> None:
    """Serve in this process until killed or ``--lifetime`` passes; prints the base URL first."""
    import argparse

    parser = argparse.ArgumentParser(description="scripted local chat-completions server")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds per good reply")
    parser.add_argument("--lifetime", type=float, default=600.0)
    parser.add_argument("--default", default="good", help="the reply to every request, e.g. 'flip relations'")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = ScriptedChatServer(default=args.default, delay_s=args.delay, lifetime_s=args.lifetime, port=args.port)
    server.start()
    print(server.base_url, flush=True)
    while server._httpd is not None:
        time.sleep(0.2)


if __name__ == "__main__":
    main()
