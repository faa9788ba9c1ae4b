"""The run of ``eqagen baseline`` (:mod:`eqagen.commands.baseline`): prompts, requests, predictions."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from eqagen.commands.audit import refuse_existing
from eqagen.core.errors import ConfigError
from eqagen.outputs.atomic import write_text_atomic
from eqagen.outputs.folder import refuse_inside_inputs
from eqagen.outputs.harness import INSTRUCTION, LETTERS, McqItem, mcq_items, parse_choice, question_text, reply_choice
from eqagen.outputs.history import history_text
from eqagen.outputs.retrieval import filter_by_semantic_similarity
from eqagen.paraphrase.cache import ResponseCache, request_key
from eqagen.paraphrase.client import ChatClient, RequestFailed
from eqagen.paraphrase.config import config_from, resolve_cache_path, resolve_endpoint
from eqagen.paraphrase.errors import EndpointUnreachable, RunFailed

TEMPLATE_VERSION = "baseline-1"  # part of every cache key: bump when a prompt changes
RETRIEVED = 40  # observations an api prompt lists at most
SYSTEM = "You answer questions about what an agent saw and did in an episode, choosing one of the options."


# -- prompts ---------------------------------------------------------------------------------------------
def options_block(item: McqItem) -> str:
    lines = "\n".join(f"{letter}. {text}" for letter, text in zip(LETTERS, item.options))
    return f"Question: {question_text(item.record)}\nOptions:\n{lines}\n{INSTRUCTION}"


def retrieved_text(history: dict[str, Any], question: str) -> str:
    """What the retrieval API finds for a question: the observations most similar to it, in step order, then
    every event."""
    hits = sorted(filter_by_semantic_similarity(history, question, threshold=0.3)[:RETRIEVED], key=lambda o: o.t)
    seen = [f"step {o.t}: {o.caption} [{o.id}] at ({', '.join(f'{v:.2f}' for v in o.position)})" for o in hits]
    events = [
        f"step {s['t']}: {e['kind']} {e['object']}" + (f" into/onto {e['target']}" if e["target"] else "")
        for s in history["steps"]
        for e in s["events"]
    ]
    return f"Retrieved observations:\n{chr(10).join(seen) or 'none'}\nEvents:\n{chr(10).join(events) or 'none'}"


def messages_for(mode: str, item: McqItem) -> list[dict[str, str]]:
    if mode == "blind":
        context = ""
    elif mode == "socratic":
        context = history_text(item.history) + "\n\n"
    else:
        context = retrieved_text(item.history, question_text(item.record)) + "\n\n"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": context + options_block(item)}]


# -- the run -----------------------------------------------------------------------------------------------
def prediction(item: McqItem, reply: str) -> dict[str, Any]:
    """A row of ``eqagen score``'s ``choice`` shape: the record's choice the reply's letter names (None where
    it names none); ``letter`` and ``reply``, which the scorer ignores, say what the model answered."""
    choice = reply_choice(reply, item.choices)
    letter = parse_choice(reply, len(item.options))
    return {"question_id": item.record.question_id, "choice": choice, "letter": letter, "reply": reply}


async def ask_all(mode: str, items: list[McqItem], client: ChatClient, cache: ResponseCache) -> list[str | None]:
    """Each item's reply (None where its request failed), from the cache or the endpoint."""
    sampling = client.sampling()

    async def ask(item: McqItem) -> str | None:
        messages = messages_for(mode, item)
        key = request_key(client.endpoint.identity, client.endpoint.model, messages, sampling, TEMPLATE_VERSION)
        hit = cache.get(key)
        if hit is not None:
            return hit.content
        try:
            done = await client.complete(messages, key)
        except RequestFailed:
            return None
        cache.put(key, client.endpoint.model, done.content, done.prompt_tokens, done.completion_tokens,
                  {"messages": messages, **sampling})  # fmt: skip
        return done.content

    try:
        return list(await asyncio.gather(*(ask(i) for i in items)))
    finally:
        await client.aclose()


def build_client(args: argparse.Namespace) -> tuple[ChatClient, ResponseCache]:
    values: dict[str, Any] = {"model": args.model, "temperature": 0.0, "max_output_tokens": 16,
                              "response_format": "none", "concurrency": args.concurrency}  # fmt: skip
    if args.base_url:
        values["base_url"] = args.base_url
    if os.environ.get(args.api_key_env):
        values["api_key"] = os.environ[args.api_key_env]
    default = resolve_cache_path(config_from(values))
    values["cache_path"] = args.cache or (default.with_name("baseline.sqlite") if default else None)
    config = config_from(values)
    endpoint = resolve_endpoint(config)
    if endpoint is None:
        raise ConfigError("--model", f"'{args.model}' names the offline paraphraser, not a chat model")
    return ChatClient(endpoint, config, seed=0), ResponseCache(resolve_cache_path(config))


def run_baseline(args: argparse.Namespace) -> int:
    for option, path in (("--out", args.out), ("--cache", args.cache)):
        refuse_inside_inputs(path, [args.dir], option)
    refuse_existing(args.out, args.overwrite)
    split = None if args.split == "all" else args.split
    if args.mode == "blind":  # no history read at all
        items = list(mcq_items(args.dir, split, None, render=None))
    else:  # socratic reads K observations, the retrieval API searches the whole history
        k = args.max_observations if args.mode == "socratic" else None
        items = list(mcq_items(args.dir, split, k, render=dict))
    client, cache = build_client(args)
    try:
        replies = asyncio.run(ask_all(args.mode, items, client, cache))
    except EndpointUnreachable as err:
        print(f"eqagen: error: baseline endpoint {err.url}: {err.problem}; fix: start the server or correct "
              "--base-url; answers received so far are cached", file=sys.stderr)  # fmt: skip
        return 1
    finally:
        cache.close()
    failed = sum(r is None for r in replies)
    if failed:
        raise RunFailed(f"{failed} of {len(items)} requests failed after their retries; fix: run the same command "
                        "again (answers received so far are cached)")  # fmt: skip
    rows = [prediction(item, reply) for item, reply in zip(items, replies)]
    named = [r for r in rows if r["choice"] is not None]  # a row names a choice, or is no prediction
    write_text_atomic(args.out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in named))
    print(f"wrote {len(named)} predictions to {args.out}; {len(rows) - len(named)} replies named no option (left "
          "out: eqagen score counts them wrong and lists them as missing)", file=sys.stderr)  # fmt: skip
    return 0
