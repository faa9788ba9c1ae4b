"""Text of the questions and answers: the phrasing data (``phrasing.yaml``: several texts per question type
and filter, as CLEVR keeps them) and the code that words programs and answers with it (``render.py``,
``answers.py``, ``records.py``). The predicates package makes no text.

``eqagen/templates/paraphrase`` and ``eqagen/templates/report`` hold the jinja2 templates of the paraphrase
prompts and of the report.
"""
