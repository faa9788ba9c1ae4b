"""Text of the questions: jinja2 templates (``*.j2`` here) and the code that renders them.

``eqagen/templates/paraphrase`` and ``eqagen/templates/report`` hold the templates of the paraphrase and
report stages.
"""
