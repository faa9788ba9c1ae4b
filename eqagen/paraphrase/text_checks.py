"""Text a paraphrase may not add to its template: links, markup, instructions, extra questions, padding.

A rewrite of "How many mugs did you see?" is one plain sentence or two. Anything that addresses a
model or a reader of a web page (a URL, HTML or Markdown, "ignore the previous instructions", "reply
with ...") is not a rewrite of it, and is rejected even when every fact survives. Each rule is one
pattern with its own reason, and each counts only where the template text of the same side does not
already have it.
"""

from __future__ import annotations

import re

# (reason, pattern); the reason names what was added: "added link 'https://...' to the question".
ADDED = (
    ("link", re.compile(
        r"\b(?:https?|ftp)://\S+|\bwww\.\S+|\b[\w.+-]+@[\w-]+\.[\w.]+"
        r"|\b[\w-]+\.(?:com|org|net|io|ai|ly|co|gg|xyz|info|biz|ru|cn|de|uk)\b",
        re.I,
    )),
    ("markup", re.compile(
        r"</?[a-z][^>]*>|&[a-z]+;|```|`[^`]+`|\*\*|__|\]\(|^\s*#|\s#{1,6}\s|[{}\[\]|\\<>*`~^]|\n|\r|\t",
        re.I | re.M,
    )),
    ("instruction", re.compile(
        r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|rules?|prompts?|above|previous|everything)\b"
        r"|\b(?:system|developer|hidden) (?:prompt|message|instructions?)\b|\binstructions?\b|\bjailbreak|\bprompt\b"
        r"|\bas an ai\b|\blanguage model\b|\bi am an ai\b|\bchatgpt\b|\bopenai\b|\b(?:user|assistant|system)\s*:"
        r"|\b(?:reply|respond|answer|output|print|return|write)\s+(?:only|with|in|exactly|the following)\b"
        r"|\bfrom now on\b|\byou are now\b|\byou (?:must|should|will) (?:now|always|never)\b|\bpretend\b"
        r"|\bact as\b|\brole-?play\b|\b(?:click|visit|subscribe|sign up|download|buy)\b"
        r"|\b(?:api[ _-]?key|password|access token)\b",
        re.I,
    )),
)  # fmt: skip
EXTRA_QUESTIONS = 1  # a rewrite may add one lead-in question before the template's ("Do you remember? ...")
# ... made of these words only: it asks the reader to remember, count or list, and asks nothing new.
LEAD_IN_WORDS = frozenset(
    {
        "do", "does", "did", "you", "your", "remember", "recall", "know", "can", "could", "would", "will", "count",
        "list", "tell", "me", "them", "it", "this", "that", "for", "i", "we", "the", "a", "so", "ok", "okay", "now",
        "quick", "question",
    }
)  # fmt: skip
LENGTH_FACTOR, LENGTH_SLACK = 2, 40  # at most twice the template's characters, plus a short lead-in


def kinds_in(text: str) -> frozenset[str]:
    """The kinds of :data:`ADDED` that ``text`` has."""
    return frozenset(name for name, pattern in ADDED if pattern.search(text))


def added_text(template: str, text: str, side: str, template_kinds: frozenset[str] | None = None) -> list[str]:
    """Why ``text`` adds something of another kind than its ``template`` (a question or an answer).
    ``template_kinds``: :func:`kinds_in` of the template, where the caller has it (a template has many
    rewrites checked)."""
    template_kinds = kinds_in(template) if template_kinds is None else template_kinds
    reasons = []
    for name, pattern in ADDED:
        if name not in template_kinds and (found := pattern.search(text)):
            reasons.append(f"added {name} {found.group(0).strip()[:40]!r} to the {side}")
    reasons += _added_questions(template, text, side)
    limit = LENGTH_FACTOR * len(template) + LENGTH_SLACK
    if len(text) > limit:
        reasons.append(f"added text to the {side} ({len(text)} characters, {limit} allowed)")
    return reasons


def _added_questions(template: str, text: str, side: str) -> list[str]:
    """More questions than the template's, beyond one lead-in before them ("Do you remember?")."""
    extra = text.count("?") - template.count("?")
    if extra <= 0:
        return []
    first = re.findall(r"[a-z']+", text.split("?")[0].lower())
    if side == "question" and extra <= EXTRA_QUESTIONS and set(first) <= LEAD_IN_WORDS:
        return []
    return [f"added question to the {side} ({text.count('?')} questions where the template has {template.count('?')})"]
