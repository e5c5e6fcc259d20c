"""The test file docs/replay.md ("Replay in Python") tells users to copy
runs as written, against the trip fixture, with a small agent standing in
for theirs."""

import os
import re
import shutil

from _paths import REPO, TESTDATA
from test_plugin import CONFTEST

MYAGENT = '''
class CheckoutAgent:
    """Books a hotel; retries a failed call once, as the trip run did."""

    def __init__(self, tools):
        self.tools = tools

    def call(self, tool, **args):
        try:
            return self.tools[tool](**args)
        except Exception:  # a timeout, or the tool's own error: retry once
            return self.tools[tool](**args)

    def run(self, goal):
        hits = self.call("search", q="hotels in Lisbon", limit=10)
        self.call("get_weather", city="Lisbon")
        self.call("book", hotel_id=hits["hits"][0]["id"], nights=3)
        try:
            self.tools["notify"](to="user@example.com")
        except Exception:
            pass  # best effort (its result was not captured)
'''


def doc_test_file():
    with open(os.path.join(REPO, "docs", "replay.md"), encoding="utf-8") as f:
        doc = f.read()
    section = doc.split("## Replay in Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_documented_test_file_runs(pytester):
    pkg = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    pytester.makeconftest(CONFTEST.format(pkg=pkg))
    pytester.makepyfile(myagent=MYAGENT, test_checkout_replay=doc_test_file())
    td = pytester.mkdir("testdata")
    shutil.copy(os.path.join(TESTDATA, "expected_fixture.json"), str(td / "checkout.fixture.json"))
    r = pytester.runpytest("-q")
    r.assert_outcomes(passed=3)
