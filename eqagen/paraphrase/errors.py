"""Why a paraphrase run stopped without doing what was asked.

Bad input (a model with no endpoint, a key or model the endpoint refuses, a bad dataset) is a
:class:`~eqagen.core.errors.ConfigError` or ``DataFileError``: exit status 2. A run whose input was fine
but that could not be carried out is a :class:`RunFailed`: exit status 1. Either way every response
received so far is in the cache, so a rerun sends none of them again.
"""

from __future__ import annotations

from eqagen.core.errors import EqagenError


class RunFailed(EqagenError):
    """The run was stopped: the endpoint cannot be reached, or too many items failed."""

    exit_code = 1


class EndpointUnreachable(RunFailed):
    """No connection to the endpoint (refused, unknown host, no answer within the timeout)."""

    def __init__(self, url: str, problem: str):
        self.url, self.problem = url, problem
        super().__init__(
            f"paraphrase endpoint {url}: {problem}; fix: start the server or correct --base-url "
            "(paraphrase.base_url), or use --offline (model: offline) for the offline paraphraser; "
            "answers received so far are cached"
        )


class TooManyFailures(RunFailed):
    """More than ``max_failure_share`` of the items finished so far kept their template text."""

    def __init__(self, failed: int, finished: int, share: float, top_reasons: str):
        self.failed, self.finished = failed, finished
        super().__init__(
            f"paraphrase stopped: {failed} of the {finished} items done so far failed (limit {share:.0%}), "
            f"mostly: {top_reasons}; fix: check the model and its prompt, or raise paraphrase.max_failure_share "
            "(--set max_failure_share=1 keeps the template text of failed items); answers received so far are cached"
        )
