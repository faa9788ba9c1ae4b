"""LLM paraphrasing of question/answer text through an OpenAI-compatible endpoint, with a persistent
cache, a fact validator and a deterministic offline paraphraser, used when asked for by name
(``model: offline``; see docs/paraphrase.md)."""
