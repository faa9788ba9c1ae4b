"""LLM paraphrasing of question/answer text through an OpenAI-compatible endpoint, with a persistent
cache, a fact validator and a deterministic offline fallback (see docs/paraphrase.md)."""
