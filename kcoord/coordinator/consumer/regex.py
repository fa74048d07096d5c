"""A consumer group's subscribed regular expressions (SubscribedTopicRegex): how one is compiled
as Kafka's RE2/J would take it, and how a group's are resolved against the topics, in the
background and at most so often, as Kafka's GroupMetadataManager resolves them."""
from __future__ import annotations

import re
import re._parser as sre_parse
from typing import Collection

from kcoord.coordinator.consumer.group import ConsumerGroup
from kcoord.coordinator.results import Refused
from wire.errors import ErrorCode

# Python's `re` messages for the mistakes topic patterns make, as RE2/J words them (its
# PatternSyntaxException description, which Kafka's INVALID_REGULAR_EXPRESSION message quotes).
_RE2_MESSAGES = (
    ("unterminated character set", "missing closing ]"),
    ("missing ), unterminated subpattern", "missing closing )"),
    ("unbalanced parenthesis", "unexpected )"),
    ("nothing to repeat", "missing argument to repetition operator"),
    ("multiple repeat", "invalid nested repetition operator"),
    ("bad character range", "invalid character class range"),
    ("bad escape", "invalid escape sequence"),
)
# What RE2/J refuses although Python's `re` takes it (opcodes of Python's parse tree).
_NOT_RE2 = {"ASSERT": "invalid or unsupported Perl syntax", "ASSERT_NOT": "invalid or unsupported Perl syntax",
            "GROUPREF": "invalid escape sequence", "GROUPREF_EXISTS": "invalid or unsupported Perl syntax"}


def _unsupported_by_re2(parsed) -> str | None:
    for op, arg in parsed:
        why = _NOT_RE2.get(str(op))
        if why:
            return why
        for sub in (arg if isinstance(arg, (tuple, list)) else ()):
            if isinstance(sub, sre_parse.SubPattern):
                why = _unsupported_by_re2(sub)
            elif isinstance(sub, (tuple, list)):
                why = next((w for w in (_unsupported_by_re2(x) for x in sub if isinstance(x, sre_parse.SubPattern))
                            if w), None)
            else:
                why = None
            if why:
                return why
    return None


def compile_regex(regex: str) -> re.Pattern:
    """A SubscribedTopicRegex. Kafka compiles it with RE2/J; Python's `re` agrees on the RE2 subset
    topic patterns use (classes, alternation, repetition, anchors, (?i)). Look-arounds and
    back-references, which RE2/J refuses, are refused too, and the common syntax errors get RE2/J's
    wording (see docs/consumer-protocol.md)."""
    def refuse(why: str) -> Refused:
        return Refused(ErrorCode.INVALID_REGULAR_EXPRESSION,
                       f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {why}.")
    try:
        pattern = re.compile(regex)
    except re.error as err:
        why = next((re2 for py, re2 in _RE2_MESSAGES if err.msg.startswith(py)), err.msg)
        raise refuse(why) from None
    why = _unsupported_by_re2(sre_parse.parse(regex))
    if why:
        raise refuse(why)
    return pattern



def regex_key(g: str) -> str:
    return f"consumer-regex-{g}"


# Kafka resolves a group's regexes at most this often, whatever the refresh interval.
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000




def prune(group: ConsumerGroup) -> None:
    """A regex no member subscribes to any more is forgotten (Kafka writes its tombstone)."""
    subscribed = group.subscribed_regexes()
    for regex in [r for r in group.resolved_regexes if r not in subscribed]:
        del group.resolved_regexes[regex]


def refresh_due(group: ConsumerGroup, topics: Collection[str], force: bool, now_ms: int,
                refresh_interval_ms: int) -> bool:
    """Kafka's conditions for resolving a group's regexes again (the caller checks that no
    resolution is under way): never within 10 s of the last one, and then only if one is not
    resolved yet (or a new regex arrived: `force`), new topics exist, or
    group.consumer.regex.refresh.interval.ms has passed."""
    regexes = group.subscribed_regexes()
    if not regexes:
        return False
    last = group.regex_refresh_ms
    if last and now_ms <= last + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
        return False
    return (force or regexes != set(group.resolved_regexes) or bool(set(topics) - group.regex_topics)
            or now_ms > last + refresh_interval_ms)


def resolve(group: ConsumerGroup, topics: Collection[str], now_ms: int) -> bool:
    """Every subscribed regex matched against `topics` (names); whether what one matches changed."""
    changed = False
    for regex in sorted(group.subscribed_regexes()):
        try:
            pattern = compile_regex(regex)
            names = tuple(n for n in topics if pattern.fullmatch(n))
        except Refused:  # accepted earlier by a looser version: matches nothing
            names = ()
        if set(names) != set(group.resolved_regexes.get(regex, ())) or regex not in group.resolved_regexes:
            changed = changed or set(names) != set(group.resolved_regexes.get(regex, ()))
            group.resolved_regexes[regex] = names
    prune(group)
    group.regex_refresh_ms = now_ms
    group.regex_topics = frozenset(topics)
    return changed
