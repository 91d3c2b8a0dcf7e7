"""The Kotlin idiom translation behind object-context assertions."""

from __future__ import annotations

import pytest

from proctor.checks._kotlin import KotlinSyntaxError, translate


@pytest.mark.parametrize(
    ("kotlin", "python"),
    [
        ("objectContext.resources.size == 1", "objectContext.resources.size == 1"),
        (
            'objectContext.entities.any { it.type == "Reminder" }',
            'any([( it.type == "Reminder" ) for it in (objectContext.entities)])',
        ),
        ("xs.all { it.done }", "all([( it.done ) for it in (xs)])"),
        ("xs.none { it.done }", "(not any([( it.done ) for it in (xs)]))"),
        ("xs.count { it.done } == 2", "len([it for it in (xs) if ( it.done )]) == 2"),
        ("xs.filter { it.done }.size", "[it for it in (xs) if ( it.done )].size"),
        ("xs.filterNot { it.done }", "[it for it in (xs) if not ( it.done )]"),
        ("xs.map { it.name }", "[( it.name ) for it in (xs)]"),
        ("xs.sumOf { it.n }", "sum([( it.n ) for it in (xs)])"),
        ("xs.first { it.done }", "([it for it in (xs) if ( it.done )] or [None])[0]"),
        ("xs.maxOf { it.n }", "max([( it.n ) for it in (xs)])"),
        ("xs.any { r -> r.done }", "any([( r.done ) for r in (xs)])"),
        ("m.entries.any { k, v -> v }", "any([( v ) for (k, v) in (m.entries)])"),
        # receivers: calls, subscripts, groups, and an earlier translation
        ("f(x).items[0].tags.any { it == 'a' }", "any([( it == 'a' ) for it in (f(x).items[0].tags)])"),
        ("(a + b).any { it }", "any([( it ) for it in ((a + b))])"),
        ("xs.filter { it.ok }.any { it.n > 1 }", "any([( it.n > 1 ) for it in ([it for it in (xs) if ( it.ok )])])"),
        # nested lambdas: the inner `it` shadows the outer one
        ("xs.any { it.tags.any { it == 'x' } }", "any([( any([( it == 'x' ) for it in (it.tags)]) ) for it in (xs)])"),
        # operators and literals
        ("a && !b || c == null", "a  and   not b  or  c == None"),
        ("a != true && b == false", "a != True  and  b == False"),
        ("1L + 2.5f", "1 + 2.5"),
        ("x.null", "x.null"),  # a key named null stays a key
        # Python passes through
        ("any(e.type == 'R' for e in xs)", "any(e.type == 'R' for e in xs)"),
        ("{'a': 1} == d", "{'a': 1} == d"),
        ('"a && b" == s', '"a && b" == s'),  # strings are not translated
    ],
)
def test_translation(kotlin: str, python: str) -> None:
    assert translate(kotlin).python == python


@pytest.mark.parametrize(
    ("kotlin", "position", "reason"),
    [
        ("xs.sortedBy { it }", 3, "unsupported collection function 'sortedBy'"),
        ("xs.any { it", 7, "'{' is never closed"),
        ("xs.any { }", 7, "the lambda has no body"),
        ("xs.any { 1 -> 2 }", 9, "lambda parameters must be names"),
        (".any { it }", 1, "a collection is needed before this function"),
        ("a ?: b", 2, "the elvis operator (?:) is not supported"),
        ("a?.b", 1, "safe calls (?.) are not supported"),
        ("a -> b", 2, "'->' outside a lambda"),
        ('"open', 0, "unterminated string"),
        ("a # b", 2, "unexpected character '#'"),
    ],
)
def test_errors_carry_the_position(kotlin: str, position: int, reason: str) -> None:
    with pytest.raises(KotlinSyntaxError) as caught:
        translate(kotlin)
    assert caught.value.position == position and reason in caught.value.reason


def test_offsets_map_back_to_the_source() -> None:
    translation = translate("objectContext.entities.any { it.kind == 1 }")
    at = translation.python.index("it.kind")
    assert translation.source_offset(at) == "objectContext.entities.any { it.kind == 1 }".index("it.kind")
    receiver = translation.python.index("objectContext")
    assert translation.source_offset(receiver) == 0
