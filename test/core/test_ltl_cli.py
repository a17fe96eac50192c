"""`sayplan plan --formula`: a given formula is planned with no LLM. A real local HTTP server stands where the
OpenAI-compatible backend would be and counts every request: the formula run makes none (and needs no API key),
while the same flags with --instruction do reach it, so the count can fail."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from sayplan_core.cli import main
from sayplan_core.envs import load_env
from sayplan_core.ltl import build_dfa, parse_prefix
from sayplan_core.ltl.product_search import ProductSearch

if shutil.which("mona") is None:
    print("test_ltl_cli: the Debian package 'mona' is missing; scripts/bootstrap_venv.sh installs it")
    pytest.skip("MONA (Debian package 'mona') is not installed", allow_module_level=True)

KEY_ENV = "SAYPLAN_TEST_LTL_CLI_KEY"


class Counting(BaseHTTPRequestHandler):
    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Counting.requests.append(f"{self.command} {self.path}")
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        self.do_GET()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Counting.requests = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_plan_formula_contacts_no_llm(
    server: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    llm = ["--llm", "openai", "--base-url", server, "--api-key-env", KEY_ENV, "--retries", "0", "--timeout", "5"]
    formula = '["AND", ["EVENTUALLY", "reach(apple1)"], ["ALWAYS", ["NOT", "enter(kitchen)"]]]'
    code = main(["plan", "--env", "office", "--formula", formula, "--json", *llm])
    out = capsys.readouterr().out
    assert code == 0, out
    result = json.loads(out)
    assert result["success"] and result["verified"] and result["calls"] == []
    assert Counting.requests == []
    graph = load_env("office")
    start = graph.agent_location()
    assert start is not None
    best = ProductSearch(graph, build_dfa(parse_prefix("& F apple1 G ! kitchen"))).search(start)
    assert result["full_plan"] == [str(s) for s in best.steps]
    # the control: the same backend flags with an instruction do contact the server
    monkeypatch.setenv(KEY_ENV, "sk-test")
    code = main(["plan", "--env", "office", "--planner", "ltl", "--instruction", "get an apple", *llm])
    capsys.readouterr()
    assert code != 0 and Counting.requests, "the instruction run should have asked the server"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--formula", "F kitchn"], "did you mean kitchen"),
        (["--formula", '["NOT", "kitchen", "cafeteria"]'], "'NOT' takes 1 argument"),
        (["--formula", "& F kitchen ! F kitchen"], "can never be satisfied"),
        (["--formula", "F kitchen", "--planner", "sayplan"], "--formula plans with the ltl planner"),
        (["--formula", "F kitchen", "--instruction", "go"], "--formula plans with the ltl planner"),
        ([], "give --instruction"),
    ],
)
def test_plan_formula_usage_errors(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--env", "office", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
