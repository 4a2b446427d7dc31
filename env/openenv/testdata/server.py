#!/usr/bin/env python3
"""An OpenEnv-compatible environment server for the tests, standard library only.

It speaks OpenEnv's wire format (src/openenv/core/env_server/http_server.py and types.py of
meta-pytorch/OpenEnv): POST /reset {seed, episode_id} and POST /step {"action": {...}} answer
{"observation": {...}, "reward": r, "done": d}; GET /health; GET /ws upgrades to a WebSocket
session of messages {"type": "reset"|"step"|"state"|"close", "data": ...} answered by
{"type": "observation"|"state"|"error", "data": ...}, one environment per session, at most
--max-sessions at once (then an error with code CAPACITY_REACHED). As OpenEnv's server does
(websocket_endpoint in http_server.py), a session ends with the session released first and the
server's close frame sent after; and as the WebSocket layer under it does (uvicorn), a close frame
from the client is answered at once, by the connection's reader, before the application has
seen the connection end and released the session.

The environment: guess the secret word. reset(seed) picks WORDS[seed % len(WORDS)] and says
how many letters it has; step({"message": text}) gives reward 1 and ends the episode when the
text contains the word, else reward 0 and a hint; after 3 wrong guesses it ends with reward 0.
Unlike current OpenEnv servers, POST /reset and /step act on one environment per process (the
form of OpenEnv's first releases), which the http transport expects.

Prints "url http://127.0.0.1:PORT" when ready. Misbehaviour for the tests:
  --slow-step S     sleep S seconds before answering a step
  --fail-resets N   answer the first N resets with HTTP 500 (WebSocket: an error message)
  --fail-steps      answer every step with HTTP 500 (WebSocket: an EXECUTION_ERROR)
  --malformed-step  answer steps with a body that is not JSON
  --drop-step       close the connection instead of answering a step
  --step-reward R   the reward of every step (default 1 for the word, 0 otherwise; 1.7e308 is
                    valid JSON)
  --max-sessions N  WebSocket sessions at once (default 64)
  --slow-release S  sleep S seconds after a session's last message before releasing it (a busy
                    server): a client that takes the answer to its own close frame for the end
                    of the session finds it still held
  --ignore-close    answer the close message as an unknown type, as servers that predate it do
"""
import argparse
import base64
import hashlib
import json
import queue
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORDS = ["apple", "river", "stone", "cloud", "maple"]
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

args = None
lock = threading.Lock()
sessions = 0
resets_failed = 0


class WordEnv:
    def __init__(self):
        self.word, self.steps, self.done = None, 0, True

    def reset(self, data):
        seed = data.get("seed") or 0
        self.word, self.steps, self.done = WORDS[seed % len(WORDS)], 0, False
        return {"observation": {"prompt": "Guess the secret word. It has %d letters." % len(self.word)},
                "reward": None, "done": False}

    def step(self, action):
        if set(action) != {"message"} or not isinstance(action["message"], str):
            raise ValueError("action must be {\"message\": str}, got %r" % (action,))
        if self.done:
            raise ValueError("step after the episode ended")
        self.steps += 1
        if self.word in action["message"].lower():
            self.done = True
            return {"observation": {"prompt": "Correct!"}, "reward": args.step_reward or 1.0, "done": True}
        self.done = self.steps >= 3
        hint = "No. It starts with %r." % self.word[0]
        return {"observation": {"prompt": hint}, "reward": args.step_reward or 0.0, "done": self.done}


http_env = WordEnv()


