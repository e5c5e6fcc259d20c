"""tally_replay.pull against a stand-in tally API (http.server): fixture
bytes as served, run selection by id, prefix, conversation, task + since,
the read key, pagination and errors."""

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from _paths import TESTDATA

from tally_replay import PullError, load, pull

with open(os.path.join(TESTDATA, "expected_fixture.json"), "rb") as f:
    TRIP = f.read()
with open(os.path.join(TESTDATA, "demo_fixture.json"), "rb") as f:
    DEMO = f.read()
FIXTURES = {json.loads(b)["run"]["trace_id"]: b for b in (TRIP, DEMO)}
TRIP_ID, DEMO_ID = json.loads(TRIP)["run"]["trace_id"], json.loads(DEMO)["run"]["trace_id"]


@pytest.fixture
def api():
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def answer(self, code, body):
            b = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b)

        def do_GET(self):
            u = urlparse(self.path)
            q = {k: v[0] for k, v in parse_qs(u.query).items()}
            seen.append((u.path, q, self.headers.get("Authorization")))
            if self.headers.get("Authorization") != "Bearer read-key":
                return self.answer(401, {"error": "missing or invalid API key"})
            if u.path == "/api/v1/runs":
                # newest first, one run a page
                runs = [DEMO_ID, TRIP_ID] if q.get("conversation") == "conv-1" or q.get("task") else []
                start = int(q.get("cursor", "0"))
                page = runs[start:start + 1]
                nxt = str(start + 1) if start + 1 < len(runs) else None
                return self.answer(200, {"runs": [{"trace_id": t} for t in page], "next_cursor": nxt})
            parts = u.path.split("/")
            if len(parts) == 6 and parts[:4] == ["", "api", "v1", "runs"] and parts[5] == "fixture":
                for tid, b in FIXTURES.items():
                    if tid.startswith(parts[4]):
                        return self.answer(200, b)
                return self.answer(404, {"error": "no such run"})
            self.answer(404, {"error": "not found"})

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield "http://127.0.0.1:%d" % srv.server_address[1], seen
    srv.shutdown()
    srv.server_close()


def test_pull_by_id_and_prefix(api, tmp_path):
    url, seen = api
    paths = pull(url, "read-key", run=[TRIP_ID, DEMO_ID[:8]], out=tmp_path / "testdata")
    assert [os.path.basename(p) for p in paths] == [TRIP_ID + ".fixture.json", DEMO_ID + ".fixture.json"]
    with open(paths[0], "rb") as f:
        assert f.read() == TRIP  # the server's bytes, as served
    assert load(paths[1]).trace_id == DEMO_ID
    assert all(auth == "Bearer read-key" for _, _, auth in seen)


def test_pull_by_conversation_pages_oldest_first(api, tmp_path):
    url, seen = api
    paths = pull(url, "read-key", conversation="conv-1", out=str(tmp_path))
    assert [os.path.basename(p)[:32] for p in paths] == [TRIP_ID, DEMO_ID]
    lists = [q for p, q, _ in seen if p == "/api/v1/runs"]
    assert lists[0]["conversation"] == "conv-1" and lists[1]["cursor"] == "1"


def test_pull_by_task_since(api, tmp_path, monkeypatch):
    url, seen = api
    monkeypatch.setenv("TALLY_SERVER", url)
    monkeypatch.setenv("TALLY_KEY", "read-key")
    paths = pull(task="plan_trip", since="7d", out=str(tmp_path))
    assert len(paths) == 2
    q = [q for p, q, _ in seen if p == "/api/v1/runs"][0]
    assert (q["task"], q["since"]) == ("plan_trip", "7d") and "conversation" not in q


def test_pull_errors(api, tmp_path):
    url, _ = api
    with pytest.raises(PullError, match="401: missing or invalid API key"):
        pull(url, "wrong", run=TRIP_ID, out=str(tmp_path))
    with pytest.raises(PullError, match="404: no such run"):
        pull(url, "read-key", run="deadbeef", out=str(tmp_path))
    with pytest.raises(PullError, match="prefix of 8 or more"):
        pull(url, "read-key", run="abc", out=str(tmp_path))
    with pytest.raises(PullError, match="nothing to pull"):
        pull(url, "read-key", out=str(tmp_path))
    with pytest.raises(PullError, match="is tally running there"):
        pull("http://127.0.0.1:9", "k", run=TRIP_ID, out=str(tmp_path), timeout=2)
