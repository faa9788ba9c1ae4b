"""The scripted chat server of the paraphrase tests (a real HTTP server on 127.0.0.1; a fake for a remote model
we cannot call in tests, as it says), replying as a judge: the mark its ``grade`` gives the prompt's answer and
response (default: 5 when they are the same text after normalisation, else 1)."""

from __future__ import annotations

import re
from collections.abc import Callable

from eqagen.scoring.freeform import normalise
from tests.paraphrase.chat_server import ScriptedChatServer


def same_text(answer: str, response: str) -> str:
    return "5" if normalise(answer) == normalise(response) else "1"


def judged_pair(messages: list[dict]) -> tuple[str, str]:
    text = messages[-1]["content"]
    answer = re.search(r"^Answer: (.*)$", text, re.M)
    response = re.search(r"^Response: (.*)$", text, re.M)
    return (answer.group(1) if answer else ""), (response.group(1) if response else "")


class JudgeServer(ScriptedChatServer):
    def __init__(self, grade: Callable[[str, str], str] = same_text, **kwargs):
        super().__init__(**kwargs)
        self.grade = grade

    def reply(self, body: dict, auth: str = "") -> tuple[int, dict | bytes | None, dict[str, str]]:
        status, payload, headers = super().reply(body, auth)
        if status == 200 and isinstance(payload, dict):
            payload["choices"][0]["message"]["content"] = self.grade(*judged_pair(body["messages"]))
        return status, payload, headers