def fail_reset():
    global resets_failed
    with lock:
        if resets_failed < args.fail_resets:
            resets_failed += 1
            return True
    return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, code, obj, raw=None):
        body = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            return self.send_json(200, {"status": "healthy"})
        if self.path == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
            return self.websocket()
        self.send_json(404, {"detail": "Not Found"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            return self.send_json(422, {"detail": "invalid JSON"})
        if self.path == "/reset":
            if fail_reset():
                return self.send_json(500, {"detail": "reset failed"})
            return self.send_json(200, http_env.reset(body))
        if self.path == "/step":
            if self.misbehave_step():
                return
            try:
                return self.send_json(200, http_env.step(body.get("action", {})))
            except ValueError as e:
                return self.send_json(422, {"detail": str(e)})
        self.send_json(404, {"detail": "Not Found"})

    def misbehave_step(self):
        """Applies the step flags over HTTP; True when the step was answered (or dropped)."""
        if args.slow_step:
            time.sleep(args.slow_step)
        if args.drop_step:
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return True
        if args.fail_steps:
            self.send_json(500, {"detail": "step failed"})
            return True
        if args.malformed_step:
            self.send_json(200, None, raw=b"{\"observation\": {\"prompt\": ")
            return True
        return False

    # --- WebSocket session mode --------------------------------------------------------------
    def websocket(self):
        global sessions
        accept = base64.b64encode(hashlib.sha1((self.headers["Sec-WebSocket-Key"] + GUID).encode()).digest())
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept.decode())
        self.end_headers()
        self.close_connection = True
        self.ws_write_lock, self.ws_close_sent = threading.Lock(), False
        with lock:
            full = sessions >= args.max_sessions
            if not full:
                sessions += 1
        if full:  # as OpenEnv: accept, send the error, close
            self.ws_send({"type": "error", "data": {"message": "Server at capacity", "code": "CAPACITY_REACHED",
                                                    "active_sessions": args.max_sessions, "max_sessions": args.max_sessions}})
            self.ws_close()
            return
        self.inbox = queue.Queue()
        reader = threading.Thread(target=self.ws_reader, daemon=True)
        reader.start()
        try:
            self.ws_loop(WordEnv())
        finally:
            if args.slow_release:
                time.sleep(args.slow_release)
            with lock:
                sessions -= 1
            self.ws_close()
            reader.join(timeout=5)

    def ws_loop(self, env):
        while True:
            msg = self.inbox.get()
            if msg is None:
                return
            try:
                m = json.loads(msg)
            except ValueError as e:
                self.ws_send({"type": "error", "data": {"message": "Invalid JSON: %s" % e, "code": "INVALID_JSON"}})
                continue
            kind = m.get("type")
            if kind == "close" and not args.ignore_close:
                return
            if kind == "reset":
                if fail_reset():
                    self.ws_send({"type": "error", "data": {"message": "reset failed", "code": "EXECUTION_ERROR"}})
                    continue
                self.ws_send({"type": "observation", "data": env.reset(m.get("data") or {})})
            elif kind == "step":
                if args.slow_step:
                    time.sleep(args.slow_step)
                if args.drop_step:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if args.fail_steps:
                    self.ws_send({"type": "error", "data": {"message": "step failed", "code": "EXECUTION_ERROR"}})
                    continue
                if args.malformed_step:
                    self.ws_frame(b"{\"type\": \"observation\", \"data\": ")
                    continue
                try:
                    self.ws_send({"type": "observation", "data": env.step(m.get("data") or {})})
                except ValueError as e:
                    self.ws_send({"type": "error", "data": {"message": str(e), "code": "EXECUTION_ERROR"}})
            elif kind == "state":
                self.ws_send({"type": "state", "data": {"step_count": env.steps}})
            else:
                self.ws_send({"type": "error", "data": {"message": "Unknown message type: %s" % kind, "code": "UNKNOWN_TYPE"}})

    def ws_reader(self):
        """Reads the client's messages into the inbox; None when the connection ends."""
        try:
            while True:
                msg = self.ws_recv()
                self.inbox.put(msg)
                if msg is None:
                    return
        except (OSError, ValueError):
            self.inbox.put(None)

    def ws_recv(self):
        """One text message (frames joined), or None when the client closed (its close frame
        answered at once) or the connection ended."""
        parts = []
        while True:
            head = self.rfile.read(2)
            if len(head) < 2:
                return None
            fin, op, n = head[0] & 0x80, head[0] & 0x0F, head[1] & 0x7F
            if n == 126:
                n = struct.unpack(">H", self.rfile.read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            if op == 8:
                self.ws_close()
                return None
            if op == 9:
                self.ws_frame(data, op=0xA)
                continue
            parts.append(data)
            if fin:
                return b"".join(parts).decode()

    def ws_frame(self, data, op=1):
        n = len(data)
        if n < 126:
            head = struct.pack(">BB", 0x80 | op, n)
        elif n < 65536:
            head = struct.pack(">BBH", 0x80 | op, 126, n)
        else:
            head = struct.pack(">BBQ", 0x80 | op, 127, n)
        with self.ws_write_lock:
            if self.ws_close_sent:
                return  # nothing may follow a close frame
            self.ws_close_sent = op == 8
            self.wfile.write(head + data)
            self.wfile.flush()

    def ws_send(self, obj):
        self.ws_frame(json.dumps(obj).encode())

    def ws_close(self):
        try:
            self.ws_frame(struct.pack(">H", 1000), op=8)
        except OSError:
            pass


def main():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--slow-step", type=float, default=0)
    p.add_argument("--fail-resets", type=int, default=0)
    p.add_argument("--fail-steps", action="store_true")
    p.add_argument("--malformed-step", action="store_true")
    p.add_argument("--drop-step", action="store_true")
    p.add_argument("--step-reward", type=float, default=None)
    p.add_argument("--max-sessions", type=int, default=64)
    p.add_argument("--slow-release", type=float, default=0)
    p.add_argument("--ignore-close", action="store_true")
    args = p.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print("url http://127.0.0.1:%d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
