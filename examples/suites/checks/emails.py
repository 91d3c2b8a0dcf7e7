"""Inline assertions for examples/suites/emails.yaml (`type: python`, `value: checks/emails.py:function`).

A suite may name a function here only when it is trusted (examples/proctor.yaml says `trusted: true`).
"""


def one_sentence(reply: str, context: dict) -> tuple[bool, str]:
    """The reply is one sentence: exactly one full stop, at the end."""
    sentences = reply.count(". ") + (1 if reply.rstrip().endswith(".") else 0)
    return sentences == 1, f"{sentences} sentence(s) on turn {context['turn'] + 1}"
